"""SECURITY.md's table of figures is what the suite computes, row for row.

Every figure is derived here from the same lists and constants the security tests
iterate over (the corpus, the fault scenarios, the payloads, the fuzz budgets), and
those tests assert 100% (every statement refused, every fault survived, zero raw
control characters, zero key occurrences). A row added to the table without a
check here, or a changed list without a changed table, fails this test.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import ROOT
from tests.support.agent_attacks import TIMEOUT_S
from tests.support.hostile_file import ATTACKS
from tests.support.legit_duckdb import LEGIT
from tests.support.security_figures import (
    CLI_FAULTS,
    ECHOES,
    FAULTS,
    FUZZ_EXAMPLES,
    KILLS_PER_TARGET,
    PAYLOADS,
    ROUND_TRIP_EXAMPLES,
    SHELL_COMMANDS,
    TARGETS,
    ask_scripts,
    obeying_model,
)
from tests.support.sql_corpus import CORPUS, ENGINE_PERMITS

SECURITY_MD = ROOT / "SECURITY.md"
SQL_ROUTES_CHECKED = 4  # astro sql: table, csv, json, and an error message


def expected_figures() -> dict[str, str]:
    n = len(CORPUS)
    injected = 2 * len(FAULTS) + len(FAULTS) + len(CLI_FAULTS)  # ask plain + --json, agent, real CLI
    survived = f"{injected} / {injected}"
    attacks = len(obeying_model(Path("/watched"))[2])
    fuzz = FUZZ_EXAMPLES
    return {
        "Hostile SQL statements in the corpus": str(n),
        "Refused by the parser alone": f"{n} / {n}",
        "Let through by the engine lock alone (parser bypassed), none changing the disk": str(
            len(ENGINE_PERMITS)
        ),
        "Refused by `astro sql`, with a one-line reason": f"{n} / {n}",
        "Refused through the model's `run_sql` (scripted model, whole agent loop)": f"{n} / {n}",
        "Refused through the tool registry, as the loop invokes it": f"{n} / {n}",
        "Database bytes changed, files created in the watched directory": "0, 0",
        "Runaway cross join: time limit, interrupted within": f"{TIMEOUT_S:g} s, < {TIMEOUT_S + 1:g} s",
        "Statements reaching a hostile DuckDB file's macros, views, generated columns, defaults": str(
            len(ATTACKS)
        ),
        "Of those refused, values of the machine shown (paths, home, private directories)": (
            f"{len(ATTACKS)} / {len(ATTACKS)}, 0"
        ),
        "Legitimate DuckDB statements refused (TPC-H, everyday SQL, CTEs named like files)": (
            f"0 / {len(LEGIT)}"
        ),
        "`astro sql` killed mid-query (SIGTERM, SIGHUP, SIGKILL, SIGINT): workers, directories left": "0, 0",
        "Model-server fault scenarios": str(len(FAULTS)),
        "Faults injected (`astro ask` plain and `--json`, an agent with a conversation, the real CLI)": str(
            injected
        ),
        "Faults survived (one message or an answer, loop responsive, retry works)": survived,
        "Conversations lost": "0",
        "Conversations of arbitrary Unicode written and read back equal (property test examples)": (
            f"{ROUND_TRIP_EXAMPLES} / {ROUND_TRIP_EXAMPLES}"
        ),
        "Output-injection payloads (ANSI, OSC 52, OSC 8, C1, bidi, CR/BS, Rich, Markdown)": str(
            len(PAYLOADS)
        ),
        "Output routes checked (`astro sql`, `astro shell`, `astro ask` plain and `--json`)": str(
            SQL_ROUTES_CHECKED + len(SHELL_COMMANDS) + 2 * len(ask_scripts())
        ),
        "Raw control characters reaching stdout or stderr": "0",
        "Prompt-injection attacks the scripted model obeyed, refused": f"{attacks} / {attacks}",
        "Server echoes of the key tested (plain and `--json`)": str(len(ECHOES)),
        "API key occurrences outside the Authorization header": "0",
        "Config file mode": "0600",
        "SIGKILLs while writing (conversations, context notes)": str(KILLS_PER_TARGET * len(TARGETS)),
        "Files unreadable or partial after a kill": "0",
        "Fuzz examples: shell, tool arguments, templates, stream chunks": ", ".join(
            str(fuzz[k]) for k in ("shell", "tool arguments", "templates", "stream chunks")
        ),
        "Fuzz examples in all": str(sum(fuzz.values())),
    }


def documented_figures() -> dict[str, str]:
    """The rows of the table under "Figures from the test run": first column → second."""
    text = SECURITY_MD.read_text(encoding="utf-8")
    section = text.split("## Figures from the test run", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0] not in ("What", "") and not re.fullmatch(r"-+", cells[0]):
            assert cells[0] not in rows, f"duplicate row {cells[0]!r}"
            rows[cells[0]] = cells[1]
    return rows


def test_security_md_figures_match_the_suite() -> None:
    documented = documented_figures()
    expected = expected_figures()
    assert sorted(documented) == sorted(expected), "rows added to or missing from SECURITY.md"
    assert documented == expected


def test_security_md_names_every_known_gap_the_suite_pins() -> None:
    text = SECURITY_MD.read_text(encoding="utf-8")
    gaps = text.split("## Known gaps", 1)[1]
    assert f"{len(ENGINE_PERMITS)} statements of the corpus" in gaps
    for phrase in ("temporary tables", "Parquet targets", "allowed_paths", "Context notes", "temporary file"):
        assert phrase in gaps

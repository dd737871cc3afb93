"""A replay script is judged by the program that will run it: the real DuckDB CLI, psql and spark-sql.

Two halves. First the readers in `data/client_scripts` are held to their clients:
raw scripts that abuse each client's own rules (a line spark-sql drops inside a
quoted text, a dot command the DuckDB shell reaches when its lexer and DuckDB's
disagree, psql's `\\!`) run in the real client, and a marker file appears exactly
when the reader said the client would run a command of its own; scripts drawn at random
from pieces that trip each client (quotes, comments, `;`, CR, escapes) among marker
commands (`.print`, `\\echo`, `!touch`) leave exactly the markers the reader says,
wherever it says it can tell. Then the writer:
conversations whose queries, names, values, titles and questions hold such text
(and CR, U+2028, U+2029, U+0085) are either refused with one line naming the
notebook formats, or written, run in the real client, and leave no marker while
the client prints the checked number and no moved row.

spark-sql is the one the pyspark wheel ships (bin/spark-sql with its Hive jars); it
starts once for the whole module, every script `source`d from one driver file
(`source` reads a file as `-f` does).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from astro_tui.agent.provenance import Source, Span
from astro_tui.data.client_scripts import Unprovable, client_steps
from astro_tui.replay.marimo import marimo_text
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, ReplayError
from astro_tui.replay.notebook import notebook_text
from astro_tui.replay.sql_script import script_text
from tests.support import ROOT
from tests.support.pg_server import OWNER, OWNER_PASSWORD, PgServer

BOOKS = 1237
MOVED = "CHK-MOVED"
HOSTILE_TEXT = (
    "x\u2028!touch {m}\u2029.shell touch {m}\x85\\! touch {m}\r!touch {m}\n.read {m}\nsource {m}"
    " ![seen](https://example.invalid/{m}) <img src=https://example.invalid/{m}>"
)


def duckdb_cli() -> str | None:
    return shutil.which("duckdb", path=str(Path(sys.executable).parent))


def spark_home() -> Path | None:
    """The pyspark wheel's folder, found without importing it (only its jars and bin/ are used)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    home = Path(next(iter(spec.submodule_search_locations)))
    return home if (home / "bin" / "spark-sql").is_file() and list(home.glob("jars/hive-cli-*.jar")) else None


def spark_sql_missing() -> str | None:
    if spark_home() is None:
        return "the full pyspark wheel (bin/spark-sql and its Hive jars) is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed; .ci/run installs openjdk-17-jre-headless"
    return None


# --- the readers against the real clients ---------------------------------------------------

DUCKDB_RAW = {
    # The shell's lexer knows no E'' escape: it ends the pile at the `;`, DuckDB fails on it, and the
    # next line starts with nothing pending: a dot command.
    "e-escape": "SELECT E'\\'' AS a, ';\n.shell touch {m}\n' AS b;\n",
    # A line starting with Ctrl-C drops what is pending, even from a file.
    "ctrl-c": "SELECT 1 AS a, 'x\n\x03\n.shell touch {m}\n' AS b;\n",
    # Inside a pending statement a dot line is text.
    "dot-in-literal": "SELECT 1 AS a, 'x\n.shell touch {m}\n' AS b;\n",
    "dollar": "SELECT $$ a;\n.shell touch {m}\n$$ AS c;\n",
    "plain": ".shell touch {m}\n",
}
PSQL_RAW = {
    "meta": "SELECT 1;\n\\! touch {m}\n",
    "meta-after-text": "SELECT 1 \\! touch {m}\n",
    "meta-in-comment": "-- \\! touch {m}\nSELECT 1;\n",
    "meta-in-block-comment": "/* a\n\\! touch {m}\n*/ SELECT 1;\n",
    "meta-in-identifier": 'SELECT 1 AS "a\n\\! touch {m}\n";\n',
    "comment-ends-at-cr": "SELECT 1 -- a\r\\! touch {m}\n;\n",
}
SPARK_RAW = {
    # The repro: a quoted `--` line is dropped, the quotes flip, `!` runs a program.
    "repro": "SELECT count(*) AS n, 'x\n--' AS s,\n'; !touch {m}\n' AS t, 'w\n--' AS v FROM books;\n",
    "cr-line": "SELECT 1 AS a, 'x\r--' AS s, '; !touch {m}\n' AS t, 'w\r--' AS v;\n",
    "bang-in-literal": "SELECT 1 AS a, '\n!touch {m}\n' AS b;\n",
    "escaped-semicolon": "SELECT 1 AS a\\;\n!touch {m}\n;\n",
}


def _expect_marker(client: str, text: str) -> bool | None:
    """Whether the reader says the client runs a command of its own; None when it will not say."""
    try:
        steps = client_steps(client, text)
    except Unprovable:
        return None
    return any(s.kind == "command" for s in steps)


def test_the_duckdb_cli_runs_a_command_exactly_where_its_reader_says(tmp_path: Path) -> None:
    cli = duckdb_cli()
    if cli is None:
        pytest.skip("the DuckDB CLI (PyPI duckdb-cli, a dev dependency) is not installed")
    for name, raw in DUCKDB_RAW.items():
        marker = tmp_path / f"pwned-{name}"
        text = raw.format(m=marker)
        (tmp_path / f"{name}.sql").write_text(text)
        with (tmp_path / f"{name}.sql").open() as stdin:  # no -bail: what follows an error runs too
            subprocess.run([cli, "-no-init"], stdin=stdin, capture_output=True, timeout=60, cwd=tmp_path)
        assert marker.exists() == _expect_marker("duckdb", text), name
    assert {p.name for p in tmp_path.glob("pwned-*")} == {"pwned-e-escape", "pwned-ctrl-c", "pwned-plain"}


def test_psql_runs_a_command_exactly_where_its_reader_says(pg_server: PgServer, tmp_path: Path) -> None:
    for name, raw in PSQL_RAW.items():
        marker = tmp_path / f"pwned-{name}"
        text = raw.format(m=marker)
        (tmp_path / f"{name}.sql").write_text(text)
        cmd = [str(pg_server.bin_dir / "psql"), pg_server.url(), "-X", "-f", str(tmp_path / f"{name}.sql")]
        subprocess.run(cmd, capture_output=True, timeout=60, cwd=tmp_path)
        assert marker.exists() == _expect_marker("psql", text), name
    assert {p.name for p in tmp_path.glob("pwned-*")} == {
        "pwned-meta",
        "pwned-meta-after-text",
        "pwned-comment-ends-at-cr",
    }


# --- the writer: hostile conversations --------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    sql: str  # `{q}` the engine's name quote, `{m}` the marker path
    column: str = "n"
    title: str = "Books"
    question: str = "how many books?"
    value: int = BOOKS


CASES = [
    Case("plain", "SELECT count(*) AS n FROM books"),
    Case("repro", "SELECT count(*) AS n, 'x\n--' AS s,\n'; !touch {m}\n' AS t, 'w\n--' AS v FROM books"),
    Case("name", "SELECT count(*) AS {q}n\n!touch {m}\n{q} FROM books", column="n\n!touch {m}\n"),
    Case(
        "dot", "SELECT count(*) AS n, 'a\n.shell touch {m}\n.read {m}\n.system touch {m}\n' AS s FROM books"
    ),
    Case("bang", "SELECT count(*) AS n, 'a\n\\! touch {m}\n' AS s FROM books"),
    Case("source", "SELECT count(*) AS n, 'x\n--' AS s, ';\nsource {m};\n' AS t FROM books"),
    Case("cr", "SELECT count(*) AS n, 'a\r!touch {m}\r' AS s FROM books"),
    Case("ctrl-c", "SELECT count(*) AS n, 'a\n\x03\n.shell touch {m}\n' AS s FROM books"),
    Case("surrogate", "SELECT count(*) AS n, '\ud800' AS s FROM books"),  # written as `\ud800`, a backslash
    Case("comment", "SELECT count(*) AS n -- a comment\nFROM books -- :x \\! touch {m}"),
    Case(
        "texts",
        "SELECT count(*) AS n FROM books",
        title=HOSTILE_TEXT,
        question=HOSTILE_TEXT,
    ),
]
WRITTEN = {
    "duckdb": {"plain", "repro", "name", "dot", "bang", "source", "cr", "comment", "texts"},
    "psql": {"plain", "repro", "name", "dot", "source", "cr", "ctrl-c", "comment", "texts"},
    "spark-sql": {"plain", "name", "dot", "bang", "ctrl-c", "comment", "texts"},
}


def judged_elsewhere(sql: str) -> None:
    """The writers' judge for this file, which holds what each client reads of what they write:
    the guard's own verdict on the same writers (a refusal before anything is written) is held on
    real data in test_redteam_outputs_replay.py and tests/engines/test_replay_judged.py."""


def hostile_replay(case: Case, client: dict, quote: str, marker: Path) -> Replay:
    fill = {"q": quote, "m": str(marker)}
    sql = case.sql.format(**fill)
    column = case.column.format(**fill)
    title, question = case.title.format(**fill), case.question.format(**fill)
    shown = f"{case.value:,}"
    text = f"There are {shown} books. {question}"
    source = Source(input="count", sql=sql, row=0, column=column, value=case.value)
    span = Span(10, 10 + len(shown), shown, case.value, False, (source,))
    quoted = Quoted(f"{MOVED} {title}", shown, case.value, False, (source,), 0)
    answer = ReplayAnswer(1, question, title, "result", text, True, {"count": sql}, None, (span,), (quoted,))
    return Replay(f"c-{case.name}", Path("c.jsonl"), "", f"books {title}", client, (answer,))


def write_cases(client: dict, quote: str, tmp_path: Path, expected: set[str]) -> dict[str, Path]:
    """Each case's script where the writer writes one; a refusal is one line naming the notebooks,
    and the notebook is written either way with every text a Python literal."""
    written: dict[str, Path] = {}
    for case in CASES:
        replay = hostile_replay(case, client, quote, tmp_path / "marks" / f"pwned-{case.name}")
        notebook_text(replay, judged_elsewhere)  # never refused
        try:
            text = script_text(replay, f"{case.name}.sql", judged_elsewhere)
        except ReplayError as exc:
            message = str(exc)
            assert "\n" not in message and "--to ipynb or --to marimo" in message, message
            continue
        path = tmp_path / f"{case.name}.sql"
        path.write_text(text, encoding="utf-8")
        written[case.name] = path
    assert set(written) == expected
    return written


def assert_ran_clean(name: str, output: str, tmp_path: Path) -> None:
    assert not list(tmp_path.rglob("*pwned*")), name
    assert f"{BOOKS}" in output and MOVED not in output, (name, output[-2000:])


@pytest.fixture
def books_duckdb(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    cli = duckdb_cli()
    if cli is None:
        pytest.skip("the DuckDB CLI (PyPI duckdb-cli, a dev dependency) is not installed")
    path = tmp_path / "lib.duckdb"  # made by the CLI itself, so its storage version is one it reads
    sql = f"CREATE TABLE books AS SELECT range AS id FROM range({BOOKS})"
    subprocess.run([cli, str(path), "-c", sql], check=True, capture_output=True, timeout=60)
    (tmp_path / "marks").mkdir()
    yield cli, path


def test_duckdb_scripts_run_in_the_duckdb_cli_as_checked(
    books_duckdb: tuple[str, Path], tmp_path: Path
) -> None:
    cli, path = books_duckdb
    client = {"engine": "duckdb", "files": [{"name": "lib", "kind": "duckdb", "paths": [str(path)]}]}
    written = write_cases(client, '"', tmp_path, WRITTEN["duckdb"])
    for name, script in written.items():
        run = [cli, "-no-init", "-list", "-noheader", "-f", str(script)]  # the script's own Run line
        ran = subprocess.run(run, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert ran.returncode == 0, (name, ran.stderr)
        assert_ran_clean(name, ran.stdout, tmp_path)
    moved = hostile_replay(
        Case("moved", "SELECT count(*) AS n FROM books", value=BOOKS + 1), client, '"', path
    )
    (tmp_path / "moved.sql").write_text(script_text(moved, judge=judged_elsewhere))
    ran = subprocess.run(
        [cli, "-no-init", "-list", "-f", str(tmp_path / "moved.sql")], capture_output=True, text=True
    )
    assert MOVED in ran.stdout  # the check speaks when the number moved


REPLAY_DB = "books_replay"


def test_postgres_scripts_run_in_psql_as_checked(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg_server.psql(f"DROP DATABASE IF EXISTS {REPLAY_DB}", db="postgres")
    pg_server.psql(f"CREATE DATABASE {REPLAY_DB} OWNER {OWNER}", db="postgres")
    pg_server.psql(
        f"CREATE TABLE books AS SELECT i AS id FROM generate_series(1, {BOOKS}) AS i",
        db=REPLAY_DB,
        user=OWNER,
    )
    (tmp_path / "marks").mkdir()
    url = f"postgresql://{OWNER}@{pg_server.host}:{pg_server.port}/{REPLAY_DB}"
    written = write_cases({"engine": "postgresql", "url": url}, '"', tmp_path, WRITTEN["psql"])
    monkeypatch.setenv("PGPASSWORD", OWNER_PASSWORD)
    for name, script in written.items():
        run = [str(pg_server.bin_dir / "psql"), url, "-X", "-A", "-t", "-f", str(script)]
        ran = subprocess.run(run, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=os.environ)
        assert ran.returncode == 0, (name, ran.stderr)
        assert_ran_clean(name, ran.stdout, tmp_path)


def test_spark_scripts_run_in_spark_sql_as_checked_and_its_reader_holds(tmp_path: Path) -> None:
    why = spark_sql_missing()
    if why is not None:
        pytest.skip(why)
    (tmp_path / "marks").mkdir()
    written = write_cases(
        {"engine": "spark", "url": "sc://localhost:15002"}, "`", tmp_path, WRITTEN["spark-sql"]
    )
    raw_expect: dict[str, bool | None] = {}
    for name, raw in SPARK_RAW.items():
        text = raw.format(m=tmp_path / "raw" / f"pwned-{name}")
        (tmp_path / f"raw-{name}.sql").write_text(text)
        raw_expect[name] = _expect_marker("spark-sql", text)
    (tmp_path / "raw").mkdir()
    drawn_dir = tmp_path / "drawn"
    drawn_dir.mkdir()
    drawn: dict[str, set[str] | None] = {}
    for number, text in enumerate(drawn_scripts("spark-sql", f"{drawn_dir}/")):
        (tmp_path / f"drawn-{number}.sql").write_text(text, encoding="utf-8")
        drawn[f"drawn-{number}"] = predicted("spark-sql", text)
    init = tmp_path / "init.sql"
    init.write_text(f"CREATE TEMPORARY VIEW books AS SELECT id FROM range({BOOKS});\n")
    driver = tmp_path / "driver.sql"
    parts = [f"SELECT 'BEGIN {name}';\nsource {path};\n" for name, path in written.items()]
    parts += [f"SELECT 'BEGIN raw-{name}';\nsource {tmp_path / f'raw-{name}.sql'};\n" for name in SPARK_RAW]
    parts += [f"source {tmp_path / name}.sql;\n" for name in drawn]
    driver.write_text("".join(parts) + "SELECT 'BEGIN end';\n")
    home = spark_home()
    assert home is not None
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    cmd = [
        str(home / "bin" / "spark-sql"),
        "--master", "local[1]",
        "--driver-memory", "512m",
        "--conf", "spark.ui.enabled=false",
        "--hiveconf", "hive.cli.errors.ignore=true",
        "-i", str(init),
        "-f", str(driver),
    ]  # fmt: skip
    ran = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert ran.returncode == 0 and "BEGIN end" in ran.stdout, ran.stderr[-3000:]
    sections = dict(part.split("\n", 1) for part in ran.stdout.split("BEGIN ")[1:])
    for name in written:
        assert_ran_clean(name, sections[name], tmp_path / "marks")
    assert not list((tmp_path / "marks").iterdir())
    for name, expect in raw_expect.items():
        if expect is not None:
            assert (tmp_path / "raw" / f"pwned-{name}").exists() == expect, name
    assert raw_expect["repro"] is True and (tmp_path / "raw" / "pwned-repro").exists()
    made = {p.name for p in drawn_dir.iterdir()}
    for name, expect in drawn.items():
        if expect is not None:
            number = name.split("-")[1]
            assert {m for m in made if m.startswith(f"M{number}x")} == expect, name
    assert sum(e is not None for e in drawn.values()) >= FUZZ_SCRIPTS // 2


def test_notebooks_and_marimo_files_hold_every_text_as_an_exact_python_literal(tmp_path: Path) -> None:
    """Whatever the writer refuses as a script it writes as a notebook: there every text from the
    conversation is a Python literal that reads back as it was, even in a marimo cell's indented body."""
    clients = [
        (
            {
                "engine": "duckdb",
                "files": [{"name": "lib", "kind": "duckdb", "paths": ["/x\n!touch p.duckdb"]}],
            },
            '"',
        ),
        ({"engine": "postgresql", "url": "postgresql://o@h:5/db"}, '"'),
        ({"engine": "spark", "url": "sc://localhost:15002"}, "`"),
    ]
    for client, quote in clients:
        for case in CASES:
            replay = hostile_replay(case, client, quote, tmp_path / "pwned")
            sql = replay.answers[0].inputs["count"]
            book = json.loads(notebook_text(replay, judged_elsewhere))
            sources = ["".join(c["source"]) for c in book["cells"] if c["cell_type"] == "code"]
            markdown = ["".join(c["source"]) for c in book["cells"] if c["cell_type"] == "markdown"]
            assert not any(re.search(r"(?<!\\)\]\(|<img", md) for md in markdown), case.name
            for code in [*sources, marimo_text(replay, judged_elsewhere)]:
                tree = ast.parse(code)
                reads = [
                    ast.literal_eval(node.args[0])
                    for node in ast.walk(tree)
                    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "read"
                ]
                assert reads in ([], [sql]), case.name
                for node in ast.walk(tree):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str):
                        node.value = ""
                assert "pwned" not in ast.unparse(tree) and "touch" not in ast.unparse(tree), case.name


EVIDENCE_MD = ROOT / "docs" / "security-evidence.md"


def _decided(client: str) -> int:
    return sum(predicted(client, text) is not None for text in drawn_scripts(client, "/d/"))


def test_security_md_states_these_figures() -> None:
    clients = ("duckdb", "psql", "spark-sql")
    figures = {
        "Hostile conversations, each tried on the three clients": str(len(CASES)),
        "Scripts written and run in the real client (DuckDB CLI, psql, spark-sql)": ", ".join(
            str(len(WRITTEN[c])) for c in clients
        ),
        "Scripts refused with one line naming the notebook formats": ", ".join(
            str(len(CASES) - len(WRITTEN[c])) for c in clients
        ),
        "Marker files created by a written script; moved rows printed": "0, 0",
        "Raw scripts abusing a client's rules, run in it to hold its reader (DuckDB CLI, psql, spark-sql)": (
            f"{len(DUCKDB_RAW)}, {len(PSQL_RAW)}, {len(SPARK_RAW)}"
        ),
        "Of those the reader decides, a command ran where it said none would, or the reverse": "0",
        "Drawn scripts (random runs of quotes, comments, `;`, CR, escapes and marker commands) the reader "
        "decides, run in the DuckDB CLI, psql and spark-sql": ", ".join(str(_decided(c)) for c in clients),
        "Of those, a marker command run otherwise than the reader said": "0",
        "Notebooks and marimo files checked for exact literals": str(len(CASES) * 3 * 2),
    }
    text = EVIDENCE_MD.read_text(encoding="utf-8")
    section = text.split("## What astro writes: replay scripts and notebooks", 1)[1].split("\n## ", 1)[0]
    rows = dict(
        (cells[0], cells[1])
        for line in section.splitlines()
        if line.startswith("| ") and len(cells := [c.strip() for c in line.strip("|").split("|")]) == 2
    )
    rows.pop("What", None)
    assert rows == figures


# --- the readers against the real clients on drawn scripts -----------------------------------

FUZZ_SCRIPTS = 60
DUCKDB_PIECES = [
    *("SELECT 1", "'", '"', "$$", "$a$", ";", "\n", "\r\n", "--", "/*", "*/", "E'\\''", " ", "x", "\\"),
    *("\n#x;\n", "\n\x03\n", "\n.x;\n"),  # a dropped line, a Ctrl-C line, an unknown dot command
]
PSQL_PIECES = ["SELECT 1", "'", '"', ";", "\n", "\r", "--", "/*", "*/", " ", "(", ")", "x", "::", "E'"]


# Quoted texts and comments holding `;` and dropped lines, whole, as the lexer reads most of them
# (a lone quote the lexer skips, which the reader will not guess); no piece starts with `/`, so a
# `!touch` of these words stays in the test's folder.
SPARK_PIECES = [
    *("SELECT 1", "'x;y'", '"p;q"', "`b;c`", "'\\';'", "'it''s;'", "a/* c; */a", "a/* /* ; */ */a"),
    *("-- c;\n", "\n--x;\n", "'a\n--b'", ";", "\n", "\r", " ", "x"),
]
DRAWN = {
    "duckdb": (DUCKDB_PIECES, "\n.print {}\n", 34, FUZZ_SCRIPTS),
    "psql": (PSQL_PIECES, "\n\\echo {}\n", 35, FUZZ_SCRIPTS),
    "spark-sql": (SPARK_PIECES, ";\n!touch {}\n", 36, 2 * FUZZ_SCRIPTS),  # one JVM runs them all
}
"""Per client: the pieces, the command that leaves a marker, the seed, how many scripts."""
MARKER = re.compile(r"M\d+x\d+")


def drawn_scripts(client: str, where: str = "") -> Iterator[str]:
    """Scripts of the pieces that trip a client's reading, with commands that leave a marker
    (`.print M3x1`, `\\echo M3x1`, `!touch DIR/M3x1`) among them."""
    pieces, command, seed, count = DRAWN[client]
    rng = random.Random(seed)
    for number in range(count):
        parts = [
            command.format(f"{where}M{number}x{at}") if rng.random() < 0.2 else rng.choice(pieces)
            for at in range(rng.randint(4, 24))
        ]
        yield "".join(parts) + "\n"


def predicted(client: str, text: str) -> set[str] | None:
    """The markers the reader says the client leaves: every one named in a command it runs (a
    spark-sql `!` command runs to the next `;`, every word an argument)."""
    try:
        steps = client_steps(client, text)
    except Unprovable:
        return None
    return {m for s in steps if s.kind == "command" for m in MARKER.findall(s.text)}


def printed(stdout: str) -> set[str]:
    return {line for line in stdout.splitlines() if MARKER.fullmatch(line)}


def held_to_client(client: str, tmp_path: Path, run: Callable[[Path], str]) -> int:
    """Each drawn script the reader decides, run by `run` (its stdout): the markers printed are the
    ones the reader said. How many it decided."""
    decided = 0
    for number, text in enumerate(drawn_scripts(client)):
        expect = predicted(client, text)
        if expect is None:
            continue
        path = tmp_path / f"{number}.sql"
        path.write_text(text, encoding="utf-8")
        assert printed(run(path)) == expect, text
        decided += 1
    return decided


def test_the_duckdb_cli_reader_agrees_with_the_cli_on_drawn_scripts(tmp_path: Path) -> None:
    cli = duckdb_cli()
    if cli is None:
        pytest.skip("the DuckDB CLI (PyPI duckdb-cli, a dev dependency) is not installed")

    def run(path: Path) -> str:
        with path.open() as stdin:  # no -bail: what follows an error runs too
            return subprocess.run(
                [cli, "-no-init", "-list"], stdin=stdin, capture_output=True, text=True
            ).stdout

    assert held_to_client("duckdb", tmp_path, run) == FUZZ_SCRIPTS  # the reader never says it cannot tell


def test_the_psql_reader_agrees_with_psql_on_drawn_scripts(pg_server: PgServer, tmp_path: Path) -> None:
    def run(path: Path) -> str:
        cmd = [str(pg_server.bin_dir / "psql"), pg_server.url(), "-X", "-A", "-t", "-f", str(path)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout

    assert held_to_client("psql", tmp_path, run) >= FUZZ_SCRIPTS // 2

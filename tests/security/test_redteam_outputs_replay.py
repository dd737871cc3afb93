"""Red team (issue 34): what `astro replay` writes from a saved conversation. SECURITY.md: "A saved
conversation is treated as hostile (a model's SQL and names, an MCP client's, or a file edited by
hand)" and a written file "runs the queries astro's guard judged ... and nothing else"."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import astro_tui
from astro_tui.agent.provenance import Source, Span
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, ReplayError, load_replay
from astro_tui.replay.notebook import notebook_text
from astro_tui.replay.sql_script import script_text
from tests.support.agent import build_shop
from tests.support.fake_openai import FakeOpenAI, tool_call_reply

SQL = "SELECT count(*) AS n FROM sales.orders"


def _edited_conversation(tmp_path: Path, fake_openai: FakeOpenAI, hostile_sql: str) -> Path:
    """A real verified conversation, then its query edited by hand in the saved file."""
    shop = build_shop(tmp_path / "shop.duckdb")
    submit = {"inputs": {"n": SQL}, "template": "{{ n.value }} orders."}
    fake_openai.script(tool_call_reply([("submit_result", submit)]))
    with astro_tui.open(shop, settings=fake_openai.settings(), state_dir=tmp_path / "state") as session:
        reply = session.ask("how many orders?")
        assert reply.verified
        conversation = session.conversation_id
    path = tmp_path / "state" / "conversations" / f"{conversation}.jsonl"
    text = path.read_text(encoding="utf-8")
    assert json.dumps(SQL)[1:-1] in text
    shared = tmp_path / "shared.jsonl"
    shared.write_text(text.replace(json.dumps(SQL)[1:-1], json.dumps(hostile_sql)[1:-1]), encoding="utf-8")
    return shared


def test_a_hand_edited_query_is_not_written_into_a_duckdb_script_unjudged(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The replay writer never re-judges the SQL it reads from the file: a statement the guard would
    refuse (here COPY ... TO, a file write; `INSTALL`/`LOAD`, `ATTACH ... READ_WRITE` go the same
    way) is written, proved "exactly what the client runs", and the DuckDB CLI runs it."""
    marker = tmp_path / "pwned.csv"
    hostile = f"SELECT count(*) AS n FROM sales.orders; COPY (SELECT 'owned' AS x) TO '{marker}'"
    shared = _edited_conversation(tmp_path, fake_openai, hostile)
    try:
        script = script_text(load_replay(tmp_path / "state", str(shared)))
    except ReplayError:
        return  # refused: the guarantee holds
    # Written, and proved "exactly what the client runs". The suite's CLI (1.5.6) cannot open a file
    # the duckdb 2.0 module wrote, so the script is pointed at a copy of the data the CLI made.
    cli = shutil.which("duckdb", path=str(Path(sys.executable).parent))
    if cli is not None:
        data = tmp_path / "cli.duckdb"
        made = "CREATE SCHEMA sales; CREATE TABLE sales.orders AS SELECT range AS id FROM range(100);"
        subprocess.run([cli, "-no-init", str(data), "-c", made], capture_output=True, timeout=120, check=True)
        (tmp_path / "s.sql").write_text(
            script.replace(str(tmp_path / "shop.duckdb"), str(data)), encoding="utf-8"
        )
        subprocess.run([cli, "-no-init", "-f", "s.sql"], capture_output=True, timeout=120, cwd=tmp_path)
        assert not marker.exists(), "the DuckDB CLI ran the unjudged COPY of the replay script"
    assert f"COPY (SELECT 'owned' AS x) TO '{marker}'" not in script, script


def test_a_hand_edited_query_is_not_written_into_a_notebook_unjudged(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The same file as a notebook: `read(...)` hands the unjudged text to duckdb, which runs every
    statement in it."""
    marker = tmp_path / "pwned.csv"
    hostile = f"COPY (SELECT 'owned' AS x) TO '{marker}'; SELECT count(*) AS n FROM sales.orders"
    shared = _edited_conversation(tmp_path, fake_openai, hostile)
    try:
        book = json.loads(notebook_text(load_replay(tmp_path / "state", str(shared))))
    except ReplayError:
        return
    sources = ["".join(c["source"]) for c in book["cells"] if c["cell_type"] == "code"]
    reads = [s for s in sources if "= read(" in s]
    assert not any(hostile in ast.literal_eval(s.split("= read(", 1)[1].rsplit(")", 1)[0]) for s in reads), (
        "the notebook reads an unjudged statement"
    )


@pytest.mark.parametrize(
    ("client", "sql"),
    [
        # psql: one statement, so its reader finds exactly the "guarded" statement; COPY TO is
        # allowed in the script's READ ONLY session and TO PROGRAM runs on the server.
        (
            {"engine": "postgresql", "url": "postgresql://h/db"},
            "COPY (SELECT 1 AS n) TO PROGRAM 'touch /tmp/pwned'",
        ),
        (
            {"engine": "postgresql", "url": "postgresql://h/db"},
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        ),
        ({"engine": "spark", "url": "sc://h:15002"}, "DROP TABLE lib.books"),
        (
            {"engine": "duckdb", "files": [{"name": "lib", "kind": "duckdb", "paths": ["/x.duckdb"]}]},
            "ATTACH '/x.duckdb' AS w; DELETE FROM w.main.books",
        ),
    ],
)
def test_the_writer_refuses_a_saved_query_no_guard_would_run(client: dict, sql: str) -> None:
    """A conversation file is hostile (SECURITY.md); the script writer takes its queries as judged
    and proves only that the client reads them as written."""
    source = Source(input="count", sql=sql, row=0, column="n", value=1)
    span = Span(10, 11, "1", 1, False, (source,))
    quoted = Quoted("A1 books", "1", 1, False, (source,), 0)
    answer = ReplayAnswer(
        1, "q", "t", "result", "There are 1 books.", True, {"count": sql}, None, (span,), (quoted,)
    )
    replay = Replay("c-x", Path("c.jsonl"), "", "books", client, (answer,))
    with pytest.raises(ReplayError):
        script_text(replay, "x.sql")

"""`astro replay`: a conversation made with the scripted model leaves astro as a notebook or script
that runs without astro and checks its numbers; `--check` says which numbers moved.

Real throughout: the sample warehouse (a copy, so a row can change) and the PostgreSQL
server the suite starts; the notebook runs in a real Jupyter kernel (nbclient, ipykernel)
where astro cannot be imported, the marimo file as `python FILE.py`, the SQL script in
DuckDB and in `psql`.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import nbformat
import pytest
from click.testing import CliRunner
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from astro_tui.cli import main
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.support.fake_openai import FakeOpenAI, tool_call_reply
from tests.support.pg_server import OWNER, OWNER_PASSWORD, PgServer

SUBMIT = {
    "inputs": {
        "by_status": "SELECT status, count(*) AS orders FROM sales.orders GROUP BY 1 ORDER BY 1",
        "rev": "SELECT sum(total_amount) AS revenue FROM sales.orders WHERE status = 'completed'",
    },
    "template": "{% for r in by_status.rows %}{{ r.status }}: {{ r.orders | number }}\n{% endfor %}"
    "{{ by_status.rows | sum(attribute='orders') | number }} orders in all. "
    "Completed revenue {{ rev.value | money }}.",
    "title": "Orders",
}
MOVE_REVENUE = (
    "UPDATE sales.orders SET total_amount = total_amount + 1 "
    "WHERE order_id = (SELECT min(order_id) FROM sales.orders WHERE status = 'completed')"
)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["replay", *args])
    return result.exit_code, result.stdout, result.stderr


async def converse(db: Database, fake: FakeOpenAI, state: Path, question: str, submit: dict) -> dict:
    fake.script(tool_call_reply([("submit_result", submit)]))
    out, err = io.StringIO(), io.StringIO()
    code = await run_ask(
        question, Session.over(db, fake.settings(), state_dir=state), json_output=True, out=out, err=err
    )
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def run_notebook(path: Path, cwd: Path) -> nbformat.NotebookNode:
    """Run every cell in a real kernel where `import astro_tui` fails (a first cell blocks it)."""
    book = nbformat.read(path, as_version=4)
    book.cells.insert(0, nbformat.v4.new_code_cell("import sys\nsys.modules['astro_tui'] = None"))
    NotebookClient(
        book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return book


def code_imports(sources: list[str]) -> set[str]:
    found: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.split(".")[0])
    return found


def script_rows(path: Path, statements: list[str]) -> list[tuple]:
    """Run the SQL script in DuckDB statement by statement; the rows of its check queries."""
    con = duckdb.connect()
    moved: list[tuple] = []
    try:
        for statement in con.extract_statements(path.read_text(encoding="utf-8")):
            con.execute(statement)
            if con.description and con.description[0][0] == "moved":
                moved += con.fetchall()
            statements.append(str(statement.query))
    finally:
        con.close()
    return moved


@dataclass
class Conversation:
    id: str
    record: dict
    data: Path
    state: Path


@pytest.fixture
def warehouse(sample_path: Path, tmp_path: Path) -> Iterator[Path]:
    copy = tmp_path / "data" / "warehouse.duckdb"
    copy.parent.mkdir()
    shutil.copyfile(sample_path, copy)
    yield copy


@pytest.fixture
async def on_duckdb(warehouse: Path, fake_openai: FakeOpenAI, tmp_path: Path) -> Conversation:
    state = tmp_path / "state"  # where `astro` (conftest's ASTRO_STATE_DIR) looks
    with Database.open([str(warehouse)], Settings()) as db:
        record = await converse(
            db, fake_openai, state, "orders by status, and the completed revenue?", SUBMIT
        )
    return Conversation(record["conversation_id"], record, warehouse, state)


def move_revenue(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(MOVE_REVENUE)


async def test_duckdb_replays_as_ipynb_marimo_and_sql_and_each_catches_a_moved_number(
    on_duckdb: Conversation, tmp_path: Path
) -> None:
    conv, out = on_duckdb, tmp_path / "out"
    out.mkdir()
    answer = conv.record["answer"]
    revenue = next(s for s in conv.record["provenance"] if s["sources"][0]["input"] == "rev")["text"]
    for fmt, name in (("ipynb", "r.ipynb"), ("marimo", "r.py"), ("sql", "r.sql")):
        code, stdout, stderr = cli(conv.id, "--to", fmt, "-o", str(out / name))
        assert code == 0 and stdout.strip() == str(out / name), stderr

    book = nbformat.read(out / "r.ipynb", as_version=4)
    nbformat.validate(book)
    sources = [c.source for c in book.cells if c.cell_type == "code"]
    assert code_imports(sources) == {"duckdb", "pandas", "datetime", "decimal", "math", "typing"}
    assert f"duckdb.connect({str(conv.data)!r}, read_only=True)" in sources[0]
    numbers = [p for p in conv.record["provenance"] if re.fullmatch(r"-?[\d.]+", str(p["value"]))]
    assert len(numbers) == 7  # five counts, their sum, the revenue
    assert sum(s.count("assert ") for s in sources) == len(numbers)
    ran = run_notebook(out / "r.ipynb", out)
    printed = ["".join(o.get("text", "") for o in c.outputs) for c in ran.cells if c.cell_type == "code"]
    assert answer + "\n" in printed  # the answer rendered again from the DataFrames

    marimo = subprocess.run([sys.executable, str(out / "r.py")], capture_output=True, text=True, timeout=600)
    assert marimo.returncode == 0, marimo.stderr
    statements: list[str] = []
    assert script_rows(out / "r.sql", statements) == []
    assert len([s for s in statements if "AS moved" in s]) == 6 + 5  # the sum: one per status

    code, stdout, stderr = cli(conv.id, "--check")
    assert (code, stdout) == (0, ""), stderr
    assert "unchanged" in stderr

    move_revenue(conv.data)
    code, stdout, stderr = cli(conv.id, "--check")
    [line] = stdout.splitlines()
    assert code == 1 and re.fullmatch(
        rf"A1 Orders · Completed revenue: {re.escape(revenue)} → \$[\d,]+\.\d\d", line
    )
    was = float(revenue.strip("$").replace(",", ""))
    assert float(line.rsplit("$", 1)[1].replace(",", "")) == pytest.approx(was + 1)
    code, stdout, _ = cli(conv.id, "--check", "--json")
    report = json.loads(stdout)
    assert code == 1 and [m["number"] for m in report["moved"]] == ["A1 Orders · Completed revenue"]

    with pytest.raises(CellExecutionError, match=r"A1 Orders · Completed revenue: was \$[\d,.]+, now"):
        run_notebook(out / "r.ipynb", out)
    marimo = subprocess.run([sys.executable, str(out / "r.py")], capture_output=True, text=True, timeout=600)
    assert marimo.returncode != 0 and "A1 Orders · Completed revenue: was" in marimo.stderr
    [row] = script_rows(out / "r.sql", [])
    assert row[:2] == ("A1 Orders · Completed revenue", revenue)


async def test_check_counts_a_new_row_in_a_computed_total_and_takes_another_target(
    on_duckdb: Conversation, sample_path: Path
) -> None:
    conv = on_duckdb
    with duckdb.connect(str(conv.data)) as con:
        con.execute(
            "INSERT INTO sales.orders SELECT * REPLACE (order_id + 10000000 AS order_id, 'zz' AS status) "
            "FROM sales.orders LIMIT 1"
        )
    code, stdout, _ = cli(conv.id, "--check")
    assert code == 1
    assert re.search(r"^A1 Orders · orders in all: [\d,]+ → [\d,]+$", stdout, re.M), stdout
    code, stdout, stderr = cli(conv.id, "--check", str(sample_path))  # the untouched data
    assert (code, stdout) == (0, ""), stderr


SHARE = {
    "inputs": {
        "done": "SELECT sum(total_amount) AS revenue FROM sales.orders WHERE status = 'completed'",
        "every": "SELECT sum(total_amount) AS revenue FROM sales.orders",
        "avg": "SELECT avg(total_amount) AS average FROM sales.orders",
    },
    "template": "Completed orders bring {{ (done.value / every.value) | percent }} of revenue; "
    "an order averages {{ avg.value | number(0) }}.",
    "title": "Share",
}


async def test_check_compares_a_number_at_the_precision_it_was_quoted(
    warehouse: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A change that leaves a quoted number as it was printed (`90.7%` stays `90.7%`) is not a
    failure; one that moves it at that precision is, for a computed number and a cell alike."""
    state = tmp_path / "state"
    with Database.open([str(warehouse)], Settings()) as db:
        record = await converse(db, fake_openai, state, "completed share?", SHARE)
    conv = record["conversation_id"]
    quoted = [s["text"] for s in record["provenance"]]
    assert len(quoted) == 2 and quoted[0].endswith("%") and "." not in quoted[1]
    move_revenue(warehouse)  # one completed order a dollar dearer: both move below their precision
    code, stdout, stderr = cli(conv, "--check")
    assert (code, stdout) == (0, ""), stderr
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE sales.orders SET total_amount = total_amount * 3 WHERE status = 'completed'")
    code, stdout, _ = cli(conv, "--check")
    moved = [re.fullmatch(r"A1 Share · (.+): (\S+) → (\S+)", line) for line in stdout.splitlines()]
    assert code == 1 and all(moved) and len(moved) == 2, stdout
    assert [m.group(2) for m in moved if m] == quoted and all(m.group(2) != m.group(3) for m in moved if m)


async def test_list_refusals_and_one_line_errors(
    on_duckdb: Conversation, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    conv = on_duckdb
    code, stdout, _ = cli("--list")
    [line] = stdout.splitlines()
    assert code == 0 and line.startswith(conv.id) and str(conv.data) in line and "orders by status" in line

    target = tmp_path / "kept.sql"
    target.write_text("mine")
    code, stdout, stderr = cli("--to", "sql", "-o", str(target))  # the latest conversation
    assert (code, stdout) == (2, "") and stderr == f"astro: {target} exists (--force to overwrite it)\n"
    assert target.read_text() == "mine"
    code, _, _ = cli("--to", "sql", "-o", str(target), "--force")
    assert code == 0 and "-- check: A1 Orders · Completed revenue" in target.read_text()

    for args, message in (
        (
            ("20990101-000000-abcdef",),
            "no conversation 20990101-000000-abcdef (`astro replay --list` shows them)",
        ),
        ((str(tmp_path / "gone.jsonl"),), f"no such file: {tmp_path / 'gone.jsonl'}"),
        (("20990101-000000-abcdef", "--check"), "no conversation 20990101-000000-abcdef"),
    ):
        code, stdout, stderr = cli(*args)
        assert (
            code == 2 and stdout == "" and stderr.startswith(f"astro: {message}") and stderr.count("\n") == 1
        )

    fake_openai.script(tool_call_reply([("send_message", {"message": "Which year?"})]))
    with Database.open([str(conv.data)], Settings()) as db:
        session = Session.over(db, fake_openai.settings(), state_dir=conv.state)
        assert (
            await run_ask("revenue?", session, json_output=False, out=io.StringIO(), err=io.StringIO()) == 0
        )
        talk = session.conversation_id
    code, _, stderr = cli(str(talk))
    assert code == 2 and stderr == f"astro: conversation {talk} has no verified answer to replay\n"

    saved = conv.state / "conversations" / f"{conv.id}.jsonl"
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(saved, copy)
    code, stdout, stderr = cli(str(copy), "--to", "marimo", "-o", str(tmp_path / "m.py"))
    assert code == 0, stderr


# --------------------------------------------------------------------------- PostgreSQL

REPLAY_DB = "replay_shop"
PG_SUBMIT = {
    "inputs": {"open": "SELECT count(*) AS n, sum(amount) AS amount FROM loans WHERE status = 'open'"},
    "template": "{{ open.value | number }} open loans, {{ open.rows[0].amount | money }} outstanding.",
    "title": "Open loans",
}


@pytest.fixture
def loans(pg_server: PgServer) -> str:
    """A database of its own (the shop stays as other tests expect it), made afresh."""
    pg_server.psql(f"DROP DATABASE IF EXISTS {REPLAY_DB}", db="postgres")
    pg_server.psql(f"CREATE DATABASE {REPLAY_DB} OWNER {OWNER}", db="postgres")
    pg_server.psql(
        "CREATE TABLE loans (id int PRIMARY KEY, status text, amount numeric(12,2));"
        "INSERT INTO loans SELECT i, CASE WHEN i % 3 = 0 THEN 'closed' ELSE 'open' END, i * 10.25 "
        "FROM generate_series(1, 1477 * 3 / 2) AS i;",
        db=REPLAY_DB,
        user=OWNER,
    )
    return pg_server.url(db=REPLAY_DB)


async def test_postgres_replays_with_the_password_from_the_environment(
    loans: str, pg_server: PgServer, fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    with Database.open([loans], Settings()) as db:
        record = await converse(db, fake_openai, state, "how many open loans?", PG_SUBMIT)
    assert record["answer"].startswith("1,477 open loans, $")
    conv = record["conversation_id"]
    out = tmp_path / "out"
    # Every statement is judged by the server's guard before it is written: no password, no guard,
    # no file (one line saying why).
    code, _, stderr = cli(conv, "--to", "sql", "-o", str(out / "r.sql"))
    assert code == 2 and "PGPASSWORD" in stderr and "nothing written" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and not (out / "r.sql").exists()
    monkeypatch.setenv("PGPASSWORD", OWNER_PASSWORD)  # astro's guard, the kernel and psql read it
    for fmt, name in (("ipynb", "r.ipynb"), ("sql", "r.sql")):
        code, _, stderr = cli(conv, "--to", fmt, "-o", str(out / name))
        assert code == 0, stderr
    for name in ("r.ipynb", "r.sql"):
        text = (out / name).read_text()
        assert (
            OWNER_PASSWORD not in text and f"postgresql://{OWNER}@{pg_server.host}:{pg_server.port}" in text
        )

    run_notebook(out / "r.ipynb", out)
    url = f"postgresql://{OWNER}@{pg_server.host}:{pg_server.port}/{REPLAY_DB}"
    psql = [str(pg_server.bin_dir / "psql"), url, "-X", "-A", "-t", "-f", str(out / "r.sql")]
    ran = subprocess.run(psql, capture_output=True, text=True, timeout=120, env=os.environ)
    assert ran.returncode == 0 and "Open loans" not in ran.stdout, ran.stderr
    code, stdout, stderr = cli(conv, "--check")
    assert (code, stdout) == (0, ""), stderr

    pg_server.psql("UPDATE loans SET status = 'closed' WHERE id = 1", db=REPLAY_DB)
    code, stdout, _ = cli(conv, "--check")
    assert code == 1 and stdout.splitlines()[0] == "A1 Open loans · open loans: 1,477 → 1,476"
    ran = subprocess.run(psql, capture_output=True, text=True, timeout=120, env=os.environ)
    assert ran.returncode == 0 and "A1 Open loans · open loans|1,477|1476" in ran.stdout, ran.stdout
    with pytest.raises(CellExecutionError, match="A1 Open loans · open loans: was 1,477, now 1476"):
        run_notebook(out / "r.ipynb", out)

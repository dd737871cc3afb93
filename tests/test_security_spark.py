"""Spark's read-only promise, tested against the real Spark Connect server with a hostile corpus.

Spark has no read-only mode, so the guard (sqlglot's Spark parser) is the only
layer: every statement of `tests/data/hostile_spark.json` must be refused
before anything is sent, and afterwards the databases, tables, their rows and
every file of the warehouse are exactly as before, and no file the corpus
aims at exists. Bad targets and bad SQL are one line, never with the token.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import guard
from astro_tui.data.errors import GuardError, QueryError, TargetError
from tests.spark_server import TOKEN, SparkServer

CORPUS = json.loads((Path(__file__).parent / "data" / "hostile_spark.json").read_text())
SECURITY_MD = Path(__file__).parent.parent / "SECURITY.md"
AIMED_AT = [Path("/tmp/astro-pwned"), Path("/tmp/astro-exfil")]


@pytest.fixture(scope="module")
def spark(spark_server: SparkServer) -> Iterator[Database]:
    db = Database.open([spark_server.url], Settings())
    yield db
    db.close()


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 40
    kinds = {e["kind"] for e in CORPUS}
    assert {
        "write",
        "ddl",
        "files",
        "reflection",
        "program",
        "session",
        "cache",
        "resource",
        "trick",
    } <= kinds


def test_guard_refuses_the_whole_corpus_before_sending_and_nothing_changes(
    spark: Database, spark_server: SparkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = spark_server.fingerprint()
    assert "table sales.orders 1500" in before and "file warehouse/sales.db/orders" in before
    engine = spark.engine
    sent: list[str] = []
    real_sql = engine.session.sql  # type: ignore[attr-defined]
    monkeypatch.setattr(engine.session, "sql", lambda q, *a, **k: sent.append(q) or real_sql(q, *a, **k))  # type: ignore[attr-defined]
    for entry in CORPUS:
        with pytest.raises(GuardError) as caught:
            spark.execute(entry["sql"])
        message = str(caught.value)
        assert "\n" not in message and message.startswith("refused"), (entry, message)
    assert sent == []
    monkeypatch.undo()
    assert spark_server.fingerprint() == before
    assert not any(p.exists() for p in AIMED_AT)
    assert spark.execute("SELECT count(*) FROM sales.orders").rows() == [(1500,)]


def test_every_corpus_statement_is_refused_alone_by_the_guard() -> None:
    """The guard needs no server: the same refusals on any machine."""
    for entry in CORPUS:
        with pytest.raises(GuardError):
            guard.check(entry["sql"])


def test_user_defined_functions_the_server_lists_are_refused(spark_server: SparkServer) -> None:
    spark_server.sql("CREATE FUNCTION default.plus_one(x INT) RETURNS INT RETURN x + 1")
    try:
        with Database.open([spark_server.url], Settings()) as db:
            with pytest.raises(GuardError, match="user-defined function"):
                db.execute("SELECT plus_one(1)")
            with pytest.raises(GuardError, match="defined in the catalog"):
                db.execute("SELECT default.plus_one(1)")
    finally:
        spark_server.sql("DROP FUNCTION default.plus_one")


# inputs of any shape: one line, never a traceback (issue 11's classes) -------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
@example("'\n0")  # an unterminated quote: the tokenizer quoted a newline into the message
def test_any_text_is_a_statement_or_one_refusal_line(text: str) -> None:
    try:
        out = guard.check(text)
    except GuardError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(out, str) and out


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 5000 + "1" + ")" * 5000,
        "SELECT " + " + ".join(["1"] * 20000),
        "SELECT " + "-" * 30000 + "1",
        "SELECT '" + "x" * 300_000 + "'",
        "SELECT " + "CASE WHEN 1=1 THEN " * 900 + "1" + " END" * 900,
        "\x00SELECT 1",
        "",
        "   ;  ",
    ],
)
def test_huge_and_deep_inputs_get_one_line(sql: str) -> None:
    try:
        guard.check(sql)
    except GuardError as exc:
        assert "\n" not in str(exc)


# bad targets and bad SQL ----------------------------------------------------------------------------------


def bad_targets(server: SparkServer) -> dict[str, tuple[str, str]]:
    return {
        "unreachable": ("sc://127.0.0.1:1", "cannot be reached"),
        "wrong token": (server.url_with("not-the-token"), "refused the credentials"),
        "no token": (server.url_with(None), "refused the credentials"),
        "tls to a plain server": (
            f"sc://127.0.0.1:{server.port}/;use_ssl=true;token={TOKEN}",
            "cannot be reached",
        ),
    }


def test_bad_targets_fail_with_one_line(spark_server: SparkServer) -> None:
    for name, (url, expected) in bad_targets(spark_server).items():
        with pytest.raises(TargetError) as caught:
            Database.open([url], Settings())
        message = str(caught.value)
        assert "\n" not in message, name
        assert expected in message, (name, message)
        assert TOKEN not in message and "not-the-token" not in message, name


def test_cli_bad_targets_exit_non_zero_with_one_line(spark_server: SparkServer) -> None:
    targets = bad_targets(spark_server)
    for name in ("unreachable", "wrong token"):
        url, expected = targets[name]
        out = subprocess.run(
            [sys.executable, "-m", "astro_tui.cli", "sql", "SELECT 1", url],
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert out.returncode != 0, name
        assert out.stderr.strip().count("\n") == 0, (name, out.stderr)
        assert expected in out.stderr and "Traceback" not in out.stderr, name


def test_query_errors_are_one_line_with_sparks_hints(spark: Database) -> None:
    with pytest.raises(QueryError) as caught:
        spark.execute("SELECT nme FROM sales.customers")
    message = str(caught.value)
    assert "\n" not in message and "`nme` cannot be resolved" in message
    assert "Did you mean one of the following?" in message and "`name`" in message
    assert "JVM" not in message and "Project" not in message
    with pytest.raises(QueryError, match="cannot be found"):
        spark.execute("SELECT * FROM sales.nope")


# SECURITY.md ------------------------------------------------------------------------------------------


def test_security_md_spark_figures_match_the_suite(spark_server: SparkServer) -> None:
    n = len(CORPUS)
    expected = {
        "Hostile Spark statements in the corpus": str(n),
        "Refused by the guard (sqlglot's Spark parser) before anything is sent": f"{n} / {n}",
        "Changes to databases, tables, rows and warehouse files": "0",
        "Bad targets tested, each one line without the token": str(len(bad_targets(spark_server))),
    }
    text = SECURITY_MD.read_text(encoding="utf-8")
    section = text.split("## Spark", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 2 and cells[0] not in ("What", "") and not cells[0].startswith("-"):
            rows[cells[0]] = cells[1]
    assert rows == expected

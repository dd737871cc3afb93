"""The hostile SQL corpus: every statement refused with a reason, nothing on disk changed.

`tests/data/hostile_sql.json` holds the statements, each with a `kind`; `{watch}` and
`{db}` stand for a watched directory and the DuckDB file inside it. This module proves
the two locks separately and together:

- the parser half (`guard.check`) refuses every statement on its own;
- the engine half alone (the parser deliberately bypassed) lets through exactly the
  statements marked `"engine": "permits"` (temporary objects, transactions,
  CHECKPOINT on a read-only file, ...) and even those change no byte on disk;
- `astro sql`, the route a person uses, refuses all of them with one line.

`test_security_agent.py` sends the same corpus through the model's `run_sql` tool; the
helpers here are shared with it (and with SECURITY.md's figures).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb import guard
from astro_tui.data.errors import DataError, GuardError
from tests.support.sql_corpus import CORPUS, ENGINE_PERMITS, REASON_PREFIXES, build_watched, render, snapshot

REQUIRED_KINDS = {
    "write",
    "ddl",
    "copy",
    "attach",
    "extension",
    "config",
    "export",
    "maintenance",
    "transaction",
    "file",
    "network",
    "env",
    "multi",
    "comment",
    "unicode",
    "cte",
    "explain",
    "meta",
    "unseen_sql",
    "disguised_file",
    "information",
    "nesting",
}


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("watched")
    return root, build_watched(root)


def test_corpus_is_large_and_covers_every_kind() -> None:
    kinds = {item["kind"] for item in CORPUS}
    assert len(CORPUS) >= 60
    assert kinds >= REQUIRED_KINDS, REQUIRED_KINDS - kinds
    assert len({item["sql"] for item in CORPUS}) == len(CORPUS), "duplicate statements"
    assert any("{watch}" in item["sql"] for item in CORPUS) and any("{db}" in item["sql"] for item in CORPUS)


def test_the_parser_alone_refuses_every_statement(watched: tuple[Path, Path]) -> None:
    root, db = watched
    passed = []
    for item in CORPUS:
        sql = render(item["sql"], root, db)
        try:
            guard.check(sql)
        except GuardError as exc:
            assert str(exc).startswith(REASON_PREFIXES) and "\n" not in str(exc), str(exc)
        else:
            passed.append(sql)
    assert passed == []


def test_the_engine_lock_alone_holds_with_the_parser_bypassed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Defense in depth: what the engine permits without the parser is known and harmless."""
    root = tmp_path_factory.mktemp("engine-only")
    db_path = build_watched(root)
    before = snapshot(root)
    permitted = []
    with Database.open([str(db_path)], Settings()) as db:
        for item in CORPUS:
            sql = render(item["sql"], root, db_path)
            try:
                db.engine.run(
                    sql, cap=10, timeout=5, cancel=None, guarded=False
                )  # the guard deliberately skipped
            except (DataError, TypeError):  # TypeError: DuckDB's binding rejects a lone surrogate
                continue
            permitted.append(item["sql"])
        assert db.execute("SELECT count(*), sum(amount) FROM sales.orders").rows() == [(100, 5050)]
    assert permitted == ENGINE_PERMITS
    assert snapshot(root) == before


def test_every_hostile_statement_is_refused_by_astro_sql(watched: tuple[Path, Path]) -> None:
    root, db = watched
    before = snapshot(root)
    runner = CliRunner()
    accepted = []
    for item in CORPUS:
        sql = render(item["sql"], root, db)
        result = runner.invoke(main, ["sql", sql, str(db)])
        lines = result.stderr.strip().splitlines()
        reason = lines[0].removeprefix("astro: ") if len(lines) == 1 else ""
        if result.exit_code != 1 or result.stdout or not reason.startswith(REASON_PREFIXES):
            accepted.append((sql, result.exit_code, result.stdout, result.stderr))
    assert accepted == []
    assert snapshot(root) == before


def test_parquet_targets_are_readable_only_at_their_own_paths(tmp_path: Path) -> None:
    """The documented gap, pinned: `allowed_paths` lets the engine read a Parquet target's own
    file (so the parser is the only lock on `read_parquet` of that path), and nothing beside it."""
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 1 AS a) TO '{tmp_path / 't.parquet'}'")
    con.execute(f"COPY (SELECT 2 AS secret) TO '{tmp_path / 'other.parquet'}'")
    con.close()
    own = f"SELECT * FROM read_parquet('{tmp_path / 't.parquet'}')"
    sibling = f"SELECT * FROM read_parquet('{tmp_path / 'other.parquet'}')"
    with Database.open([str(tmp_path / "t.parquet")], Settings()) as db:
        assert db.execute("SELECT * FROM t").rows() == [(1,)]
        for sql in (own, sibling):
            with pytest.raises(GuardError, match="read_parquet"):
                db.execute(sql)
        assert db.engine.run(own, cap=5, timeout=5, cancel=None, guarded=False).rows() == [
            (1,)
        ]  # the parser bypassed
        with pytest.raises(DataError, match="Permission Error"):
            db.engine.run(sibling, cap=5, timeout=5, cancel=None, guarded=False)

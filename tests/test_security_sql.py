"""The hostile SQL corpus: every statement refused with a reason, nothing on disk changed.

Sent through `astro sql` here; `test_security_agent.py` sends the same corpus through
the model's `run_sql` tool.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from astro_tui.cli import main

CORPUS_PATH = Path(__file__).parent / "data" / "hostile_sql.json"
CORPUS: list[dict[str, str]] = json.loads(CORPUS_PATH.read_text())


def snapshot(root: Path) -> dict[str, str]:
    """Every file under a watched directory with its digest."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("watched")
    db = root / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        """
        CREATE SCHEMA sales;
        CREATE TABLE sales.orders(id INTEGER PRIMARY KEY, region VARCHAR, amount DECIMAL(10,2));
        INSERT INTO sales.orders SELECT i, 'north', i FROM range(1, 101) t(i);
        CREATE VIEW sales.big AS SELECT * FROM sales.orders WHERE amount > 50;
        """
    )
    con.execute("CHECKPOINT")
    con.close()
    (root / "data.csv").write_text("a\n1\n")
    return root, db


def render(sql: str, root: Path, db: Path) -> str:
    return sql.replace("{watch}", str(root)).replace("{db}", str(db))


def test_corpus_is_large_and_covers_every_kind() -> None:
    kinds = {item["kind"] for item in CORPUS}
    assert len(CORPUS) >= 60
    assert {"write", "ddl", "copy", "attach", "extension", "config", "export", "maintenance"} <= kinds
    assert {"transaction", "file", "network", "env", "multi", "comment", "unicode", "cte"} <= kinds


def test_every_hostile_statement_is_refused_by_astro_sql(watched: tuple[Path, Path]) -> None:
    root, db = watched
    before = snapshot(root)
    runner = CliRunner()
    accepted = []
    for item in CORPUS:
        sql = render(item["sql"], root, db)
        result = runner.invoke(main, ["sql", sql, str(db)])
        lines = result.stderr.strip().splitlines()
        if result.exit_code == 0 or len(lines) != 1 or not lines[0].startswith("astro: "):
            accepted.append((sql, result.exit_code, result.stderr))
    assert accepted == []
    assert snapshot(root) == before

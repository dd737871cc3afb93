"""The hostile SQL corpus (tests/data/hostile_sql.json) and the watched database the guard tests run it on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb

from tests.support import DATA

CORPUS_PATH = DATA / "hostile_sql.json"


CORPUS: list[dict[str, str]] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))


ENGINE_PERMITS: list[str] = [item["sql"] for item in CORPUS if item.get("engine") == "permits"]


# A refusal names its reason: the guard's own words, or the engine's error class.
REASON_PREFIXES = ("refused: ", "syntax error ", "syntax error: ")
"""`syntax error at or near …` as the parser says it, or `syntax error: …` when it does not."""


def build_watched(root: Path) -> Path:
    """A small DuckDB file (schema, table, view, sequence) and a CSV beside it, in `root`."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        """
        CREATE SCHEMA sales;
        CREATE TABLE sales.orders(id INTEGER PRIMARY KEY, region VARCHAR, amount DECIMAL(10,2));
        INSERT INTO sales.orders SELECT i, 'north', i FROM range(1, 101) t(i);
        CREATE VIEW sales.big AS SELECT * FROM sales.orders WHERE amount > 50;
        CREATE SEQUENCE sales.seq;
        """
    )
    con.execute("CHECKPOINT")
    con.close()
    (root / "data.csv").write_text("a\n1\n")
    return db


def snapshot(root: Path) -> dict[str, str]:
    """Every file under a watched directory with its digest: a new or changed file shows up."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def render(sql: str, root: Path, db: Path) -> str:
    return sql.replace("{watch}", str(root)).replace("{db}", str(db))

"""A hostile DuckDB file (tests/data/hostile_duckdb_file.json): macros, views and defaults that run what
they should not, and the statements that reach them.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.support import DATA

HOSTILE_PATH = DATA / "hostile_duckdb_file.json"


HOSTILE = json.loads(HOSTILE_PATH.read_text(encoding="utf-8"))


ATTACKS: list[dict[str, str]] = HOSTILE["attacks"]


def build_hostile(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "hostile.duckdb"
    con = duckdb.connect(str(path))
    try:
        for statement in HOSTILE["definitions"]:
            con.execute(statement)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return path

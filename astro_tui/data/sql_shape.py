"""What a statement promises about its result without running it: today, whether its rows come in order.

Parsing lives here, under data/, so the layers above never name a SQL parser;
they ask the question in their own words (`astro eval` compares ordered results
in order and unordered ones as multisets).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

_SQLGLOT_DIALECTS = {"duckdb": "duckdb", "postgresql": "postgres", "spark": "spark"}


def orders_its_rows(sql: str, dialect: str = "DuckDB") -> bool:
    """True when the statement's outermost query has an ORDER BY (not one inside a subquery,
    a CTE or a window). A statement that does not parse is taken as unordered: the weaker claim."""
    read = _SQLGLOT_DIALECTS.get(dialect.lower(), dialect.lower())
    try:
        tree = sqlglot.parse_one(sql, read=read)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return False
    while isinstance(tree, exp.Subquery):
        if tree.args.get("order"):
            return True
        tree = tree.this
    return isinstance(tree, exp.Expression) and bool(tree.args.get("order"))

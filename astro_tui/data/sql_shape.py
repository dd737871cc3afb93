"""What a statement promises about its result without running it: today, whether its rows come in order.

Parsing lives here, under data/, so the layers above never name a SQL parser;
they ask the question in their own words (`astro eval` compares ordered results
in order and unordered ones as multisets).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

_SQLGLOT_DIALECTS = {"duckdb": "duckdb", "postgresql": "postgres", "spark": "spark", "spark sql": "spark"}


def _parse(sql: str, dialect: str) -> exp.Expression | None:
    read = _SQLGLOT_DIALECTS.get(dialect.lower(), dialect.lower())
    try:
        return sqlglot.parse_one(sql, read=read)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None


def orders_its_rows(sql: str, dialect: str = "DuckDB") -> bool:
    """True when the statement's outermost query has an ORDER BY (not one inside a subquery,
    a CTE or a window). A statement that does not parse is taken as unordered: the weaker claim."""
    tree = _parse(sql, dialect)
    if tree is None:
        return False
    while isinstance(tree, exp.Subquery):
        if tree.args.get("order"):
            return True
        tree = tree.this
    return isinstance(tree, exp.Expression) and bool(tree.args.get("order"))


def takes_a_limit(sql: str, dialect: str = "DuckDB") -> bool:
    """True when `sql` orders its rows at the outermost level and has no LIMIT, OFFSET or FETCH
    there: `sql LIMIT 1 OFFSET n` is then its n-th row by that order. Anything else (a
    parenthesized query, a limit already, a statement that does not parse) is False."""
    tree = _parse(sql, dialect)
    if not isinstance(tree, exp.Query) or isinstance(tree, exp.Subquery) or not tree.args.get("order"):
        return False
    return not any(tree.args.get(clause) for clause in ("limit", "offset", "fetch"))

"""Limits on SQL text checked before any parser sees it.

DuckDB's parser and libpg_query are recursive, and their JSON trees are read by
Python's recursive JSON decoder: a 10 MB run of brackets cost gigabytes in
DuckDB's parser, and 250 nested subqueries raised `RecursionError` from the
decoder. No analyst query comes near these limits.
"""

from __future__ import annotations

import re

from astro_tui.data.errors import GuardError

MAX_SQL_CHARS = 1_000_000
MAX_NESTING = 200
_BRACKETS = re.compile(r"[()]")


def check_length(sql: str) -> None:
    """Refuse SQL over MAX_SQL_CHARS: what may be handed on to a parser, or a process, at all."""
    if len(sql) > MAX_SQL_CHARS:
        raise GuardError(f"refused: the SQL is longer than {MAX_SQL_CHARS:,} characters")


def check_input(sql: str) -> None:
    """Refuse SQL over MAX_SQL_CHARS or with brackets nested deeper than MAX_NESTING; brackets
    inside string literals count too, which only errs on the side of refusing."""
    check_length(sql)
    depth = deepest = 0
    for match in _BRACKETS.finditer(sql):
        if match.group() == "(":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    if deepest > MAX_NESTING:
        raise GuardError(f"refused: brackets nested deeper than {MAX_NESTING} levels ({deepest})")


def too_deep() -> GuardError:
    """What a parser's RecursionError becomes."""
    return GuardError(f"refused: nested deeper than the parser can follow (limit {MAX_NESTING} brackets)")

"""Statements whose first rows come at once and whose rest takes long, for the first-rows tests."""

from __future__ import annotations

from astro_tui.data.engines.duckdb.fetch import BATCH


def slow_sql(rows: int, effort: int = 2000) -> str:
    """`rows` rows whose first batch comes at once and whose later ones are slow to compute
    (each 256th of them an edit distance of two strings `effort` long: the work grows as its
    square)."""
    slow = f"levenshtein(repeat('a', {effort} + i % 7), repeat('b', {effort}))"
    return (
        f"SELECT i, CASE WHEN i < {BATCH} OR i % 256 <> 0 THEN 0 ELSE {slow} END AS d FROM range({rows}) t(i)"
    )

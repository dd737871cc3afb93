"""The system prompt: a stable prefix, and a size set by schemas (capped), not by tables."""

from __future__ import annotations

import datetime as dt

from astro_tui.agent.prompts import MAX_NOTES_CHARS, cap_notes, system_prompt
from astro_tui.data.catalog_model import Catalog, Column, Schema, Table

TODAY = dt.date(2025, 6, 1)


def catalog(schemas: int, tables: int) -> Catalog:
    cols = (Column("id", "INTEGER", False), Column("name", "VARCHAR", True))
    return Catalog(
        tuple(
            Schema(None, f"s{s}", tuple(Table(None, f"s{s}", f"t{t}", "table", cols) for t in range(tables)))
            for s in range(schemas)
        )
    )


def test_prompt_does_not_grow_with_tables() -> None:
    small = system_prompt(catalog(3, 10), db_label="db", notes="", dialect="DuckDB", today=TODAY)
    large = system_prompt(catalog(3, 3_000), db_label="db", notes="", dialect="DuckDB", today=TODAY)
    assert len(large) - len(small) <= 10
    assert "s0 (3000 tables)" in large
    assert "9000 tables in all" in large


def test_schemas_are_capped() -> None:
    text = system_prompt(catalog(80, 1), db_label="db", notes="", dialect="DuckDB", today=TODAY)
    assert "s49 (1 table)" in text and "s50 (" not in text
    assert "… and 30 more schemas (use `ls /`)" in text


def test_stable_prefix_then_catalog_notes_and_date() -> None:
    a = system_prompt(catalog(2, 2), db_label="db", notes="note A", dialect="DuckDB", today=TODAY)
    b = system_prompt(
        catalog(5, 2), db_label="db", notes="note B", dialect="DuckDB", today=dt.date(2025, 6, 2)
    )
    prefix = a[: a.index("# This database")]
    assert b.startswith(prefix)
    assert "You write queries, never answers" in prefix
    assert "{{ rev.value | money }}" in prefix
    assert a.index("# This database") < a.index("note A") < a.index("Today is 2025-06-01")


def test_long_notes_are_cut_with_an_outline() -> None:
    notes = "# Notes\n\n" + "\n\n".join(f"## Part {i}\n" + "word " * 120 for i in range(12))
    capped = cap_notes(notes)
    assert len(capped) < MAX_NOTES_CHARS + 400
    assert capped.endswith("Call read_context for all of them.)")
    assert "More notes on: Part" in capped and "Part 11" in capped
    assert cap_notes("short") == "short"


def test_notes_without_line_breaks_are_still_cut() -> None:
    for notes in ("word " * 10_000, "x" * 100_000 + "\n## Later\nmore", "\n" + "y" * 100_000):
        capped = cap_notes(notes)
        assert len(capped) < MAX_NOTES_CHARS + 400, len(capped)
        assert capped.endswith("Call read_context for all of them.)")
    assert "More notes on: Later." in cap_notes("x" * 100_000 + "\n## Later\nmore")

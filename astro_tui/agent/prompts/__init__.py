"""Prompt templates shipped inside the package and rendered once per session.

The order is fixed for prompt caching: the part that never changes comes first,
then what changes per database (catalog summary), then per session (notes, date).
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from importlib import resources

import jinja2

from astro_tui.catalog.model import Catalog

MAX_SCHEMAS = 50
MAX_NOTES_CHARS = 4_000


@cache
def _template(name: str) -> jinja2.Template:
    source = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
    return env.from_string(source)


def cap_notes(notes: str, limit: int = MAX_NOTES_CHARS) -> str:
    text = notes.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit("\n", 1)[0]
    return cut + "\n… (more notes: call read_context)"


def system_prompt(
    catalog: Catalog,
    *,
    db_label: str,
    notes: str,
    today: dt.date | None = None,
    dialect: str = "DuckDB",
) -> str:
    """The system prompt; its size depends on the number of schemas (capped), not of tables."""
    summary = catalog.schema_summary()
    return (
        _template("system.md")
        .render(
            dialect=dialect,
            db_label=db_label,
            schemas=summary[:MAX_SCHEMAS],
            more_schemas=max(0, len(summary) - MAX_SCHEMAS),
            total_tables=sum(count for _, count in summary),
            notes=cap_notes(notes),
            today=(today or dt.date.today()).isoformat(),
        )
        .strip()
    )

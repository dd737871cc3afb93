"""Prompt templates shipped inside the package and rendered once per session.

The order is fixed for prompt caching: the part that never changes comes first,
then what changes per database (catalog summary), then per session (notes, date).
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from importlib import resources

import jinja2

from astro_tui.data.catalog_model import Catalog

MAX_SCHEMAS = 50
MAX_NOTES_CHARS = 2_500
MAX_OUTLINE_CHARS = 500
MAX_BARE_TABLES = 40
SMALL_NOTES_CHARS = 1_800
DIGEST_COMMENT_CHARS = 160
CHARS_PER_TOKEN = 3.5
"""A conservative average for SQL identifiers and types in the tokenizers of common models."""


@cache
def _template(name: str) -> jinja2.Template:
    source = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
    return env.from_string(source)


def cap_notes(notes: str, limit: int = MAX_NOTES_CHARS) -> str:
    """The start of the notes, cut at a paragraph, then the headings of what was left out.

    The outline tells the model what `read_context` would add, so it knows when
    the full notes are worth a call.
    """
    text = notes.strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = head.rfind("\n\n")
    if cut < limit // 2:
        cut = head.rfind("\n")
    if cut <= 0:  # no line break to cut at: cut mid-line rather than keep everything
        cut = limit
    kept, rest = text[:cut].rstrip(), text[cut:]
    headings = [line.lstrip("#").strip() for line in rest.splitlines() if line.startswith("#")]
    outline = "; ".join(h for h in headings if h)
    if len(outline) > MAX_OUTLINE_CHARS:
        outline = outline[: MAX_OUTLINE_CHARS - 1].rsplit(";", 1)[0] + "; …"
    more = f"More notes on: {outline}." if outline else "There are more notes."
    return f"{kept}\n\n({more} Call read_context for all of them.)"


def schema_digest(catalog: Catalog, budget_tokens: int) -> str | None:
    """One line per table (`schema.table(column TYPE, ...) -- comment`), or None when it would pass
    the budget: a small catalog is cheaper to show than to explore, a large one stays lazy.

    An outline (columns not read yet) is never shown: a partial digest would read as the schema."""
    if budget_tokens <= 0 or not catalog.complete:
        return None
    budget = int(budget_tokens * CHARS_PER_TOKEN)
    lines: list[str] = []
    size = 0
    for table in catalog.tables:
        columns = ", ".join(f"{c.name} {c.type}" for c in table.columns)
        prefix = f"{table.database}." if table.database else ""
        comment = f" -- {_first_sentence(table.comment)}" if table.comment else ""
        line = f"{prefix}{table.schema}.{table.name}({columns}){comment}"
        size += len(line) + 1
        if size > budget:
            return None
        lines.append(line)
    return "\n".join(lines) or None


def _first_sentence(comment: str) -> str:
    text = " ".join(comment.split())
    end = text.find(". ")
    text = text[: end + 1] if end > 0 else text
    return text if len(text) <= DIGEST_COMMENT_CHARS else text[: DIGEST_COMMENT_CHARS - 1] + "…"


def small_system_prompt(
    catalog: Catalog,
    *,
    db_label: str,
    notes: str,
    dialect: str,
    budget_tokens: int,
    today: dt.date | None = None,
) -> str:
    """The prompt of the small-model profile: one tool, the schema inline, a plain-text answer."""
    return (
        _template("small.md")
        .render(
            dialect=dialect,
            db_label=db_label,
            digest=schema_digest(catalog, budget_tokens),
            total_tables=len(catalog.tables),
            notes=cap_notes(notes, SMALL_NOTES_CHARS).replace(" Call read_context for all of them.", ""),
            today=(today or dt.date.today()).isoformat(),
        )
        .strip()
    )


def system_prompt(
    catalog: Catalog,
    *,
    db_label: str,
    notes: str,
    dialect: str,
    today: dt.date | None = None,
) -> str:
    """The system prompt; its size depends on the number of schemas (capped), not of tables."""
    summary = catalog.schema_summary()
    single = catalog.schemas[0] if len(catalog.schemas) == 1 else None
    tables = [t.name for t in single.tables] if single is not None else []
    return (
        _template("system.md")
        .render(
            dialect=dialect,
            db_label=db_label,
            schemas=summary[:MAX_SCHEMAS],
            tables=tables[:MAX_BARE_TABLES],
            more_tables=max(0, len(tables) - MAX_BARE_TABLES),
            more_schemas=max(0, len(summary) - MAX_SCHEMAS),
            total_tables=sum(count for _, count in summary),
            notes=cap_notes(notes),
            today=(today or dt.date.today()).isoformat(),
        )
        .strip()
    )

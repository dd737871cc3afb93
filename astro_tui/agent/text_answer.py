"""A plain-text answer traced to the cells of this turn's results.

A small model often cannot write a template, but can say "There are 9 regions."
after its query returned 9. Such a reply is an answer when it cites this turn's
results: each number in it is looked up among the cells the model was shown, and
is traced only when it matches exactly one of them. A traced number is shown as
the cell's value, formatted by astro the way the model wrote it, so no digit the
model typed is shown as verified; the answer is verified only when every number
is traced (the rule of every output tool), else its untraced numbers are listed.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from astro_tui.agent.events import Answer, AnswerTable
from astro_tui.agent.formatting import MODEL_ROWS
from astro_tui.agent.provenance import Source, Span
from astro_tui.agent.templates import MAX_OUTPUT_CHARS, numbers_in_text
from astro_tui.data.results import QueryResult

MIN_CITED_TEXT = 2
ROUNDED_FROM = 1_000
"""A whole number written for a fractional cell is a rounding of it only from this size on
(`1,234,568` for 1234567.89); below it, `5` for 5.4 is another number."""

_TOKEN = re.compile(r"^(?P<cur>[$€£¥]\s?)?(?P<num>[-+]?\d[\d,]*(?:\.\d+)?)(?P<pct>\s?%)?$")


@dataclass(frozen=True, slots=True)
class _Cell:
    name: str
    result: QueryResult
    row: int
    column: str
    value: Any


def traced_answer(text: str, results: Sequence[tuple[str, QueryResult]]) -> Answer | None:
    """The answer `text` makes from `results` (name, result), or None when it cites no cell."""
    text = text.strip()[:MAX_OUTPUT_CHARS]
    latest = _latest_per_sql(results)
    cells = [cell for name, result in latest for cell in _cells(name, result)]
    cited: dict[str, QueryResult] = {}
    masked = text
    for cell in cells:
        shown = _text_value(cell.value)
        if shown is None:
            continue
        found = re.search(rf"(?<!\w){re.escape(shown)}(?!\w)", masked)
        if found:
            cited.setdefault(cell.name, cell.result)
            masked = masked[: found.start()] + " " * len(shown) + masked[found.end() :]
    numeric = [cell for cell in cells if _number(cell.value) is not None]
    pieces: list[str] = []
    spans: list[Span] = []
    unverified: list[str] = []
    at = 0
    for token, start, end in _number_tokens(masked):
        matches = [(cell, shown) for cell in numeric if (shown := _written_as(cell.value, token)) is not None]
        pieces.append(text[at:start])
        at = end
        if len(matches) != 1:
            unverified.append(token)
            pieces.append(text[start:end])
            continue
        cell, shown = matches[0]
        cited.setdefault(cell.name, cell.result)
        begin = sum(len(p) for p in pieces)
        pieces.append(shown)
        source = Source(cell.name, cell.result.sql, cell.row, cell.column, cell.value)
        spans.append(Span(begin, begin + len(shown), shown, cell.value, False, (source,)))
    pieces.append(text[at:])
    if not cited:
        return None
    return Answer(
        kind="result",
        text="".join(pieces),
        tables=tuple(AnswerTable(name, result.sql, result) for name, result in cited.items()),
        unverified_numbers=tuple(dict.fromkeys(unverified)),
        provenance=tuple(spans),
        complete=not any(result.truncated for result in cited.values()),
    )


def result_answer(name: str, result: QueryResult) -> Answer:
    """A query's result as the answer: a single value is the text (with its cell as the source),
    else the row count leads the table. astro writes every character; the model wrote the SQL."""
    table = (AnswerTable(name, result.sql, result),)
    if result.row_count == 1 and len(result.columns) == 1:
        value = result.rows(1)[0][0]
        shown = _display(value)
        source = Source(name, result.sql, 0, result.columns[0], value)
        text = f"{result.columns[0]}: {shown}"
        begin = len(text) - len(shown)
        span = Span(begin, len(text), shown, value, False, (source,))
        return Answer(kind="result", text=text, tables=table, provenance=(span,))
    count = f"{result.row_count:,}"
    rows = "row" if result.row_count == 1 else "rows"
    span = Span(
        0,
        len(count),
        count,
        result.row_count,
        False,
        (Source(name, result.sql, None, None, result.row_count),),
    )
    return Answer(
        kind="result",
        text=f"{count} {rows}, shown below.",
        tables=table,
        provenance=(span,),
        complete=not result.truncated,
    )


def _display(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) < 1e15 else repr(value)
    if isinstance(value, int | decimal.Decimal) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _latest_per_sql(results: Sequence[tuple[str, QueryResult]]) -> list[tuple[str, QueryResult]]:
    """A query run twice is one source, not two ambiguous ones: its last run counts."""
    latest: dict[str, tuple[str, QueryResult]] = {}
    for name, result in results:
        latest.pop(result.sql, None)
        latest[result.sql] = (name, result)
    return list(latest.values())


def _cells(name: str, result: QueryResult) -> list[_Cell]:
    """The cells the model was shown (the first rows), the only ones it can be citing."""
    columns = result.columns
    return [
        _Cell(name, result, index, column, value)
        for index, row in enumerate(result.rows(MODEL_ROWS))
        for column, value in zip(columns, row, strict=False)
    ]


def _text_value(value: Any) -> str | None:
    """How a text or date cell reads in a sentence; numbers are matched as numbers instead."""
    if isinstance(value, str):
        value = value.strip()
        return value if len(value) >= MIN_CITED_TEXT else None
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return None


def _number_tokens(text: str) -> list[tuple[str, int, int]]:
    """Each number `numbers_in_text` sees, with where it is in `text`."""
    found: list[tuple[str, int, int]] = []
    at = 0
    for token in numbers_in_text(text):
        start = text.find(token, at)
        if start < 0:
            continue
        found.append((token, start, start + len(token)))
        at = start + len(token)
    return found


def _number(value: Any) -> decimal.Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
        return None
    try:
        number = decimal.Decimal(str(value)) if isinstance(value, float) else decimal.Decimal(value)
    except decimal.InvalidOperation:
        return None
    return number if number.is_finite() else None


def _written_as(value: Any, token: str) -> str | None:
    """The cell's value written the way `token` is (currency, separators, decimals, percent),
    when `token` is that value; else None."""
    number = _number(value)
    parsed = _TOKEN.match(token)
    if number is None or parsed is None:
        return None
    digits = parsed["num"].replace(",", "")
    try:
        written = decimal.Decimal(digits)
    except decimal.InvalidOperation:
        return None
    places = len(digits.split(".", 1)[1]) if "." in digits else 0
    candidates = [number]
    if parsed["pct"]:
        candidates.append(number * 100)  # a ratio written as a percentage
    for candidate in candidates:
        if places == 0 and candidate != candidate.to_integral_value() and abs(candidate) < ROUNDED_FROM:
            continue
        try:
            rounded = candidate.quantize(decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP)
        except decimal.InvalidOperation:
            continue
        if rounded == written:
            body = f"{rounded:,.{places}f}" if "," in parsed["num"] else f"{rounded:.{places}f}"
            return f"{parsed['cur'] or ''}{body}{parsed['pct'] or ''}"
    return None

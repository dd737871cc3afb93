"""A plain-text answer traced to the cells of this turn's results.

A small model often cannot write a template, but can say "There are 9 regions."
after its query returned 9. Such a reply is an answer when it cites this turn's
results (names a text cell, or writes a number astro traces). Each number in it is
looked up among the cells the model was shown, at the precision written, and is
traced only when exactly one cell is that number:

- where the sentence ties the number to a row (it names a text cell of that row:
  the nearest before the number, or the only row named after it), only that row's
  cells count, so numbers swapped between rows are not traced;
- a row count of a whole result is a candidate too, so "2 cities" is not traced to
  a cell that happens to hold 2 when the result has 2 rows (it is ambiguous);
- a percentage is traced to a ratio (written ×100) or to a cell of a column named as
  a percentage, never to a count.

A traced number is shown as the cell's value, formatted by astro the way the model
wrote it, so no digit the model typed is shown as verified. The answer's untraced
numbers (`agent/numbers.py`: any run of digits or number words outside a traced
span) are listed, and one makes it unverified — the rule of every output tool.
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
from astro_tui.agent.numbers import number_runs, typed_numbers
from astro_tui.agent.provenance import Source, Span
from astro_tui.agent.templates import MAX_OUTPUT_CHARS
from astro_tui.data.results import QueryResult
from astro_tui.display import groups_digits, value_text

MIN_CITED_TEXT = 2
ROUNDED_FROM = 1_000
"""A whole number written for a fractional cell is a rounding of it only from this size on
(`1,234,568` for 1234567.89); below it, `5` for 5.4 is another number."""

_TOKEN = re.compile(r"^(?P<cur>[$€£¥]\s?)?(?P<num>[-+]?\d[\d,]*(?:\.\d+)?)(?P<pct>\s?%)?$")
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s|$)|\n")
_PERCENT_COLUMN = re.compile(r"pct|percent|%", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Cell:
    """A cell the model was shown, or (`column` None) the row count of a whole result."""

    name: str
    result: QueryResult
    row: int | None
    column: str | None
    value: Any

    @property
    def source(self) -> Source:
        return Source(self.name, self.result.sql, self.row, self.column, self.value)


@dataclass(frozen=True, slots=True)
class _Mention:
    """A text cell named verbatim in the reply: the rows (input, row) that hold it."""

    start: int
    end: int
    cells: tuple[_Cell, ...]


def traced_answer(text: str, results: Sequence[tuple[str, QueryResult]]) -> Answer | None:
    """The answer `text` makes from `results` (name, result), or None when it cites no cell."""
    text = text.strip()[:MAX_OUTPUT_CHARS]
    latest = _latest_per_sql(results)
    cells = [cell for name, result in latest for cell in _cells(name, result)]
    mentions = _mentions(text, cells)
    cited: dict[str, QueryResult] = {c.name: c.result for m in mentions for c in m.cells}
    masked = list(text)
    for mention in mentions:
        masked[mention.start : mention.end] = " " * (mention.end - mention.start)
    numeric = [cell for cell in cells if _number(cell.value) is not None] + _counts(latest)
    traced = [  # a date or a code with digits, quoted from one cell
        (m.start, m.end, text[m.start : m.end], m.cells[0])
        for m in mentions
        if len(m.cells) == 1 and any(number_runs(text[m.start : m.end]))
    ]
    for start, end in number_runs("".join(masked)):
        token = text[start:end]
        candidates = _tied(text, start, mentions, numeric)
        matches = [(cell, shown) for cell in candidates if (shown := _written_as(cell, token)) is not None]
        if len(matches) == 1:
            cell, shown = matches[0]
            cited.setdefault(cell.name, cell.result)
            traced.append((start, end, shown, cell))
    pieces: list[str] = []
    spans: list[Span] = []
    at = size = 0
    for start, end, shown, cell in sorted(traced, key=lambda t: t[0]):
        before = text[at:start]
        pieces += [before, shown]
        begin = size + len(before)
        size = begin + len(shown)
        at = end
        spans.append(Span(begin, size, shown, cell.value, False, (cell.source,)))
    pieces.append(text[at:])
    if not cited:
        return None
    out = "".join(pieces)
    return Answer(
        kind="result",
        text=out,
        tables=tuple(AnswerTable(name, result.sql, result) for name, result in cited.items()),
        unverified_numbers=tuple(typed_numbers(out, ((s.start, s.end) for s in spans))),
        provenance=tuple(spans),
        complete=not any(result.truncated for result in cited.values()),
    )


def result_answer(name: str, result: QueryResult) -> Answer:
    """A query's result as the answer: a single value is the text (with its cell as the source),
    else the row count leads the table. astro writes every character; the model wrote the SQL."""
    table = (AnswerTable(name, result.sql, result),)
    if result.row_count == 1 and len(result.columns) == 1:
        value = result.rows(1)[0][0]
        shown = _display(value, result.columns[0])
        source = Source(name, result.sql, 0, result.columns[0], value)
        text = f"{result.columns[0]}: {shown}"
        begin = len(text) - len(shown)
        span = Span(begin, len(text), shown, value, False, (source,))
        typed = tuple(typed_numbers(text, [(begin, len(text))]))  # the column name is the model's alias
        return Answer(kind="result", text=text, tables=table, provenance=(span,), unverified_numbers=typed)
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


def _display(value: Any, column: str) -> str:
    """The cell as every front end shows it (`display.value_text`)."""
    if value is None:
        return "NULL"
    shown = value_text(value, grouping=groups_digits(column))
    return shown if shown is not None else str(value)


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


def _counts(latest: Sequence[tuple[str, QueryResult]]) -> list[_Cell]:
    """The row count of each whole result of more than one row: "2 cities" may be one."""
    return [
        _Cell(name, result, None, None, result.row_count)
        for name, result in latest
        if not result.truncated and result.row_count > 1
    ]


def _mentions(text: str, cells: Sequence[_Cell]) -> list[_Mention]:
    """Every place the reply names a text or date cell, longest names first, not overlapping."""
    by_text: dict[str, list[_Cell]] = {}
    for cell in cells:
        shown = _text_value(cell.value)
        if shown is not None:
            by_text.setdefault(shown, []).append(cell)
    taken = [False] * len(text)
    found: list[_Mention] = []
    for shown in sorted(by_text, key=len, reverse=True):
        for match in re.finditer(rf"(?<!\w){re.escape(shown)}(?!\w)", text):
            if any(taken[match.start() : match.end()]):
                continue
            taken[match.start() : match.end()] = [True] * (match.end() - match.start())
            found.append(_Mention(match.start(), match.end(), tuple(by_text[shown])))
    return sorted(found, key=lambda m: m.start)


def _tied(text: str, at: int, mentions: Sequence[_Mention], numeric: list[_Cell]) -> list[_Cell]:
    """The cells a number at `at` may be: those of the row its sentence ties it to (the row named
    nearest before it, else the one row named after it), or every cell when it names no row.
    A sentence naming several rows only after the number ties it to none of them: no cell."""
    begin = max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0)
    found = _SENTENCE_END.search(text, at)
    end = found.start() if found is not None else len(text)
    inside = [m for m in mentions if begin <= m.start and m.end <= end]
    if not inside:
        return numeric
    before = [m for m in inside if m.end <= at]
    if before:
        rows = _rows(before[-1])
    else:
        named = [_rows(m) for m in inside]
        if any(r != named[0] for r in named):
            return []
        rows = named[0]
    return [cell for cell in numeric if (cell.name, cell.row) in rows]


def _rows(mention: _Mention) -> set[tuple[str, int | None]]:
    return {(cell.name, cell.row) for cell in mention.cells}


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


def _number(value: Any) -> decimal.Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal):
        return None
    try:
        number = decimal.Decimal(str(value)) if isinstance(value, float) else decimal.Decimal(value)
    except decimal.InvalidOperation:
        return None
    return number if number.is_finite() else None


def _written_as(cell: _Cell, token: str) -> str | None:
    """The cell's value written the way `token` is (currency, separators, decimals, percent),
    when `token` is that value; else None. A percentage is a ratio written ×100, or the value of
    a column named as a percentage; never a count."""
    number = _number(cell.value)
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
        percent_column = cell.column is not None and _PERCENT_COLUMN.search(cell.column) is not None
        candidates = [number * 100, number] if percent_column else [number * 100]
        if cell.column is None:
            candidates = []
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

"""Where a value in an answer comes from: the input, the SQL as executed, the row, the column, the raw value.

The template renderer never hands a template a bare value from a result. Each cell
it reads is *traced*: an `int`, `float`, `Decimal`, `str`, date … subclass (NULL and
booleans cannot be subclassed, so they get small stand-ins) that carries a `Trace`.
Subclasses, rather than wrapper objects, because Jinja's filters, comparisons and
formatting then work on them unchanged; the sandbox only has to re-trace what a
filter, an operator or a method returns. Text built from several values
(`a ~ ', ' ~ b`, `join`) is a `TracedStr` holding one span per value, so the
renderer can tell which characters of the answer each value became.

A result cut by a limit is marked on every trace that comes from it (`Trace.cut`):
the renderer refuses to count or aggregate over such values and reports the answer
incomplete when any of them was read.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from astro_tui.data.text_table import json_safe

if TYPE_CHECKING:
    from astro_tui.data.results import QueryResult

MAX_SOURCES = 100
"""Sources kept per value; a sum over more rows keeps the first ones and counts the rest."""


# --------------------------------------------------------------------------- public records


@dataclass(slots=True)
class Source:
    """One place in a result: a cell; a whole row when `column` is None; the whole result (its row
    count) when `row` is None as well. Not frozen only because a frozen dataclass costs four
    times as much to make, and a listing makes one per value: treat it as immutable."""

    input: str
    sql: str
    row: int | None
    column: str | None
    value: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "sql": self.sql,
            "row": self.row,
            "column": self.column,
            "value": json_safe(self.value),
        }


@dataclass(slots=True)
class Span:
    """A stretch of the answer text that came from the data: `answer[start:end] == text`.

    `value` is the raw value (a cell's, or what the template computed when `derived`);
    `more_sources` counts sources left out past `MAX_SOURCES`. Immutable by convention, like `Source`.
    """

    start: int
    end: int
    text: str
    value: Any
    derived: bool
    sources: tuple[Source, ...]
    more_sources: int = 0

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "value": json_safe(self.value),
            "derived": self.derived,
            "sources": [s.to_json() for s in self.sources],
        }
        if self.more_sources:
            record["more_sources"] = self.more_sources
        return record


# --------------------------------------------------------------------------- traces


class InputRef:
    """One input of a render: its name and result, shared by every value read from it."""

    __slots__ = ("cut", "name", "read", "result", "sql")

    def __init__(self, name: str, result: QueryResult) -> None:
        self.name = name
        self.result = result
        self.sql = result.sql
        self.cut = result.truncated
        self.read = False


class Trace:
    """Where one value came from. `cut` is an input cut by a limit that fed it, if any; `typed`
    marks a value the template computed with a literal among its operands (the model typed it)."""

    __slots__ = ()
    sources: tuple[Source, ...] = ()
    derived = False
    value: Any = None
    cut: InputRef | None = None
    more = 0
    typed = False


class CellTrace(Trace):
    """One cell, read as the template reads it: built on every access, so it stays small and its
    `Source` is made only when asked for."""

    __slots__ = ("column", "ref", "row", "value")

    def __init__(self, ref: InputRef, row: int, column: str, value: Any) -> None:
        self.ref = ref
        self.row = row
        self.column = column
        self.value = value

    @property
    def sources(self) -> tuple[Source, ...]:  # type: ignore[override]
        return (Source(self.ref.name, self.ref.sql, self.row, self.column, self.value),)

    @property
    def cut(self) -> InputRef | None:  # type: ignore[override]
        return self.ref if self.ref.cut else None


class Computed(Trace):
    __slots__ = ("cut", "derived", "more", "sources", "typed", "value")

    def __init__(
        self,
        sources: tuple[Source, ...],
        derived: bool,
        value: Any,
        cut: InputRef | None = None,
        more: int = 0,
        typed: bool = False,
    ) -> None:
        self.sources = sources
        self.derived = derived
        self.value = value
        self.cut = cut
        self.more = more
        self.typed = typed


TYPED = Computed((), True, None, typed=True)


class FromInput:
    """Read from an input as a whole rather than as one value: a row, the list of its rows."""

    __slots__ = ()

    def _input(self) -> InputRef | None:
        raise NotImplementedError


def cell_trace(ref: InputRef, row: int, column: str, value: Any) -> Trace:
    return CellTrace(ref, row, column, value)


def count_trace(ref: InputRef, count: int) -> Trace:
    """The number of rows of a whole (uncut) result."""
    return Computed((Source(ref.name, ref.sql, None, None, count),), True, count)


def row_trace(ref: InputRef, row: int) -> Trace:
    return Computed((Source(ref.name, ref.sql, row, None, None),), True, None, ref if ref.cut else None)


def merge(traces: Iterable[Trace | None], value: Any, *, derived: bool = True) -> Trace | None:
    """One trace for a value computed from others: all their sources (deduplicated, capped)."""
    data: list[Trace] = []
    for trace in traces:
        if trace is None:
            continue
        if trace.typed:  # one operand the model typed makes the whole value its own
            return TYPED
        data.append(trace)
    if not data:
        return None
    if len(data) == 1 and not derived:
        return data[0]
    seen: dict[tuple[str, int | None, str | None], Source] = {}
    more = 0
    cut: InputRef | None = None
    for trace in data:
        cut = cut or trace.cut
        more += trace.more
        for source in trace.sources:
            key = (source.input, source.row, source.column)
            if key in seen:
                continue
            if len(seen) < MAX_SOURCES:
                seen[key] = source
            else:
                more += 1
    return Computed(tuple(seen.values()), True, plain(value), cut, more)


# --------------------------------------------------------------------------- traced values


class Traced:
    """Marker of a traced value; `_trace` is None on instances Python made by arithmetic on one."""

    __slots__ = ()
    _trace: Trace | None = None

    def _plain(self) -> Any:
        raise NotImplementedError


class TracedInt(Traced, int):
    def _plain(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return int.__repr__(self)


class TracedFloat(Traced, float):
    def _plain(self) -> float:
        return float(self)

    def __repr__(self) -> str:
        return float.__repr__(self)


class TracedDecimal(Traced, decimal.Decimal):
    def _plain(self) -> decimal.Decimal:
        return decimal.Decimal(self)

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedBytes(Traced, bytes):
    def _plain(self) -> bytes:
        return bytes(self)

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedDate(Traced, dt.date):
    def _plain(self) -> dt.date:
        return dt.date(self.year, self.month, self.day)

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedDatetime(Traced, dt.datetime):
    def _plain(self) -> dt.datetime:
        return dt.datetime(
            self.year, self.month, self.day, self.hour, self.minute, self.second,
            self.microsecond, self.tzinfo, fold=self.fold,
        )  # fmt: skip

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedTime(Traced, dt.time):
    def _plain(self) -> dt.time:
        return dt.time(self.hour, self.minute, self.second, self.microsecond, self.tzinfo, fold=self.fold)

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedTimedelta(Traced, dt.timedelta):
    def _plain(self) -> dt.timedelta:
        return dt.timedelta(self.days, self.seconds, self.microseconds)

    def __repr__(self) -> str:
        return repr(self._plain())


class TracedList(Traced, list):  # type: ignore[type-arg]
    """A list-valued cell: traced as a whole (its items are not)."""

    def _plain(self) -> list[Any]:
        return list(self)


class TracedDict(Traced, dict):  # type: ignore[type-arg]
    def _plain(self) -> dict[Any, Any]:
        return dict(self)


class TracedStr(Traced, str):
    """Text with the spans of the values in it: a whole text cell (`_trace`), or text composed of
    pieces (`_spans`, relative to this text). `str()` returns it unchanged, so it survives Jinja's
    output path."""

    _spans: tuple[tuple[int, int, Trace], ...] = ()

    def _plain(self) -> str:
        return str.__str__(self)

    def __str__(self) -> TracedStr:
        return self

    def __repr__(self) -> str:
        return repr(self._plain())

    def _spans_in(self) -> tuple[tuple[int, int, Trace], ...]:
        if self._trace is not None:
            return ((0, len(self), self._trace),) if len(self) else ()
        return self._spans


class TracedNull(Traced):
    """A NULL cell: falsy, equal to None, printed like None."""

    __slots__ = ("_trace",)

    def __init__(self, trace: Trace) -> None:
        self._trace = trace

    def _plain(self) -> None:
        return None

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return plain(other) is None

    def __hash__(self) -> int:
        return hash(None)

    def __str__(self) -> str:
        return "None"

    __repr__ = __str__


class TracedOther(Traced):
    """A cell of a type Python cannot subclass or astro does not know (an interval, a UUID):
    printed, compared and hashed as the value; attributes and items are read from the value."""

    __slots__ = ("_trace", "_value")

    def __init__(self, value: Any, trace: Trace) -> None:
        self._value = value
        self._trace = trace

    def _plain(self) -> Any:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return bool(plain(other) == self._value)

    def __hash__(self) -> int:
        return hash(self._value)

    def __str__(self) -> str:
        return str(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


class TracedBool(Traced):
    """A boolean cell (`bool` cannot be subclassed)."""

    __slots__ = ("_trace", "_value")

    def __init__(self, value: bool, trace: Trace) -> None:
        self._value = value
        self._trace = trace

    def _plain(self) -> bool:
        return self._value

    def __bool__(self) -> bool:
        return self._value

    def __eq__(self, other: object) -> bool:
        return plain(other) == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return int(self._value)

    def __float__(self) -> float:
        return float(self._value)

    def __str__(self) -> str:
        return str(self._value)

    __repr__ = __str__


_SUBCLASSES: dict[type, type[Traced]] = {
    int: TracedInt,
    float: TracedFloat,
    decimal.Decimal: TracedDecimal,
    str: TracedStr,
    bytes: TracedBytes,
    dt.date: TracedDate,
    dt.datetime: TracedDatetime,
    dt.time: TracedTime,
    dt.timedelta: TracedTimedelta,
    list: TracedList,
    dict: TracedDict,
}


_SIMPLE = frozenset({TracedInt, TracedFloat, TracedDecimal, TracedStr, TracedBytes, TracedList, TracedDict})


def traced(value: Any, trace: Trace | None) -> Any:
    """`value` carrying `trace`: a subclass of its type, or a stand-in."""
    if trace is None:
        return value
    cls = _SUBCLASSES.get(type(value))
    if cls in _SIMPLE:
        obj: Any = cls(value)  # type: ignore[misc]
    elif value is None:
        return TracedNull(trace)
    elif type(value) is bool:
        return TracedBool(value, trace)
    elif isinstance(value, Traced):
        return traced(value._plain(), trace)
    elif cls is None:
        return TracedOther(value, trace)
    elif cls is TracedDatetime:
        obj = TracedDatetime(
            value.year, value.month, value.day, value.hour, value.minute, value.second,
            value.microsecond, value.tzinfo, fold=value.fold,
        )  # fmt: skip
    elif cls is TracedDate:
        obj = TracedDate(value.year, value.month, value.day)
    elif cls is TracedTime:
        obj = TracedTime(
            value.hour, value.minute, value.second, value.microsecond, value.tzinfo, fold=value.fold
        )
    elif cls is TracedTimedelta:
        obj = TracedTimedelta(value.days, value.seconds, value.microseconds)
    else:  # pragma: no cover - every subclass is handled above
        return value
    obj._trace = trace
    return obj


def plain(value: Any) -> Any:
    """The value without its trace, as the database gave it (or as Python computed it)."""
    return value._plain() if isinstance(value, Traced) else value


def unproxy(value: Any) -> Any:
    """The stand-ins (NULL, booleans, other types) as their values; traced subclasses already
    behave as their base type."""
    return value._plain() if isinstance(value, TracedNull | TracedBool | TracedOther) else value


def traces_of(value: Any) -> list[Trace]:
    if not isinstance(value, Traced):
        return []
    if value._trace is not None:
        return [value._trace]
    if isinstance(value, TracedStr):
        return [trace for _, _, trace in value._spans]
    return []


def cut_of(value: Any) -> InputRef | None:
    """The cut input a value (or the items of a list of values) was read from, if any."""
    if isinstance(value, Traced):
        for trace in traces_of(value):
            if trace.cut is not None:
                return trace.cut
        return None
    if isinstance(value, FromInput):
        ref = value._input()
        return ref if ref is not None and ref.cut else None
    if isinstance(value, list | tuple):
        for item in value:
            found = cut_of(item)
            if found is not None:
                return found
    return None


class TextBuilder:
    """Text put together piece by piece, keeping the spans of the traced pieces."""

    __slots__ = ("at", "pieces", "spans")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.spans: list[tuple[int, int, Trace]] = []
        self.at = 0

    def add(self, part: str) -> None:
        size = len(part)
        if isinstance(part, TracedStr):
            whole = part._trace
            if whole is not None:
                if size:
                    self.spans.append((self.at, self.at + size, whole))
            else:
                at = self.at
                for start, end, trace in part._spans:
                    self.spans.append((at + start, at + end, trace))
        self.pieces.append(part)
        self.at += size

    def add_value(self, value: Traced, none: str) -> None:
        """A traced scalar as the answer shows it (what `scalar_text` makes, without making it)."""
        raw = value._plain()
        text = none if raw is None else raw if isinstance(raw, str) else str(raw)
        if text and value._trace is not None:
            self.spans.append((self.at, self.at + len(text), value._trace))
        self.pieces.append(text)
        self.at += len(text)

    def build(self) -> str:
        text = "".join(self.pieces)
        if not self.spans:
            return text
        out = TracedStr(text)
        out._spans = tuple(self.spans)
        return out


def compose(parts: Iterable[str]) -> str:
    """Join text pieces, keeping the spans of traced ones at their new offsets."""
    builder = TextBuilder()
    for part in parts:
        builder.add(part)
    return builder.build()


def scalar_text(value: Traced, none: str) -> str:
    """A traced scalar as the answer shows it, one span over all of it."""
    raw = value._plain()
    if raw is None:
        text = none
    elif isinstance(value, TracedStr):
        return value
    else:
        text = str(raw)
    if not text or value._trace is None:
        return text
    out = TracedStr(text)
    out._trace = value._trace
    return out


def repr_text(value: Any) -> str:
    """How an item of a printed list reads (Python's repr); a string's span covers the text
    inside its quotes."""
    if not isinstance(value, Traced) or value._trace is None:
        return repr(value)
    raw = value._plain()
    shown = repr(raw)
    if isinstance(raw, str) and shown[1:-1] == raw and raw:
        return compose((shown[0], scalar_text(value, "None"), shown[-1]))
    out = TracedStr(shown)
    out._trace = value._trace
    return out


# --------------------------------------------------------------------------- the answer's spans


def answer_spans(pieces: Sequence[tuple[int, int, Trace]], text: str, offset: int) -> tuple[Span, ...]:
    """Spans over `text` (the rendered output with `offset` characters stripped from its start);
    a value the template computed with a literal operand has none (it is the model's)."""
    spans: list[Span] = []
    for start, end, trace in pieces:
        start, end = max(0, start - offset), min(len(text), end - offset)
        if end > start and not trace.typed:
            piece = text[start:end]
            spans.append(Span(start, end, piece, trace.value, trace.derived, trace.sources, trace.more))
    return tuple(spans)


def cut_note(cut: Iterable[tuple[str, QueryResult]]) -> str:
    """What the answer says when values came from results cut by the row cap (name, result)."""
    parts = []
    for name, result in cut:
        shown = result.row_count
        total = (
            f"{result.total_rows:,}"
            if result.total_rows is not None and result.total_rows > shown
            else f"more than {shown:,}"
        )
        parts.append(f"the first {shown:,} of {total} rows of {name}")
    return f"(Shows {' and '.join(parts)}: the row cap cut the result.)" if parts else ""


class AnsweredInput(Protocol):
    """An answer's input as a saved answer keeps it (events.py's `AnswerTable`)."""

    @property
    def name(self) -> str: ...
    @property
    def sql(self) -> str: ...


class Answered(Protocol):
    """What this module reads of an agent's `Answer` (events.py), named here because events
    imports `Span` from this module and imports point one way."""

    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def verified(self) -> bool: ...
    @property
    def complete(self) -> bool: ...
    @property
    def provenance(self) -> tuple[Span, ...]: ...
    @property
    def unverified_numbers(self) -> tuple[str, ...]: ...
    @property
    def tables(self) -> Sequence[AnsweredInput]: ...


def provenance_json(answer: Answered | None) -> dict[str, Any]:
    """`provenance` and `complete` of `astro ask --json` (complete is null without an answer)."""
    if answer is None:
        return {"provenance": [], "complete": None}
    return {"provenance": [span.to_json() for span in answer.provenance], "complete": answer.complete}


# --------------------------------------------------------------------------- verified

FROM_DATA = frozenset({"result", "observation", "chart"})
"""Answer kinds an output tool made by running its queries; a message or plain text is not one."""


def is_verified(kind: str, unverified_numbers: Sequence[str]) -> bool:
    """The one meaning of `verified`, wherever it is shown or sent (app, `astro ask --json`, MCP,
    replay, the Python API): the answer came from queries astro ran, and every number in it was
    traced to a cell. A number that was not (typed by the model) is listed in
    `unverified_numbers`, and one such number makes the whole answer unverified."""
    return kind in FROM_DATA and not unverified_numbers


# --------------------------------------------------------------------------- saved answers


@dataclass(frozen=True, slots=True)
class SavedAnswer:
    """What a saved conversation keeps of an answer: its text and where each value came from.

    The values are as JSON holds them (decimals and dates as text); the query results are not
    kept. `inputs` is every input's SQL as executed (name, SQL), which sources name.
    """

    kind: str
    text: str
    complete: bool
    provenance: tuple[Span, ...]
    unverified_numbers: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()

    @property
    def verified(self) -> bool:
        return is_verified(self.kind, self.unverified_numbers)


SAVED_UNVERIFIED = "(saved as not verified)"
"""Stands for the typed numbers of an answer saved as unverified before they were kept."""


def saved_answer(answer: Answered) -> SavedAnswer:
    return SavedAnswer(
        kind=answer.kind,
        text=answer.text,
        complete=answer.complete,
        provenance=answer.provenance,
        unverified_numbers=answer.unverified_numbers,
        inputs=tuple((t.name, t.sql) for t in answer.tables),
    )


def answer_record(saved: SavedAnswer) -> dict[str, Any]:
    """The saved answer as one JSON object, each SQL written once rather than once per source."""
    inputs: dict[str, str] = dict(saved.inputs)
    spans = []
    for span in saved.provenance:
        sources = []
        for source in span.sources:
            inputs.setdefault(source.input, source.sql)
            sources.append([source.input, source.row, source.column, json_safe(source.value)])
        spans.append([span.start, span.end, json_safe(span.value), span.derived, sources, span.more_sources])
    return {
        "kind": saved.kind,
        "text": saved.text,
        "verified": saved.verified,
        "unverified_numbers": list(saved.unverified_numbers),
        "complete": saved.complete,
        "inputs": inputs,
        "spans": spans,
    }


def answer_from_record(record: Any) -> SavedAnswer:
    """Read back `answer_record`; raises ValueError when the record is not one."""
    try:
        return _answer_from_record(record)
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc) or "not an answer record") from None


def _answer_from_record(record: Any) -> SavedAnswer:
    if not isinstance(record, Mapping):
        raise ValueError("not an object")
    text, inputs = record.get("text"), record.get("inputs", {})
    if not isinstance(text, str) or not isinstance(inputs, Mapping):
        raise ValueError("no text")
    spans: list[Span] = []
    for item in record.get("spans", []):
        start, end, value, derived, sources, more = item
        if not (_whole(start) and _whole(end) and 0 <= start < end <= len(text) and _whole(more)):
            raise ValueError("a span outside the text")
        cited = []
        for name, row, column, cell in sources:
            sql = inputs.get(name)
            if not isinstance(sql, str) or not (row is None or _whole(row)):
                raise ValueError("a source without its input")
            if not (column is None or isinstance(column, str)):
                raise ValueError("a source whose column is not a name")
            cited.append(Source(name, sql, row, column, cell))
        spans.append(Span(start, end, text[start:end], value, bool(derived), tuple(cited), more))
    typed = record.get("unverified_numbers", [])
    if not isinstance(typed, list) or not all(isinstance(n, str) for n in typed):
        raise ValueError("unverified numbers that are not texts")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
        raise ValueError("an input without its SQL")
    # An answer saved as unverified before its typed numbers were kept stays unverified.
    kind = str(record.get("kind", "result"))
    if record.get("verified") is False and is_verified(kind, tuple(typed)):
        typed.append(SAVED_UNVERIFIED)
    return SavedAnswer(
        kind=kind,
        text=text,
        complete=bool(record.get("complete", True)),
        provenance=tuple(spans),
        unverified_numbers=tuple(typed),
        inputs=tuple(inputs.items()),
    )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0

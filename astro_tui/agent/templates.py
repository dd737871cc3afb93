"""Answer templates: Jinja in an immutable sandbox over query results, with bounded work.

The template is the only place the model lays out data for the person, so it is
untrusted code. Beyond Jinja's own sandbox (no `_` attributes, no mutation):

- only a short list of filters and string/dict methods can be called, so nothing
  like `'x'.center(10**9)` or `'%999999999s' % 1` can allocate gigabytes;
- every `for` loop, filter application and call is charged to a work budget, and
  the budget also carries a wall-clock deadline;
- `*`, `**`, `+`, `%` and `~` check the size of what they build;
- macros, includes and imports are refused outright;
- the output is cut off with an error past a fixed size.

Which numbers the model typed is decided on the rendered text (`agent/numbers.py`):
every number in it that does not lie within the span of a value rendered from a cell
is reported, so the UI marks it unverified — however the template built it (a
literal, `'4' ~ '2'`, `[40, 2]|sum`, a loop counter over a literal list). A value
computed in the template is traced to its cells only when all its operands are
cells: one literal operand (`n * 100`, `n * 0 + 42`) or a filter argument with a
number in it (`replace(x, '42')`) makes it typed.

Every value the template reads from a result is traced (`agent/provenance.py`), so
the rendered text comes with the span of each value in it and where the value came
from. A result cut by the row cap can be listed but not counted: `row_count`,
`|length`, `|sum`, `|max`, `loop.length` … over its rows are refused with the fix
(count it in SQL), and an answer that read it is marked incomplete.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import decimal
import functools
import math
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import (
    StrictUndefined,
    Template,
    TemplateSyntaxError,
    Undefined,
    UndefinedError,
    nodes,
    pass_environment,
)
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.environment import Environment
from jinja2.exceptions import SecurityError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from jinja2.filters import make_attrgetter
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from astro_tui.agent.numbers import numbers_in_text, typed_numbers
from astro_tui.agent.provenance import (
    MAX_SOURCES,
    TYPED,
    Computed,
    FromInput,
    InputRef,
    Source,
    Span,
    TextBuilder,
    Trace,
    Traced,
    TracedStr,
    answer_spans,
    cell_trace,
    compose,
    count_trace,
    cut_of,
    merge,
    plain,
    repr_text,
    row_trace,
    scalar_text,
    traced,
    traces_of,
    unproxy,
)
from astro_tui.data.results import QueryResult
from astro_tui.errors import AstroError, error_line

MAX_OUTPUT_CHARS = 20_000
MAX_SIZE = 100_000
MAX_WORK = 500_000
MAX_SECONDS = 2.0
MAX_INT_BITS = 4_096
MISSING = "—"


class TemplateError(AstroError):
    """Why a template could not be rendered, phrased for the model to fix it."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """The text, the numbers the model typed, where each value in the text came from, and the
    inputs cut by a limit that the template read (`complete` is False when there are any)."""

    text: str
    unverified_numbers: tuple[str, ...]
    spans: tuple[Span, ...] = ()
    cut: tuple[InputRef, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.cut


# --------------------------------------------------------------------------- plain data


class Row(Mapping[str, Any], FromInput):
    """One result row; `row.region` and `row['total revenue']` both work, names case-insensitively.

    A value is traced when it is first read, so a loop that shows two columns of a wide
    row pays for two.
    """

    __slots__ = ("_index", "_read", "_ref", "_values")

    def __init__(self, values: dict[str, Any], ref: InputRef | None = None, index: int = 0) -> None:
        self._values = values
        self._ref = ref
        self._index = index
        self._read: dict[str, Any] | None = None

    def _input(self) -> InputRef | None:
        return self._ref

    def _key(self, key: object) -> str | None:
        if type(key) is not str:
            if not isinstance(key, str):
                return None
            key = str.__str__(key)
        if key in self._values:
            return key
        lowered = key.lower()
        return next((name for name in self._values if name.lower() == lowered), None)

    def __getitem__(self, key: str) -> Any:
        read = self._read
        if read is not None and type(key) is str and key in read:
            return read[key]
        name = self._key(key)
        if name is None:
            raise KeyError(key)
        value = self._values[name]
        if self._ref is None:
            return value
        value = traced(value, cell_trace(self._ref, self._index, name, value))
        if read is None:
            read = self._read = {}
        read[name] = value
        return value

    def __contains__(self, key: object) -> bool:
        return self._key(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __str__(self) -> str:
        return ", ".join(f"{k}={_display(v)}" for k, v in self._values.items())

    __repr__ = __str__


class RowList(list[Row], FromInput):
    """All the rows of one input, as `name.rows` gives them: counting them needs the result whole."""

    __slots__ = ("_ref",)

    def __init__(self, rows: Iterable[Row], ref: InputRef) -> None:
        super().__init__(rows)
        self._ref = ref

    def _input(self) -> InputRef:
        return self._ref


class ResultView:
    """What a template sees for one input: the values, never the connection or the SQL."""

    __slots__ = ("_ref", "_rows")

    def __init__(self, ref: InputRef) -> None:
        self._ref = ref
        self._rows: RowList | None = None

    @property
    def _result(self) -> QueryResult:
        return self._ref.result

    @property
    def value(self) -> Any:
        self._ref.read = True
        table = self._result.table
        if table.num_rows == 0 or table.num_columns == 0:
            return None
        value = table.column(0)[0].as_py()
        return traced(value, cell_trace(self._ref, 0, table.column_names[0], value))

    @property
    def rows(self) -> RowList:
        self._ref.read = True
        if self._rows is None:
            ref = self._ref
            self._rows = RowList((Row(r, ref, i) for i, r in enumerate(self._result.records())), ref)
        return self._rows

    @property
    def columns(self) -> list[str]:
        return self._result.columns

    @property
    def row_count(self) -> int:
        count = self._result.row_count
        if self._ref.cut:
            raise refused(self._ref, f"`{self._ref.name}.row_count`")
        return traced(count, count_trace(self._ref, count))  # type: ignore[no-any-return]

    @property
    def truncated(self) -> bool:
        return self._result.truncated

    def column_value(self, name: str) -> Any:
        """A column of the first row: `rev.revenue` reads naturally for one-row results."""
        self._ref.read = True
        if self._result.row_count == 0:
            return None
        return self.rows[0][name]

    def has_column(self, name: str) -> bool:
        lowered = name.lower()
        return any(c.lower() == lowered for c in self._result.columns)

    def __str__(self) -> str:
        return str(_view_text(self, MISSING))


INPUT_ATTRIBUTES = frozenset({"value", "rows", "columns", "row_count"})
"""What `name.<attribute>` means for an input; any other name after the dot is a column."""


def ambiguous(view: ResultView, attribute: str) -> TemplateError:
    """A column named like an input attribute: either reading would be a guess."""
    name = view._ref.name
    column = next(c for c in view.columns if c.lower() == attribute.lower())
    meaning = {
        "value": "its first column in the first row",
        "rows": "its list of rows",
        "columns": "its column names",
        "row_count": "its number of rows",
    }[attribute]
    return TemplateError(
        f"input '{name}' has a column named '{column}', so `{name}.{attribute}` is ambiguous "
        f"(`.{attribute}` is {meaning}). For the column write `{name}[{column!r}]` (the first row) "
        f"or `{name}.rows[0][{column!r}]`; for `.{attribute}`, rename the column in the SQL "
        f"(`AS {column}_1`)."
    )


def refused(ref: InputRef, what: str) -> TemplateError:
    """Counting or aggregating the rows of a cut result would state a wrong total."""
    return TemplateError(
        f"input '{ref.name}' holds only {ref.result.count_text()} (the row cap cut it), so {what} "
        "would count or aggregate only the rows that were read, not all of the query's; count it "
        "in SQL instead (an input such as `SELECT count(*) AS n FROM …`, or the sum/max in the "
        "query) and render that value. Listing the first rows of a cut result is allowed."
    )


def _display(value: Any) -> str:
    return MISSING if unproxy(value) is None else str(value)


def _text(value: Any, none: str) -> Any:
    """What `{{ value }}` writes: traced text keeps its spans; other values go to `str()`."""
    if isinstance(value, TracedStr):
        return value
    if isinstance(value, Traced):
        return scalar_text(value, none)
    if value is None:
        return none
    if isinstance(value, Row):
        parts: list[str] = []
        for i, name in enumerate(value):
            parts += [", " if i else "", f"{name}=", _text(value[name], MISSING)]
        return compose(parts)
    if isinstance(value, ResultView):
        return _view_text(value, none)
    if isinstance(value, list | tuple) and any(isinstance(v, Traced | Row) for v in value):
        _charge(len(value))
        items = [_text(v, MISSING) if isinstance(v, Row) else repr_text(v) for v in value]
        if isinstance(value, list):
            return compose(["[", *_separated(items, ", "), "]"])
        return compose(["(", *_separated(items, ", "), ",)" if len(items) == 1 else ")"])
    return value


def _separated(items: Iterable[str], separator: str) -> Iterator[str]:
    for i, item in enumerate(items):
        if i:
            yield separator
        yield item


def _view_text(view: ResultView, none: str) -> str:
    result = view._result
    if result.row_count == 1 and len(result.columns) == 1:
        return str(_text(view.value, none))
    lines: list[str] = [" | ".join(view.columns)]
    for row in view.rows[:50]:
        lines += ["\n", *_separated((_text(v, MISSING) for v in row.values()), " | ")]
    return compose(lines)


# --------------------------------------------------------------------------- the budget


class _Budget:
    """The work left for one render, and what the render learnt about its loops."""

    __slots__ = ("any_cut", "deadline", "left", "loops", "ticks")

    def __init__(self, work: int, seconds: float, *, any_cut: bool = True) -> None:
        self.left = work
        self.deadline = time.monotonic() + seconds
        self.ticks = 0
        self.any_cut = any_cut  # without a cut input, nothing needs checking for one
        self.loops: dict[LoopContext, tuple[_LoopItems | None, bool]] = {}

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise TemplateError(
                "the template does too much work (loops over too many items); "
                "aggregate in SQL and loop over fewer rows"
            )
        self.ticks += 1
        # the clock is read every 256 charges, and on every large one (a filter over many rows)
        if (units >= 64 or self.ticks & 255 == 0) and time.monotonic() > self.deadline:
            raise TemplateError(f"the template took longer than {MAX_SECONDS:g} s to render; simplify it")


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "astro_template_budget", default=None
)


def _charge(units: int = 1) -> None:
    budget = _budget.get()
    if budget is not None:
        budget.charge(max(1, units))


def _size_of(value: Any) -> int:
    try:
        return len(value) if isinstance(value, str | list | tuple | dict | Row) else 1
    except TypeError:
        return 1


def _check_size(value: Any) -> Any:
    if isinstance(value, str | list | tuple) and len(value) > MAX_SIZE:
        raise TemplateError(f"the template built a value longer than {MAX_SIZE:,} items or characters")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise TemplateError("the template built a number too large to print")
    return value


def _counted(iterable: Any) -> Iterator[Any]:
    """Every loop iteration costs one unit: `for` loops are rewritten to go through here."""
    budget = _budget.get()
    for item in iterable:
        if budget is not None:
            budget.charge(1)
        yield item


def _bounded_range(*args: int) -> Iterator[int]:
    return _counted(range(*args))


# --------------------------------------------------------------------------- filters


def _to_number(value: Any, filter_name: str) -> int | float | decimal.Decimal:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | decimal.Decimal):
        return value
    if isinstance(value, str):
        try:
            return decimal.Decimal(value.replace(",", "").strip())
        except decimal.InvalidOperation:
            pass
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    raise TemplateError(f"the {filter_name} filter needs a number, got {shown}")


def _check_decimals(decimals: Any) -> int:
    if not isinstance(decimals, int) or isinstance(decimals, bool) or not 0 <= decimals <= 12:
        raise TemplateError("decimals must be a whole number from 0 to 12")
    return decimals


def _is_integral(number: int | float | decimal.Decimal) -> bool:
    if isinstance(number, int):
        return True
    if isinstance(number, float) and not math.isfinite(number):
        return False
    return number == int(number)


def _finite(number: int | float | decimal.Decimal) -> str | None:
    if isinstance(number, float) and not math.isfinite(number):
        return str(number)
    if isinstance(number, decimal.Decimal) and not number.is_finite():
        return str(number)
    return None


def f_number(value: Any, decimals: int | None = None) -> str:
    """1234567.891 → 1,234,568 for whole numbers, 1,234,567.89 otherwise (or `decimals`)."""
    if value is None:
        return MISSING
    number = _to_number(value, "number")
    if (special := _finite(number)) is not None:
        return special
    places = (0 if _is_integral(number) else 2) if decimals is None else _check_decimals(decimals)
    return f"{number:,.{places}f}"


def f_money(value: Any, currency: str = "$", decimals: int = 2) -> str:
    """-1234.5 → -$1,234.50."""
    if value is None:
        return MISSING
    number = _to_number(value, "money")
    if (special := _finite(number)) is not None:
        return special
    places = _check_decimals(decimals)
    text = f"{abs(number):,.{places}f}"
    sign = "-" if number < 0 and text.strip("0.,") else ""
    return f"{sign}{str(currency)[:5]}{text}"


def f_percent(value: Any, decimals: int = 1) -> str:
    """A ratio as a percentage: 0.1234 → 12.3%."""
    if value is None:
        return MISSING
    number = _to_number(value, "percent")
    if (special := _finite(number)) is not None:
        return special
    places = _check_decimals(decimals)
    scaled = number * (decimal.Decimal(100) if isinstance(number, decimal.Decimal) else 100)
    return f"{scaled:,.{places}f}%"


def f_date(value: Any, fmt: str = "%Y-%m-%d") -> str:
    """Dates, timestamps or ISO strings with a strftime format."""
    if value is None:
        return MISSING
    if not isinstance(fmt, str) or len(fmt) > 100:
        raise TemplateError("the date format must be a short strftime string such as '%b %d, %Y'")
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise TemplateError(f"the date filter needs a date, got {value[:40]!r}") from None
    if not isinstance(value, dt.date | dt.datetime | dt.time):
        raise TemplateError(f"the date filter needs a date, got {type(value).__name__}")
    return value.strftime(fmt)


def f_join(value: Iterable[Any], d: str = "", attribute: str | None = None) -> str:
    separator = str(unproxy(d))
    out = TextBuilder()
    for item in _counted(value):
        if attribute is not None and isinstance(item, Mapping):
            item = item.get(attribute)
        if out.pieces:
            out.add(separator)
        if isinstance(item, Traced) and not isinstance(item, TracedStr):
            out.add_value(item, MISSING)
        else:
            text = _text(item, MISSING)
            out.add(text if isinstance(text, str) else str(text))
        if out.at > MAX_SIZE:
            raise TemplateError(f"join would build more than {MAX_SIZE:,} characters")
    return out.build()


def f_length(value: Any) -> Any:
    """Jinja's `length`; the count is traced to the rows it counted, and refused over a cut result."""
    value = _uncut(value, "`|length`")
    count = len(value)
    if isinstance(value, RowList):
        return traced(count, count_trace(value._input(), count))
    if isinstance(value, list | tuple):  # the first items name the sources; the rest are counted
        trace = merge((_item_trace(item) for item in value[:MAX_SOURCES]), count)
        if trace is not None and not trace.typed and count > MAX_SOURCES:
            trace = Computed(trace.sources, True, count, trace.cut, trace.more + count - MAX_SOURCES)
    else:
        trace = merge(traces_of(value), count)
    return traced(count, trace)


@pass_environment
def f_sum(environment: Environment, iterable: Any, attribute: str | int | None = None, start: Any = 0) -> Any:
    """Jinja's `sum`, traced to every value it added; refused over a cut result."""
    items = _uncut(iterable, "`|sum`")
    getter = make_attrgetter(environment, attribute) if attribute is not None else None
    total = unproxy(start)
    traces: list[Trace | None] = [*traces_of(start)]
    for item in _counted(items):
        value = getter(item) if getter is not None else item
        traces.extend(traces_of(value))
        total = total + unproxy(value)
    return traced(_check_size(total), merge(traces, total))


def _item_trace(item: Any) -> Trace | None:
    if isinstance(item, Row) and item._input() is not None:
        return row_trace(item._input(), item._index)  # type: ignore[arg-type]
    return merge(traces_of(item), item)


def _uncut(value: Any, what: str) -> Any:
    """`value` unless it holds rows or values of a cut result; an iterator is checked as it is read."""
    budget = _budget.get()
    if budget is not None and not budget.any_cut:
        return value
    if isinstance(value, RowList):
        if value._input().cut:
            raise refused(value._input(), what)
        return value
    if isinstance(value, str | Mapping | Traced) or not isinstance(value, Iterable):
        return value
    if isinstance(value, list | tuple):
        ref = cut_of(value)
        if ref is not None:
            raise refused(ref, what)
        return value
    return _watched(value, what)


def _watched(items: Iterable[Any], what: str) -> Iterator[Any]:
    for item in items:
        ref = cut_of(item)
        if ref is not None:
            raise refused(ref, what)
        yield item


def f_replace(value: Any, old: str, new: str, count: int | None = None) -> str:
    text, old, new = str(value), str(old), str(new)
    hits = text.count(old) if count is None else min(text.count(old), max(0, int(count)))
    if len(text) + hits * max(0, len(new) - len(old)) > MAX_SIZE:
        raise TemplateError(f"replace would build more than {MAX_SIZE:,} characters")
    return text.replace(old, new) if count is None else text.replace(old, new, int(count))


def f_batch(value: Any, linecount: Any, fill_with: Any = None) -> Iterator[list[Any]]:
    """Jinja's `batch`, with the batch size bounded: `fill_with` pads the last batch to it."""
    if not _is_int(linecount) or not 1 <= linecount <= MAX_SIZE:
        raise TemplateError(f"batch needs a whole number from 1 to {MAX_SIZE:,}")
    _charge(linecount)
    return DEFAULT_FILTERS["batch"](value, linecount, fill_with)


_ALLOWED_FILTERS = (
    "abs", "attr", "capitalize", "d", "default", "dictsort", "first", "float",
    "groupby", "int", "items", "last", "list", "lower", "map", "max", "min", "reject",
    "rejectattr", "reverse", "round", "select", "selectattr", "sort", "string", "title",
    "trim", "truncate", "unique", "upper", "wordcount",
)  # fmt: skip
_PRESENTING = frozenset(
    {"capitalize", "date", "float", "int", "lower", "money", "number", "percent", "replace",
     "round", "string", "title", "trim", "truncate", "upper"}
)  # fmt: skip
"""Filters that show one value differently: the result keeps the value's trace (not derived)."""
_PASSING = frozenset(
    {"attr", "batch", "d", "default", "dictsort", "groupby", "items", "list", "map", "max", "min",
     "reject", "rejectattr", "select", "selectattr", "sort", "unique"}
)  # fmt: skip
"""Filters that return values they were given (or containers of them), traced already."""
_AGGREGATING = frozenset({"groupby", "last", "max", "min", "reverse", "sort", "unique"})
"""Besides length, count and sum: what they say about all rows is wrong for a cut result."""


def _traced_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Run a filter on values with their traces, and trace what it returns."""
    position = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    presenting, passing, aggregating = name in _PRESENTING, name in _PASSING, name in _AGGREGATING
    what = f"`|{name}`"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) <= position:
            return func(*args, **kwargs)
        value = args[position]
        if aggregating:
            value = _uncut(value, what)
        rest = tuple(unproxy(a) for a in args[position + 1 :]) if len(args) > position + 1 else ()
        if kwargs:
            kwargs = {k: unproxy(v) for k, v in kwargs.items()}
        # `default` must see a NULL as a value, not as None
        result = func(*args[:position], value if passing else unproxy(value), *rest, **kwargs)
        if passing or not isinstance(value, Traced) or traces_of(result):
            return result
        if (
            _typed_arguments(rest, kwargs)
            or (name in _DEFAULTING and _defaulted(value, result))
            or (name in _TEXT_FILTERS and not _keeps_numbers(value, result))
        ):
            return traced(result, TYPED)
        traces = traces_of(value)
        if presenting and len(traces) == 1:
            return traced(result, traces[0])
        return traced(result, merge(traces, result))

    return wrapper


_DEFAULTING = frozenset({"int", "float"})
"""Filters that return their `default` argument (or 0) when the value is not a number."""


_TEXT_FILTERS = frozenset({"capitalize", "lower", "replace", "string", "title", "trim", "truncate", "upper"})
"""Filters that edit text: they may not make a number the value does not hold."""


def _keeps_numbers(source: Any, result: Any) -> bool:
    """Whether every number in `result` (text cut or edited from `source`) is one of `source`'s:
    `'100'|replace('0', '')`, `'1,234'.split(',')`, `'100'[:1]` make numbers no cell holds."""
    if not isinstance(result, str):
        return True
    found = numbers_in_text(result)
    if not found:
        return True
    have = set(numbers_in_text(str(plain(source))))
    return all(number in have for number in found)


def _typed_arguments(args: Iterable[Any], kwargs: Mapping[str, Any]) -> bool:
    """Whether an argument the model typed could be printed: text with a number in it
    (`replace(x, '42')`, `money('42')`, `truncate(end='42')`)."""
    for arg in [*args, *kwargs.values()]:
        if isinstance(arg, str) and not traces_of(arg) and numbers_in_text(arg):
            return True
    return False


def _defaulted(value: Any, result: Any) -> bool:
    """`'Berlin'|int(42)` is the model's 42, not the cell's: the conversion failed."""
    raw = plain(value)
    if isinstance(raw, int | float | decimal.Decimal) and not isinstance(raw, bool):
        return False
    try:
        float(raw)
    except (TypeError, ValueError):
        return True
    return False


def _charged(func: Callable[..., Any]) -> Callable[..., Any]:
    """Charge a filter by the size of its input, and check the size of what it returns."""
    passes = getattr(func, "jinja_pass_arg", None)
    position = 1 if passes is not None else 0

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) > position:
            _charge(_size_of(args[position]))
        return _check_size(func(*args, **kwargs))

    return wrapper


def _concat(items: list[Any]) -> str:
    """`a ~ b`: like Jinja's, but the text keeps the spans of the values in it (which cost work)."""
    text = _check_size(compose(_concat_text(item) for item in items))
    _charge(len(text._spans_in()) if isinstance(text, TracedStr) else 1)
    return text  # type: ignore[no-any-return]


def _block_text(pieces: list[str]) -> str:
    """What `{% set x %}…{% endset %}` and filter blocks hold: the text with its spans."""
    text = compose(pieces)
    _charge(len(text._spans_in()) if isinstance(text, TracedStr) else 1)
    return text


def _concat_text(item: Any) -> str:
    text = _text(item, "None")
    return text if isinstance(text, str) else str(text)


class _LoopItems:
    """What a `for` loop iterates: every item costs one unit of work, and the loop knows whether
    it went over rows of a cut result (then `loop.length` is refused)."""

    __slots__ = ("_budget", "_items", "cut", "whole")

    def __init__(self, iterable: Any) -> None:
        self.whole = iterable._input() if isinstance(iterable, RowList) else None
        self.cut = self.whole if self.whole is not None and self.whole.cut else None
        self._items = iter(iterable)
        self._budget = _budget.get()

    def __iter__(self) -> _LoopItems:
        return self

    def __next__(self) -> Any:
        item = next(self._items)
        if self._budget is not None:
            self._budget.charge(1)
        if self.cut is None and self.whole is None and (self._budget is None or self._budget.any_cut):
            self.cut = cut_of(item)
        return item


def _filters() -> dict[str, Callable[..., Any]]:
    table = {name: _charged(_traced_filter(name, DEFAULT_FILTERS[name])) for name in _ALLOWED_FILTERS}
    own = {
        "number": f_number,
        "money": f_money,
        "percent": f_percent,
        "date": f_date,
        "batch": f_batch,
        "replace": f_replace,
    }
    table.update({name: _charged(_traced_filter(name, func)) for name, func in own.items()})
    table.update(
        length=_charged(f_length),
        count=_charged(f_length),
        sum=_charged(f_sum),
        join=f_join,
        _astro_loop=_LoopItems,
        _astro_concat=_concat,
    )
    return table


def _unproxied_test(test: Callable[..., Any]) -> Callable[..., Any]:
    """Tests see NULL and booleans as None and bool (`x is none`, `x is true`)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return test(*(unproxy(a) for a in args), **{k: unproxy(v) for k, v in kwargs.items()})

    return wrapper


# --------------------------------------------------------------------------- the sandbox

_SAFE_METHODS = frozenset(
    {
        "upper", "lower", "title", "capitalize", "strip", "lstrip", "rstrip", "startswith",
        "endswith", "split", "rsplit", "splitlines", "isdigit", "isnumeric", "isalpha",
        "items", "keys", "values", "get", "cycle", "changed",
    }
)  # fmt: skip
_SAFE_SELF_TYPES = (str, dict, list, tuple, Row, LoopContext)
_REFUSED_NODES: dict[type[nodes.Node], str] = {
    nodes.Macro: "macros",
    nodes.CallBlock: "call blocks",
    nodes.Include: "include",
    nodes.Import: "import",
    nodes.FromImport: "import",
    nodes.Extends: "extends",
}


class _Rewriter(NodeTransformer):
    """Route every loop through the budget, and every `~` through a size check that keeps spans."""

    def __init__(self, environment: _Sandbox) -> None:
        self.environment = environment

    def _wrap(self, node: nodes.Expr, filter_name: str) -> nodes.Filter:
        wrapped = nodes.Filter(node, filter_name, [], [], None, None, lineno=node.lineno)
        wrapped.set_environment(self.environment)
        return wrapped

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = self._wrap(node.iter, "_astro_loop")
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        items = nodes.List(node.nodes, lineno=node.lineno)
        items.set_environment(self.environment)
        return self._wrap(items, "_astro_concat")


_LOOP_COUNTS = frozenset({"length", "revindex", "revindex0", "last"})
"""Loop attributes that say how many items there are: refused over a cut result."""
_LOOP_POSITIONS = frozenset({"index", "index0"})
"""The row's position in its result, traced to the row when the loop goes over all its rows."""
_ROW_METHODS = frozenset({"items", "keys", "values", "get"})
_KEEPING_METHODS = frozenset({"upper", "lower", "title", "capitalize", "strip", "lstrip", "rstrip"})


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"-", "+"})

    def __init__(self) -> None:
        super().__init__(
            undefined=StrictUndefined,
            autoescape=False,
            keep_trailing_newline=True,
            finalize=_finalize,
            auto_reload=False,
            cache_size=0,
        )
        self.globals.clear()
        self.globals["range"] = _bounded_range
        self.filters = _filters()
        self.tests = {name: _unproxied_test(test) for name, test in self.tests.items()}
        self.concat = _block_text

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for kind, what in _REFUSED_NODES.items():
            found = next(iter(tree.find_all(kind)), None)
            if found is not None:
                raise TemplateSyntaxError(f"{what} are not available in answer templates", found.lineno)
        result = _Rewriter(self).visit(tree)
        assert isinstance(result, nodes.Template)
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Row):
            if attribute in obj:
                return obj[attribute]
            if attribute not in _ROW_METHODS:
                return self.undefined(
                    f"the row has no column '{attribute}'; its columns are: {', '.join(obj)}",
                    obj=obj,
                    name=attribute,
                )
        if isinstance(obj, ResultView):
            return self._input_attribute(obj, attribute)
        if isinstance(obj, LoopContext):
            items, every = _loop_items(obj)
            if attribute in _LOOP_COUNTS:
                return self._loop_count(obj, attribute, items, every)
            if attribute in _LOOP_POSITIONS:
                return self._loop_position(obj, attribute, items, every)
        value = super().getattr(unproxy(obj), attribute)
        if isinstance(obj, Traced) and not callable(value):  # `day.year`: a part of the value
            return traced(value, merge(traces_of(obj), value))
        return value

    def _input_attribute(self, view: ResultView, attribute: str) -> Any:
        """`name.value`, `.rows`, `.columns`, `.row_count` are the input's own; `name.<column>` is
        that column of the first row. A column named like one of the four is never guessed at."""
        if attribute in INPUT_ATTRIBUTES:
            if view.has_column(attribute):
                raise ambiguous(view, attribute)
            return super().getattr(view, attribute)
        return self._input_column(
            view, attribute, "attribute or column", "use .value, .rows, .columns, .row_count or"
        )

    def _input_column(self, view: ResultView, name: str, what: str, choices: str) -> Any:
        """A column of the input's first row, or an error that lists its columns."""
        if view.has_column(name):
            return view.column_value(name)
        return self.undefined(
            f"input '{view._ref.name}' has no {what} '{name}'; {choices} one of its columns: "
            f"{', '.join(view.columns)}",
            obj=view,
            name=name,
        )

    def _loop_count(self, loop: LoopContext, attribute: str, items: _LoopItems | None, every: bool) -> Any:
        """`loop.length` of a loop over a cut result would be the cap, not the count: refused."""
        value = super().getattr(loop, attribute)
        if items is not None and items.cut is not None:
            what = "`loop.last` (the last row shown, like `loop.length`)" if attribute == "last" else ""
            raise refused(items.cut, what or f"`loop.{attribute}`")
        if attribute == "length" and every and items is not None and items.whole is not None:
            return traced(value, count_trace(items.whole, value))
        return value

    def _loop_position(self, loop: LoopContext, attribute: str, items: _LoopItems | None, every: bool) -> Any:
        """`loop.index` over an input's rows is that row's place in the result; over anything
        else (a literal list, `range(42)`) it is a number of the template's own."""
        value = super().getattr(loop, attribute)
        if not (every and items is not None and items.whole is not None):
            return value
        ref = items.whole
        source = Source(ref.name, ref.sql, loop.index0, None, None)
        return traced(value, Computed((source,), True, value, ref if ref.cut else None))

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Row) and isinstance(argument, str):
            try:
                return obj[argument]
            except KeyError:
                return self.getattr(obj, argument)
        if isinstance(obj, ResultView) and isinstance(argument, str):  # `name["col"]`: a column only
            return self._input_column(obj, argument, "column", "use")
        value = super().getitem(unproxy(obj), unproxy(argument))
        if isinstance(obj, Traced) and not traces_of(value):  # a character, a slice, an item
            if not _keeps_numbers(obj, value):
                return traced(value, TYPED)
            return traced(value, merge(traces_of(obj), value))
        return value

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        _charge(1)
        a, b = unproxy(left), unproxy(right)
        if operator_ == "%":
            if isinstance(a, str):
                raise TemplateError("%-formatting is not available; use the number, money, percent filters")
            result = operator.mod(a, b)
        elif operator_ == "*":
            seq, times = (a, b) if isinstance(a, str | list | tuple) else (b, a)
            if isinstance(seq, str | list | tuple) and isinstance(times, int):
                if len(seq) * max(0, times) > MAX_SIZE:
                    raise TemplateError(f"the template built a value longer than {MAX_SIZE:,} items")
            elif _is_int(a) and _is_int(b) and a.bit_length() + b.bit_length() > MAX_INT_BITS:
                raise TemplateError("the template built a number too large to print")
            result = _check_size(operator.mul(a, b))
        elif operator_ == "**":
            if _is_int(a) and _is_int(b) and (abs(b) > 1024 or a.bit_length() * abs(b) > MAX_INT_BITS):
                raise TemplateError("the template built a number too large to print")
            result = operator.pow(a, b)
        elif operator_ == "+" and isinstance(a, str) and isinstance(b, str):
            return _check_size(compose((a, b)))  # like `~`: each side keeps its spans
        else:
            result = _check_size(self.binop_table[operator_](a, b))
        return _computed(result, left, right)

    def call_unop(self, context: Any, operator_: str, arg: Any) -> Any:
        _charge(1)
        return _computed(self.unop_table[operator_](unproxy(arg)), arg)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(__obj, Undefined):
            return __obj()
        if not __self._callable(__obj):
            what = getattr(__obj, "__name__", type(__obj).__name__)
            raise SecurityError(f"calling '{what}' is not allowed in answer templates; use filters")
        owner = getattr(__obj, "__self__", None)
        _charge(1 + _size_of(owner))
        result = _check_size(super().call(__context, __obj, *args, **kwargs))
        traces = traces_of(owner)
        if not traces or traces_of(result):
            return result
        if _typed_arguments(args, kwargs):
            return traced(result, TYPED)
        if isinstance(result, list):  # `split`: each part comes from the value
            return [
                traced(part, merge(traces, part) if _keeps_numbers(owner, part) else TYPED) for part in result
            ]
        if not _keeps_numbers(owner, result):
            return traced(result, TYPED)
        if __obj.__name__ in _KEEPING_METHODS and len(traces) == 1:
            return traced(result, traces[0])
        return traced(result, merge(traces, result))

    @staticmethod
    def _callable(obj: Any) -> bool:
        if obj is _bounded_range or isinstance(obj, LoopContext):
            return True
        owner = getattr(obj, "__self__", None)
        return isinstance(owner, _SAFE_SELF_TYPES) and getattr(obj, "__name__", "") in _SAFE_METHODS


def _loop_items(loop: LoopContext) -> tuple[_LoopItems | None, bool]:
    """The items a loop iterates, and whether it iterates all of them. With `{% for … if test %}`
    Jinja filters them in a generator of its own, whose argument they are; that generator is
    gone once it has run out, so the sandbox looks on the loop's first attribute and keeps it."""
    budget = _budget.get()
    known = budget.loops if budget is not None else {}
    if loop in known:
        return known[loop]
    iterable = getattr(loop, "_iterable", None)
    if isinstance(iterable, _LoopItems):
        found: tuple[_LoopItems | None, bool] = (iterable, True)
    else:
        frame = getattr(iterable, "gi_frame", None)
        inner = frame.f_locals.get("fiter") if frame is not None else None
        found = (inner if isinstance(inner, _LoopItems) else None, False)
    known[loop] = found
    return found


def _computed(result: Any, *operands: Any) -> Any:
    """What an operator returns: derived from the values it read when every operand is a value
    read from a result, else typed (`n * 0 + 42` is the model's 42)."""
    traces = [trace for operand in operands for trace in traces_of(operand)]
    if traces and all(traces_of(operand) for operand in operands):
        return traced(result, merge(traces, result))
    if traces:
        return traced(result, TYPED)
    if _is_number(result) and all(_is_number(o) for o in operands):
        return traced(result, TYPED)
    return plain(result)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finalize(value: Any) -> Any:
    return _text(value, MISSING)


_ENV: _Sandbox | None = None


def _environment() -> _Sandbox:
    global _ENV
    if _ENV is None:
        _ENV = _Sandbox()
    return _ENV


# --------------------------------------------------------------------------- rendering


def input_names_error(names: Iterable[str]) -> str | None:
    """Input names must be usable as template variables."""
    bad = [n for n in names if not n.isidentifier() or n in _JINJA_WORDS or n.startswith("_")]
    if bad:
        return (
            "input names must be simple identifiers (letters, digits, underscores, not starting "
            f"with _ or a digit, not a Jinja keyword); rename: {', '.join(repr(b) for b in bad)}"
        )
    return None


_JINJA_WORDS = frozenset(
    {"and", "or", "not", "in", "is", "if", "else", "for", "true", "false", "none", "True", "False",
     "None", "loop", "range", "self", "super", "caller", "varargs", "kwargs"}
)  # fmt: skip


def render(
    template: str, inputs: Mapping[str, QueryResult], *, max_chars: int = MAX_OUTPUT_CHARS
) -> Rendered:
    """Render over fresh results; every failure is a TemplateError the model can act on.

    The budget covers compiling too: Jinja's optimizer runs filters over constants
    (`[1] | batch(90000)`) while it compiles.
    """
    any_cut = any(result.truncated for result in inputs.values())
    token = _budget.set(_Budget(MAX_WORK, MAX_SECONDS, any_cut=any_cut))
    try:
        compiled = _compile(template)
        refs = [InputRef(name, result) for name, result in inputs.items()]
        text, spans = _generate(compiled, refs, max_chars)
    finally:
        _budget.reset(token)
    unverified = tuple(typed_numbers(text, ((span.start, span.end) for span in spans)))
    return Rendered(text, unverified, spans, tuple(ref for ref in refs if ref.read and ref.cut))


def _compile(template: str) -> Template:
    env = _environment()
    try:
        tree = env.parse(template)  # refused nodes checked, loops routed through the budget
        return env.from_string(tree)
    except TemplateError:
        raise
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except JinjaTemplateError as exc:
        raise TemplateError(f"template error: {exc}") from None
    except RecursionError:  # Jinja's parser recurses per bracket: `{{ ((((…1…)))) }}`
        raise TemplateError("template syntax error: nesting too deep") from None


def _generate(compiled: Template, refs: list[InputRef], max_chars: int) -> tuple[str, tuple[Span, ...]]:
    """The text (stripped) and the spans of the values in it."""
    views = {ref.name: ResultView(ref) for ref in refs}
    parts: list[str] = []
    pieces: list[tuple[int, int, Trace]] = []
    total = 0
    try:
        for piece in compiled.generate(views):
            if isinstance(piece, TracedStr):
                pieces.extend((total + start, total + end, trace) for start, end, trace in piece._spans_in())
            total += len(piece)
            if total > max_chars:
                raise TemplateError(
                    f"the rendered text is longer than {max_chars:,} characters; show fewer rows "
                    "(the person sees the full result table below the text anyway)"
                )
            parts.append(piece)
    except TemplateError:
        raise
    except UndefinedError as exc:
        message = str(exc)
        if "is undefined" in message and "'" in message:
            message += f"; the inputs are: {', '.join(views) or '(none)'}"
        raise TemplateError(f"template error: {message}") from None
    except SecurityError as exc:
        raise TemplateError(f"template refused: {exc}") from None
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except RecursionError:
        raise TemplateError("template error: nesting too deep") from None
    except Exception as exc:
        raise TemplateError(f"template error: {error_line(exc, 300)}") from None
    text = "".join(parts)
    stripped = text.strip()
    return stripped, answer_spans(pieces, stripped, len(text) - len(text.lstrip()))

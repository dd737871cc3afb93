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

Numbers typed literally by the model (as opposed to values from a result) are
reported so the UI can mark them unverified. What counts as a label rather than
a value, and so is not reported: years 1900–2100 written alone, ISO dates and
clock times, list markers at the start of a line ("1. "), and digits glued to
letters (Q3, H1, 2nd, p95, df_2). Numbers used as filter arguments, indexes, loop
bounds or in comparisons are not output and are not reported; a number literal
that is printed (`{{ 1234 }}`, `{% set n = 5 %}`) is.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import decimal
import functools
import math
import operator
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, Template, TemplateSyntaxError, Undefined, UndefinedError, nodes
from jinja2.defaults import DEFAULT_FILTERS
from jinja2.exceptions import SecurityError
from jinja2.exceptions import TemplateError as JinjaTemplateError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

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
    text: str
    unverified_numbers: tuple[str, ...]


# --------------------------------------------------------------------------- plain data


class Row(Mapping[str, Any]):
    """One result row; `row.region` and `row['total revenue']` both work, names case-insensitively."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            if isinstance(key, str):
                lowered = key.lower()
                for name, value in self._values.items():
                    if name.lower() == lowered:
                        return value
            raise

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __str__(self) -> str:
        return ", ".join(f"{k}={_display(v)}" for k, v in self._values.items())

    __repr__ = __str__


class ResultView:
    """What a template sees for one input: the values, never the connection or the SQL."""

    __slots__ = ("_result", "_rows")

    def __init__(self, result: QueryResult) -> None:
        self._result = result
        self._rows: list[Row] | None = None

    @property
    def value(self) -> Any:
        table = self._result.table
        if table.num_rows == 0 or table.num_columns == 0:
            return None
        return table.column(0)[0].as_py()

    @property
    def rows(self) -> list[Row]:
        if self._rows is None:
            self._rows = [Row(record) for record in self._result.records()]
        return self._rows

    @property
    def columns(self) -> list[str]:
        return self._result.columns

    @property
    def row_count(self) -> int:
        return self._result.row_count

    @property
    def truncated(self) -> bool:
        return self._result.truncated

    def column_value(self, name: str) -> Any:
        """A column of the first row: `rev.revenue` reads naturally for one-row results."""
        if self._result.row_count == 0:
            return None
        return self.rows[0][name]

    def has_column(self, name: str) -> bool:
        lowered = name.lower()
        return any(c.lower() == lowered for c in self._result.columns)

    def __str__(self) -> str:
        if self._result.row_count == 1 and len(self._result.columns) == 1:
            return _display(self.value)
        lines = [" | ".join(self.columns)]
        lines += [" | ".join(_display(v) for v in row.values()) for row in self.rows[:50]]
        return "\n".join(lines)


def _display(value: Any) -> str:
    return MISSING if value is None else str(value)


# --------------------------------------------------------------------------- the budget


class _Budget:
    __slots__ = ("deadline", "left", "ticks")

    def __init__(self, work: int, seconds: float) -> None:
        self.left = work
        self.deadline = time.monotonic() + seconds
        self.ticks = 0

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise TemplateError(
                "the template does too much work (loops over too many items); "
                "aggregate in SQL and loop over fewer rows"
            )
        self.ticks += 1
        if self.ticks & 255 == 0 and time.monotonic() > self.deadline:
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
    separator = str(d)
    parts: list[str] = []
    total = 0
    for item in _counted(value):
        if attribute is not None and isinstance(item, Mapping):
            item = item.get(attribute)
        text = _display(item)
        total += len(text) + len(separator)
        if total > MAX_SIZE:
            raise TemplateError(f"join would build more than {MAX_SIZE:,} characters")
        parts.append(text)
    return separator.join(parts)


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
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "first", "float",
    "groupby", "int", "items", "last", "length", "list", "lower", "map", "max", "min", "reject",
    "rejectattr", "reverse", "round", "select", "selectattr", "sort", "string", "sum", "title",
    "trim", "truncate", "unique", "upper", "wordcount",
)  # fmt: skip


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


def _filters() -> dict[str, Callable[..., Any]]:
    table = {name: _charged(DEFAULT_FILTERS[name]) for name in _ALLOWED_FILTERS}
    table.update(
        number=_charged(f_number),
        money=_charged(f_money),
        percent=_charged(f_percent),
        date=_charged(f_date),
        batch=_charged(f_batch),
        join=f_join,
        replace=_charged(f_replace),
        _astro_loop=_counted,
        _astro_sized=_check_size,
    )
    return table


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
    """Route every loop through the budget and every `~` through a size check."""

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
        return self._wrap(node, "_astro_sized")


class _Sandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})

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
            if attribute not in ("items", "keys", "values", "get"):
                return self.undefined(
                    f"the row has no column '{attribute}'; its columns are: {', '.join(obj)}",
                    obj=obj,
                    name=attribute,
                )
        if isinstance(obj, ResultView) and attribute not in ResultView.__dict__:
            if obj.has_column(attribute):
                return obj.column_value(attribute)
            return self.undefined(
                f"an input has no attribute or column '{attribute}'; use .value, .rows, .columns, "
                f".row_count or one of its columns: {', '.join(obj.columns)}",
                obj=obj,
                name=attribute,
            )
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, Row) and isinstance(argument, str):
            if argument in obj:
                return obj[argument]
            return self.getattr(obj, argument)
        if isinstance(obj, ResultView) and isinstance(argument, str):
            return self.getattr(obj, argument)
        return super().getitem(obj, argument)

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        _charge(1)
        if operator_ == "%":
            if isinstance(left, str):
                raise TemplateError("%-formatting is not available; use the number, money, percent filters")
            return operator.mod(left, right)
        if operator_ == "*":
            seq, times = (left, right) if isinstance(left, str | list | tuple) else (right, left)
            if isinstance(seq, str | list | tuple) and isinstance(times, int):
                if len(seq) * max(0, times) > MAX_SIZE:
                    raise TemplateError(f"the template built a value longer than {MAX_SIZE:,} items")
            elif _is_int(left) and _is_int(right) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateError("the template built a number too large to print")
            return _check_size(operator.mul(left, right))
        if operator_ == "**":
            if (
                _is_int(left)
                and _is_int(right)
                and (abs(right) > 1024 or left.bit_length() * abs(right) > MAX_INT_BITS)
            ):
                raise TemplateError("the template built a number too large to print")
            return operator.pow(left, right)
        return _check_size(operator.add(left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(__obj, Undefined):
            return __obj()
        if not __self._callable(__obj):
            what = getattr(__obj, "__name__", type(__obj).__name__)
            raise SecurityError(f"calling '{what}' is not allowed in answer templates; use filters")
        _charge(1 + _size_of(getattr(__obj, "__self__", None)))
        return _check_size(super().call(__context, __obj, *args, **kwargs))

    @staticmethod
    def _callable(obj: Any) -> bool:
        if obj is _bounded_range or isinstance(obj, LoopContext):
            return True
        owner = getattr(obj, "__self__", None)
        return isinstance(owner, _SAFE_SELF_TYPES) and getattr(obj, "__name__", "") in _SAFE_METHODS


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finalize(value: Any) -> Any:
    return MISSING if value is None else value


_ENV: _Sandbox | None = None


def _environment() -> _Sandbox:
    global _ENV
    if _ENV is None:
        _ENV = _Sandbox()
    return _ENV


# --------------------------------------------------------------------------- literal numbers

_NUMBER = re.compile(r"(?<![\w.])(?:[$€£¥]\s?)?[-+]?\d[\d,]*(?:\.\d+)?(?:\s?%)?(?![\w])")
_LABELS = re.compile(
    r"\b\d{4}-\d{2}(?:-\d{2})?(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b"
    r"|^[ \t]*\d{1,3}[.)](?=\s)",
    re.M,
)
_YEAR = re.compile(r"(?:19|20)\d{2}|2100")


def numbers_in_text(text: str) -> list[str]:
    """Numbers written in plain text, minus the labels described in the module docstring."""
    cleaned = _LABELS.sub(lambda m: " " * len(m.group()), text)
    found = []
    for match in _NUMBER.finditer(cleaned):
        token = match.group().strip().rstrip(",")
        if _YEAR.fullmatch(token):
            continue
        found.append(token)
    return found


def literal_numbers(tree: nodes.Template) -> list[str]:
    """Numbers the template itself prints: in its text, or as printed constants."""
    found: list[str] = []

    def visit(node: nodes.Node, printed: bool) -> None:
        if isinstance(node, nodes.TemplateData):
            found.extend(numbers_in_text(node.data))
            return
        if isinstance(node, nodes.Const):
            value = node.value
            if printed and isinstance(value, int | float | str) and not isinstance(value, bool):
                found.extend(numbers_in_text(str(value)))
            return
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                visit(child, True)
            return
        if isinstance(node, nodes.Filter):
            if node.node is not None:
                visit(node.node, printed)
            for arg in [*node.args, *(kw.value for kw in node.kwargs)]:
                visit(arg, False)
            return
        if isinstance(node, nodes.Concat):
            for child in node.nodes:
                visit(child, printed)
            return
        if isinstance(node, nodes.CondExpr):
            visit(node.test, False)
            visit(node.expr1, printed)
            if node.expr2 is not None:
                visit(node.expr2, printed)
            return
        if isinstance(node, nodes.Assign):
            visit(node.node, True)
            return
        for child in node.iter_child_nodes():
            visit(child, False)

    visit(tree, False)
    seen: dict[str, None] = {}
    for number in found:
        seen.setdefault(number, None)
    return list(seen)


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
    token = _budget.set(_Budget(MAX_WORK, MAX_SECONDS))
    try:
        compiled, numbers = _compile(template)
        text = _generate(compiled, inputs, max_chars)
    finally:
        _budget.reset(token)
    return Rendered(text, numbers)


def _compile(template: str) -> tuple[Template, tuple[str, ...]]:
    """Parse once; the literal numbers are read before compiling, which folds constants in place."""
    env = _environment()
    try:
        tree = env.parse(template)  # refused nodes checked, loops routed through the budget
        numbers = tuple(literal_numbers(tree))
        return env.from_string(tree), numbers
    except TemplateError:
        raise
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except JinjaTemplateError as exc:
        raise TemplateError(f"template error: {exc}") from None
    except RecursionError:  # Jinja's parser recurses per bracket: `{{ ((((…1…)))) }}`
        raise TemplateError("template syntax error: nesting too deep") from None


def _generate(compiled: Template, inputs: Mapping[str, QueryResult], max_chars: int) -> str:
    views = {name: ResultView(result) for name, result in inputs.items()}
    parts: list[str] = []
    total = 0
    try:
        for piece in compiled.generate(views):
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
            message += f"; the inputs are: {', '.join(inputs) or '(none)'}"
        raise TemplateError(f"template error: {message}") from None
    except SecurityError as exc:
        raise TemplateError(f"template refused: {exc}") from None
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template syntax error on line {exc.lineno}: {exc.message}") from None
    except RecursionError:
        raise TemplateError("template error: nesting too deep") from None
    except Exception as exc:
        raise TemplateError(f"template error: {error_line(exc, 300)}") from None
    return "".join(parts).strip()

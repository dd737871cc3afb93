"""The cells of a replay notebook, shared by the ipynb and marimo writers.

A notebook is: a title, the connection (the engine's own client, from
`data/clients.py`), the helpers (`runtime.py`, copied verbatim), then per answer
its heading, one cell per input query read into a DataFrame named after the input,
the answer printed again from those DataFrames, and one `assert` per quoted number.
Every text from the conversation enters code as a Python literal (`repr`), never
as code, and every query only once the data's guard has judged it (`judge.py`).
"""

from __future__ import annotations

import html
import inspect
from dataclasses import dataclass, field

from astro_tui.agent.provenance import Source, Span
from astro_tui.replay import runtime
from astro_tui.replay.formats import number_format
from astro_tui.replay.judge import Judge, judged
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, frame_name
from astro_tui.replay.runtime import as_number
from astro_tui.text import one_line

MAX_CHECKED_SOURCES = 20
"""Cells checked per computed number; a sum over more rows checks its first ones."""
HELPER_NAMES = frozenset({"GONE", "cell", "as_number", "same", "fmt", "datetime", "decimal", "math", "Any"})
CLIENT_NAMES = frozenset({"read", "con", "spark", "pd", "os", "duckdb", "adbc_driver_postgresql"})


@dataclass(frozen=True, slots=True)
class Cell:
    kind: str  # "markdown" or "code"
    source: str
    defines: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()


@dataclass(slots=True)
class _Names:
    taken: set[str] = field(default_factory=lambda: set(HELPER_NAMES | CLIENT_NAMES))


def notebook_cells(replay: Replay, judge: Judge | None) -> list[Cell]:
    """The cells; ReplayError when the guard (`judge`, none: refused) refuses a query."""
    code = replay.code()
    cells = [
        Cell(
            "markdown",
            f"# Replay of conversation {_md(replay.id)}\n\n"
            f"Data: {_md(replay.label)}. Written by `astro replay`; runs without astro "
            f"(needs {', '.join(code.requirements)}). Each answer's numbers are checked by an `assert`: "
            "a failing one names the number that moved."
            + (f" For the connection, {code.secret_note}." if code.secret_note else ""),
        ),
        Cell("code", code.connect.strip(), ("read",)),
        Cell("code", _helpers(), tuple(sorted(HELPER_NAMES - {"datetime", "decimal", "math", "Any"}))),
    ]
    names = _Names()
    for answer in replay.answers:
        cells += _answer_cells(answer, names, judge)
    return cells


def _helpers() -> str:
    source = inspect.getsource(runtime)
    return source.split('"""', 2)[2].strip()  # without the module docstring, which speaks of astro


def _answer_cells(answer: ReplayAnswer, names: _Names, judge: Judge | None) -> list[Cell]:
    heading = f"## {answer.tag} · {_md(answer.title)}\n\n**Question:** {_md(answer.question)}"
    if not answer.complete:
        heading += "\n\n*astro's answer read a result cut by its row cap; the queries here read it whole.*"
    cells = [Cell("markdown", heading)]
    frames: dict[str, str] = {}
    for name, sql in answer.inputs.items():
        judged(judge, sql, f"{answer.tag} {one_line(name, 40)}")
        frame = frames[name] = frame_name(name, names.taken)
        cells.append(Cell("code", f"{frame} = read({python_text(sql)})\n{frame}", (frame,), ("read",)))
    text_var = frame_name(f"{answer.tag.lower()}_answer", names.taken)
    render = _render(answer, frames)
    cells.append(
        Cell(
            "code",
            f"{text_var} = {render}\nprint({text_var})",
            (text_var,),
            (*frames.values(), "cell", "fmt"),
        )
    )
    asserts = [line for q in answer.quoted if (line := _assert(q, frames))]
    if asserts:
        cells.append(Cell("code", "\n".join(asserts), (), (*frames.values(), "cell", "same")))
    return cells


def _render(answer: ReplayAnswer, frames: dict[str, str]) -> str:
    """The answer's text as Python: its words as literals, each value read from the DataFrames."""
    pieces: list[str] = []
    at = 0
    for span in answer.spans:
        if span.start < at:
            continue
        if span.start > at:
            pieces.append(repr(answer.text[at : span.start]))
        pieces.append(_value_code(span, frames) or repr(span.text))
        at = span.end
    if at < len(answer.text):
        pieces.append(repr(answer.text[at:]))
    if len(pieces) <= 1:
        return pieces[0] if pieces else "''"
    return '"".join([\n' + "".join(f"    {p},\n" for p in pieces) + "])"


def _value_code(span: Span, frames: dict[str, str]) -> str | None:
    if span.derived or len(span.sources) != 1:
        return None
    source = span.sources[0]
    read = _cell_code(source, frames)
    if read is None:
        return None
    if as_number(span.value) is not None:
        found = number_format(span.value, span.text)
        return found.python(read) if found is not None else None
    if source.column is not None and isinstance(span.value, str) and span.text == span.value:
        return f"str({read})"
    return None


def _cell_code(source: Source, frames: dict[str, str]) -> str | None:
    frame = frames.get(source.input)
    if frame is None or (source.row is not None and source.column is None):
        return None
    if source.row is None:
        return f"cell({frame}, None, None)"
    return f"cell({frame}, {source.row}, {source.column!r})"


def _assert(quoted: Quoted, frames: dict[str, str]) -> str:
    reads = [
        (code, source.value)
        for source in quoted.sources[:MAX_CHECKED_SOURCES]
        if (code := _cell_code(source, frames)) is not None
    ]
    if not reads:
        return ""
    if len(reads) == 1 and not quoted.derived:
        code, value = reads[0]
        message = f"{quoted.label}: was {quoted.text}, now "
        return f"assert same({code}, {value!r}), {message!r} + repr({code})"
    checks = ", ".join(f"({code}, {value!r})" for code, value in reads)
    message = f"{quoted.label}: was {quoted.text}; a value it was computed from moved"
    return f"assert all(same(now, was) for now, was in [{checks}]), {message!r}"


def python_text(text: str) -> str:
    """A string literal for SQL that reads back exactly, even indented (a marimo cell indents its
    body): one `repr` a line, joined by Python, so every line break and control is an escape."""
    lines = text.split("\n")
    if len(lines) == 1:
        return repr(text)
    pieces = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return "(\n" + "".join(f"    {piece!r}\n" for piece in pieces) + ")"


_MD_ESCAPES = str.maketrans({c: "\\" + c for c in "\\`*_[]"})


def _md(text: str) -> str:
    """Text from the conversation inside Markdown: no HTML, no line breaks, no link or image (an
    image a title names would be fetched when the notebook is opened), no code span."""
    return html.escape(" ".join(text.split()), quote=False).translate(_MD_ESCAPES)

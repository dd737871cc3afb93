"""`astro replay --check`: run every verified answer's queries again and say which quoted numbers moved.

Each input runs again through the guard, with the session's limits, on the
conversation's data or the target given. A number read from one cell is read
again at the same row and column (a row that is gone has moved); a number the
template computed moved when any cell it came from did, and its new value is the
template rendered again over the new results. A number is compared at the
precision it was quoted: a change that leaves its printed text as it was
(`24.8%` stays `24.8%`) has not moved it. The notebooks' and scripts' asserts
check the cells themselves, so they also stop at a change below that precision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from astro_tui.agent.provenance import Source, plain
from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import json_safe
from astro_tui.replay.formats import number_format
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer
from astro_tui.replay.runtime import GONE, as_number, same
from astro_tui.text import one_line


@dataclass(frozen=True, slots=True)
class Moved:
    label: str
    was: str
    now: str

    @property
    def line(self) -> str:
        return f"{self.label}: {self.was} → {self.now}"

    def to_json(self) -> dict[str, str]:
        return {"number": self.label, "was": self.was, "now": self.now}


@dataclass(slots=True)
class CheckReport:
    conversation: str
    target: str
    answers: int = 0
    numbers: int = 0
    moved: list[Moved] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "target": self.target,
            "answers": self.answers,
            "numbers": self.numbers,
            "moved": [m.to_json() for m in self.moved],
        }


Run = Callable[[str], QueryResult]


def check_replay(replay: Replay, run: Run, target: str) -> CheckReport:
    """Compare every quoted number with the data now; `run` executes one guarded statement and
    raises AstroError when it cannot (the caller's exit 2)."""
    report = CheckReport(replay.id, target)
    for answer in replay.answers:
        results = {name: run(sql) for name, sql in answer.inputs.items()}
        report.answers += 1
        rendered = _render_again(answer, results)
        for quoted in answer.quoted:
            report.numbers += 1
            moved = _moved(quoted, results, rendered)
            if moved is not None:
                report.moved.append(moved)
    return report


def _cell(results: dict[str, QueryResult], source: Source) -> Any:
    result = results.get(source.input)
    if result is None:
        return GONE
    if source.row is None:
        return result.total_rows if result.truncated and result.total_rows is not None else result.row_count
    table = result.table
    if source.column not in table.column_names or not 0 <= source.row < table.num_rows:
        return GONE
    return table.column(source.column)[source.row].as_py()


def _moved(quoted: Quoted, results: dict[str, QueryResult], again: Again | None) -> Moved | None:
    if quoted.derived and again is not None:
        span = again.match(quoted)
        if span is None:
            return Moved(quoted.label, quoted.text, "(no longer in the answer)")
        value, text = span
        if text == quoted.text or same(value, quoted.value):  # the same template prints it alike
            return None
        return Moved(quoted.label, quoted.text, one_line(text, 60))
    checked = [s for s in quoted.sources if s.row is None or s.column is not None]
    now = [_cell(results, s) for s in checked]
    if all(same(value, s.value) for value, s in zip(now, checked, strict=True)):
        return None
    if quoted.derived or len(checked) != 1:
        return Moved(quoted.label, quoted.text, "(a value it was computed from moved)")
    found = number_format(quoted.value, quoted.text)
    value = now[0]
    shown = GONE if value is GONE else found.show(value) if found is not None else str(value)
    if found is not None and shown == quoted.text:  # moved below the precision it was quoted at
        return None
    return Moved(quoted.label, quoted.text, one_line(shown, 60))


class Again:
    """The answer's computed numbers rendered again over the new results, found by the cells they
    came from, else by their place among the computed numbers."""

    def __init__(self, answer: ReplayAnswer, spans: list[tuple[tuple[Any, ...], Any, str]]) -> None:
        self._by_key = {key: (value, text) for key, value, text in spans}
        self._in_order = [(value, text) for _, value, text in spans]
        self._order = [_key(q.sources) for q in answer.quoted if q.derived]

    def match(self, quoted: Quoted) -> tuple[Any, str] | None:
        key = _key(quoted.sources)
        if key in self._by_key:
            return self._by_key[key]
        at = self._order.index(key)
        return self._in_order[at] if at < len(self._in_order) else None


def _key(sources: tuple[Source, ...]) -> tuple[Any, ...]:
    return tuple((s.input, s.row, s.column) for s in sources)


def _render_again(answer: ReplayAnswer, results: dict[str, QueryResult]) -> Again | None:
    if answer.template is None or not any(q.derived for q in answer.quoted):
        return None
    from astro_tui.agent.templates import TemplateError, render

    try:
        rendered = render(answer.template, results)
    except TemplateError:
        return None
    values = [(s, json_safe(plain(s.value))) for s in rendered.spans if s.derived]
    spans = [(_key(s.sources), value, s.text) for s, value in values if as_number(value) is not None]
    return Again(answer, spans)

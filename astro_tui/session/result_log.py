"""The session's log of results: every result a person or the model produced, with its name.

A result gets its name here and nowhere else: a model's query keeps its label
(`df_2 · revenue by region`), an answer's tables and chart are `A1 Monthly revenue`, a
preview is `preview orders`, the person's SQL is counted (`sql 3 · from sales.orders`).
Each addition is reported (`ResultAdded`) through the session's listeners.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from astro_tui.session.events import ResultAdded, SessionEvent
from astro_tui.session.results import Result, ResultKind
from astro_tui.text import one_line

if TYPE_CHECKING:
    from astro_tui.agent.events import AgentEvent, Answer, ChartSpec
    from astro_tui.data.results import QueryResult

NAME_CHARS = 40


class ResultLog:
    """The results of one session, oldest first; safe to add to from any thread."""

    def __init__(self, emit: Callable[[SessionEvent], None]) -> None:
        self._emit = emit
        self._lock = threading.Lock()
        self._results: list[Result] = []
        self._counters: dict[str, int] = {}
        self._answers = 0

    @property
    def results(self) -> list[Result]:
        """Every result of this session, oldest first."""
        with self._lock:
            return list(self._results)

    def add(
        self,
        kind: ResultKind,
        result: QueryResult,
        *,
        label: str = "",
        verified: bool = False,
        sql_text: str | None = None,
        chart: ChartSpec | None = None,
        title: str | None = None,
    ) -> Result:
        """Name a result and add it to the log: a model's query or an answer keeps its label
        (`df_2 · revenue by region`, `A1 Monthly revenue`), a preview is `preview NAME`, the
        person's SQL is counted (`sql 3 · from sales.orders`)."""
        label = one_line(label, NAME_CHARS) if label else ""
        with self._lock:
            if kind in ("tool", "answer") and label:
                name = label
            elif kind == "preview":
                name = f"preview {label}".rstrip()
            else:
                count = self._counters[kind] = self._counters.get(kind, 0) + 1
                name = f"{kind} {count}" + (f" · {label}" if label else "")
            entry = Result(
                len(self._results) + 1,
                name,
                kind,
                result,
                sql_text or result.sql,
                verified=verified,
                chart=chart,
                title=title,
            )
            self._results.append(entry)
        self._emit(ResultAdded(entry))
        return entry

    def turn_event(self, event: AgentEvent, question: str) -> list[Result]:
        """The results a turn's event brings: a model's query (`df_N`), or an answer's inputs
        and chart (`A1 …`)."""
        from astro_tui.agent.events import Answer, ToolResult

        if isinstance(event, ToolResult) and event.result is not None and event.name == "run_sql":
            sql = event.result.sql.lstrip()
            about = sql_title(sql) if sql.startswith(("--", "/*")) else one_line(question, NAME_CHARS)
            return [self.add("tool", event.result, label=f"{event.result_name or 'run_sql'} · {about}")]
        if isinstance(event, Answer):
            return self.answer(event)
        return []

    def answer(self, answer: Answer) -> list[Result]:
        if not answer.tables and answer.chart is None:
            return []
        with self._lock:
            self._answers += 1
            prefix = f"A{self._answers}"
        main, chart = answer.main_result, answer.chart
        title = answer.title or (chart.title if chart else None)
        sql_text = (
            answer.tables[0].sql
            if len(answer.tables) == 1
            else "\n\n".join(f"-- {t.name}\n{t.sql.strip().rstrip(';')};" for t in answer.tables)
        )
        logged: list[Result] = []
        for table in sorted(answer.tables, key=lambda t: t.result is main):
            label = f"{prefix} {table.name}" if len(answer.tables) > 1 else f"{prefix} {title or table.name}"
            drawn = chart if chart is not None and table.result is chart.result else None
            logged.append(
                self.add(
                    "answer",
                    table.result,
                    label=label,
                    verified=answer.verified,
                    sql_text=sql_text,
                    chart=drawn,
                    title=title,
                )
            )
        if chart is not None and not any(r.result is chart.result for r in logged):
            logged.append(
                self.add(
                    "answer",
                    chart.result,
                    label=f"{prefix} {title or chart.title}",
                    verified=answer.verified,
                    chart=chart,
                )
            )
        return logged


_COMMENT = re.compile(r"^\s*(?:--\s*(?P<line>[^\n]*)|/\*\s*(?P<block>.*?)\s*\*/)", re.S)
_NAME = r"(?:\"[^\"]+\"|`[^`]+`|[\w$]+)"
_FROM = re.compile(rf"\bfrom\s+({_NAME}(?:\s*\.\s*{_NAME})*)", re.I)


def sql_title(sql: str, width: int = NAME_CHARS) -> str:
    """What a query is about, for a result's name: its leading comment, else the first table
    it reads, else its first words."""
    match = _COMMENT.match(sql)
    if match:
        text = one_line(match.group("line") or match.group("block") or "", width)
        if text:
            return text
    found = _FROM.search(sql)
    if found:
        return one_line("from " + re.sub(r"\s*\.\s*", ".", found.group(1)), width)
    return one_line(sql, width)

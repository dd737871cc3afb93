"""What a session hands back: a named result, and the reply to one question.

Both are plain data a front end, a script or a notebook can keep: a `Result` is
one entry of the session's log of results (Arrow underneath, pandas on request);
a `Reply` is one turn of the agent, collected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, assert_never

from astro_tui.data.results import QueryResult
from astro_tui.errors import AstroError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from astro_tui.agent.events import AgentEvent, Answer, AnswerKind, ChartSpec, Done, ErrorEvent

ResultKind = Literal["sql", "preview", "tool", "answer"]


@dataclass(frozen=True, slots=True)
class Result:
    """One result of the session, by the name the person sees (`sql 1 · from sales.orders`,
    `df_2 · revenue by region`, `A1 Monthly revenue`).

    `result` is the guarded query's own result (capped, `truncated` when the cap cut it);
    `sql_text` is the SQL to show and copy for it, `verified` whether it backs a verified
    answer (`Answer.verified`: from an output tool's queries, no number typed).
    """

    id: int
    name: str
    kind: ResultKind
    result: QueryResult
    sql_text: str
    verified: bool = False
    chart: ChartSpec | None = None
    title: str | None = None

    @property
    def sql(self) -> str:
        """The statement exactly as it ran."""
        return self.result.sql

    @property
    def columns(self) -> list[str]:
        return self.result.columns

    @property
    def row_count(self) -> int:
        return self.result.row_count

    @property
    def truncated(self) -> bool:
        return self.result.truncated

    def rows(self, limit: int | None = None) -> list[tuple[Any, ...]]:
        return self.result.rows(limit)

    def to_arrow(self) -> pa.Table:
        return self.result.table

    def to_pandas(self) -> pd.DataFrame:
        return self.result.table.to_pandas()

    def __repr__(self) -> str:
        return f"<Result {self.name!r}: {self.result.count_text()}>"


class AskFailed(AstroError):
    """A question ended without an answer; `kind` says why (`config`, `connection`, `limit`, …)."""

    def __init__(self, message: str, kind: str, reply: Reply) -> None:
        super().__init__(message)
        self.kind = kind
        self.reply = reply


@dataclass
class Reply:
    """One question's turn, collected: the answer (if any) with its named results, the errors,
    the closing `Done`, and the tokens it cost."""

    question: str
    conversation_id: str | None = None
    answer: Answer | None = None
    results: list[Result] = field(default_factory=list)
    errors: list[ErrorEvent] = field(default_factory=list)
    done: Done | None = None
    tokens: int = 0
    """Total tokens summed over the turn's `UsageEvent`s (one per model reply that reported usage)."""

    def take(self, event: AgentEvent, logged: list[Result]) -> bool:
        """Keep what the reply needs of one event; True when the event is progress (text,
        tool calls, retries, usage) that a front end may show as it happens."""
        from astro_tui.agent import events as ev  # not at import: `astro sql` needs no model client

        match event:
            case ev.Answer():
                self.answer, self.results = event, logged
                return False
            case ev.ErrorEvent():
                self.errors.append(event)
                return False
            case ev.Done():
                self.done = event
                return False
            case ev.UsageEvent():
                self.tokens += event.total_tokens
                return True
            case (
                ev.TextDelta()
                | ev.ReasoningDelta()
                | ev.ToolCallStarted()
                | ev.ToolCallArguments()
                | ev.ToolCallFinished()
                | ev.ToolCallSkipped()
                | ev.ToolResult()
                | ev.Reasked()
                | ev.Notice()
                | ev.RetryEvent()
            ):
                return True
            case _:
                assert_never(event)

    @property
    def text(self) -> str | None:
        return self.answer.text if self.answer is not None else None

    @property
    def verified(self) -> bool:
        return bool(self.answer is not None and self.answer.verified)

    @property
    def kind(self) -> AnswerKind | None:
        return self.answer.kind if self.answer is not None else None

    @property
    def sql(self) -> list[str]:
        """The answer's statements exactly as they ran."""
        return self.answer.sql if self.answer is not None else []

    @property
    def data(self) -> Result | None:
        """The answer's main result (the chart's, else the largest input)."""
        main = self.answer.main_result if self.answer is not None else None
        return next((r for r in self.results if r.result is main), None)

    @property
    def tool_calls(self) -> int:
        return self.done.tool_calls if self.done is not None else 0

    def failure(self) -> ErrorEvent:
        """Why there is no answer: the first error, or a generic one when the model just stopped."""
        from astro_tui.agent.events import ErrorEvent

        return self.errors[0] if self.errors else ErrorEvent("the model stopped without an answer")

    def __repr__(self) -> str:
        if self.answer is None:
            return f"<Reply failed: {self.failure().message!r}>"
        mark = "verified" if self.verified else "unverified"
        return f"<Reply {mark} {self.kind}: {self.answer.text[:60]!r}>"

"""What one turn of the agent emits, in order; the TUI and `astro ask` consume the same stream.

These are plain frozen dataclasses so they cross threads and asyncio tasks
freely and can be posted as Textual messages without conversion. `TextDelta`
and `ReasoningDelta` are the model client's own classes: the loop passes each
token on as it arrived rather than wrapping it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from astro_tui.agent.provenance import Span, is_verified
from astro_tui.data.results import QueryResult
from astro_tui.llm.messages import ReasoningDelta, TextDelta

AnswerKind = Literal["result", "observation", "chart", "message", "unverified"]
ChartKind = Literal["bar", "line", "scatter", "hist"]
DoneReason = Literal["answer", "text", "limit", "error", "cancelled"]


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model has begun writing a tool call: its name has streamed, its arguments follow.

    Then come `ToolCallArguments` as the arguments stream, and once the reply is
    complete either `ToolCallFinished` (parsed arguments) and `ToolResult`, or
    `ToolCallSkipped` for a call that is not run. A turn that stops mid-reply
    (Esc, an error) leaves its started calls without either.
    """

    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArguments:
    """A fragment of a started call's JSON arguments, as the model writes them."""

    call_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallSkipped:
    """A call the model wrote that is not run: the turn already had its answer, or hit its limit."""

    call_id: str
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know about how the turn went, that is not an error."""

    message: str


@dataclass(frozen=True, slots=True)
class Reasked:
    """The model answered a data question in plain text and is asked once more to answer with a tool."""

    instruction: str

    @property
    def note(self) -> str:
        """What the person is told, in the app and by `astro ask`."""
        return "the model answered in plain text; asked it once more to answer with a tool"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """Arguments are complete; `arguments` is None when they were not valid JSON."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    summary: str


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the tool returned to the model; `result` carries a query result when there is one."""

    call_id: str
    name: str
    ok: bool
    content: str
    elapsed_ms: float
    result: QueryResult | None = None
    result_name: str | None = None


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """A declarative chart: the only thing the model may say about a picture."""

    kind: ChartKind
    x: str
    y: tuple[str, ...]
    title: str
    result: QueryResult


@dataclass(frozen=True, slots=True)
class AnswerTable:
    """One named input of an output tool, with the SQL exactly as executed."""

    name: str
    sql: str
    result: QueryResult


@dataclass(frozen=True, slots=True)
class Answer:
    """The end of a turn that the user sees; `verified` (`provenance.is_verified`) only when an
    output tool produced it from its queries and no number in it was typed.

    `provenance` holds a span of `text` for each value rendered from a result, with where it
    came from; `complete` is False when a value came from a result cut by a limit.
    """

    kind: AnswerKind
    text: str
    title: str | None = None
    tables: tuple[AnswerTable, ...] = ()
    chart: ChartSpec | None = None
    unverified_numbers: tuple[str, ...] = ()
    provenance: tuple[Span, ...] = ()
    complete: bool = True

    @property
    def verified(self) -> bool:
        return is_verified(self.kind, self.unverified_numbers)

    @property
    def sql(self) -> list[str]:
        return [t.sql for t in self.tables]

    @property
    def main_result(self) -> QueryResult | None:
        """The result a table view should show: the largest input."""
        if self.chart is not None:
            return self.chart.result
        if not self.tables:
            return None
        return max(self.tables, key=lambda t: t.result.row_count).result


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """One clear sentence; `kind` lets the UI choose a notification or an inline block."""

    message: str
    kind: str = "error"


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """Tokens of one model reply; `Done.usage` holds the sum over the turn.

    `cached_tokens` is the part of the prompt the server served from its cache
    (when it says so), which shows whether the stable prompt prefix pays off.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True, slots=True)
class RetryEvent:
    """The model server asked us to wait (429/5xx); the UI says so instead of looking frozen."""

    message: str


@dataclass(frozen=True, slots=True)
class Done:
    """Always the last event of a turn (except when the turn is cancelled: then nothing follows).

    `completions` counts model replies in the turn, `tool_calls` the calls executed.
    """

    reason: DoneReason
    tool_calls: int = 0
    usage: UsageEvent | None = None
    """The sum over the turn's replies that reported usage; None when none did (unknown, not 0)."""
    completions: int = 0


__all__ = [
    "AgentEvent",
    "Answer",
    "AnswerKind",
    "AnswerTable",
    "ChartKind",
    "ChartSpec",
    "Done",
    "DoneReason",
    "ErrorEvent",
    "Notice",
    "Reasked",
    "ReasoningDelta",
    "RetryEvent",
    "TextDelta",
    "ToolCallArguments",
    "ToolCallFinished",
    "ToolCallSkipped",
    "ToolCallStarted",
    "ToolResult",
    "UsageEvent",
]

AgentEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArguments
    | ToolCallFinished
    | ToolCallSkipped
    | Reasked
    | Notice
    | ToolResult
    | Answer
    | ErrorEvent
    | UsageEvent
    | RetryEvent
    | Done
)

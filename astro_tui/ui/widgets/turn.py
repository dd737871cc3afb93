"""One question and everything that answers it: a widget per turn, as oterm's `ChatItem`.

The `TurnView` is the question's line in the log and owns the rest of the turn:
its worker iterates the session's events for the question and posts each to the
widget; `on_turn_view_agent_event` (a `match` over every event type) builds the
blocks in order: the model's text streaming as Markdown, its reasoning folded
away, one block per tool call, the answer card. The blocks go into the log after
the question, not inside a container of the turn's: a streaming block whose
container grows with it made every batch of text lay out one level more, and
the event loop's slowest moments while an answer streamed grew by a few tens of
milliseconds. The pane hears of the turn through two messages: `Status` (what it
is doing now) and `Ended` (how it ended). Cancelling the turn cancels the
worker, which closes the stream (and with it the model request and any running
query); events of a cancelled turn still queued are dropped, since the turn no
longer runs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal, assert_never

from rich.text import Text
from textual import work
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static
from textual.worker import Worker, WorkerState

from astro_tui.errors import AstroError, error_line
from astro_tui.text import inert
from astro_tui.ui.inert import inert_text
from astro_tui.ui.widgets.answer_card import UNVERIFIED_NOTE, AnswerCard, capped
from astro_tui.ui.widgets.markdown_text import StreamingMarkdown
from astro_tui.ui.widgets.tool_block import ToolBlock, clocks_live
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.agent.events import AgentEvent, Answer
    from astro_tui.session import Session

# Model text reaches the screen in batches: each batch re-lays out the screen, so
# writing per token would spend the loop on layouts. A batch costs about the same at
# any answer length (only the block being written is re-rendered); the pause between
# batches still stretches if the loop falls behind, keeping it free for keys.
FLUSH_S = 0.08
FLUSH_MAX_S = 0.5

_ENDINGS = {"answer": "answered", "text": "replied"}


def _question_text(question: str) -> Text:
    text = Text("you  ", style="bold")
    text.append(inert(question.strip()))
    return text


def user_line(question: str) -> Static:
    """The person's question as the log shows it (a saved turn's, when resumed)."""
    return Static(_question_text(question), classes="user-msg")


def note_line(text: str | Text, kind: str = "note") -> Static:
    """A line from the app (a slash command's output, a notice); `kind` picks its style."""
    body = text if isinstance(text, Text) else inert_text(text)
    return Static(body, classes=f"note -{kind}")


def error_block(message: str) -> Static:
    return Static(inert_text(f"✗ {message}"), classes="error-block")


class ReasoningBlock(Collapsible):
    """Reasoning streams dimmed and open, then folds away when the answer starts."""

    def __init__(self) -> None:
        self._text = Static("", classes="reasoning-text")
        super().__init__(self._text, title="reasoning…", collapsed=False, classes="reasoning")
        self._buffer: list[str] = []
        self._chars = 0
        self._pending = False

    def append(self, text: str) -> None:
        self._chars += len(text)
        text = capped(self._chars - len(text), text)
        if not text:
            return
        self._buffer.append(inert(text))
        if not self._pending:
            self._pending = True
            self.set_timer(0.05, self._flush)

    def _flush(self) -> None:
        self._pending = False
        self._text.update(Text("".join(self._buffer)))

    def close(self) -> None:
        self._flush()
        self.title = f"reasoning ({self._chars:,} characters)"
        self.collapsed = True


class TurnView(Static):
    """One turn, shown as its question: waiting for the model, running, or ended."""

    class AgentEvent(Message):
        """One event of this turn, posted by its worker to this widget, in order."""

        def __init__(self, event: AgentEvent) -> None:
            super().__init__()
            self.event = event

    class Stopped(Message):
        """The turn's worker ended; `error` when the session could not run the turn."""

        def __init__(self, error: str | None = None) -> None:
            super().__init__()
            self.error = error

    class Status(Message):
        """What the running turn is doing now, for the pane's status line."""

        def __init__(self, turn: TurnView, text: str) -> None:
            super().__init__()
            self.turn = turn
            self.text = text

    class Ended(Message):
        """The turn ended (answered, cancelled, stopped…); `summary` says how, and what it cost."""

        def __init__(self, turn: TurnView, summary: str) -> None:
            super().__init__()
            self.turn = turn
            self.summary = summary

    def __init__(self, question: str) -> None:
        super().__init__(_question_text(question), classes="user-msg")
        self.question = question
        self.state: Literal["waiting", "running", "ended"] = "waiting"
        self._started = time.monotonic()
        self._md: StreamingMarkdown | None = None
        self._streamed_chars = 0
        self._streaming = False
        self._reasoning: ReasoningBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._tool_calls = 0
        self._tokens = 0
        self._pending: list[str] = []
        self._flush_timer: Timer | None = None
        self._flush_interval = FLUSH_S
        self._flush_due = 0.0

    @property
    def running(self) -> bool:
        return self.state == "running"

    # ------------------------------------------------------------------ waiting, running, ending

    def start(self, session: Session) -> None:
        self.state = "running"
        self._started = time.monotonic()
        self._status("thinking")
        self._consume(session)

    def give_up(self) -> None:
        """A waiting turn that will not start (the model cannot be used, or Esc): nothing ran."""
        self.state = "ended"

    @work(exclusive=True, group="turn", exit_on_error=False, description="agent turn")
    async def _consume(self, session: Session) -> None:
        try:
            async for event in session.run(self.question):
                self.post_message(self.AgentEvent(event))
        except AstroError as exc:
            self.post_message(self.Stopped(error_line(exc)))
            return
        self.post_message(self.Stopped())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failure no one planned for ends the turn here, in one line, rather than leave it running."""
        if event.state is WorkerState.ERROR and event.worker.group == "turn":
            event.stop()
            self.log.error("agent turn failed", event.worker.error)
            self.on_turn_view_stopped(self.Stopped(error_line(event.worker.error or RuntimeError())))

    def cancel(self) -> None:
        """Stop the running turn: the stream is closed and its query interrupted."""
        if not self.running:
            return
        self.workers.cancel_group(self, "turn")
        self._finish("cancelled")
        self._mount(note_line("■ cancelled: the question is back in the box", "cancelled"))

    def on_turn_view_stopped(self, message: TurnView.Stopped) -> None:
        message.stop()
        if message.error:
            self._mount(error_block(f"the turn stopped unexpectedly: {message.error}"))
        if self.running:
            self._finish("stopped" if message.error else "done")

    def _finish(self, reason: str) -> None:
        self._close_text()
        self._close_reasoning()
        for block in self._tools.values():
            block.cancel()
        self.state = "ended"
        parts = [reason]
        if self._tool_calls:
            parts.append(counted(self._tool_calls, "tool call"))
        if self._tokens:
            parts.append(counted(self._tokens, "token"))
        if clocks_live(self):
            parts.append(f"{time.monotonic() - self._started:,.1f} s")
        self.post_message(self.Ended(self, " · ".join(parts)))

    def _status(self, text: str) -> None:
        self.post_message(self.Status(self, text))

    def _mount(self, widget: Widget) -> Widget:
        """A block of this turn, into the log (see the module docstring)."""
        self._log_view.mount(widget)
        return widget

    @property
    def _log_view(self) -> Widget:
        assert isinstance(self.parent, Widget)
        return self.parent

    # ------------------------------------------------------------------ events

    async def on_turn_view_agent_event(self, message: TurnView.AgentEvent) -> None:
        from astro_tui.agent import events as ev  # the model client's modules load after the first frame

        message.stop()
        if not self.running:
            return
        event = message.event
        match event:
            case ev.TextDelta():
                await self._text(event.text)
            case ev.ReasoningDelta():
                if self._reasoning is None:
                    self._close_text()
                    self._reasoning = ReasoningBlock()
                    self._mount(self._reasoning)
                self._reasoning.append(event.text)
                self._status("reasoning")
            case ev.ToolCallStarted():
                self._tool_started(event.call_id, event.name)
                self._status(f"writing {event.name}")
            case ev.ToolCallArguments():
                if (block := self._tools.get(event.call_id)) is not None:
                    block.append_arguments(event.text)
            case ev.ToolCallSkipped():
                if (block := self._tools.get(event.call_id)) is not None:
                    block.skip(event.reason)
                    self._tool_calls -= 1
            case ev.Reasked():
                self._close_text()
                if self._md is not None and self._streamed_chars:
                    self._md.add_class("-unverified")
                self._mount(note_line(f"↻ {event.note}", "retry"))
                self._status("thinking")
            case ev.Notice():
                self._mount(note_line(f"ℹ {event.message}", "retry"))
            case ev.ToolCallFinished():
                block = self._tools.get(event.call_id) or self._tool_started(event.call_id, event.name)
                block.set_arguments(event.arguments, event.summary)
                self._status(f"running {event.name}")
            case ev.ToolResult():
                block = self._tools.get(event.call_id) or self._tool_started(event.call_id, event.name)
                block.set_result(event.ok, event.content, event.elapsed_ms)
                self._status("thinking")
            case ev.Answer():
                self._answer(event)
            case ev.ErrorEvent():
                self._close_text()
                self._mount(error_block(event.message))
            case ev.RetryEvent():
                self._status(event.message)
                self._mount(note_line(f"⟳ {event.message}", "retry"))
            case ev.UsageEvent():
                self._tokens = max(self._tokens, event.total_tokens)
            case ev.Done():
                self._tokens = max(self._tokens, event.usage.total_tokens if event.usage else 0)
                self._tool_calls = max(self._tool_calls, event.tool_calls)
                self._finish(_ENDINGS.get(event.reason, event.reason))
            case _:
                assert_never(event)

    async def _text(self, text: str) -> None:
        self._close_reasoning()
        if not self._streaming:
            self._md = StreamingMarkdown(classes="model-text")
            self._streaming = True
            self._streamed_chars = 0
            await self._log_view.mount(self._md)
            self._status("writing")
        text = capped(self._streamed_chars, text)
        self._streamed_chars += len(text)
        if not text:
            return
        self._pending.append(inert(text))
        if self._flush_timer is None:
            self._flush_due = time.monotonic() + self._flush_interval
            self._flush_timer = self.set_timer(self._flush_interval, self._flush_text)

    def _flush_text(self) -> None:
        self._flush_timer = None
        # How late this timer fired is how long the loop was busy with the last batch.
        late = max(0.0, time.monotonic() - self._flush_due)
        self._flush_interval = min(FLUSH_MAX_S, max(FLUSH_S, 0.7 * self._flush_interval + 0.3 * 4 * late))
        if self._md is not None and self._streaming and self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._md.write(text)

    def _close_text(self) -> None:
        """Write what is still pending; the next text starts a new block of model text."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        rest = "".join(self._pending)
        self._pending.clear()
        if self._md is not None and self._streaming:
            self._md.write(rest)
        self._streaming = False

    def _close_reasoning(self) -> None:
        if self._reasoning is not None:
            self._reasoning.close()
            self._reasoning = None

    def _tool_started(self, call_id: str, name: str) -> ToolBlock:
        self._close_text()
        self._close_reasoning()
        self._tool_calls += 1
        block = ToolBlock(call_id, name)
        self._tools[call_id] = block
        self._mount(block)
        self._status(f"calling {name}")
        return block

    def _answer(self, answer: Answer) -> None:
        self._close_reasoning()
        self._close_text()
        if answer.kind == "unverified" and self._md is not None and self._streamed_chars:
            self._md.add_class("-unverified")
            note = UNVERIFIED_NOTE
            if answer.unverified_numbers:
                numbers = ", ".join(inert(n, keep_newlines=False) for n in answer.unverified_numbers[:12])
                note += f" (numbers: {numbers})"
            self._mount(Static(Text(note), classes="unverified-note"))
        else:
            self._mount(AnswerCard(answer))

"""The conversation: the log of turns and the question box.

One worker per turn iterates the agent's event stream and only posts messages;
the handlers here build the log. Cancelling the worker closes the stream (and
with it the model request and any running query); events of a cancelled turn
that were already queued are ignored by their turn number.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from astro_tui.errors import error_line
from astro_tui.session import sql_title
from astro_tui.text import inert, one_line
from astro_tui.ui.inert import inert_text
from astro_tui.ui.messages import AgentEvent, ResultOrigin, ResultReady, TurnFinished
from astro_tui.ui.widgets.answer_card import UNVERIFIED_NOTE, AnswerCard, capped
from astro_tui.ui.widgets.markdown_text import MarkdownText, StreamingMarkdown
from astro_tui.ui.widgets.question import QuestionInput
from astro_tui.ui.widgets.tool_block import SPINNER, ToolBlock, clocks_live
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.agent import events as ev
    from astro_tui.agent.loop import Agent

# Model text reaches the screen in batches: each batch re-lays out the screen, so
# writing per token would spend the loop on layouts. A batch costs about the same at
# any answer length (only the block being written is re-rendered); the pause between
# batches still stretches if the loop falls behind, keeping it free for keys.
FLUSH_S = 0.08
FLUSH_MAX_S = 0.5


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


class ConversationPane(Vertical):
    ALLOW_MAXIMIZE = True

    def __init__(self) -> None:
        super().__init__(id="conversation", classes="pane")
        self.border_title = "Conversation"
        self._turn = 0
        self._turn_active = False
        self._query_active = False
        self._wait_note: Widget | None = None
        self._question = ""
        self._started = 0.0
        self._status_text = ""
        self._frame = 0
        self._md: StreamingMarkdown | None = None
        self._streamed_chars = 0
        self._reasoning: ReasoningBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._tool_calls = 0
        self._tokens = 0
        self._answers = 0
        self._pending: list[str] = []
        self._flush_timer: Timer | None = None
        self._flush_interval = FLUSH_S
        self._flush_due = 0.0
        self._streaming = False

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="conversation-log")
        yield Static("", id="turn-status")
        yield QuestionInput(id="question")

    def on_mount(self) -> None:
        self.query_one("#turn-status").display = False
        if clocks_live(self):
            self.set_interval(0.1, self._tick)

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#conversation-log", VerticalScroll)

    @property
    def question(self) -> QuestionInput:
        return self.query_one(QuestionInput)

    @property
    def running(self) -> bool:
        return self._turn_active

    # ------------------------------------------------------------------ blocks

    def _mount(self, widget: Widget) -> Widget:
        log = self.log_view
        log.mount(widget)
        if not log.is_anchored:
            log.anchor()
        return widget

    def add_user(self, question: str) -> None:
        text = Text("you  ", style="bold")
        text.append(inert(question.strip()))
        self._mount(Static(text, classes="user-msg"))

    def add_note(self, text: str | Text, kind: str = "note") -> Widget:
        """A line from the app (slash command output, a notice); `kind` picks its style."""
        body = text if isinstance(text, Text) else inert_text(text)
        return self._mount(Static(body, classes=f"note -{kind}"))

    def show_waiting(self, text: str) -> None:
        """A passing notice (the database or model client still opening), gone when work starts."""
        self.drop_waiting()
        self._wait_note = self.add_note(text, "wait")

    def drop_waiting(self) -> None:
        if self._wait_note is not None:
            self._wait_note.remove()
            self._wait_note = None

    def start_query(self) -> None:
        """A `/sql` running: the same spinner and clock as a question, unless one is running."""
        if self._turn_active:
            return
        self._query_active = True
        self._started = time.monotonic()
        self._set_status("running the query")

    def finish_query(self, outcome: str) -> None:
        if not self._query_active:
            return
        self._query_active = False
        elapsed = time.monotonic() - self._started
        self._set_status(f"{outcome} · {elapsed:,.1f} s" if clocks_live(self) else outcome)

    def add_markdown(self, markdown: str, title: str) -> None:
        block = Vertical(
            Static(Text(title, style="bold")),
            MarkdownText(inert(markdown)),
            classes="doc-block",
        )
        self._mount(block)

    def add_error(self, message: str) -> None:
        self._mount(Static(inert_text(f"✗ {message}"), classes="error-block"))

    def show_howto(self, text: str) -> None:
        """Shown from the top (not anchored to the bottom like the rest of the log)."""
        self.log_view.mount(Static(inert_text(text), classes="howto"))

    def clear_log(self) -> None:
        self.log_view.remove_children()
        if not self._turn_active:
            self._set_status("")  # the last turn's summary belongs to what was cleared
        self._md = None
        self._reasoning = None
        self._tools.clear()

    def show_resumed(self, conversation_id: str, turns: list[Any]) -> None:
        """Earlier turns in brief: questions and what answered them (their results are not kept)."""
        self._set_status("")
        earlier = counted(len(turns), "earlier question")
        self.add_note(f"resumed conversation {conversation_id}: {earlier}", "new")
        for turn in turns:
            self.add_user(turn.question)
            messages = [entry.message for entry in turn.entries]
            calls = [
                call.get("function", {})
                for m in messages
                for call in (m.get("tool_calls") or ())
                if isinstance(call, dict)
            ]
            if calls:
                self.add_note("tools: " + ", ".join(c.get("name", "?") for c in calls), "tools")
            shown = turn.shown_answer if turn.status == "answer" else None
            final = shown or next(
                (
                    m.get("content")
                    for m in reversed(messages)
                    if m.get("role") == "assistant" and m.get("content")
                ),
                None,
            )
            if final:
                label = {"answer": "answer", "text": "reply"}.get(turn.status, turn.status)
                self.add_markdown(str(final), f"{label} (saved; ask again to see its tables)")

    # ------------------------------------------------------------------ turns

    def start_turn(self, agent: Agent, question: str, *, echo: bool = True) -> None:
        self.drop_waiting()
        self._query_active = False
        self._turn += 1
        self._turn_active = True
        self._question = question
        self._started = time.monotonic()
        self._tool_calls = 0
        self._tokens = 0
        self._md = None
        self._reasoning = None
        self._tools = {}
        self._flush_interval = FLUSH_S
        if echo:
            self.add_user(question)
        self.log_view.anchor()
        self._set_status("thinking")
        self.app.refresh_bindings()
        self._consume(agent, question, self._turn)

    @work(exclusive=True, group="turn", exit_on_error=False, description="agent turn")
    async def _consume(self, agent: Agent, question: str, turn: int) -> None:
        try:
            async for event in agent.run(question):
                self.post_message(AgentEvent(event, turn))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.post_message(TurnFinished(turn, error=error_line(exc)))
            return
        self.post_message(TurnFinished(turn))

    def cancel_turn(self) -> bool:
        """Stop the running turn and give the question back for editing."""
        if not self._turn_active:
            return False
        self.workers.cancel_group(self, "turn")
        self._turn += 1
        self._finish("cancelled")
        self.add_note("■ cancelled: the question is back in the box", "cancelled")
        self.question.put_back(self._question)
        self.question.focus()
        return True

    def _finish(self, reason: str) -> None:
        self._close_text()
        self._close_reasoning()
        for block in self._tools.values():
            block.cancel()
        self._turn_active = False
        elapsed = time.monotonic() - self._started
        parts = [reason]
        if self._tool_calls:
            parts.append(counted(self._tool_calls, "tool call"))
        if self._tokens:
            parts.append(counted(self._tokens, "token"))
        if clocks_live(self):
            parts.append(f"{elapsed:,.1f} s")
        self._status_text = " · ".join(parts)
        self._render_status()
        self.app.refresh_bindings()

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

    # ------------------------------------------------------------------ status line

    def _set_status(self, text: str) -> None:
        self._status_text = text
        self._render_status()

    def _tick(self) -> None:
        if self._turn_active or self._query_active:
            self._frame += 1
            self._render_status()

    def _render_status(self) -> None:
        status = self.query_one("#turn-status", Static)
        if not self._status_text:
            status.display = False
            return
        status.display = True
        live = clocks_live(self)
        if self._turn_active or self._query_active:
            mark = SPINNER[self._frame % len(SPINNER)] if live else "…"
            line = Text(f"{mark} ", style="bold")
            line.append(inert(self._status_text, keep_newlines=False))
            if live:
                line.append(f"  {time.monotonic() - self._started:,.1f} s", "dim")
            line.append("   esc cancels", "dim")
        else:
            line = Text(inert(self._status_text, keep_newlines=False), style="dim")
        status.update(line, layout=False)

    # ------------------------------------------------------------------ events

    async def on_agent_event(self, message: AgentEvent) -> None:
        from astro_tui.agent import events as ev

        message.stop()
        if message.turn != self._turn or not self._turn_active:
            return
        event = message.event
        if isinstance(event, ev.TextDelta):
            await self._text(event.text)
        elif isinstance(event, ev.ReasoningDelta):
            if self._reasoning is None:
                self._close_text()
                self._reasoning = ReasoningBlock()
                self._mount(self._reasoning)
            self._reasoning.append(event.text)
            self._set_status("reasoning")
        elif isinstance(event, ev.ToolCallStarted):
            self._tool_started(event.call_id, event.name)
            self._set_status(f"writing {event.name}")
        elif isinstance(event, ev.ToolCallArguments):
            if (block := self._tools.get(event.call_id)) is not None:
                block.append_arguments(event.text)
        elif isinstance(event, ev.ToolCallSkipped):
            if (block := self._tools.get(event.call_id)) is not None:
                block.skip(event.reason)
                self._tool_calls -= 1
        elif isinstance(event, ev.Reasked):
            self._close_text()
            if self._md is not None and self._streamed_chars:
                self._md.add_class("-unverified")
            self.add_note(f"↻ {event.note}", "retry")
            self._set_status("thinking")
        elif isinstance(event, ev.Notice):
            self.add_note(f"ℹ {event.message}", "retry")
        elif isinstance(event, ev.ToolCallFinished):
            block = self._tools.get(event.call_id) or self._tool_started(event.call_id, event.name)
            block.set_arguments(event.arguments, event.summary)
            self._set_status(f"running {event.name}")
        elif isinstance(event, ev.ToolResult):
            self._tool_result(event)
        elif isinstance(event, ev.Answer):
            self._answer(event)
        elif isinstance(event, ev.ErrorEvent):
            self._close_text()
            self.add_error(event.message)
        elif isinstance(event, ev.RetryEvent):
            self._set_status(event.message)
            self.add_note(f"⟳ {event.message}", "retry")
        elif isinstance(event, ev.UsageEvent):
            self._tokens = max(self._tokens, event.total_tokens)
        elif isinstance(event, ev.Done):
            self._tokens = max(self._tokens, event.usage.total_tokens)
            self._tool_calls = max(self._tool_calls, event.tool_calls)
            self._finish({"answer": "answered", "text": "replied"}.get(event.reason, event.reason))

    def on_turn_finished(self, message: TurnFinished) -> None:
        message.stop()
        if message.turn != self._turn:
            return
        if message.error:
            self.add_error(f"the turn stopped unexpectedly: {message.error}")
        if self._turn_active:
            self._finish("stopped" if message.error else "done")

    async def _text(self, text: str) -> None:
        self._close_reasoning()
        if not self._streaming:
            self._md = StreamingMarkdown(classes="model-text")
            self._streaming = True
            self._streamed_chars = 0
            await self.log_view.mount(self._md)
            if not self.log_view.is_anchored:
                self.log_view.anchor()
            self._set_status("writing")
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

    def _tool_started(self, call_id: str, name: str) -> ToolBlock:
        self._close_text()
        self._close_reasoning()
        self._tool_calls += 1
        block = ToolBlock(call_id, name)
        self._tools[call_id] = block
        self._mount(block)
        self._set_status(f"calling {name}")
        return block

    def _tool_result(self, event: ev.ToolResult) -> None:
        block = self._tools.get(event.call_id) or self._tool_started(event.call_id, event.name)
        block.set_result(event.ok, event.content, event.elapsed_ms)
        self._set_status("thinking")
        if event.result is not None and event.name == "run_sql":
            sql = event.result.sql.lstrip()
            about = sql_title(sql) if sql.startswith(("--", "/*")) else one_line(self._question, 40)
            origin = ResultOrigin("tool", f"{event.result_name or 'run_sql'} · {about}")
            self.post_message(ResultReady(event.result, origin))

    def _answer(self, answer: ev.Answer) -> None:
        self._close_reasoning()
        if answer.kind == "unverified" and self._md is not None and self._streamed_chars:
            self._close_text()
            self._md.add_class("-unverified")
            note = UNVERIFIED_NOTE
            if answer.unverified_numbers:
                numbers = ", ".join(inert(n, keep_newlines=False) for n in answer.unverified_numbers[:12])
                note += f" (numbers: {numbers})"
            self._mount(Static(Text(note), classes="unverified-note"))
        else:
            self._close_text()
            self._mount(AnswerCard(answer))
        self._post_answer_results(answer)

    def _post_answer_results(self, answer: ev.Answer) -> None:
        if not answer.tables and answer.chart is None:
            return
        self._answers += 1
        prefix = f"A{self._answers}"
        main = answer.main_result
        sql_text = _answer_sql(answer)
        title = answer.title or (answer.chart.title if answer.chart else None)
        posted: list[Any] = []
        for table in sorted(answer.tables, key=lambda t: t.result is main):
            origin = ResultOrigin(
                "answer",
                f"{prefix} {table.name}" if len(answer.tables) > 1 else f"{prefix} {title or table.name}",
                verified=answer.verified,
                chart=answer.chart
                if answer.chart is not None and table.result is answer.chart.result
                else None,
                title=title,
                sql_text=sql_text,
            )
            self.post_message(ResultReady(table.result, origin))
            posted.append(table.result)
        chart = answer.chart
        if chart is not None and not any(r is chart.result for r in posted):
            label = f"{prefix} {title or chart.title}"
            origin = ResultOrigin(
                "answer", label, verified=answer.verified, chart=chart, sql_text=chart.result.sql
            )
            self.post_message(ResultReady(chart.result, origin))


def _answer_sql(answer: ev.Answer) -> str:
    if len(answer.tables) == 1:
        return answer.tables[0].sql
    return "\n\n".join(f"-- {t.name}\n{t.sql.strip().rstrip(';')};" for t in answer.tables)

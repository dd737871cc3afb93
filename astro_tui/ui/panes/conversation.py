"""The conversation: the log of turns, the status line and the question box.

Each question becomes a `TurnView` (`widgets/turn.py`) that runs and draws its
own turn; this pane decides when a turn starts (now, or once the model client
is ready), runs the person's `/sql` and shows on the status line what either is
doing, and keeps the log's other lines: notes, errors, the context notes, the
model in use, a resumed conversation. The session (`self.session`) does the work.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from astro_tui.errors import AstroError
from astro_tui.text import inert, one_line
from astro_tui.ui.widgets.command_lines import HowTo
from astro_tui.ui.widgets.markdown_text import MarkdownText
from astro_tui.ui.widgets.question import QuestionInput
from astro_tui.ui.widgets.tool_block import SPINNER, clocks_live, result_status
from astro_tui.ui.widgets.traced_answer import TracedAnswer
from astro_tui.ui.widgets.turn import TurnView, error_block, note_line, user_line
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.agent.history import Turn
    from astro_tui.session import Result, Session

ESC_IN_FOOTER_AFTER_S = 0.5
WAITING = "waiting for the database and the model client…"
NO_NOTES = "_No notes yet. The model adds notes with `update_context`; you can edit the file._"
NO_MODEL = (
    "No model is configured, so questions cannot be answered yet; the instructions are "
    "at the top of this pane (everything else works: the catalog, the shell, /sql)."
)


class ConversationPane(Vertical):
    ALLOW_MAXIMIZE = True

    def __init__(self, session: Session) -> None:
        super().__init__(id="conversation", classes="pane")
        self.border_title = "Conversation"
        self.session = session
        self._turn = 0
        self._current: TurnView | None = None
        self._query_active = False
        self._sql = ""
        self._wait_note: Widget | None = None
        self._started = 0.0
        self._status_text = ""
        self._frame = 0
        self._traced: TracedAnswer | None = None

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
        return self._current is not None and self._current.running

    @property
    def busy(self) -> bool:
        """A turn runs or waits for the model, or the person's `/sql` runs: Esc has work to do."""
        return self.running or self.waiting or self._query_active

    @property
    def waiting(self) -> bool:
        """A question waits for the model client (Esc gives it back)."""
        return self._current is not None and self._current.state == "waiting"

    # ------------------------------------------------------------------ lines of the log

    def _mount(self, widget: Widget) -> Widget:
        log = self.log_view
        log.mount(widget)
        if not log.is_anchored:
            log.anchor()
        return widget

    def add_note(self, text: str | Text, kind: str = "note") -> Widget:
        return self._mount(note_line(text, kind))

    def add_error(self, message: str) -> None:
        self._mount(error_block(message))

    def add_markdown(self, markdown: str, title: str) -> None:
        block = Vertical(
            Static(Text(title, style="bold")), MarkdownText(inert(markdown)), classes="doc-block"
        )
        self._mount(block)

    def show_howto(self, text: str) -> None:
        """Shown from the top (not anchored to the bottom like the rest of the log), laid out so
        that a copy of each command runs (`HowTo`)."""
        self.log_view.mount(Static(HowTo(inert(text)), classes="howto"))

    def show_waiting(self, text: str) -> None:
        """A passing notice (the database or model client still opening), gone when work starts."""
        self.drop_waiting()
        self._wait_note = self.add_note(text, "wait")

    def drop_waiting(self) -> None:
        if self._wait_note is not None:
            self._wait_note.remove()
            self._wait_note = None

    def clear_log(self) -> None:
        """Everything but a turn still running or waiting (removing it would cancel it)."""
        live = self._current is not None and self._current.state != "ended"
        keep = {self._current, self._wait_note} if live else set()
        for child in list(self.log_view.children):
            if child not in keep:
                child.remove()
        if not live:
            self._set_status("")  # the last turn's summary belongs to what was cleared
            self._current = None

    def show_resumed(self, conversation_id: str, turns: list[Turn]) -> None:
        """Earlier turns in brief: questions and what answered them (their results are not kept)."""
        self._set_status("")
        self.add_note(
            f"resumed conversation {conversation_id}: {counted(len(turns), 'earlier question')}", "new"
        )
        for turn in turns:
            self._mount(user_line(turn.question))
            messages = [entry.message for entry in turn.entries]
            calls = [
                call.get("function", {})
                for m in messages
                for call in (m.get("tool_calls") or ())
                if isinstance(call, dict)
            ]
            if calls:
                self.add_note("tools: " + ", ".join(c.get("name", "?") for c in calls), "tools")
            saved = turn.answer if turn.status == "answer" else None
            if saved is not None and saved.provenance:
                self._mount(
                    Vertical(
                        Static(Text("answer (saved; ask again to see its tables)", style="bold")),
                        TracedAnswer(saved.text, saved.provenance, {}),
                        classes="doc-block",
                    )
                )
                continue
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

    def ask(self, question: str) -> None:
        """Start a turn now, or hold it until the model client is ready (`agent_ready`)."""
        session = self.session
        if self.running:
            self.app.notify("A question is still running; esc cancels it.", severity="warning")
            return
        if not session.settings.model_configured:
            self.add_error(NO_MODEL)
            return
        if session.agent_error:
            self.add_error(f"the model cannot be used: {session.agent_error}")
            return
        self.question.clear()
        if session.agent is None:
            if self.waiting:
                self.app.notify("Still opening the database; your question will be sent then.")
                return
            self._current = self._mount_turn(question)
            self.show_waiting(WAITING)
            return
        self._start(self._mount_turn(question))

    def _mount_turn(self, question: str) -> TurnView:
        turn = TurnView(question)
        self._mount(turn)
        return turn

    def _start(self, turn: TurnView) -> None:
        self.drop_waiting()
        self._query_active = False
        self._turn += 1
        self._current = turn
        self._started = time.monotonic()
        self.log_view.anchor()
        turn.start(self.session)
        self.app.refresh_bindings()

    def agent_ready(self) -> None:
        if self.waiting and self._current is not None:
            self._start(self._current)

    def agent_failed(self, message: str) -> None:
        self.drop_waiting()
        self.add_error(f"the model cannot be used: {message}")
        if self.waiting and self._current is not None:
            self._current.give_up()
            self.question.put_back(self._current.question)

    def cancel_turn(self) -> bool:
        """Stop the running turn (or the question waiting for the model) and give it back for editing."""
        turn = self._current
        if turn is None or turn.state == "ended":
            return False
        if turn.running:
            self._turn += 1
            turn.cancel()
        else:
            turn.give_up()
            self.drop_waiting()
            self.add_note("■ cancelled", "cancelled")
        self.question.put_back(turn.question)
        self.question.focus()
        return True

    def on_turn_view_status(self, message: TurnView.Status) -> None:
        message.stop()
        if message.turn is self._current:
            self._set_status(message.text)

    def on_turn_view_ended(self, message: TurnView.Ended) -> None:
        message.stop()
        if message.turn is self._current:
            self._set_status(message.summary)
            self.app.refresh_bindings()

    # ------------------------------------------------------------------ tracing an answer's values

    def _answer_in_focus(self) -> TracedAnswer | None:
        """The answer holding the focus, else the one traced last, else the latest one."""
        answers = [a for a in self.log_view.query(TracedAnswer) if a.spans]
        focused = next((a for a in answers if a.parent is not None and a.parent.has_focus_within), None)
        if focused is not None:
            return focused
        return self._traced if self._traced in answers else (answers[-1] if answers else None)

    def trace(self, delta: int) -> None:
        answer = self._answer_in_focus()
        if answer is None:
            self.app.notify("No answer with values from the database to trace yet.", severity="warning")
            return
        answer.step(delta)

    def on_traced_answer_traced(self, message: TracedAnswer.Traced) -> None:
        self._traced = message.answer  # and on to the app, which selects the cell

    def copy_trace(self) -> None:
        """Copy a query returning the traced value's cell (one per source of a computed value)."""
        from astro_tui.agent.cell_query import cell_query
        from astro_tui.ui.clipboard import copy_text

        answer, db = self._answer_in_focus(), self.session.db
        if answer is None or db is None:
            self.app.notify("No answer with values from the database to trace yet.", severity="warning")
            return
        span = answer.current or answer.step(1)
        assert span is not None
        queries = [(s, cell_query(s, db.dialect, rows=answer.rows_of(s))) for s in span.sources]
        if len(queries) == 1:
            text = queries[0][1].sql
        else:
            text = "\n\n".join(f"-- {s.input}, row {s.row}, {s.column}\n{q.sql};" for s, q in queries)
        sql = inert(text)  # as `copy_sql`: no control character reaches the terminal it is pasted into
        where = copy_text(self.app, sql)
        what = "a query" if len(queries) == 1 else f"{len(queries)} queries, one per value used,"
        hows = {q.how: q.guarantee for _, q in queries}
        how = hows.get("position") or hows.get("ordered") or hows.get("whole", "")
        self.app.notify(
            f"Copied {what} for {one_line(span.text, 40)} to the {where}: {how}.",
            severity="warning" if sql != text else "information",
            markup=False,
        )

    # ------------------------------------------------------------------ the conversation itself

    def new_conversation(self) -> None:
        self.cancel_turn()
        try:
            self.session.new_conversation()
        except AstroError as exc:
            self.app.notify(str(exc), severity="warning", markup=False)
            return
        self.clear_log()
        self.add_note("new conversation: earlier questions are forgotten", "new")

    def clear(self) -> None:
        self.clear_log()
        if self.session.agent is not None:
            self.add_note("cleared the screen; the model still remembers this conversation", "new")

    def choose_resume(self) -> None:
        if self.session.agent is None or self.session.db is None:
            self.app.notify("Resuming needs a configured model and an open database.", severity="warning")
            return
        from astro_tui.ui.screens.resume import ResumeScreen

        screen = ResumeScreen(self.session.conversations())
        self.app.push_screen(screen, lambda chosen: self.resume(chosen) if chosen else None)

    def resume(self, conversation_id: str) -> None:
        if self.session.agent is None:
            self.app.notify("Resuming needs a configured model.", severity="warning")
            return
        self.cancel_turn()
        try:
            turns = self.session.resume(conversation_id)
        except AstroError as exc:
            self.app.notify(f"Cannot resume: {exc}", severity="error", markup=False)
            return
        self.clear_log()
        self.show_resumed(conversation_id, turns)

    def show_model(self) -> None:
        from astro_tui.llm.errors import display_url

        settings = self.session.settings
        if not settings.model_configured:
            self.add_note("no model configured (the instructions are at the top)", "model")
            return
        line = f"model {settings.model} at {display_url(settings.base_url)}"
        if settings.reasoning_effort:
            line += f" · reasoning effort {settings.reasoning_effort}"
        self.add_note(line, "model")

    def show_notes(self) -> None:
        if self.session.db is None:
            self.app.notify("The database is still opening.", severity="warning")
            return
        self._read_notes()

    @work(thread=True, group="context", exit_on_error=False, description="read context")
    def _read_notes(self) -> None:
        try:
            text, path = self.session.notes()
        except AstroError as exc:
            self.app.call_from_thread(
                self.app.notify, f"Cannot read the notes: {exc}", severity="error", markup=False
            )
            return
        body = text.strip() or NO_NOTES
        self.app.call_from_thread(self.add_markdown, body, f"Context notes · {inert(str(path))}")

    # ------------------------------------------------------------------ the person's /sql

    def run_sql(self, sql: str) -> bool:
        """Run `/sql` through the session; its result (or failure) comes back as a session event.
        False when it could not start."""
        self.add_note(Text("sql> ", style="bold") + Text(inert(sql)), "sql")
        if self.session.db is None:
            self.app.notify("The database is still opening.", severity="warning")
            return False
        self.start_query()
        self._sql = sql
        self._run_sql(sql)
        # Esc works at once and the status line says so; the footer shows it only for a query
        # still running after a moment: rebuilding the footer (a widget per key, ~50–250 ms of
        # the loop) took the cores from the query and delayed its first rows.
        self.set_timer(ESC_IN_FOOTER_AFTER_S, self.app.refresh_bindings)
        return True

    @work(thread=True, group="sql", exit_on_error=False, description="run sql")
    def _run_sql(self, sql: str) -> None:
        with contextlib.suppress(AstroError):  # reported as QueryFailed
            self.session.sql(sql)

    def start_query(self) -> None:
        """A `/sql` running: the same spinner and clock as a question, unless one is running."""
        if self.running:
            return
        self._query_active = True
        self._started = time.monotonic()
        self._set_status("running the query")

    def put_back_sql(self) -> None:
        """A cancelled `/sql` goes back in the question box for editing, as a question does."""
        if self._query_active and self._sql:
            self.question.put_back(f"/sql {self._sql}")
            self.question.focus()

    def query_done(self, result: Result) -> None:
        self.finish_query("query done")
        self.add_note(f"→ {result.name}: {result_status(self, result.result)} (results pane)", "sql-done")

    def query_failed(self, message: str) -> None:
        self.finish_query("query cancelled" if "cancel" in message.lower() else "query failed")
        self.add_error(message)

    def finish_query(self, outcome: str) -> None:
        if not self._query_active:
            return
        self._query_active = False
        elapsed = time.monotonic() - self._started
        self._set_status(f"{outcome} · {elapsed:,.1f} s" if clocks_live(self) else outcome)

    # ------------------------------------------------------------------ status line

    def _set_status(self, text: str) -> None:
        self._status_text = text
        self._render_status()

    def _tick(self) -> None:
        if self.running or self._query_active:
            self._frame += 1
            self._render_status()

    def _render_status(self) -> None:
        status = self.query_one("#turn-status", Static)
        if not self._status_text:
            status.display = False
            return
        status.display = True
        live = clocks_live(self)
        if self.running or self._query_active:
            mark = SPINNER[self._frame % len(SPINNER)] if live else "…"
            line = Text(f"{mark} ", style="bold")
            line.append(inert(self._status_text, keep_newlines=False))
            if live:
                line.append(f"  {time.monotonic() - self._started:,.1f} s", "dim")
            line.append("   esc cancels", "dim")
        else:
            line = Text(inert(self._status_text, keep_newlines=False), style="dim")
        status.update(line, layout=False)

"""The full-screen app: the layout, the table of actions, one router from session events to panes.

The app is a front end of a `Session` (`session/core.py`), which opens the
database, reads the catalog, builds the agent, names every result and exports
it. The session's events reach `on_astro_app_reported`, the one router, as
messages posted from whichever thread caused them; the panes own what they
show. The first frame comes before anything slow: the session opens in a
worker beside the first paint, and the model client is imported once the
catalog is on screen.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from functools import partial
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, ClassVar, assert_never

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from astro_tui.errors import AstroError, error_line
from astro_tui.resources import resource_dir
from astro_tui.session import events as ev
from astro_tui.text import inert, one_line
from astro_tui.ui import slash
from astro_tui.ui.actions import PASSED_ON, AstroCommands, bindings, passing_on
from astro_tui.ui.focus import focus_now
from astro_tui.ui.layout import PaneLayout
from astro_tui.ui.panes.catalog import CatalogPane, CatalogTree
from astro_tui.ui.panes.conversation import ConversationPane
from astro_tui.ui.panes.results import ResultsPane
from astro_tui.ui.panes.shell import ShellInput
from astro_tui.ui.replay import replay_conversation
from astro_tui.ui.table_backend import display_backend
from astro_tui.ui.theme import ThemeMemory
from astro_tui.ui.warmup import AFTER_PAINT_WAIT_S, WarmUp, settle_heap, warm_imports
from astro_tui.ui.widgets.key_footer import KeyFooter, MainScreen
from astro_tui.ui.widgets.question import QuestionInput
from astro_tui.ui.widgets.top_bar import TopBar
from astro_tui.ui.widgets.traced_answer import TracedAnswer
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.session import Result, Session


class AstroApp(App[int]):
    CSS_PATH: ClassVar[list[str | PurePath]] = [resource_dir("styles") / "app.tcss"]
    TITLE = "astro"
    BINDINGS = bindings("app")
    COMMANDS = App.COMMANDS | {AstroCommands}
    ESCAPE_TO_MINIMIZE = False

    class Reported(Message):
        """A session event; `backend` is a result's table display, measured in the thread that
        had the rows (a /sql or a preview), so the table is on screen with the result."""

        def __init__(self, event: ev.SessionEvent, backend: Any = None) -> None:
            super().__init__()
            self.event = event
            self.backend = backend

    def __init__(self, session: Session, *, live_clocks: bool = True) -> None:
        super().__init__()
        self.session = session
        self.settings = session.settings
        self.live_clocks = live_clocks
        self._open_failed = False
        self._layout = PaneLayout(lambda shown: self.query_one(TopBar).catalog_hidden(not shown))
        self._loop_thread = threading.get_ident()
        self.warm_up = WarmUp(
            lambda painted: self.run_worker(
                partial(warm_imports, painted, self.warm_up.quiet),
                thread=True,
                group="warm",
                exit_on_error=False,
            )
        )

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown | events.Paste):
            self.warm_up.input_seen()  # the person is here: a first result may follow
        await super().on_event(event)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield TopBar(self.settings.model)
        with Horizontal(id="main"):
            yield CatalogPane(self.session)
            yield ConversationPane(self.session)
            yield ResultsPane(self.session)
        yield KeyFooter()

    @property
    def conversation(self) -> ConversationPane:
        return self.query_one(ConversationPane)

    @property
    def results(self) -> ResultsPane:
        return self.query_one(ResultsPane)

    @property
    def catalog_pane(self) -> CatalogPane:
        return self.query_one(CatalogPane)

    def on_mount(self) -> None:
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, ThemeMemory(self, self.settings.theme).changed)
        self._loop_thread = threading.get_ident()
        self.session.listen(self._report)
        self._apply_width(self.size.width)
        self.conversation.question.focus()
        if not self.settings.model_configured:
            from astro_tui.llm.errors import model_not_configured_message

            self.conversation.show_howto(model_not_configured_message())
        # Opening runs in a worker thread and asks little of this process (no engine is loaded
        # before it is needed), so it starts beside the first layout and paint.
        self._open()

    def on_resize(self, event: events.Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        self._layout.apply_width(self.screen, width)
        for footer in self.query(KeyFooter):  # every key fits on one line below 140 columns
            footer.compact = self._layout.kind != "wide"
            footer.show_command_palette = self._layout.kind != "narrow"  # the top bar names ctrl+p too

    def _set_topbar(self, what: str) -> None:
        self.query_one(TopBar).show(what)

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Our table covers quit, theme and zoom; keep Textual's extras that it does not."""
        for command in super().get_system_commands(screen):
            if command.title in ("Keys", "Screenshot"):
                yield command

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker is started with exit_on_error=False: a failure that its own code did
        not turn into a message lands here, is logged and shown, and the app carries on."""
        worker = event.worker
        if event.state is not WorkerState.ERROR or worker.error is None:
            return
        self.log.error(f"worker {worker.name or worker.group} failed", worker.error)
        self.notify(
            f"{worker.group or worker.name}: {one_line(error_line(worker.error), 260)}",
            title="Something went wrong (astro is still running)",
            severity="error",
            markup=False,
        )

    # ------------------------------------------------------------------ the session's events

    def _report(self, event: ev.SessionEvent) -> None:
        """The session's listener: runs in the thread of the event, posts it to the loop."""
        backend = None
        if isinstance(event, ev.ResultAdded) and threading.get_ident() != self._loop_thread:
            with contextlib.suppress(Exception):  # the pane builds it again and reports the failure
                backend = display_backend(event.result.result.table)
        elif isinstance(event, ev.FirstRows):
            try:
                backend = display_backend(event.table)
            except Exception:  # the whole result follows, and the pane reports its own failure
                return
        self.post_message(self.Reported(event, backend))

    def on_astro_app_reported(self, message: Reported) -> None:
        catalog_pane, conversation = self.catalog_pane, self.conversation
        match message.event:
            case ev.Building(text=text):
                text = one_line(text) or "Building the sample warehouse…"
                catalog_pane.show_status(text)
                self._set_topbar(text)
            case ev.Opened(label=label):
                catalog_pane.show_status("Loading the catalog…")
                self._set_topbar(label)
            case ev.OpenFailed(message=text):
                self._open_failed = True
                catalog_pane.show_failure(text)
                self._set_topbar("cannot open the database (ctrl+r retries)")
                conversation.add_error(f"{text}\nctrl+r tries again.")
                self.notify(text, title="Cannot open the database", severity="error", markup=False)
            case ev.CatalogOutlined(catalog=catalog) | ev.CatalogLoaded(catalog=catalog):
                # What follows in workers (the shell, the model client, warm-up imports) holds the
                # interpreter for long stretches: it starts once the tree is on screen, or the
                # catalog would appear about half a second later.
                painted = threading.Event()
                self.call_after_refresh(painted.set)
                catalog_pane.set_catalog(catalog, painted)
                self._set_topbar(f"{self.session.label} · {counted(len(catalog.tables), 'table')}")
                if isinstance(message.event, ev.CatalogOutlined):
                    return
                if self.settings.model_configured:
                    self._prepare_agent(painted)
                self.warm_up.catalog_shown(painted)
            case ev.CatalogFailed(message=text):
                self._open_failed = True
                catalog_pane.show_failure(text)
                self.notify(text, severity="error", markup=False)
            case ev.AgentReady():
                conversation.agent_ready()
            case ev.AgentFailed(message=text):
                conversation.agent_failed(text)
            case ev.ResultAdded(result=result):
                self._show_result(result, message.backend)
            case ev.FirstRows():
                self.results.show_first_rows(message.backend)
                self._layout.result_arrived(self.screen)
            case ev.QueryFailed(kind="sql", message=text):
                self.results.drop_first_rows()
                self.warm_up.release()
                self.refresh_bindings()
                conversation.query_failed(text)
            case ev.QueryFailed(message=text):
                self.notify(text, severity="error", markup=False)
            case ev.ExportFinished(path=path, rows=rows, error=None):
                self.notify(f"Exported {counted(rows, 'row')} to {inert(path)}", markup=False)
            case ev.ExportFinished(error=str(error)):
                self.notify(f"Export failed: {one_line(error)}", severity="error", markup=False)
            case unknown:
                assert_never(unknown)

    def _show_result(self, result: Result, backend: Any) -> None:
        self.results.add_result(result, backend=backend)
        if result.kind == "sql":
            # The rows first: the footer without Esc (a layout of its own if it had Esc) and the
            # note in the conversation come in the frame after.
            self.call_after_refresh(self._sql_shown, result)
        self._layout.result_arrived(self.screen)

    def _sql_shown(self, result: Result) -> None:
        self.refresh_bindings()
        self.conversation.query_done(result)
        self.warm_up.release()

    # ------------------------------------------------------------------ workers

    @work(thread=True, group="open", exit_on_error=False, description="open database")
    def _open(self, retry: bool = False) -> None:
        with contextlib.suppress(AstroError):  # reported as OpenFailed or CatalogFailed
            self.session.retry_open() if retry else self.session.open()

    @work(thread=True, group="agent", exit_on_error=False, description="build agent")
    def _prepare_agent(self, after: threading.Event) -> None:
        """Importing the model client costs about a second; pay it here, not on the first question."""
        after.wait(AFTER_PAINT_WAIT_S)
        with contextlib.suppress(AstroError):  # reported as AgentFailed
            self.session.prepare_agent()
            settle_heap()

    # ------------------------------------------------------------------ the question box

    @on(QuestionInput.Submitted)
    def _question_submitted(self, event: QuestionInput.Submitted) -> None:
        event.stop()
        try:
            command = slash.parse(event.text)
        except slash.SlashError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if command is None:
            self.conversation.ask(slash.unescape_question(event.text))
            return
        self.conversation.question.clear()
        if command.name == "sql":
            self.warm_up.hold()  # the warm-up's later imports wait for its result
            if not self.conversation.run_sql(command.arg):
                self.warm_up.release()
        elif command.name == "resume" and command.arg:
            self.conversation.resume(command.arg)
        elif command.name == "export":
            self.results.export(command.arg)
        elif command.name == "replay":
            replay_conversation(self, self.session, command.arg)
        else:
            getattr(self, f"action_{slash.ACTIONS[command.name]}")()

    # ------------------------------------------------------------------ actions (from actions.ACTIONS)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc is only bound (and shown) when there is something to cancel or restore."""
        if action == "cancel":
            return self.conversation.busy or self.session.sql_running or self.screen.maximized is not None
        return True

    def action_cancel(self) -> None:
        if not self._stop_work() and self.screen.maximized is not None:
            self.screen.minimize()

    def action_interrupt(self) -> None:
        """ctrl+c (when no selected text takes it to copy): a terminal's "stop this". Only when
        nothing runs does it say how to quit."""
        if not self._stop_work():
            self.action_help_quit()

    def _stop_work(self) -> bool:
        """Stop the running question or statement; False when nothing runs."""
        conversation = self.conversation
        if conversation.running and conversation.cancel_turn():
            return True
        if self.session.cancel_sql():
            conversation.put_back_sql()
            self.notify("Cancelling the query…")
            return True
        return conversation.waiting and conversation.cancel_turn()

    def action_retry_open(self) -> None:
        """After a failure only: the server may be back, the file fixed or its lock released."""
        if not self._open_failed:
            self.notify("The database is open; nothing to retry.", markup=False)
            return
        self._open_failed = False
        self.catalog_pane.show_status("Opening the database…")
        self._set_topbar("opening…")
        self._open(retry=True)

    def action_help(self) -> None:
        from astro_tui.ui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
        else:
            self.push_screen(HelpScreen())

    def action_focus_catalog(self) -> None:
        self._layout.show_catalog(self.screen)
        focus_now(self.query_one(CatalogTree))

    def action_focus_shell(self) -> None:
        self._layout.show_catalog(self.screen)
        focus_now(self.query_one(ShellInput))

    def action_focus_question(self) -> None:
        self._layout.show_question(self.screen)
        focus_now(self.conversation.question)

    def action_focus_results(self) -> None:
        self._layout.show_results(self.screen)
        self.results.focus_active()

    def action_toggle_catalog(self) -> None:
        shown = self._layout.toggle_catalog(self.screen)
        if self._layout.kind != "wide":
            focus_now(self.query_one(CatalogTree) if shown else self.conversation.question)
        elif not shown and self.catalog_pane.has_focus_within:
            focus_now(self.conversation.question)

    def action_toggle_results(self) -> None:
        if not self._layout.toggle_results(self.screen) and self.results.has_focus_within:
            focus_now(self.conversation.question)

    def action_zoom(self) -> None:
        screen = self.screen
        self.call_after_refresh(self.refresh_bindings)
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = screen.focused
        panes = (w for w in (focused.ancestors_with_self if focused else []) if w.has_class("pane"))
        screen.maximize(next(panes, self.conversation), container=False)

    def on_traced_answer_traced(self, message: TracedAnswer.Traced) -> None:
        """A value of an answer is traced (a key or a click): select its cell in its result."""
        cell = message.cell
        if cell is not None and self.results.select_cell(*cell):
            self.screen.remove_class("-no-results")

    def action_export(self, fmt: str = "csv") -> None:
        self.results.choose_export(fmt)

    def action_replay(self) -> None:
        replay_conversation(self, self.session, "")

    def action_insert_name(self) -> None:
        name = self.query_one(CatalogTree).selected_name()
        if name is None:
            self.notify("Highlight a table or column in the catalog first.", severity="warning")
            return
        self.conversation.question.insert(name + " ")
        self.action_focus_question()

    def action_preview_table(self) -> None:
        if self.catalog_pane.preview_selected():
            keep_tree = self._layout.kind != "narrow"  # below 100 columns the drawer closes over it
            self._layout.show_results(self.screen)
            if not keep_tree:
                self.results.focus_active()

    def show_tab(self, tab: str) -> None:
        """Open the results pane on one of its tabs (`tab-table`, `tab-chart`, `tab-sql`)."""
        self._layout.show_results(self.screen)
        self.results.activate(tab)

    async def action_quit(self) -> None:
        self.conversation.cancel_turn()
        self.session.cancel_sql()
        self.exit(0)

    def on_unmount(self) -> None:
        import gc

        gc.unfreeze()  # what start-up left behind is collectable again at exit
        self.session.close()


for _name in PASSED_ON:
    setattr(AstroApp, f"action_{_name}", passing_on(_name))


def run_app(session: Session) -> int:
    """Run the app on SESSION until the user quits; the return code is the process exit code."""
    code = AstroApp(session).run()
    return int(code or 0)

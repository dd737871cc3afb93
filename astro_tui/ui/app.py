"""The full-screen app: three panes, one table of actions, and the workers that feed them.

The first frame comes before anything slow: after it, the database is opened
(maybe building the sample warehouse), the catalog loaded and the model client
imported in workers, each reporting back with a message.
"""

from __future__ import annotations

import contextlib
import locale
import shlex
import sys
import threading
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from astro_tui.config import Settings, write_setting
from astro_tui.errors import error_line
from astro_tui.resources import resource_dir
from astro_tui.session import sql_title
from astro_tui.text import inert, one_line
from astro_tui.ui import slash
from astro_tui.ui.actions import AstroCommands, bindings
from astro_tui.ui.clipboard import copy_text
from astro_tui.ui.focus import focus_now
from astro_tui.ui.messages import (
    AgentReady,
    BuildProgress,
    CatalogFailed,
    CatalogLoaded,
    DatabaseFailed,
    DatabaseOpened,
    ExportFinished,
    QueryFailed,
    ResultOrigin,
    ResultReady,
)
from astro_tui.ui.panes.catalog import CatalogPane, CatalogTree
from astro_tui.ui.panes.conversation import ConversationPane
from astro_tui.ui.panes.results import ResultsPane
from astro_tui.ui.panes.shell import ShellInput
from astro_tui.ui.table_backend import display_backend
from astro_tui.ui.widgets.key_footer import KeyFooter
from astro_tui.ui.widgets.question import QuestionInput
from astro_tui.ui.widgets.tool_block import result_status
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.agent.loop import Agent
    from astro_tui.data.catalog_model import Catalog, Table
    from astro_tui.data.database import CancelToken, Database

NARROW = 100
MEDIUM = 140
PREVIEW_ROWS = 100
AFTER_PAINT_WAIT_S = 1.0  # background imports wait this long at most for a frame to be painted


class AstroApp(App[int]):
    CSS_PATH: ClassVar[list[str | PurePath]] = [resource_dir("styles") / "app.tcss"]
    TITLE = "astro"
    BINDINGS = bindings("app")
    COMMANDS = App.COMMANDS | {AstroCommands}
    ESCAPE_TO_MINIMIZE = False

    def __init__(self, specs: list[str], settings: Settings, *, live_clocks: bool = True) -> None:
        super().__init__()
        with contextlib.suppress(locale.Error):  # numbers in the table group as the user's locale does
            locale.setlocale(locale.LC_NUMERIC, "")
        self.specs = list(specs)
        self.settings = settings
        self.live_clocks = live_clocks
        self.db: Database | None = None
        self.catalog: Catalog | None = None
        self.agent: Agent | None = None
        self._agent_error: str | None = None
        self._pending_question: str | None = None
        self._sql_token: CancelToken | None = None
        self._open_failed = False
        self._layout = ""
        self._persisted_theme = settings.theme

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(self._topbar_text("opening…"), id="topbar")
        with Horizontal(id="main"):
            yield CatalogPane()
            yield ConversationPane()
            yield ResultsPane()
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
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self._apply_width(self.size.width)
        self.conversation.question.focus()
        if not self.settings.model_configured:
            from astro_tui.llm.errors import model_not_configured_message

            self.conversation.show_howto(model_not_configured_message())
        # Opening runs in a worker thread and asks little of this process (no engine is loaded
        # before it is needed), so it starts beside the first layout and paint.
        self._open_database()

    def on_resize(self, event: events.Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        """Three columns when wide; below MEDIUM the catalog becomes a drawer (F6), below
        NARROW the results move under the conversation."""
        layout = "narrow" if width < NARROW else "medium" if width < MEDIUM else "wide"
        screen = self.screen
        if layout != self._layout:
            self._layout = layout
            screen.remove_class("-catalog-open", "-no-catalog", "-no-results")
        screen.set_class(layout == "narrow", "-narrow")
        screen.set_class(layout == "medium", "-medium")
        for footer in self.query(KeyFooter):  # every key fits on one line below 140 columns
            footer.compact = layout != "wide"
            footer.show_command_palette = layout != "narrow"  # the top bar names ctrl+p too

    @property
    def _catalog_is_drawer(self) -> bool:
        return self._layout != "wide"

    def _set_topbar(self, db_text: str) -> None:
        # One fixed line: no need to lay the screen out again.
        self.query_one("#topbar", Static).update(self._topbar_text(db_text), layout=False)

    def _topbar_text(self, db_text: str) -> Text:
        text = Text("astro", style="bold")
        text.append("  ·  ")
        text.append(inert(db_text, keep_newlines=False))
        text.append("  ·  ")
        model = self.settings.model
        text.append(f"model {inert(model, keep_newlines=False)}" if model else "no model configured")
        text.append("  ·  F1 help  ·  ctrl+p commands", "dim")
        return text

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Our table covers quit, theme and zoom; keep Textual's extras that it does not."""
        for command in super().get_system_commands(screen):
            if command.title in ("Keys", "Screenshot"):
                yield command

    # ------------------------------------------------------------------ workers

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker is started with exit_on_error=False: a failure that its own code did
        not turn into a message lands here, is logged and shown, and the app carries on."""
        worker = event.worker
        if event.state is not WorkerState.ERROR or worker.error is None:
            return
        error = worker.error
        self.log.error(f"worker {worker.name or worker.group} failed", error)
        self.notify(
            f"{worker.group or worker.name}: {one_line(error_line(error), 260)}",
            title="Something went wrong (astro is still running)",
            severity="error",
            markup=False,
        )

    # ------------------------------------------------------------------ database and catalog

    @work(thread=True, group="open", exit_on_error=False, description="open database")
    def _open_database(self) -> None:
        from astro_tui.data.database import Database
        from astro_tui.data.errors import DataError

        try:
            db = Database.open(
                self.specs, self.settings, on_build=lambda m: self.post_message(BuildProgress(m))
            )
        except DataError as exc:
            self.post_message(DatabaseFailed(str(exc)))
            return
        except Exception as exc:
            self.post_message(DatabaseFailed(f"cannot open the database: {error_line(exc)}"))
            return
        self.post_message(DatabaseOpened(db))
        self._read_catalog(db)  # in this thread: no trip through the loop in between

    def on_build_progress(self, message: BuildProgress) -> None:
        text = one_line(message.text) or "Building the sample warehouse…"
        self.catalog_pane.show_status(text)
        self._set_topbar(text)

    def on_database_opened(self, message: DatabaseOpened) -> None:
        self.db = message.db
        self.catalog_pane.show_status("Loading the catalog…")
        self._set_topbar(message.db.label)

    def on_database_failed(self, message: DatabaseFailed) -> None:
        self._open_failed = True
        self.catalog_pane.show_status(f"✗ {message.message}\nctrl+r tries again")
        self._set_topbar("cannot open the database (ctrl+r retries)")
        self.conversation.add_error(f"{message.message}\nctrl+r tries again.")
        self.notify(message.message, title="Cannot open the database", severity="error", markup=False)

    def action_retry_open(self) -> None:
        """After a failure only: the server may be back, the file fixed or its lock released."""
        if not self._open_failed:
            self.notify("The database is open; nothing to retry.", markup=False)
            return
        self._open_failed = False
        self.catalog_pane.show_status("Opening the database…")
        self._set_topbar("opening…")
        if self.db is None:
            self._open_database()
        else:
            self._reload_catalog(self.db)

    @work(thread=True, group="open", exit_on_error=False, description="reload catalog")
    def _reload_catalog(self, db: Database) -> None:
        self._read_catalog(db)

    def _read_catalog(self, db: Database) -> None:
        """Runs in the `_open_database` worker. A catalog read before may be on screen while
        the database is still opening; a failure to open it then still says so."""
        from astro_tui.catalog.introspect import load_catalog
        from astro_tui.data.errors import DataError, TargetError

        try:
            catalog = load_catalog(db)
        except TargetError as exc:
            self.post_message(DatabaseFailed(str(exc)))
            return
        except Exception as exc:
            self.post_message(CatalogFailed(f"cannot read the catalog: {exc}"))
            return
        self.post_message(CatalogLoaded(catalog))
        try:
            db.ready()
        except DataError as exc:
            self.post_message(DatabaseFailed(str(exc)))
        except Exception as exc:
            self.post_message(DatabaseFailed(f"cannot open the database: {error_line(exc)}"))

    def on_catalog_loaded(self, message: CatalogLoaded) -> None:
        assert self.db is not None
        self.catalog = message.catalog
        # What follows in workers (the shell, the model client, warm-up imports) holds the
        # interpreter for long stretches: it starts once the tree is on screen, or the
        # catalog would appear about half a second later.
        painted = threading.Event()
        self.call_after_refresh(painted.set)
        self.catalog_pane.set_catalog(message.catalog, self.db, self.db.label, painted)
        tables = len(message.catalog.tables)
        self._set_topbar(f"{self.db.label} · {counted(tables, 'table')}")
        if self.settings.model_configured:
            self._build_agent(self.db, message.catalog, painted)
        self._warm_imports(painted)

    @work(thread=True, group="warm", exit_on_error=False, description="warm imports")
    def _warm_imports(self, after: threading.Event) -> None:
        """Import what the first result, chart and answer need while the user is still reading."""
        after.wait(AFTER_PAINT_WAIT_S)
        import pyarrow as pa
        import rich.markdown  # noqa: F401  (model text)
        import textual_fastdatatable.data_table  # noqa: F401
        import textual_plotext  # noqa: F401

        from astro_tui.ui.widgets.markdown_text import block_starts

        block_starts("warm\n")
        # Measuring a text column the first time imports pandas (a second or more).
        display_backend(pa.table({"text": ["x"], "number": [1]}))
        _settle_heap()

    def on_catalog_failed(self, message: CatalogFailed) -> None:
        self._open_failed = True
        self.catalog_pane.show_status(f"✗ {message.message}\nctrl+r tries again")
        self.notify(message.message, severity="error", markup=False)

    @work(thread=True, group="agent", exit_on_error=False, description="build agent")
    def _build_agent(self, db: Database, catalog: Catalog, after: threading.Event) -> None:
        """Importing the model client costs about a second; pay it here, not on the first question."""
        after.wait(AFTER_PAINT_WAIT_S)
        try:
            import openai  # noqa: F401  (the import is the slow part of the first request)

            from astro_tui.agent.loop import Agent
            from astro_tui.config import state_dir as default_state_dir

            agent = Agent(db, catalog, self.settings, state_dir=default_state_dir())
        except Exception as exc:
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            self.post_message(AgentReady(None, one_line(message, 400)))
            return
        _settle_heap()
        self.post_message(AgentReady(agent))

    def on_agent_ready(self, message: AgentReady) -> None:
        self.agent = message.agent
        self._agent_error = message.error
        pending, self._pending_question = self._pending_question, None
        if message.error:
            self.conversation.drop_waiting()
            self.conversation.add_error(f"the model cannot be used: {message.error}")
            if pending:
                self.conversation.question.put_back(pending)
            return
        if pending:
            self.conversation.start_turn(message.agent, pending, echo=False)

    # ------------------------------------------------------------------ the question box

    @on(QuestionInput.Submitted)
    def _question_submitted(self, event: QuestionInput.Submitted) -> None:
        event.stop()
        text = event.text
        question_box = self.conversation.question
        try:
            command = slash.parse(text)
        except slash.SlashError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if command is not None:
            question_box.clear()
            self.run_slash(command)
            return
        self.ask(slash.unescape_question(text))

    def ask(self, question: str) -> None:
        conversation = self.conversation
        if conversation.running:
            self.notify("A question is still running; esc cancels it.", severity="warning")
            return
        if not self.settings.model_configured:
            conversation.add_error(
                "No model is configured, so questions cannot be answered yet; the instructions are "
                "at the top of this pane (everything else works: the catalog, the shell, /sql)."
            )
            return
        if self._agent_error:
            conversation.add_error(f"the model cannot be used: {self._agent_error}")
            return
        conversation.question.clear()
        if self.agent is None:
            if self._pending_question is not None:
                self.notify("Still opening the database; your question will be sent then.")
                return
            self._pending_question = question
            conversation.add_user(question)
            conversation.show_waiting("waiting for the database and the model client…")
            return
        conversation.start_turn(self.agent, question)

    def run_slash(self, command: slash.Slash) -> None:
        handler = getattr(self, f"_slash_{command.name}")
        handler(command.arg)

    def _slash_sql(self, sql: str) -> None:
        self.conversation.add_note(Text("sql> ", style="bold") + Text(inert(sql)), "sql")
        self.run_sql(sql)

    def _slash_clear(self, _: str) -> None:
        self.action_clear_conversation()

    def _slash_new(self, _: str) -> None:
        self.action_new_conversation()

    def _slash_resume(self, arg: str) -> None:
        if arg:
            self._resume(arg)
        else:
            self.action_resume()

    def _slash_context(self, _: str) -> None:
        self.action_show_context()

    def _slash_copy(self, _: str) -> None:
        self.action_copy_sql()

    def _slash_export(self, arg: str) -> None:
        try:
            fmt, path = slash.export_args(arg)
        except slash.SlashError as exc:
            self.notify(str(exc), severity="warning", markup=False)
            return
        if path is None:  # nothing is written where the user has not seen it
            self.action_export(fmt)
            return
        self.export_current(fmt, path)

    def _slash_model(self, _: str) -> None:
        self.action_show_model()

    def _slash_help(self, _: str) -> None:
        self.action_help()

    # ------------------------------------------------------------------ queries

    def run_sql(self, sql: str) -> None:
        if self.db is None:
            self.notify("The database is still opening.", severity="warning")
            return
        from astro_tui.data.database import CancelToken

        self._sql_token = CancelToken()
        self.refresh_bindings()
        self.conversation.start_query()
        self._execute(self.db, sql, self._sql_token)

    @work(thread=True, group="sql", exit_on_error=False, description="run sql")
    def _execute(self, db: Database, sql: str, token: CancelToken) -> None:
        from astro_tui.data.errors import DataError

        try:
            result = db.execute(sql, cancel=token)
        except DataError as exc:
            self.post_message(QueryFailed(str(exc), "sql"))
            return
        except Exception as exc:
            self.post_message(QueryFailed(error_line(exc), "sql"))
            return
        # Measured here, in the thread that has the rows, the table is on screen with the
        # result: in the pane's own worker it would compete with the loop's paint of it.
        backend = None
        with contextlib.suppress(Exception):  # the pane builds it again and reports the failure
            backend = display_backend(result.table)
        origin = ResultOrigin("sql", sql_title(sql), verified=False)
        self.post_message(ResultReady(result, origin, backend))

    @work(thread=True, group="preview", exit_on_error=False, description="preview table")
    def _preview(self, db: Database, table: Table) -> None:
        from astro_tui.catalog.introspect import sample_values

        try:
            result = sample_values(db, table, limit=PREVIEW_ROWS)
        except Exception as exc:
            self.post_message(QueryFailed(str(exc), "preview"))
            return
        self.post_message(ResultReady(result, ResultOrigin("preview", table.name)))

    def on_result_ready(self, message: ResultReady) -> None:
        origin = message.origin
        if origin.kind == "sql":
            self._sql_token = None
            self.refresh_bindings()
            self.conversation.finish_query("query done")
        entry = self.results.add_result(
            message.result, origin, sql_text=origin.sql_text, backend=message.backend
        )
        if origin.kind == "sql":
            status = result_status(self.conversation, message.result)
            self.conversation.add_note(f"→ {entry.name}: {status} (results pane)", "sql-done")
        if self._layout == "narrow" and self.screen.has_class("-no-results"):
            self.screen.remove_class("-no-results")

    def on_query_failed(self, message: QueryFailed) -> None:
        if message.origin == "sql":
            self._sql_token = None
            self.refresh_bindings()
            cancelled = "cancel" in message.message.lower()
            self.conversation.finish_query("query cancelled" if cancelled else "query failed")
            self.conversation.add_error(message.message)
        else:
            self.notify(message.message, severity="error", markup=False)

    # ------------------------------------------------------------------ export

    def export_current(self, fmt: str, path: str, *, overwrite: bool = False) -> None:
        entry = self.results.current
        if entry is None:
            self.notify("No result to export yet.", severity="warning")
            return
        from astro_tui.session.export import ExportError, check_target, resolve_path

        target = resolve_path(path)
        try:
            exists = check_target(target)
        except ExportError as exc:
            self.notify(f"Export: {exc}", severity="error", markup=False)
            return
        if exists and not overwrite:
            from astro_tui.ui.screens.confirm import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.export_current(fmt, str(target), overwrite=True)
                else:
                    self.notify(f"Not exported: {inert(str(target))} is left as it was.", markup=False)

            self.push_screen(ConfirmScreen("Overwrite?", f"{target} exists. Replace it?"), answered)
            return
        self.notify(f"Exporting {entry.name} ({counted(entry.result.row_count, 'row')})…", markup=False)
        self._export(entry.result.table, fmt, str(target), overwrite)

    @work(thread=True, group="export", exit_on_error=False, description="export result")
    def _export(self, table: Any, fmt: str, path: str, overwrite: bool) -> None:
        from pathlib import Path

        from astro_tui.session.export import ExportError, write_result

        try:
            written = write_result(table, fmt, Path(path), overwrite=overwrite)
        except ExportError as exc:
            self.post_message(ExportFinished(path, 0, str(exc)))
            return
        except Exception as exc:
            self.post_message(ExportFinished(path, 0, error_line(exc)))
            return
        self.post_message(ExportFinished(str(written), table.num_rows))

    def on_export_finished(self, message: ExportFinished) -> None:
        if message.error:
            self.notify(f"Export failed: {one_line(message.error)}", severity="error", markup=False)
        else:
            self.notify(f"Exported {counted(message.rows, 'row')} to {inert(message.path)}", markup=False)

    # ------------------------------------------------------------------ theme

    def _theme_changed(self, theme: Any) -> None:
        name = getattr(theme, "name", str(theme))
        if name != self._persisted_theme:
            self._persisted_theme = name
            self._save_theme(name)

    @work(thread=True, group="settings", exit_on_error=False, description="save theme")
    def _save_theme(self, name: str) -> None:
        try:
            write_setting("theme", name)
        except Exception as exc:
            self.call_from_thread(
                self.notify, f"Cannot save the theme: {exc}", severity="warning", markup=False
            )

    # ------------------------------------------------------------------ actions (from actions.ACTIONS)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc is only bound (and shown) when there is something to cancel or restore."""
        if action == "cancel":
            return bool(
                self.conversation.running
                or self._sql_token is not None
                or self._pending_question is not None
                or self.screen.maximized is not None
            )
        return True

    def action_help(self) -> None:
        from astro_tui.ui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
        else:
            self.push_screen(HelpScreen())

    def _show_catalog(self) -> None:
        screen = self.screen
        screen.remove_class("-no-catalog")
        if self._catalog_is_drawer:
            screen.add_class("-catalog-open")

    def action_focus_catalog(self) -> None:
        self._show_catalog()
        focus_now(self.query_one(CatalogTree))

    def action_focus_shell(self) -> None:
        self._show_catalog()
        focus_now(self.query_one(ShellInput))

    def action_focus_question(self) -> None:
        if self._layout == "narrow":
            self.screen.remove_class("-catalog-open")
        focus_now(self.conversation.question)

    def action_focus_results(self) -> None:
        self.screen.remove_class("-no-results")
        if self._layout == "narrow":
            self.screen.remove_class("-catalog-open")
        self.results.focus_active()

    def action_toggle_catalog(self) -> None:
        screen = self.screen
        if self._catalog_is_drawer:
            screen.toggle_class("-catalog-open")
            if screen.has_class("-catalog-open"):
                focus_now(self.query_one(CatalogTree))
            else:
                focus_now(self.conversation.question)
        else:
            screen.toggle_class("-no-catalog")
            if screen.has_class("-no-catalog") and self.catalog_pane.has_focus_within:
                focus_now(self.conversation.question)

    def action_toggle_results(self) -> None:
        screen = self.screen
        screen.toggle_class("-no-results")
        if screen.has_class("-no-results") and self.results.has_focus_within:
            focus_now(self.conversation.question)

    def action_zoom(self) -> None:
        screen = self.screen
        self.call_after_refresh(self.refresh_bindings)
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = screen.focused
        pane = next(
            (w for w in (focused.ancestors_with_self if focused else []) if w.has_class("pane")), None
        )
        if pane is None:
            pane = self.conversation
        screen.maximize(pane, container=False)

    def action_cancel(self) -> None:
        if self.conversation.cancel_turn():
            return
        if self._sql_token is not None:
            self._sql_token.cancel()
            self.notify("Cancelling the query…")
            return
        if self._pending_question is not None:
            self.conversation.question.put_back(self._pending_question)
            self._pending_question = None
            self.conversation.drop_waiting()
            self.conversation.add_note("■ cancelled", "cancelled")
            return
        if self.screen.maximized is not None:
            self.screen.minimize()

    def action_copy_sql(self) -> None:
        entry = self.results.current
        if entry is None or not entry.sql_text.strip():
            self.notify("No SQL to copy yet: ask a question or run /sql.", severity="warning")
            return
        # Copy what the SQL tab shows: a control character in the SQL (a string literal the
        # model copied from the data) would act on the terminal it is pasted into; an ESC can
        # end a bracketed paste and run the rest as typed commands.
        sql = inert(entry.sql_text)
        where = copy_text(self, sql)
        kind = "verified SQL" if entry.verified else "SQL"
        message = f"Copied the {kind} of {inert(entry.name)} to the {where}."
        if sql != entry.sql_text:
            message += " Its control characters are copied as visible \\x1b-style text, as shown."
            self.notify(message, severity="warning", markup=False)
            return
        self.notify(message, markup=False)

    def action_export(self, fmt: str = "csv") -> None:
        entry = self.results.current
        if entry is None:
            self.notify("No result to export yet.", severity="warning")
            return
        from astro_tui.session.export import default_name
        from astro_tui.ui.screens.export import ExportScreen

        def done(value: str | None) -> None:
            if value:
                self._slash_export(value)

        proposed = Path.cwd() / default_name(entry.name, fmt)
        self.push_screen(ExportScreen(entry.name, f"{fmt} {shlex.quote(str(proposed))}"), done)

    def action_new_conversation(self) -> None:
        self.conversation.cancel_turn()
        if self.agent is not None:
            self.agent.new_conversation()
        self.conversation.clear_log()
        self.conversation.add_note("new conversation: earlier questions are forgotten", "new")

    def action_clear_conversation(self) -> None:
        self.conversation.clear_log()
        if self.agent is not None:
            self.conversation.add_note(
                "cleared the screen; the model still remembers this conversation", "new"
            )

    def action_resume(self) -> None:
        if self.agent is None or self.db is None:
            self.notify("Resuming needs a configured model and an open database.", severity="warning")
            return
        from astro_tui.agent.conversations import list_conversations
        from astro_tui.ui.screens.resume import ResumeScreen

        state_dir = self.agent.state_dir if hasattr(self.agent, "state_dir") else None
        if state_dir is None:
            from astro_tui.config import state_dir as default_state_dir

            state_dir = default_state_dir()
        found = list_conversations(state_dir, self.db.key)

        def chosen(conversation_id: str | None) -> None:
            if conversation_id:
                self._resume(conversation_id)

        self.push_screen(ResumeScreen(found), chosen)

    def _resume(self, conversation_id: str) -> None:
        if self.agent is None:
            self.notify("Resuming needs a configured model.", severity="warning")
            return
        self.conversation.cancel_turn()
        try:
            self.agent.resume(conversation_id)
        except Exception as exc:
            self.notify(f"Cannot resume: {exc}", severity="error", markup=False)
            return
        self.conversation.clear_log()
        self.conversation.show_resumed(conversation_id, self.agent.turns)

    def action_show_context(self) -> None:
        if self.db is None:
            self.notify("The database is still opening.", severity="warning")
            return
        self._read_context(self.db.key, self.db.context_seed)

    @work(thread=True, group="context", exit_on_error=False, description="read context")
    def _read_context(self, db_key: str, seed: str) -> None:
        from astro_tui.agent.context_notes import ContextNotes
        from astro_tui.config import state_dir as default_state_dir

        try:
            notes = ContextNotes(default_state_dir(), db_key, seed)
            text, path = notes.read(), str(notes.path)
        except Exception as exc:
            self.call_from_thread(
                self.notify, f"Cannot read the notes: {exc}", severity="error", markup=False
            )
            return
        self.call_from_thread(self._show_context, text, path)

    def _show_context(self, text: str, path: str) -> None:
        body = (
            text.strip()
            or "_No notes yet. The model adds notes with `update_context`; you can edit the file._"
        )
        self.conversation.add_markdown(body, f"Context notes · {inert(path)}")

    def action_show_model(self) -> None:
        from astro_tui.llm.errors import display_url

        settings = self.settings
        if not settings.model_configured:
            self.conversation.add_note("no model configured (the instructions are at the top)", "model")
            return
        line = f"model {settings.model} at {display_url(settings.base_url)}"
        if settings.reasoning_effort:
            line += f" · reasoning effort {settings.reasoning_effort}"
        self.conversation.add_note(line, "model")

    def action_change_theme(self) -> None:
        self.search_themes()

    def action_insert_name(self) -> None:
        name = self.query_one(CatalogTree).selected_name()
        if name is None:
            self.notify("Highlight a table or column in the catalog first.", severity="warning")
            return
        question = self.conversation.question
        question.insert(name + " ")
        self.action_focus_question()

    def action_preview_table(self) -> None:
        table = self.query_one(CatalogTree).selected_table()
        if table is None or self.db is None:
            self.notify("Highlight a table in the catalog first.", severity="warning")
            return
        self._preview(self.db, table)

    def action_previous_result(self) -> None:
        self.results.step(-1)

    def action_next_result(self) -> None:
        self.results.step(1)

    def _tab(self, tab: str) -> None:
        self.screen.remove_class("-no-results")
        self.results.activate(tab)

    def action_show_table_tab(self) -> None:
        self._tab("tab-table")

    def action_show_chart_tab(self) -> None:
        self._tab("tab-chart")

    def action_show_sql_tab(self) -> None:
        self._tab("tab-sql")

    def action_chart_kind(self) -> None:
        self.results.change_chart("kind")

    def action_chart_x(self) -> None:
        self.results.change_chart("x")

    def action_chart_y(self) -> None:
        self.results.change_chart("y")

    async def action_quit(self) -> None:
        self.conversation.cancel_turn()
        if self._sql_token is not None:
            self._sql_token.cancel()
        self.exit(0)

    def on_unmount(self) -> None:
        import gc

        gc.unfreeze()  # what start-up left behind is collectable again at exit
        if self.db is not None:
            self.db.close()


def _settle_heap() -> None:
    """Move what start-up allocated (modules, the catalog, the model client: a large heap)
    out of the garbage collector's sight. Otherwise every full collection walks all of it,
    about 150–300 ms with the loop stopped, every second or two while an answer streams."""
    import gc

    gc.freeze()


def run_app(specs: list[str], settings: Settings) -> int:
    """Run the app until the user quits; the return code is the process exit code."""
    app = AstroApp(specs, settings)
    code = app.run()
    return int(code or 0)


def main() -> None:
    from astro_tui.config import ConfigError, load_settings

    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"astro: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(run_app(sys.argv[1:], settings))


if __name__ == "__main__":
    main()

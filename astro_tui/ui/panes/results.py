"""The results pane: the session's results, each as a table, a chart and its SQL.

The session names each result and keeps the log (`session/core.py`); this pane
shows them, copies the current one's SQL and exports it. Building a table's
display (an inert copy, measured column widths) happens in a thread, so a
million-row result never holds the screen; the widget itself only ever renders
the rows in view.
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Container, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Select, Static, TabbedContent, TabPane, Tabs

from astro_tui.errors import AstroError
from astro_tui.text import inert
from astro_tui.ui import slash
from astro_tui.ui.actions import bindings
from astro_tui.ui.clipboard import copy_text
from astro_tui.ui.focus import focus_now
from astro_tui.ui.inert import inert_text
from astro_tui.ui.table_backend import display_backend
from astro_tui.ui.widgets.tool_block import result_status, sql_syntax
from astro_tui.ui.wording import counted

if TYPE_CHECKING:
    from astro_tui.data.results import QueryResult
    from astro_tui.session import Result, Session
    from astro_tui.ui.charting import ChartChoice

_CACHED_TABLES = 6


@dataclass
class ResultEntry:
    """A result of the session as this pane shows it: the chart the person picked is the pane's."""

    item: Result
    chart: ChartChoice | None = None
    chart_from_answer: bool = False

    @property
    def id(self) -> int:
        return self.item.id

    @property
    def name(self) -> str:
        return self.item.name

    @property
    def result(self) -> QueryResult:
        return self.item.result

    @property
    def sql_text(self) -> str:
        return self.item.sql_text

    @property
    def verified(self) -> bool:
        return self.item.verified


class ResultsPane(Vertical):
    BINDINGS = bindings("results")
    ALLOW_MAXIMIZE = True

    class TablePrepared(Message):
        """A result's display backend is built (inert copy, column widths measured) off the loop."""

        def __init__(self, entry_id: int, backend: Any, error: str | None = None) -> None:
            super().__init__()
            self.entry_id = entry_id
            self.backend = backend
            self.error = error

    class ChartPrepared(Message):
        def __init__(self, entry_id: int, series: Any, error: str | None = None) -> None:
            super().__init__()
            self.entry_id = entry_id
            self.series = series
            self.error = error

    def __init__(self, session: Session) -> None:
        super().__init__(id="results", classes="pane")
        self.border_title = "Results"
        self.session = session
        self.entries: list[ResultEntry] = []
        self.current: ResultEntry | None = None
        self._backends: dict[int, Any] = {}
        self.table_widget: Any = None
        self._cell: tuple[int, int, str | None] | None = None  # a traced value's cell, to select
        self.reading: int | None = None
        """The rows of a running `/sql` shown so far, while the rest is read (None: no such table)."""
        self._kept_cursor: tuple[int, int] | None = None

    def compose(self) -> ComposeResult:
        yield Select[int]([], prompt="no results yet", allow_blank=True, id="result-picker")
        with TabbedContent(id="result-tabs"):
            with TabPane("Table", id="tab-table"), Container(id="table-holder"):
                yield Static(_EMPTY, id="table-empty", classes="empty-note")
            with TabPane("Chart", id="tab-chart"):
                yield Static("", id="chart-note", classes="empty-note")
            with TabPane("SQL", id="tab-sql"), VerticalScroll(id="sql-scroll"):
                yield Static(Text("no SQL yet", style="italic"), id="sql-text")
        yield Static("", id="result-status")

    # ------------------------------------------------------------------ entries

    def add_result(self, item: Result, *, backend: Any = None) -> ResultEntry:
        """`backend`, when the thread that ran the query built it (`display_backend`), is
        mounted at once; otherwise it is built in a worker of this pane."""
        entry = ResultEntry(item)
        if backend is not None:
            self._keep_backend(entry.id, backend)
        if item.chart is not None:
            from astro_tui.ui.charting import choice_of

            entry.chart = choice_of(item.chart)
            entry.chart_from_answer = True
        self.entries.append(entry)
        self._refresh_picker()
        self._kept_cursor = self._moved_cursor()
        focused = self.reading is not None and self.table_widget is not None and self.table_widget.has_focus
        self.show(entry)
        if focused:  # the first rows had the focus: their result takes it
            self.call_after_refresh(self.focus_active)
        if item.chart is not None:
            self.query_one(TabbedContent).active = "tab-chart"
            self._prepare_chart(entry)
        return entry

    def _refresh_picker(self) -> None:
        picker = self.query_one("#result-picker", Select)
        options = []
        for e in reversed(self.entries):
            label = inert_text(e.name, keep_newlines=False)
            label.append(f"  {counted(e.result.row_count, 'row')}", "dim")
            if e.verified:
                label.append("  ✓", "bold")
            options.append((label, e.id))
        with picker.prevent(Select.Changed):
            picker.set_options(options)
            if self.current is not None:
                picker.value = self.current.id

    def show_first_rows(self, backend: Any) -> None:
        """A running `/sql`'s first rows, while the rest is read: shown as they are, not a result
        (not in the picker; copy, export and chart wait for the whole); the result replaces
        them, keeping the cursor, and a failure removes them (`drop_first_rows`)."""
        self.reading = backend.row_count
        self._mount_table(backend)
        status = Text("reading the result… ", "bold")
        status.append(f"{counted(backend.row_count, 'row')} so far (the first)", "italic")
        self.query_one("#result-status", Static).update(status, layout=False)

    def drop_first_rows(self) -> None:
        """The running `/sql` failed or was stopped: its first rows go, what was shown comes back."""
        if self.reading is None:
            return
        self.reading = None
        if self.current is not None:
            self.show(self.current)
            return
        self._set_table_note(_EMPTY.plain)
        self.query_one("#result-status", Static).update("", layout=False)

    def _still_reading(self) -> bool:
        """Copy, export and chart act on a whole result, never on the first rows of one."""
        if self.reading is None:
            return False
        self.app.notify("Still reading the result: try again once it is in.", severity="warning")
        return True

    def show(self, entry: ResultEntry) -> None:
        self.reading = None
        self.current = entry
        picker = self.query_one("#result-picker", Select)
        if picker.value != entry.id:
            with picker.prevent(Select.Changed):
                picker.value = entry.id
        self._show_status(entry)
        self._show_sql(entry)
        backend = self._backends.get(entry.id)
        if backend is not None:
            self._mount_table(backend)
        else:
            self._set_table_note("preparing the table…")
            self._prepare_table(entry.id, entry.result)
        if self.query_one(TabbedContent).active == "tab-chart":
            self._prepare_chart(entry)

    def step(self, delta: int) -> None:
        if not self.entries:
            self.app.notify("No results yet.", severity="warning")
            return
        index = self.entries.index(self.current) if self.current in self.entries else len(self.entries) - 1
        index = max(0, min(len(self.entries) - 1, index + delta))
        self.show(self.entries[index])

    @on(Select.Changed, "#result-picker")
    def _picked(self, event: Select.Changed) -> None:
        event.stop()
        entry = next((e for e in self.entries if e.id == event.value), None)
        if entry is not None and entry is not self.current:
            self.show(entry)

    def _show_status(self, entry: ResultEntry, traced: str = "") -> None:
        result = entry.result
        status = inert_text(entry.name, "bold", keep_newlines=False)
        status.append(f" · {result_status(self, result)}")
        if entry.verified:
            status.append(" · ✓ verified", "bold")
        if result.truncated:
            status.append(f" · cut at the {result.row_count:,}-row cap (--max-rows)", "italic")
        if traced:
            status.append(f" · ▸ {traced}", "bold")
        self.query_one("#result-status", Static).update(status, layout=False)
        self.border_subtitle = counted(len(self.entries), "result")

    def _show_sql(self, entry: ResultEntry) -> None:
        if entry.verified:
            head = "-- verified: the SQL that produced this answer"
        elif entry.item.kind == "tool":
            name = inert(entry.name, keep_newlines=False)
            head = f"-- {name}: an intermediate query of the model (not an answer)"
        else:
            head = f"-- {inert(entry.name, keep_newlines=False)}"
        dark = self.app.current_theme.dark
        self.query_one("#sql-text", Static).update(
            Group(Text(head, style="dim"), sql_syntax(entry.sql_text, dark=dark))
        )

    # ------------------------------------------------------------------ copy, export

    def copy_sql(self) -> None:
        if self._still_reading():
            return
        entry = self.current
        if entry is None or not entry.sql_text.strip():
            self.app.notify("No SQL to copy yet: ask a question or run /sql.", severity="warning")
            return
        # Copy what the SQL tab shows: a control character in the SQL (a string literal the
        # model copied from the data) would act on the terminal it is pasted into; an ESC can
        # end a bracketed paste and run the rest as typed commands.
        sql = inert(entry.sql_text)
        where = copy_text(self.app, sql)
        kind = "verified SQL" if entry.verified else "SQL"
        message = f"Copied the {kind} of {inert(entry.name)} to the {where}."
        if sql != entry.sql_text:
            message += " Its control characters are copied as visible \\x1b-style text, as shown."
            self.app.notify(message, severity="warning", markup=False)
            return
        self.app.notify(message, markup=False)

    def choose_export(self, fmt: str = "csv") -> None:
        """Ask where to export the current result, proposing a file name (ctrl+s, `/export csv`)."""
        if self._still_reading():
            return
        entry = self.current
        if entry is None:
            self.app.notify("No result to export yet.", severity="warning")
            return
        from astro_tui.session.export import default_name

        proposed = Path.cwd() / default_name(entry.name, fmt)
        self.ask_export(entry.name, f"{fmt} {shlex.quote(str(proposed))}")

    def ask_export(self, name: str, typed: str) -> None:
        from astro_tui.ui.screens.export import ExportScreen

        screen = ExportScreen(name, typed, problem=self._export_problem)
        self.app.push_screen(screen, lambda value: self.export(value, asked=True) if value else None)

    def _export_problem(self, arg: str) -> str | None:
        """Why `FORMAT PATH` cannot be written (one line), or None; an existing file is asked
        about afterwards."""
        from astro_tui.session.export import ExportError, check_format, check_target, resolve_path

        try:
            fmt, path = slash.export_args(arg)
            if path is None:
                return "give a path after the format, e.g. csv ~/result.csv"
            target = resolve_path(path)
            check_format(fmt, target)
            check_target(target)
        except (slash.SlashError, ExportError) as exc:
            return str(exc)
        return None

    def export(self, arg: str, *, asked: bool = False) -> None:
        """`FORMAT [PATH]`, as `/export` takes it; without a path, ask for one. `asked`: the
        answer came from the dialog, which comes back with it if the file is not replaced."""
        try:
            fmt, path = slash.export_args(arg)
        except slash.SlashError as exc:
            self.app.notify(str(exc), severity="warning", markup=False)
            return
        if path is None:  # nothing is written where the user has not seen it
            self.choose_export(fmt)
        else:
            self.export_current(fmt, path, typed=arg if asked else None)

    def export_current(
        self, fmt: str, path: str, *, overwrite: bool = False, typed: str | None = None
    ) -> None:
        if self._still_reading():
            return
        entry = self.current
        if entry is None:
            self.app.notify("No result to export yet.", severity="warning")
            return
        from astro_tui.session.export import ExportError, check_format, check_target, resolve_path

        target = resolve_path(path)
        try:
            check_format(fmt, target)
            exists = check_target(target)
        except ExportError as exc:
            self.app.notify(f"Export: {exc}", severity="error", markup=False)
            return
        if exists and not overwrite:
            from astro_tui.ui.screens.confirm import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.export_current(fmt, str(target), overwrite=True)
                elif typed is not None:
                    self.ask_export(entry.name, typed)
                else:
                    self.app.notify(f"Not exported: {inert(str(target))} is left as it was.", markup=False)

            self.app.push_screen(ConfirmScreen("Overwrite?", f"{target} exists. Replace it?"), answered)
            return
        self.app.notify(f"Exporting {entry.name} ({counted(entry.result.row_count, 'row')})…", markup=False)
        self._export(entry.item, fmt, target, overwrite)

    @work(thread=True, group="export", exit_on_error=False, description="export result")
    def _export(self, result: Result, fmt: str, path: Path, overwrite: bool) -> None:
        with contextlib.suppress(AstroError):  # reported as ExportFinished
            self.session.export(result, fmt, path, overwrite=overwrite)

    # ------------------------------------------------------------------ table

    def _set_table_note(self, text: str) -> None:
        holder = self.query_one("#table-holder")
        for child in list(holder.children):
            if child.id != "table-empty":
                child.remove()
        self.table_widget = None
        note = self.query_one("#table-empty", Static)
        note.update(Text(text, style="italic"))
        note.display = True

    @work(thread=True, exclusive=True, group="table", exit_on_error=False, description="prepare table")
    def _prepare_table(self, entry_id: int, result: QueryResult) -> None:
        try:
            backend = display_backend(result.table)
        except Exception as exc:
            self.post_message(self.TablePrepared(entry_id, None, f"cannot show this result: {exc}"))
            return
        self.post_message(self.TablePrepared(entry_id, backend))

    def on_results_pane_table_prepared(self, message: ResultsPane.TablePrepared) -> None:
        message.stop()
        if message.backend is None:
            if self.current is not None and self.current.id == message.entry_id:
                self._set_table_note(message.error or "cannot show this result")
            return
        self._keep_backend(message.entry_id, message.backend)
        if self.current is not None and self.current.id == message.entry_id:
            self._mount_table(message.backend)

    def _keep_backend(self, entry_id: int, backend: Any) -> None:
        self._backends[entry_id] = backend
        for stale in list(self._backends)[:-_CACHED_TABLES]:
            del self._backends[stale]

    def _mount_table(self, backend: Any) -> None:
        from textual_fastdatatable import DataTable

        holder = self.query_one("#table-holder")
        note = self.query_one("#table-empty", Static)
        moved, self._kept_cursor = self._kept_cursor, None
        for child in list(holder.children):
            if child is not note:
                child.remove()
        self.table_widget = None
        if backend.column_count == 0:
            note.update(Text("the statement returned no columns", style="italic"))
            note.display = True
            return
        note.display = False
        table = DataTable(
            backend=backend,
            # Column names come from the data: as `Text` they are never parsed as markup
            # (the widget reads `str` labels with `Text.from_markup`, whatever `render_markup` says).
            column_labels=[Text(name) for name in backend.columns],
            render_markup=False,
            max_column_content_width=48,
            null_rep="[dim]NULL[/]",
            zebra_stripes=True,
            classes="result-table",
        )
        self.table_widget = table
        holder.mount(table)
        if moved is not None:
            self.call_after_refresh(table.move_cursor, row=moved[0], column=moved[1])
        self.call_after_refresh(self._select_cell)

    def _moved_cursor(self) -> tuple[int, int] | None:
        """Where the person moved the cursor in a table of first rows, which its result keeps."""
        table = self.table_widget
        if self.reading is None or table is None or not table.is_attached:
            return None
        row, column = table.cursor_coordinate
        return (row, column) if (row, column) != (0, 0) else None

    def select_cell(self, result: QueryResult, row: int, column: str | None) -> bool:
        """Show the cell a traced value came from: its result, in the table, the cursor on it."""
        entry = next((e for e in self.entries if e.result is result), None)
        if entry is None:
            return False
        self._cell = (entry.id, row, column)
        if entry is not self.current:
            self.show(entry)
        self.activate("tab-table")
        self._select_cell()
        return True

    def _select_cell(self) -> None:
        table, entry, cell = self.table_widget, self.current, self._cell
        if table is None or entry is None or cell is None or cell[0] != entry.id or not table.is_attached:
            return
        self._cell = None
        columns = entry.result.columns
        table.move_cursor(row=cell[1], column=columns.index(cell[2]) if cell[2] in columns else None)
        self._show_status(
            entry, f"row {cell[1]}" + (f" · {inert(cell[2], keep_newlines=False)}" if cell[2] else "")
        )

    def activate(self, tab: str) -> None:
        """Show a tab; if this pane had the focus, keep it here (the focused widget may be in
        the tab just hidden, and Textual would move the focus out of the pane)."""
        tabs = self.query_one(TabbedContent)
        keep = self.has_focus_within
        if tabs.active != tab:
            tabs.active = tab
        elif tab == "tab-chart" and self.current is not None:
            self._prepare_chart(self.current)
        if keep:
            self.call_after_refresh(self.focus_active)

    def focus_active(self) -> None:
        """Focus what the active tab shows, so the pane's keys stay live on every tab."""
        active = self.query_one(TabbedContent).active
        if active == "tab-table" and self.table_widget is not None and self.table_widget.is_attached:
            focus_now(self.table_widget)
        elif active == "tab-sql":
            focus_now(self.query_one("#sql-scroll"))
        elif active == "tab-chart" or self.entries or not self.query_one("#result-picker").display:
            focus_now(self.query_one(TabbedContent).query_one(Tabs))
        else:
            focus_now(self.query_one("#result-picker"))

    # ------------------------------------------------------------------ chart

    @on(TabbedContent.TabActivated, "#result-tabs")
    def _tab(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-chart" and self.current is not None:
            self._prepare_chart(self.current)

    def _prepare_chart(self, entry: ResultEntry) -> None:
        from astro_tui.ui import charting
        from astro_tui.ui.charting import ChartChoice

        if entry.chart is None:
            entry.chart = charting.default_choice(entry.result.table)
        if entry.chart is None:
            self._chart_note("nothing to chart: this result has no numeric column")
            return
        self._chart_note("drawing…")
        self._build_series(entry.id, entry.result, ChartChoice(**vars(entry.chart)))

    @work(thread=True, exclusive=True, group="chart", exit_on_error=False, description="build series")
    def _build_series(self, entry_id: int, result: QueryResult, choice: ChartChoice) -> None:
        from astro_tui.ui import charting

        try:
            series = charting.prepare(result.table, choice, total=charting.rows_of(result))
        except ValueError as exc:
            self.post_message(self.ChartPrepared(entry_id, None, str(exc)))
            return
        self.post_message(self.ChartPrepared(entry_id, series))

    def on_results_pane_chart_prepared(self, message: ResultsPane.ChartPrepared) -> None:
        message.stop()
        if self.current is None or self.current.id != message.entry_id:
            return
        plot = self._plot()
        if message.series is None:
            self._chart_note(message.error or "cannot chart this result")
            plot.display = False
            return
        choice = self.current.chart
        series = message.series
        how = ""
        if choice is not None and choice.kind == "hist":
            how = f"histogram of {', '.join(choice.y)}"
        elif choice is not None:
            how = f"{choice.kind} · x {choice.x or '—'} · y {', '.join(choice.y)}"
        if series.note:  # which rows of how many: said here, where it is never cut off
            how += f" · {series.note}"
        source = "from the answer" if self.current.chart_from_answer else "keys k, x, y change it"
        plot.display = True
        self._chart_note(f"{inert(how, keep_newlines=False)} ({source})")
        plot.show(replace(series, note=""))

    def _plot(self) -> Any:
        """The plot widget, created on first use: plotext is not needed to start the app."""
        found = self.query("#chart")
        if found:
            return found.first()
        from astro_tui.ui.widgets.chart_plot import ChartPlot

        plot = ChartPlot(id="chart")
        self.query_one("#tab-chart").mount(plot)
        return plot

    def _chart_note(self, text: str) -> None:
        self.query_one("#chart-note", Static).update(Text(text, style="dim"))

    def change_chart(self, what: str) -> None:
        """Cycle the chart's kind, x column or y column, then show the chart tab."""
        from astro_tui.ui import charting

        if self._still_reading():
            return
        entry = self.current
        if entry is None:
            self.app.notify("No result to chart yet.", severity="warning")
            return
        table = entry.result.table
        choice = entry.chart or charting.default_choice(table)
        if choice is None:
            self.app.notify("Nothing to chart: this result has no numeric column.", severity="warning")
            return
        if what == "kind":
            choice.kind = charting.KINDS[(charting.KINDS.index(choice.kind) + 1) % len(charting.KINDS)]
            if choice.kind != "hist" and choice.x in (None, *choice.y):
                best = charting.x_column(table)
                choice.x = best if best not in choice.y else _next(table.column_names, None, avoid=choice.y)
        elif what == "x":
            choice.x = _next(table.column_names, choice.x, avoid=choice.y) or choice.x
        elif what == "y":
            numeric = charting.numeric_columns(table)
            current = choice.y[0] if choice.y else None
            avoid = [choice.x] if choice.kind != "hist" and choice.x else []
            choice.y = [_next(numeric, current, avoid=avoid) or current or numeric[0]]
        entry.chart = choice
        entry.chart_from_answer = False
        self.activate("tab-chart")


def _next(names: list[str], current: str | None, *, avoid: list[str | None]) -> str | None:
    """The name after `current`, wrapping round, skipping the other axis' columns (x and y on
    one column draw a diagonal); None when there is no other."""
    start = names.index(current) + 1 if current in names else 0
    for name in names[start:] + names[:start]:
        if name != current and name not in avoid:
            return name
    return None


_EMPTY = Text(
    "Results appear here: answers, the model's queries (df_1, df_2, …), "
    "/sql SELECT … from the question box, or p on a table in the catalog (F2).",
    style="italic",
)

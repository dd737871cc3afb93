"""One tool call in the conversation: a one-line title while collapsed, the detail when expanded.

The model chooses every tool argument, so all of it is shown as inert text:
SQL through the highlighter (which does not parse markup), the rest literally.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, Static
from textual.widgets.collapsible import CollapsibleTitle

from astro_tui.text import inert, one_line
from astro_tui.ui.inert import inert_text

if TYPE_CHECKING:
    from rich.syntax import Syntax

    from astro_tui.data.results import QueryResult

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_RESULT_PREVIEW_CHARS = 4_000
# A model can send megabytes in one argument; laying that out (even folded) holds the UI loop.
_ARGUMENT_PREVIEW_CHARS = 20_000
_SQL_KEYS = ("sql",)
_LIVE_LINES = 12  # while a call streams, its newest lines
_LIVE_REFRESH_S = 0.08
_SQL_MAP_KEYS = ("inputs", "supporting_queries")


def sql_syntax(sql: str, *, dark: bool = True) -> Syntax:
    """Highlighted SQL; `Syntax` renders code, never markup."""
    from rich.syntax import Syntax

    theme = "ansi_dark" if dark else "ansi_light"
    return Syntax(inert(sql.strip()), "sql", theme=theme, word_wrap=True, background_color="default")


def clocks_live(widget: Widget) -> bool:
    """Snapshot tests freeze spinners and elapsed times so screens are reproducible."""
    return bool(getattr(widget.app, "live_clocks", True))


def result_status(widget: Widget, result: QueryResult) -> str:
    """'12 rows · 31 ms', without the time when clocks are frozen."""
    return result.status_text() if clocks_live(widget) else result.count_text()


class _LiveTitle(CollapsibleTitle):
    """A title that ticks without re-laying out the screen (it is as wide as its row)."""

    def _update_label(self) -> None:
        symbol = self.collapsed_symbol if self.collapsed else self.expanded_symbol
        self.update(Content.assemble(symbol, " ", self.label), layout=False)


class ToolBlock(Collapsible):
    """Collapsed: state, tool name, summary, elapsed. Expanded: arguments and result."""

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.tool_name = inert(name, keep_newlines=False)
        self.summary = ""
        self.state = "streaming"
        self._started = time.monotonic()
        self._elapsed_ms: float | None = None
        self._frame = 0
        self._args = Static("", classes="tool-args")
        self._result = Static("", classes="tool-result")
        self._streamed: list[str] = []
        self._streamed_size = 0
        self._live_pending = False
        self._opened_live = False
        super().__init__(self._args, self._result, title="", collapsed=True, classes="tool-block -running")
        self._title = _LiveTitle(label="", collapsed_symbol="▶", expanded_symbol="▼", collapsed=True)

    def on_mount(self) -> None:
        self._refresh_title()
        if clocks_live(self):
            self._ticker = self.set_interval(0.1, self._tick)

    def _tick(self) -> None:
        if self.state in ("streaming", "running"):
            self._frame += 1
            self._refresh_title()
        else:
            self._ticker.stop()

    def _refresh_title(self) -> None:
        live = clocks_live(self)
        if self.state in ("streaming", "running"):
            mark = SPINNER[self._frame % len(SPINNER)] if live else "…"
        else:
            mark = {"ok": "✓", "failed": "✗", "cancelled": "■", "skipped": "–"}.get(self.state, "·")
        parts: list[str | tuple[str, str]] = [(mark, "bold"), " ", (self.tool_name, "bold")]
        if self.summary:
            parts += ["  ", (self.summary, "italic")]
        if live and self.state != "skipped":  # it never ran: no time to show
            elapsed = self._elapsed_ms
            if elapsed is None:
                elapsed = (time.monotonic() - self._started) * 1000
            parts += ["  ", (_format_ms(elapsed), "dim")]
        self.title = Content.assemble(*parts)  # type: ignore[assignment]

    def append_arguments(self, text: str) -> None:
        """The model is still writing the call: show its newest lines, a few times a second."""
        if self.state != "streaming" or self._streamed_size > _ARGUMENT_PREVIEW_CHARS:
            return
        self._streamed.append(text)
        self._streamed_size += len(text)
        if not self._live_pending:
            self._live_pending = True
            self.set_timer(_LIVE_REFRESH_S, self._show_live)

    def _show_live(self) -> None:
        self._live_pending = False
        if self.state != "streaming":
            return
        if self.collapsed and not self._opened_live:
            self._opened_live = True
            self.collapsed = False
        self._args.update(_live_renderable("".join(self._streamed), dark=self.app.current_theme.dark))

    def skip(self, reason: str) -> None:
        """Written by the model but not run (the turn had its answer, or reached its limit)."""
        self.state = "skipped"
        self.summary = one_line(reason, 90)
        self._close_live()
        self._args.update(inert_text(reason, "italic"))
        self.set_class(False, "-running")
        self._refresh_title()

    def _close_live(self) -> None:
        if self._opened_live:
            self._opened_live = False
            self.collapsed = True

    def set_arguments(self, arguments: dict[str, Any] | None, summary: str) -> None:
        self._close_live()
        self.state = "running"
        self.summary = one_line(summary, 90)
        self._args.update(_arguments_renderable(arguments, dark=self.app.current_theme.dark))
        self._refresh_title()

    def set_result(self, ok: bool, content: str, elapsed_ms: float) -> None:
        self.state = "ok" if ok else "failed"
        self._elapsed_ms = elapsed_ms
        text = content if len(content) <= _RESULT_PREVIEW_CHARS else content[:_RESULT_PREVIEW_CHARS] + "\n…"
        self._result.update(inert_text(text, "" if ok else "italic"))
        self.set_class(False, "-running")
        self.set_class(not ok, "-failed")
        self._refresh_title()

    def cancel(self) -> None:
        if self.state in ("streaming", "running"):
            self._close_live()
            self.state = "cancelled"
            self.set_class(False, "-running")
            self._refresh_title()


def _format_ms(ms: float) -> str:
    return f"{ms:,.0f} ms" if ms < 10_000 else f"{ms / 1000:,.1f} s"


def _preview(text: str) -> str:
    return text if len(text) <= _ARGUMENT_PREVIEW_CHARS else text[:_ARGUMENT_PREVIEW_CHARS] + "\n…"


def _live_renderable(raw: str, *, dark: bool) -> Any:
    """The arguments so far: half-written JSON read as far as it goes, SQL highlighted."""
    from pydantic_core import from_json

    try:
        partial = from_json(raw, allow_partial="trailing-strings") if raw.strip() else {}
    except ValueError:
        partial = None
    if not isinstance(partial, dict):
        return inert_text(_tail(raw), "dim")
    sql = next((v for k, v in partial.items() if k in _SQL_KEYS and isinstance(v, str)), None)
    if sql is not None:
        return sql_syntax(_tail(sql), dark=dark)
    return _arguments_renderable(partial, dark=dark) if partial else inert_text("…")


def _tail(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(lines[-_LIVE_LINES:]) if len(lines) > _LIVE_LINES else text


def _arguments_renderable(arguments: dict[str, Any] | None, *, dark: bool) -> Any:
    """SQL arguments highlighted; everything else as literal `key: value` lines."""
    from rich.console import Group

    if arguments is None:
        return inert_text("(the arguments were not valid JSON)", "italic")
    parts: list[Any] = []
    for key, value in arguments.items():
        if key in _SQL_KEYS and isinstance(value, str):
            parts += [inert_text(f"{key}:", "bold"), sql_syntax(_preview(value), dark=dark)]
        elif key in _SQL_MAP_KEYS and isinstance(value, dict):
            for name, sql in value.items():
                parts += [inert_text(f"{key}.{name}:", "bold"), sql_syntax(_preview(str(sql)), dark=dark)]
        else:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
            parts.append(inert_text(f"{key}: {_preview(shown)}"))
    return Group(*parts) if parts else inert_text("(no arguments)", "italic")

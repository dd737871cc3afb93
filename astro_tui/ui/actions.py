"""The one table of user actions: key bindings, the command palette and the F1 help come from it.

Every action runs as an `app.<name>` action, so a key pressed in a pane and a
choice in the palette do exactly the same thing. `scope` says where the key is
bound: on the app (everywhere) or on one pane's widget (only while it has focus).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

Scope = Literal["app", "catalog", "results", "question", "shell"]


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    keys: str
    label: str
    description: str
    group: str
    scope: Scope = "app"
    show: bool = True
    priority: bool = False
    """Handled by the app before the focused widget sees the key. Keys that move focus need it:
    a plain binding is reached by bubbling up from the focused widget, after the keys typed
    behind it were already given to that widget."""
    palette: bool = True
    footer_group: str = ""
    """Keys sharing one footer label (`[ ] Prev/Next`), so every key fits in 80 columns."""


ACTIONS: tuple[Action, ...] = (
    Action("help", "f1", "Help", "Show keys and slash commands", "App"),
    Action(
        "focus_catalog", "f2", "Tree", "Focus the catalog tree", "Panes", footer_group="Panes", priority=True
    ),
    Action(
        "focus_shell", "f3", "Shell", "Focus the metadata shell", "Panes", footer_group="Panes", priority=True
    ),
    Action(
        "focus_question", "f4", "Ask", "Focus the question box", "Panes", footer_group="Panes", priority=True
    ),
    Action(
        "focus_results",
        "f5",
        "Results",
        "Focus the results table",
        "Panes",
        footer_group="Panes",
        priority=True,
    ),
    Action(
        "toggle_catalog", "f6", "Side", "Show or hide the catalog pane", "Panes", show=False, priority=True
    ),
    Action(
        "toggle_results", "f7", "Res", "Show or hide the results pane", "Panes", show=False, priority=True
    ),
    Action("zoom", "f10", "Zoom", "Zoom the focused pane full-screen, or restore it", "Panes", priority=True),
    Action("cancel", "escape", "Cancel", "Cancel the running question (or leave zoom)", "Conversation"),
    Action(
        "interrupt",
        "ctrl+c",
        "Stop",
        "Stop the running question or /sql (selected text: copy it; nothing running: how to quit)",
        "Conversation",
        show=False,
        palette=False,
    ),
    Action(
        "copy_sql",
        "ctrl+y",
        "Copy",
        "Copy the verified SQL of the current result",
        "Results",
        priority=True,
    ),
    Action(
        "export",
        "ctrl+s",
        "Export",
        "Export the current result to CSV, Parquet or JSON",
        "Results",
        priority=True,
    ),
    Action(
        "new_conversation",
        "ctrl+n",
        "New",
        "Start a new conversation",
        "Conversation",
        show=False,
        priority=True,
    ),
    Action(
        "clear_conversation",
        "ctrl+l",
        "Clear",
        "Clear the conversation from the screen",
        "Conversation",
        show=False,
    ),
    Action(
        "resume",
        "ctrl+o",
        "Resume",
        "Resume an earlier conversation",
        "Conversation",
        show=False,
        priority=True,
    ),
    Action(
        "trace_next",
        "f8",
        "Trace",
        "Trace the next value of the answer to its query, row and column",
        "Conversation",
        show=False,
        priority=True,
    ),
    Action(
        "trace_previous",
        "shift+f8",
        "Trace back",
        "Trace the previous value of the answer",
        "Conversation",
        show=False,
        priority=True,
    ),
    Action(
        "copy_trace",
        "f9",
        "Copy cell",
        "Copy a query that returns the traced value's cell",
        "Conversation",
        show=False,
        priority=True,
    ),
    Action("show_context", "", "Context", "Show the notes kept about this database", "Conversation"),
    Action("replay", "", "Replay", "Write the conversation as a notebook or script", "Conversation"),
    Action("show_model", "", "Model", "Show the model and server in use", "Conversation"),
    Action(
        "change_theme",
        "ctrl+t",
        "Theme",
        "Choose a colour theme (remembered)",
        "App",
        show=False,
        priority=True,
    ),
    Action(
        "retry_open",
        "ctrl+r",
        "Retry",
        "Open the database again after it failed to open or its catalog failed to load",
        "App",
        show=False,
        priority=True,
    ),
    Action("quit", "ctrl+q", "Quit", "Quit astro", "App", priority=True),
    Action(
        "insert_name",
        "i",
        "Insert",
        "Insert the selected table or column name into the question",
        "Catalog",
        scope="catalog",
    ),
    Action(
        "preview_table",
        "p",
        "Preview",
        "Preview the selected table's first rows in the results pane",
        "Catalog",
        scope="catalog",
    ),
    Action(
        "previous_result",
        "left_square_bracket",
        "Prev",
        "Show the previous result of this session",
        "Results",
        scope="results",
        footer_group="Prev/Next",
    ),
    Action(
        "next_result",
        "right_square_bracket",
        "Next",
        "Show the next result of this session",
        "Results",
        scope="results",
        footer_group="Prev/Next",
    ),
    Action(
        "show_table_tab", "t", "Table", "Show the result as a table", "Results", scope="results", show=False
    ),
    Action("show_chart_tab", "g", "Chart", "Show the result as a chart", "Results", scope="results"),
    Action("show_sql_tab", "s", "SQL", "Show the result's SQL", "Results", scope="results", show=False),
    Action(
        "chart_kind",
        "k",
        "Kind",
        "Chart: cycle bar, line, scatter, histogram",
        "Results",
        scope="results",
        show=False,
    ),
    Action("chart_x", "x", "X", "Chart: use the next column for x", "Results", scope="results", show=False),
    Action(
        "chart_y",
        "y",
        "Y",
        "Chart: use the next numeric column for y",
        "Results",
        scope="results",
        show=False,
    ),
)

# Keys handled inside widgets rather than by bindings; listed so help tells the whole story.
WIDGET_KEYS: tuple[tuple[str, str, str], ...] = (
    ("Conversation", "enter", "Send the question (or run a /command)"),
    ("Conversation", "ctrl+j / shift+enter", "New line in the question"),
    ("Conversation", "up / down", "Previous / next question (at the first / last line)"),
    ("Conversation", "shift+tab, enter", "Step back to tool calls and SQL; enter opens or closes one"),
    ("Catalog", "enter / space", "Open a schema or table; show the table's card"),
    ("Shell", "enter", "Run the command"),
    ("Shell", "up / down", "Previous / next command"),
    ("Shell", "tab", "Complete a command or path"),
    ("App", "ctrl+p", "Command palette: every action by name"),
    ("Results", "arrows, pgup/pgdn, home/end", "Move in the table"),
)


PASSED_ON: dict[str, tuple[str, tuple[object, ...]]] = {
    "trace_next": ("conversation.trace", (1,)),
    "trace_previous": ("conversation.trace", (-1,)),
    "copy_trace": ("conversation.copy_trace", ()),
    "new_conversation": ("conversation.new_conversation", ()),
    "clear_conversation": ("conversation.clear", ()),
    "resume": ("conversation.choose_resume", ()),
    "show_context": ("conversation.show_notes", ()),
    "show_model": ("conversation.show_model", ()),
    "copy_sql": ("results.copy_sql", ()),
    "previous_result": ("results.step", (-1,)),
    "next_result": ("results.step", (1,)),
    "chart_kind": ("results.change_chart", ("kind",)),
    "chart_x": ("results.change_chart", ("x",)),
    "chart_y": ("results.change_chart", ("y",)),
    "show_table_tab": ("show_tab", ("tab-table",)),
    "show_chart_tab": ("show_tab", ("tab-chart",)),
    "show_sql_tab": ("show_tab", ("tab-sql",)),
    "change_theme": ("search_themes", ()),
}
"""Actions that only pass on to a pane (or an app method): the dotted path from the app and the
arguments. The app gets an `action_<name>` for each from this table (`passing_on`), so it holds
no one-line method per key."""


def passing_on(name: str) -> Callable[[Any], None]:
    """The `action_<name>` method of an action in `PASSED_ON`."""
    path, args = PASSED_ON[name]

    def action(app: Any) -> None:
        target = app
        for part in path.split("."):
            target = getattr(target, part)
        target(*args)

    action.__name__ = f"action_{name}"
    action.__doc__ = by_name(name).description
    return action


def bindings(scope: Scope) -> list[Binding]:
    """The bindings of one scope; pane widgets put these in their BINDINGS."""
    target = "" if scope == "app" else "app."
    return [
        Binding(
            a.keys,
            target + a.name,
            a.label,
            show=a.show,
            priority=a.priority,
            tooltip=a.description,
            group=Binding.Group(a.footer_group, compact=True) if a.footer_group else None,
        )
        for a in ACTIONS
        if a.scope == scope and a.keys
    ]


def by_name(name: str) -> Action:
    return next(a for a in ACTIONS if a.name == name)


def key_display(keys: str) -> str:
    """How a key spec reads in help: `ctrl+y` → `ctrl+y`, `left_square_bracket` → `[`."""
    names = {"left_square_bracket": "[", "right_square_bracket": "]", "escape": "esc"}
    return " / ".join(names.get(k, k) for k in keys.split(",")) if keys else ""


def help_rows() -> Iterator[tuple[str, str, str]]:
    """(group, keys, description) for every action and widget key, grouped for the help screen."""
    order = ("Panes", "Conversation", "Catalog", "Shell", "Results", "App")
    rows = [(a.group, key_display(a.keys) or "palette", a.description) for a in ACTIONS]
    rows += list(WIDGET_KEYS)
    for group in order:
        yield from (r for r in rows if r[0] == group)


class AstroCommands(Provider):
    """Every action of the table in the command palette, with its key."""

    def _entries(self) -> Iterator[tuple[str, str, str]]:
        for action in ACTIONS:
            if action.palette:
                key = key_display(action.keys)
                yield action.name, action.description, f"{action.group}" + (f" · {key}" if key else "")

    def _run(self, name: str) -> None:
        self.app.call_later(partial(self.app.run_action, name))

    async def discover(self) -> Hits:
        for name, text, help_text in self._entries():
            yield DiscoveryHit(text, partial(self._run, name), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, text, help_text in self._entries():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(self._run, name), help=help_text)

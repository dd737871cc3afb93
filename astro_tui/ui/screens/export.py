"""Ask where to export the current result: `FORMAT [PATH]`, as `/export` takes it (and where
`/replay` writes the conversation). A refused answer stays in the box, its reason one line
under it, so what was typed is corrected rather than typed again."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Close", show=True)]

    def __init__(
        self,
        result_name: str,
        default: str,
        *,
        title: str = "Export the current result",
        prompt: str = "Format (csv, parquet or json) and a path:",
        verb: str = "exports",
        problem: Callable[[str], str | None] = lambda answer: None,
    ) -> None:
        """`problem` says in one line why an answer cannot be taken (None when it can)."""
        super().__init__()
        self.problem = problem
        self.result_name = result_name
        self.default = default
        self.title_text = title
        self.prompt = prompt
        self.verb = verb

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = f"enter {self.verb} · esc closes"
            yield Static(self.prompt, markup=False)
            yield Input(self.default, id="export-input", select_on_focus=False)
            yield Static("", id="export-error", markup=False)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        answer = event.value.strip()
        problem = self.problem(answer) if answer else None
        error = self.query_one("#export-error", Static)
        error.update(problem or "")
        error.display = problem is not None
        if problem is None:
            self.dismiss(answer or None)

    @on(Input.Changed)
    def _changed(self) -> None:
        self.query_one("#export-error", Static).display = False

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

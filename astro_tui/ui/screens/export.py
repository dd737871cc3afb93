"""Ask where to export the current result: `FORMAT [PATH]`, as `/export` takes it."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class ExportScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Close", show=True)]

    def __init__(self, result_name: str, default: str) -> None:
        super().__init__()
        self.result_name = result_name
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box") as box:
            box.border_title = "Export the current result"
            box.border_subtitle = "enter exports · esc closes"
            yield Static("Format (csv, parquet or json) and a path:", markup=False)
            yield Input(self.default, id="export-input", select_on_focus=False)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

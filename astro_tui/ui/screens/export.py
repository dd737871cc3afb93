"""Ask where to export the current result: `FORMAT [PATH]`, as `/export` takes it (and where
`/replay` writes the conversation)."""

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

    def __init__(
        self,
        result_name: str,
        default: str,
        *,
        title: str = "Export the current result",
        prompt: str = "Format (csv, parquet or json) and a path:",
        verb: str = "exports",
    ) -> None:
        super().__init__()
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

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

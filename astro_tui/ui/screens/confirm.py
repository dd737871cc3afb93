"""A yes/no question that must be answered before something is lost (an existing file)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", show=True),
        Binding("n,escape", "answer(False)", "No", show=True),
    ]

    def __init__(self, title: str, question: str) -> None:
        super().__init__()
        self.title_text = title
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "y yes · n / esc no"
            yield Static(self.question, markup=False)

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

"""Pick an earlier conversation of this database to resume."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from astro_tui.text import inert

if TYPE_CHECKING:
    from astro_tui.agent.conversations import ConversationInfo


class ResumeScreen(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Close", show=True)]

    def __init__(self, conversations: list[ConversationInfo]) -> None:
        super().__init__()
        self.conversations = conversations

    def compose(self) -> ComposeResult:
        with Vertical(id="resume-box") as box:
            box.border_title = "Resume a conversation"
            box.border_subtitle = "enter resumes · esc closes"
            if not self.conversations:
                yield Static(Text("No saved conversations for this database yet.", style="italic"))
            options = []
            for info in self.conversations:
                label = Text(inert(info.title or "(untitled)", keep_newlines=False)[:90], style="bold")
                label.append(f"\n{info.updated.replace('T', ' ')} · {info.turns} turn", "dim")
                label.append("" if info.turns == 1 else "s", "dim")
                options.append(Option(label, id=info.id))
            yield OptionList(*options, id="resume-list")

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

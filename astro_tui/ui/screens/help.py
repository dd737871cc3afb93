"""F1: every key and slash command, generated from the same table as the bindings."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from astro_tui.ui.actions import help_rows
from astro_tui.ui.slash import COMMANDS


def help_table() -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2), expand=True)
    table.add_column("key", style="bold", no_wrap=True, width=24)
    table.add_column("what", ratio=1)
    group = None
    for row_group, keys, text in help_rows():
        if row_group != group:
            if group is not None:
                table.add_row("", "")
            table.add_row(Text(row_group, style="bold underline"), "")
            group = row_group
        table.add_row(Text(keys, style="" if keys != "palette" else "dim italic"), Text(text))
    table.add_row("", "")
    table.add_row(
        Text("Slash commands", style="bold underline"), Text("typed in the question box", style="dim")
    )
    for name, (args, text) in COMMANDS.items():
        table.add_row(Text(f"/{name} {args}".rstrip()), Text(text))
    table.add_row(Text("//text"), Text("send a question that starts with /"))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "Close", show=True)]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box") as box:
            box.border_title = "astro · keys and commands"
            box.border_subtitle = "esc closes · ctrl+p finds any action by name"
            yield Static(help_table())

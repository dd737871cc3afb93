"""The line above the panes: what is open and which model answers."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from astro_tui.text import inert


class TopBar(Static):
    """`astro · warehouse.duckdb · 19 tables · model gpt-4.1-mini · F1 help · ctrl+p commands`."""

    def __init__(self, model: str | None) -> None:
        self.model = model
        super().__init__(self._text("opening…"), id="topbar")

    def show(self, what: str) -> None:
        """What is open (or opening, or why not); one fixed line, so no new layout."""
        self.update(self._text(what), layout=False)

    def _text(self, what: str) -> Text:
        text = Text("astro", style="bold")
        text.append("  ·  ")
        text.append(inert(what, keep_newlines=False))
        text.append("  ·  ")
        text.append(
            f"model {inert(self.model, keep_newlines=False)}" if self.model else "no model configured"
        )
        text.append("  ·  F1 help  ·  ctrl+p commands", "dim")
        return text

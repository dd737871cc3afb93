"""The line above the panes: what is open and which model answers."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from astro_tui.text import inert

HINTS = ("F1 help", "ctrl+p commands")
CATALOG_HINT = "F2 catalog"
"""Named while the catalog is off screen (below 140 columns it is a drawer), beside the count of
tables it would show."""
SHORT_PALETTE = "ctrl+p"
"""`ctrl+p commands` where the catalog's key would otherwise cut what is open."""


class TopBar(Static):
    """`astro · warehouse.duckdb · 19 tables · model gpt-4.1-mini · F1 help · ctrl+p commands`.

    Laid out for its width: the keys at the end are always whole; what is open, then the model,
    gives way (ending in `…`), and the separators narrow first.
    """

    def __init__(self, model: str | None) -> None:
        self.model = model
        self._what = "opening…"
        self._catalog_hidden = False
        super().__init__(self.line(100), id="topbar")

    def catalog_hidden(self, hidden: bool) -> None:
        """Name the key that brings the catalog while it is off screen."""
        if hidden != self._catalog_hidden:
            self._catalog_hidden = hidden
            self.update(self.line(self.content_size.width), layout=False)

    def show(self, what: str) -> None:
        """What is open (or opening, or why not); one fixed line, so no new layout."""
        self._what = what
        self.update(self.line(self.content_size.width), layout=False)

    def on_resize(self) -> None:
        self.update(self.line(self.content_size.width), layout=False)

    def line(self, width: int) -> Text:
        what = inert(self._what, keep_newlines=False)
        model = f"model {inert(self.model, keep_newlines=False)}" if self.model else "no model configured"
        layouts = [("  ·  ", HINTS), (" · ", HINTS)]
        if self._catalog_hidden:
            full = (HINTS[0], CATALOG_HINT, HINTS[1])
            layouts = [("  ·  ", full), (" · ", full), (" · ", (HINTS[0], CATALOG_HINT, SHORT_PALETTE))]
        for sep, hints in layouts:
            fixed = len("astro") + len(sep) * (2 + len(hints)) + sum(map(len, hints))
            room = width - fixed
            if cell_len(what) + cell_len(model) <= room:
                break
        model = _cut(model, max(room - min(cell_len(what), 12), 8))
        what = _cut(what, max(room - cell_len(model), 1))
        text = Text("astro", style="bold")
        for part in (what, model):
            text.append(sep)
            text.append(part)
        for hint in hints:
            text.append(sep, "dim")
            text.append(hint, "dim")
        return text


def _cut(text: str, room: int) -> str:
    line = Text(text)
    line.truncate(room, overflow="ellipsis")
    return line.plain

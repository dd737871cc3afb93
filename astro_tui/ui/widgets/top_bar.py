"""The line above the panes: what is open and which model answers."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from astro_tui.text import inert

HINTS = ("F1 help", "ctrl+p commands")


class TopBar(Static):
    """`astro · warehouse.duckdb · 19 tables · model gpt-4.1-mini · F1 help · ctrl+p commands`.

    Laid out for its width: the keys at the end are always whole; what is open, then the model,
    gives way (ending in `…`), and the separators narrow first.
    """

    def __init__(self, model: str | None) -> None:
        self.model = model
        self._what = "opening…"
        super().__init__(self.line(100), id="topbar")

    def show(self, what: str) -> None:
        """What is open (or opening, or why not); one fixed line, so no new layout."""
        self._what = what
        self.update(self.line(self.content_size.width), layout=False)

    def on_resize(self) -> None:
        self.update(self.line(self.content_size.width), layout=False)

    def line(self, width: int) -> Text:
        what = inert(self._what, keep_newlines=False)
        model = f"model {inert(self.model, keep_newlines=False)}" if self.model else "no model configured"
        for sep in ("  ·  ", " · "):
            fixed = len("astro") + len(sep) * 4 + sum(map(len, HINTS))
            room = width - fixed
            if cell_len(what) + cell_len(model) <= room:
                break
        model = _cut(model, max(room - min(cell_len(what), 12), 8))
        what = _cut(what, max(room - cell_len(model), 1))
        text = Text("astro", style="bold")
        for part in (what, model):
            text.append(sep)
            text.append(part)
        for hint in HINTS:
            text.append(sep, "dim")
            text.append(hint, "dim")
        return text


def _cut(text: str, room: int) -> str:
    line = Text(text)
    line.truncate(room, overflow="ellipsis")
    return line.plain

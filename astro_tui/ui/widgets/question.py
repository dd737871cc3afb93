"""The question box: multi-line, Enter sends, and history like a shell's.

Enter sends because questions are usually one line. A new line is ctrl+j,
which every terminal sends as a distinct key (shift+enter and alt+enter also
work where the terminal reports them). Up on the first line and down on the
last line walk the history, so the arrows still move within a long question.
"""

from __future__ import annotations

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from astro_tui.ui.history import History

NEWLINE_KEYS = ("ctrl+j", "shift+enter", "alt+enter", "ctrl+enter")
PLACEHOLDERS = (
    "Ask a question about the data…   (enter sends · ctrl+j new line · /help)",
    "Ask a question…   (enter sends · ctrl+j new line · /help)",
    "Ask a question…   (enter sends · /help)",
    "Ask a question…",
)
"""Longest first: the box shows the longest that fits, never a hint cut mid-word."""


class QuestionInput(TextArea):
    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            "",
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            placeholder=PLACEHOLDERS[0],
            highlight_cursor_line=False,
            id=id,
        )
        self.recall = History()

    def on_mount(self) -> None:
        if not getattr(self.app, "live_clocks", True):
            self.cursor_blink = False

    def on_resize(self) -> None:
        room = self.content_size.width - 1  # the cursor's cell
        self.placeholder = next((p for p in PLACEHOLDERS if len(p) <= room), PLACEHOLDERS[-1])

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            self._stop(event)
            text = self.text
            if text.strip():
                self.recall.add(text)
                self.post_message(self.Submitted(text))
        elif key in NEWLINE_KEYS:
            self._stop(event)
            self.insert("\n")
        elif key == "up" and self._on_first_line():
            entry = self.recall.previous(self.text)
            if entry is not None:
                self._stop(event)
                self._show(entry, at_end=False)
        elif key == "down" and self._on_last_line():
            entry = self.recall.next()
            if entry is not None:
                self._stop(event)
                self._show(entry, at_end=True)

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def _on_first_line(self) -> bool:
        location = self.cursor_location
        return location[0] == 0 and self.navigator.is_first_wrapped_line(location)

    def _on_last_line(self) -> bool:
        location = self.cursor_location
        return location[0] == self.document.line_count - 1 and self.navigator.is_last_wrapped_line(location)

    def _show(self, text: str, *, at_end: bool) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end if at_end else (0, len(self.document[0])))

    def put_back(self, text: str) -> None:
        """Restore a cancelled question for editing, unless something new was typed meanwhile."""
        if not self.text.strip():
            self.load_text(text)
            self.move_cursor(self.document.end)
        self.recall.reset()

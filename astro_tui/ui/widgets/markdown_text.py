"""Markdown in one widget, and the streamed answer built from a few of them.

Textual's `Markdown` mounts a widget per block (a bullet item is four), and every
layout walks every widget on the screen (about 50 µs each here): a long streamed
answer made each append cost tens of milliseconds, growing with the answer and
with the conversation. `MarkdownText` draws a whole document with Rich's
Markdown renderer in a single widget. `StreamingMarkdown` keeps the finished
blocks of an answer in a few such widgets that never change again and
re-renders only the block still being written, so the work per batch of tokens
does not grow with the length of the answer.

Colours come from component classes styled in the app's .tcss (theme
variables), so every theme applies. Links are shown with their address and are
never clickable: the text is the model's.
"""

from __future__ import annotations

import io
from typing import ClassVar

from markdown_it import MarkdownIt
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Markdown as RichMarkdown
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget

#: Rich's Markdown style names → the component classes that colour them (app.tcss).
_COMPONENTS: dict[str, str] = {
    "markdown.h1": "md--h1",
    "markdown.h1.border": "md--h1",
    "markdown.h2": "md--h2",
    "markdown.h3": "md--h3",
    "markdown.h4": "md--h4",
    "markdown.h5": "md--h5",
    "markdown.h6": "md--h6",
    "markdown.h7": "md--h6",
    "markdown.code": "md--code",
    "markdown.block_quote": "md--quote",
    "markdown.item.bullet": "md--bullet",
    "markdown.item.number": "md--bullet",
    "markdown.hr": "md--rule",
    "markdown.link": "md--link",
    "markdown.link_url": "md--link",
    "markdown.table.border": "md--rule",
    "markdown.table.header": "md--table-header",
}

# A chunk of finished blocks is re-rendered when more finished blocks join it; past
# this size the next finished block starts a new chunk instead.
CHUNK_CHARS = 1_500

_consoles: dict[tuple[object, ...], Console] = {}


def _themed_console(styles: dict[str, Style]) -> Console:
    """A private console whose theme maps Rich's Markdown styles to ours (one per theme)."""
    key = tuple(sorted(styles.items()))
    console = _consoles.get(key)
    if console is None:
        if len(_consoles) > 16:
            _consoles.clear()
        console = Console(
            file=io.StringIO(),
            theme=Theme(styles),
            color_system="truecolor",
            force_terminal=True,
            legacy_windows=False,
            safe_box=False,
            markup=False,
            emoji=False,
            highlight=False,
        )
        _consoles[key] = console
    return console


class _Rendered:
    """A Rich renderable of Markdown source, drawn once per width."""

    def __init__(self, source: str, console: Console, code_theme: str) -> None:
        self.source = source
        self._console = console
        self._code_theme = code_theme
        self._width = -1
        self._lines: list[list[Segment]] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if width != self._width:
            document = RichMarkdown(self.source, code_theme=self._code_theme, hyperlinks=False)
            self._lines = self._console.render_lines(document, options.update(height=None), pad=False)
            self._width = width
        new_line = Segment.line()
        for line in self._lines:
            yield from line
            yield new_line


class MarkdownText(Widget):
    """A Markdown document drawn in one widget (see the module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(_COMPONENTS.values())

    def __init__(self, source: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._source = source
        self._console: Console | None = None

    @property
    def source(self) -> str:
        return self._source

    def update(self, source: str) -> None:
        if source != self._source:
            self._source = source
            self.refresh(layout=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._console = None

    def render(self) -> _Rendered:
        if self._console is None:
            styles = {name: self.get_component_rich_style(part) for name, part in _COMPONENTS.items()}
            self._console = _themed_console(styles)
        code_theme = "ansi_dark" if self.app.current_theme.dark else "ansi_light"
        return _Rendered(self._source, self._console, code_theme)


_parser: MarkdownIt | None = None


def complete_prefix(text: str) -> int:
    """How many characters at the start of `text` are whole top-level blocks: everything
    before the line where the last block starts (later text can only extend that one)."""
    global _parser
    if _parser is None:
        _parser = MarkdownIt().enable("strikethrough").enable("table")  # as Rich parses
    start = 0
    for token in reversed(_parser.parse(text)):
        if token.level == 0 and token.map is not None:
            start = token.map[0]
            break
    if start <= 0:
        return 0
    offset = 0
    for _ in range(start):
        offset = text.index("\n", offset) + 1
    return offset


class StreamingMarkdown(Vertical):
    """Model text as it streams: finished blocks in a few frozen chunks, the block being
    written in a small tail that is the only part re-rendered per batch."""

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._parts: list[str] = []
        self._chunks: list[MarkdownText] = []
        self._tail_source = ""
        self._tail = MarkdownText(classes="md-tail")

    def compose(self) -> ComposeResult:
        yield self._tail

    @property
    def source(self) -> str:
        """Everything written so far."""
        return "".join(chunk.source for chunk in self._chunks) + self._tail_source

    def write(self, text: str) -> None:
        """Append a fragment; finished blocks move out of the tail into a chunk."""
        if not text:
            return
        tail = self._tail_source + text
        done = complete_prefix(tail)
        if done:
            self._freeze(tail[:done])
            tail = tail[done:]
        self._tail_source = tail
        self._tail.update(tail)
        self._tail.display = bool(tail.strip())

    def _freeze(self, finished: str) -> None:
        last = self._chunks[-1] if self._chunks else None
        if last is not None and len(last.source) < CHUNK_CHARS:
            last.update(last.source + finished)
            return
        chunk = MarkdownText(finished, classes="md-chunk")
        self._chunks.append(chunk)
        self.mount(chunk, before=self._tail)

"""Markdown in one widget that draws each block once, and the streamed answer built on it.

Textual's `Markdown` mounts a widget per block (a bullet item is four), and every
layout walks every widget on the screen (about 50 µs each here), so a long
streamed answer made each append cost tens of milliseconds, growing with the
answer and with the conversation. `MarkdownText` is a single widget: its
document is a list of blocks, each drawn once per width by Rich's Markdown
renderer and kept as lines, and only the last block may change. Streaming
appends finished blocks and rewrites the last one, so a batch of tokens costs
drawing the block being written, whatever the length of the answer.

Colours come from component classes styled in the app's .tcss (theme
variables), so every theme applies. Links show their address and are never
clickable: the text is not ours.
"""

from __future__ import annotations

import io
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.theme import Theme
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.geometry import Size
    from textual.selection import Selection

# rich.markdown and markdown_it are imported when first needed (the app warms them in a
# worker): they are not needed for the first frame.

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

_consoles: dict[tuple[object, ...], Console] = {}
_parser: Any = None


def _themed_console(styles: dict[str, Style]) -> Console:
    """A private console whose theme maps Rich's Markdown styles to ours (one per theme)."""
    key = tuple(sorted(styles.items()))
    console = _consoles.get(key)
    if console is None:
        if len(_consoles) > 16:
            _consoles.clear()
        console = Console(
            file=io.TextIOWrapper(io.BytesIO(), encoding="utf-8"),  # never written; says UTF-8
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


def block_starts(text: str) -> list[int]:
    """Where each top-level block of `text` starts (character offsets; the first is 0). Every
    block but the last is finished: later text can only extend the last one."""
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt().enable("strikethrough").enable("table")  # as Rich parses
    lines = sorted({t.map[0] for t in _parser.parse(text) if t.level == 0 and t.map is not None})
    starts = [0]
    offset = line = 0
    for start in lines:
        while line < start:
            offset = text.index("\n", offset) + 1
            line += 1
        if offset:
            starts.append(offset)
    return starts


class _Block:
    """A piece of Markdown source and its lines at one width."""

    __slots__ = ("lines", "source", "width")

    def __init__(self, source: str) -> None:
        self.source = source
        self.width = -1
        self.lines: list[Strip] = []


def _split(source: str, starts: list[int] | None = None) -> list[_Block]:
    """One block per top-level Markdown block: each is drawn (and cached) on its own, so a
    document looks the same whether it arrived whole or in pieces."""
    if not source.strip():
        return []
    if starts is None:
        starts = block_starts(source)
    ends = [*starts[1:], len(source)]
    return [_Block(source[a:b]) for a, b in zip(starts, ends, strict=True)]


class MarkdownText(Widget):
    """A Markdown document drawn as lines in one widget (see the module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = set(_COMPONENTS.values())

    def __init__(self, source: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._blocks: list[_Block] = _split(source)
        self._open = False  # whether the last block may still change
        self._starts: list[int] = []  # first line of each block, at the width last laid out
        self._height = 0
        self._md_console: Console | None = None
        self._look: tuple[object, ...] = ()  # what the drawn lines depend on besides width

    @property
    def source(self) -> str:
        return "".join(block.source for block in self._blocks)

    def update(self, source: str) -> None:
        """Replace the whole document."""
        self._blocks = _split(source)
        self._open = False
        self._changed()

    def _set_open_block(self, source: str) -> None:
        """Replace the last, still-growing block (or start one)."""
        if self._open:
            self._blocks.pop()
        self._open = bool(source.strip())
        if self._open:
            self._blocks.append(_Block(source))
        self._changed()

    def _append_blocks(self, blocks: list[_Block]) -> None:
        """Add finished blocks before the open one."""
        at = len(self._blocks) - 1 if self._open else len(self._blocks)
        self._blocks[at:at] = blocks

    def _changed(self) -> None:
        self._starts = []
        self.refresh(layout=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._md_console = None  # looked at again when next drawn; lines kept if the look holds

    # ------------------------------------------------------------------ drawing

    def _console(self) -> Console:
        if self._md_console is None:
            styles = {name: self.get_component_rich_style(part) for name, part in _COMPONENTS.items()}
            look = (self.rich_style, self.app.current_theme.dark, *sorted(styles.items()))
            if look != self._look:
                self._look = look
                for block in self._blocks:
                    block.width = -1
                self._starts = []
            self._md_console = _themed_console(styles)
        return self._md_console

    def _lines(self, block: _Block, width: int) -> list[Strip]:
        if block.width != width:
            from rich.markdown import Markdown as RichMarkdown

            console = self._console()
            code_theme = "ansi_dark" if self.app.current_theme.dark else "ansi_light"
            document = RichMarkdown(block.source, code_theme=code_theme, hyperlinks=False)
            lines = console.render_lines(document, console.options.update_width(width), style=self.rich_style)
            # Rich pads some blocks with blank lines of their own (lists, quotes, code, tables);
            # trimmed, every block is one blank line from the next (see `_layout`).
            texts = ["".join(segment.text for segment in line).strip() for line in lines]
            first = next((i for i, text in enumerate(texts) if text), len(lines))
            last = next((i for i in range(len(texts) - 1, -1, -1) if texts[i]), -1)
            block.lines = [Strip(line, width) for line in lines[first : last + 1]]
            block.width = width
        return block.lines

    def _layout(self, width: int) -> None:
        """Draw what is not drawn at this width yet; note where each block starts."""
        self._console()  # a changed look (theme, classes) means drawing everything again
        if self._starts and self._blocks[0].width == width:
            return
        starts: list[int] = []
        y = 0
        for block in self._blocks:
            lines = self._lines(block, width)
            if y and lines:
                y += 1  # a blank line between blocks, as Rich puts between top-level blocks
            starts.append(y)
            y += len(lines)
        self._starts = starts
        self._height = y

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if width <= 0:
            return 0
        self._layout(width)
        return self._height

    def _line(self, y: int, width: int) -> Strip:
        index = bisect_right(self._starts, y) - 1
        if index >= 0:
            lines = self._blocks[index].lines
            offset = y - self._starts[index]
            if offset < len(lines):
                return lines[offset]
        return Strip.blank(width, self.rich_style)

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        self._layout(width)
        line = self._line(y, width).apply_offsets(0, y)  # offsets: mouse selection finds the text
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            start, end = span
            end = width if end == -1 else end
            style = self.screen.get_component_rich_style("screen--selection")
            chosen = line.crop(start, end)
            chosen = Strip(Segment.apply_style(chosen, post_style=style), chosen.cell_length)
            line = Strip.join([line.crop(0, start), chosen, line.crop(end, width)])
        return line

    # ------------------------------------------------------------------ mouse selection

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        width = self.content_size.width
        self._layout(width)
        text = "\n".join(self._line(y, width).text.rstrip() for y in range(self._height))
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


class StreamingMarkdown(MarkdownText):
    """Model text as it streams: finished blocks are drawn once; only the block still
    being written is drawn again on each write."""

    def __init__(self, *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._tail = ""

    def write(self, text: str) -> None:
        """Append a fragment of Markdown."""
        if not text:
            return
        tail = self._tail + text
        starts = block_starts(tail)
        if len(starts) > 1:
            done = starts[-1]
            self._append_blocks(_split(tail[:done], starts[:-1]))
            tail = tail[done:]
        self._tail = tail
        self._set_open_block(tail)

    @property
    def source(self) -> str:
        if self._open:
            return super().source
        return super().source + self._tail

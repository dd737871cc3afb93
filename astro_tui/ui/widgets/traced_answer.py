"""An answer's text whose values can be traced one by one: highlighted, explained, clicked.

The answer is Markdown, and its provenance spans are offsets into the text the
template rendered, not into the screen. To find a span on the screen, the text is
drawn with two invisible marks around each span: U+200E and U+200F (left-to-right
and right-to-left marks). They are zero cells wide, so the layout is the layout of
the text without them, and `inert` shows both as visible escapes, so the answer
itself can never hold one: every mark in the drawn lines is ours. Each drawn line
is scanned once per width, the marks taken out and the cells between them noted;
a block whose marks did not all survive Markdown (a link's address) keeps its text
and loses only the highlight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer, Vertical
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from astro_tui.text import inert, one_line
from astro_tui.ui.widgets.markdown_text import MarkdownText, _Block
from astro_tui.ui.widgets.tool_block import sql_syntax

if TYPE_CHECKING:
    from astro_tui.agent.provenance import Source, Span
    from astro_tui.data.results import QueryResult

START, END = "\u200e", "\u200f"
_MARKS = str.maketrans("", "", START + END)


def marked_source(text: str, spans: Sequence[Span]) -> str:
    """`text` made inert, each span's characters between a START and an END mark."""
    parts: list[str] = []
    at = 0
    for span in spans:
        parts += [inert(text[at : span.start]), START, inert(text[span.start : span.end]), END]
        at = span.end
    parts.append(inert(text[at:]))
    return "".join(parts)


def _unmark(line: Strip, width: int) -> tuple[Strip, list[tuple[int, bool]]]:
    """The line without marks, and where each mark was: (cell, is_start)."""
    marks: list[tuple[int, bool]] = []
    segments: list[Segment] = []
    x = 0
    for segment in line:
        text = segment.text
        if START in text or END in text:
            for char in text:
                if char in (START, END):
                    marks.append((x, char == START))
                else:
                    x += Segment(char).cell_length
            segments.append(Segment(text.translate(_MARKS), segment.style, segment.control))
        else:
            x += segment.cell_length
            segments.append(segment)
    return (Strip(segments, width) if marks else line), marks


class TracedText(MarkdownText):
    """The answer's Markdown, knowing which cells show which span; one span highlighted."""

    COMPONENT_CLASSES: ClassVar[set[str]] = MarkdownText.COMPONENT_CLASSES | {"traced--selected"}

    def __init__(self, text: str, spans: Sequence[Span], *, classes: str | None = None) -> None:
        super().__init__(marked_source(text, spans), classes=classes)
        self.selected: int | None = None
        self._first: dict[int, int] = {}  # block id → index of its first span
        count = 0
        for block in self._blocks:
            self._first[id(block)] = count
            count += block.source.count(START)
        self._cells: dict[int, list[tuple[int, list[tuple[int, int, int]]]]] = {}
        """block id → (width, per line: (x0, x1, span index))."""
        self._by_y: dict[int, list[tuple[int, int, int]]] = {}
        self._mapped: list[int] | None = None

    @property
    def source(self) -> str:
        return super().source.translate(_MARKS)

    def _lines(self, block: _Block, width: int) -> list[Strip]:
        drawn = block.width == width
        lines = super()._lines(block, width)
        cached = self._cells.get(id(block))
        if drawn and cached is not None and cached[0] == width:
            return lines
        index = self._first.get(id(block), 0) - 1
        expected = block.source.count(START)
        ranges: list[list[tuple[int, int, int]]] = []
        opened: int | None = None
        starts = 0
        for y, line in enumerate(lines):
            lines[y], marks = _unmark(line, width)
            here: list[tuple[int, int, int]] = []
            if opened is not None:
                opened = 0
            for x, is_start in marks:
                if is_start:
                    index += 1
                    starts += 1
                    opened = x
                elif opened is not None:
                    here.append((opened, x, index))
                    opened = None
            if opened is not None:
                here.append((opened, width, index))
            ranges.append(here)
        if starts != expected:  # Markdown dropped a mark: no highlight here rather than a wrong one
            ranges = [[] for _ in lines]
        self._cells[id(block)] = (width, ranges)
        return lines

    def _layout(self, width: int) -> None:
        super()._layout(width)
        if self._mapped is self._starts:
            return
        self._by_y = {}
        for block, top in zip(self._blocks, self._starts, strict=True):
            for offset, here in enumerate(self._cells.get(id(block), (0, []))[1]):
                if here:
                    self._by_y[top + offset] = here
        self._mapped = self._starts

    def span_at(self, x: int, y: int) -> int | None:
        self._layout(self.content_size.width)
        return next((k for x0, x1, k in self._by_y.get(y, ()) if x0 <= x < x1), None)

    def lines_of(self, index: int) -> list[int]:
        """The lines showing span `index` (none when its marks did not survive Markdown)."""
        self._layout(self.content_size.width)
        return sorted(y for y, here in self._by_y.items() if any(k == index for _, _, k in here))

    def render_line(self, y: int) -> Strip:
        line = super().render_line(y)
        if self.selected is None:
            return line
        for x0, x1, k in self._by_y.get(y, ()):
            if k == self.selected and x1 > x0:
                style = self.get_component_rich_style("traced--selected")
                width = line.cell_length
                chosen = line.crop(x0, x1)
                chosen = Strip(Segment.apply_style(chosen, post_style=style), chosen.cell_length)
                line = Strip.join([line.crop(0, x0), chosen, line.crop(x1, width)])
        return line

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = self.span_at(offset.x, offset.y)
        if index is not None:
            event.stop()
            self.post_message(TracedAnswer.Picked(index))


class TracedAnswer(Vertical):
    """The answer's text and, below it, the trace of the value picked: its sources and SQL.

    `results` are the answer's inputs by name, when their results are at hand (a saved answer
    has none): the app selects the cell a value came from in the results pane.
    """

    class Picked(Message):
        """A value was clicked (its index among the spans)."""

        def __init__(self, index: int) -> None:
            super().__init__()
            self.index = index

    class Traced(Message):
        """A value is traced: the app shows its cell (the first source with a result at hand)."""

        def __init__(self, answer: TracedAnswer, span: Span) -> None:
            super().__init__()
            self.answer = answer
            self.span = span

        @property
        def cell(self) -> tuple[QueryResult, int, str | None] | None:
            for source in self.span.sources:
                result = self.answer.results.get(source.input)
                if result is not None and source.row is not None:
                    return result, source.row, source.column
            return None

    def __init__(self, text: str, spans: Sequence[Span], results: Mapping[str, QueryResult]) -> None:
        super().__init__(classes="traced-answer")
        self.spans = tuple(s for s in spans if text[s.start : s.end] == s.text)  # a capped text loses some
        self.results = dict(results)
        self.index: int | None = None
        self._text = TracedText(text, self.spans, classes="answer-text")
        self._note = Static(self._hint(), classes="trace-note")

    def compose(self) -> ComposeResult:
        yield self._text
        yield self._note

    def on_mount(self) -> None:
        self._note.display = bool(self.spans)

    @property
    def current(self) -> Span | None:
        return self.spans[self.index] if self.index is not None else None

    def rows_of(self, source: Source) -> int | None:
        """How many rows `source`'s whole result has, when it is at hand and was not cut."""
        result = self.results.get(source.input)
        return result.row_count if result is not None and not result.truncated else None

    def step(self, delta: int) -> Span | None:
        """Trace the next (or previous) value, wrapping round; the first from nothing traced."""
        if not self.spans:
            return None
        if self.index is None:
            index = 0 if delta > 0 else len(self.spans) - 1
        else:
            index = (self.index + delta) % len(self.spans)
        return self.select(index)

    def select(self, index: int) -> Span:
        self.index = index
        span = self.spans[index]
        self._text.selected = index
        self._text.refresh()
        self._note.update(self._trace(span))
        self.call_after_refresh(self._bring_into_view)
        self.post_message(self.Traced(self, span))
        return span

    def on_traced_answer_picked(self, message: TracedAnswer.Picked) -> None:
        message.stop()
        if 0 <= message.index < len(self.spans):
            self.select(message.index)

    def _bring_into_view(self) -> None:
        """Scroll the log so the highlighted value and its trace show (the value first)."""
        log = next((a for a in self.ancestors if isinstance(a, ScrollableContainer)), None)
        if log is None or self.index is None:
            return
        lines = self._text.lines_of(self.index)
        top = self._text.virtual_region.y + (lines[0] if lines else 0)
        bottom = self._note.virtual_region.bottom
        widget: Widget | None = self
        while widget is not None and widget is not log:  # into the log's coordinates
            top += widget.virtual_region.y + widget.gutter.top
            bottom += widget.virtual_region.y + widget.gutter.top
            widget = widget.parent if isinstance(widget.parent, Widget) else None
        height = max(1, min(bottom - top, log.scrollable_content_region.height))
        log.scroll_to_region(Region(0, top, 1, height), animate=False, immediate=True)

    # ------------------------------------------------------------------ what the note says

    def _hint(self) -> Text:
        return Text("f8 or a click: where each value comes from", style="dim")

    def _trace(self, span: Span) -> RenderableType:
        head = Text(f"▸ {(self.index or 0) + 1}/{len(self.spans)} ", style="bold")
        head.append(one_line(span.text, 60), "bold")
        count = len(span.sources) + span.more_sources
        if span.derived:
            head.append(f" computed by the template from {count} value{'s' if count != 1 else ''}:")
        else:
            head.append(" from")
        parts: list[RenderableType] = [head]
        for source in span.sources:
            parts.append(Text("  ") + _where(source))
        if span.more_sources:
            parts.append(Text(f"  … and {span.more_sources:,} more", style="dim"))
        dark = self.app.current_theme.dark
        sqls: dict[str, str] = {}
        for source in span.sources:
            sqls.setdefault(source.input, source.sql)
        for name, sql in sqls.items():
            parts.append(Text(f"-- {one_line(name, 60)}", style="dim"))
            parts.append(sql_syntax(sql, dark=dark))
        parts.append(Text("f8/shift+f8 next/previous · f9 copies a query for this cell", style="dim"))
        return Group(*parts)


def _where(source: Source) -> Text:
    text = Text(one_line(source.input, 40), style="bold")
    if source.row is None:
        text.append(" · its number of rows")
    elif source.column is None:
        text.append(f" · row {source.row} (the whole row)")
    else:
        text.append(f" · row {source.row} · {one_line(source.column, 40)}")
    if source.value is not None or source.column is not None:
        text.append(" = ")
        text.append(one_line(_shown(source.value), 60), "bold")
    return text


def _shown(value: Any) -> str:
    from astro_tui.data.text_table import json_safe

    shown = json_safe(value)
    return "NULL" if shown is None else str(shown)

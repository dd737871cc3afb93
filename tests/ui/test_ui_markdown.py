"""Model text drawn as Markdown in one widget: streamed in any pieces, it looks the same."""

from __future__ import annotations

import random

from textual.app import App, ComposeResult

from astro_tui.resources import resource_dir
from astro_tui.ui.widgets.markdown_text import MarkdownText, StreamingMarkdown, block_starts

DOC = """# Revenue

Orders are spread **evenly** across *five* regions, about `400` each; see [the notes](http://x.example).

- region_0 leads with a long item that wraps around the width of the pane
- region_1 follows
  - nested

1. first
2. second

> quoted [bold]not markup[/bold]

```sql
SELECT region, sum(amount) FROM sales.orders GROUP BY region
```

| region | revenue |
|---|---|
| region_0 | 1,234 |

---
That is all."""


class _Host(App[None]):
    CSS_PATH = str(resource_dir("styles") / "app.tcss")

    def compose(self) -> ComposeResult:
        yield MarkdownText(DOC, id="whole")
        yield StreamingMarkdown()


def _text(widget: MarkdownText) -> list[str]:
    return [widget.render_line(y).text.rstrip() for y in range(widget.size.height)]


def test_block_starts() -> None:
    text = "para one\nstill one\n\n- a\n- b\n\nlast"
    starts = block_starts(text)
    assert [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)] == [
        "para one\nstill one\n\n",
        "- a\n- b\n\n",
        "last",
    ]
    assert block_starts("") == [0]


async def test_streamed_in_any_pieces_it_looks_like_the_whole() -> None:
    app = _Host()
    async with app.run_test(size=(70, 80)) as pilot:
        whole = app.query_one("#whole", MarkdownText)
        streamed = app.query_one(StreamingMarkdown)
        rng = random.Random(7)
        at = 0
        while at < len(DOC):
            step = rng.randint(1, 40)
            streamed.write(DOC[at : at + step])
            at += step
            if rng.random() < 0.3:
                await pilot.pause()
        await pilot.pause()
        assert streamed.source == DOC
        lines = _text(whole)
        assert lines == _text(streamed)
        shown = "\n".join(lines)
        assert "Revenue" in shown and "• region_0" in shown and "SELECT region" in shown
        assert "**" not in shown, "bold is drawn, not shown as asterisks"
        assert "[bold]not markup[/bold]" in shown, "text is never read as Rich markup"
        assert "(http://x.example)" in shown, "a link shows its address"
        segments = [s for y in range(whole.size.height) for s in whole.render_line(y)._segments]
        assert not any(s.style and s.style.link for s in segments), "and is not clickable"


async def test_theme_change_redraws_colours() -> None:
    app = _Host()
    async with app.run_test(size=(70, 80)) as pilot:
        whole = app.query_one("#whole", MarkdownText)
        await pilot.pause()
        before = whole.render_line(0)
        app.theme = "textual-light"
        await pilot.pause()
        after = whole.render_line(0)
        assert before.text == after.text
        assert [s.style for s in before._segments] != [s.style for s in after._segments]


async def test_mouse_selection_copies_the_text() -> None:
    from textual.selection import Selection

    app = _Host()
    async with app.run_test(size=(70, 80)) as pilot:
        whole = app.query_one("#whole", MarkdownText)
        await pilot.pause()
        app.screen.selections = {whole: Selection(None, None)}  # everything
        await pilot.pause()
        selected = app.screen.get_selected_text() or ""
        assert "Revenue" in selected and "region_0" in selected and "That is all." in selected
        assert "**" not in selected
        highlight = app.screen.get_component_rich_style("screen--selection").bgcolor
        assert any(s.style and s.style.bgcolor == highlight for s in whole.render_line(0)._segments)

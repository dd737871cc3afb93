"""Streaming Markdown: astro's `StreamingMarkdown` against Textual's `Markdown` + `MarkdownStream`.

Issue 12 asked whether Textual's own streaming (`MarkdownStream`, in a `layout: stream`
container) closes the gap that `MarkdownText` was written for. Both widgets get the
same 4,000-token answer, written in the same batches at ~1,000 tokens/s (the
conversation pane flushes every 50 ms), below a conversation of earlier answers, in a
headless app at 160×48. Interleaved runs; medians. Prints, per widget: time from
the first write until the whole answer is on screen (the writes alone are paced
over 4 s), and the event-loop lag while it streams (p95, max).

    uv run python bench/bench_markdown.py [--runs 3] [--earlier 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Markdown

from astro_tui.ui.widgets.markdown_text import StreamingMarkdown
from bench.bench_ui import LoopLag, _answer_text

SIZE = (160, 48)
FLUSH_S = 0.05
TOKENS_PER_S = 1_000


class _Log(App[None]):
    CSS = "VerticalScroll { layout: stream; }"

    def compose(self) -> ComposeResult:
        yield VerticalScroll()


async def _run(kind: str, pieces: list[str], earlier: int) -> dict[str, float]:
    app = _Log()
    text = "".join(pieces)
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(VerticalScroll)
        for _ in range(earlier):
            old: Any = StreamingMarkdown() if kind == "astro" else Markdown()
            await log.mount(old)
            if kind == "astro":
                old.write(text[:3000])
            else:
                await old.update(text[:3000])
        await pilot.pause()
        widget: Any = StreamingMarkdown() if kind == "astro" else Markdown()
        await log.mount(widget)
        stream = Markdown.get_stream(widget) if kind == "textual" else None
        batch = max(1, int(TOKENS_PER_S * FLUSH_S))
        async with LoopLag() as lag:
            started = time.perf_counter()
            for i in range(0, len(pieces), batch):
                fragment = "".join(pieces[i : i + batch])
                if stream is not None:
                    await stream.write(fragment)
                else:
                    widget.write(fragment)
                log.scroll_end(animate=False)
                await asyncio.sleep(FLUSH_S)
            if stream is not None:
                await stream.stop()
            written = time.perf_counter()
            painted: list[float] = []
            app.call_after_refresh(lambda: painted.append(time.perf_counter()))
            while not painted:
                await asyncio.sleep(0.001)
    return {
        "total_s": painted[0] - started,
        "written_s": written - started,
        "lag_p95_ms": lag.ms(0.95),
        "lag_max_ms": lag.ms(1.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=4_000)
    parser.add_argument("--earlier", type=int, default=20, help="earlier answers above the stream")
    args = parser.parse_args()
    _, pieces = _answer_text(args.tokens)
    results: dict[str, list[dict[str, float]]] = {"astro": [], "textual": []}
    for _ in range(args.runs):
        for kind in results:
            results[kind].append(asyncio.run(_run(kind, pieces, args.earlier)))
    nominal = len(range(0, len(pieces), int(TOKENS_PER_S * FLUSH_S))) * FLUSH_S
    print(
        f"{args.tokens:,} tokens in batches every {FLUSH_S * 1000:.0f} ms ({nominal:.1f} s of stream), "
        f"{args.earlier} earlier answers, {args.runs} runs each, medians:"
    )
    for kind, runs in results.items():

        def median(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        label = "StreamingMarkdown (astro)" if kind == "astro" else "Markdown + MarkdownStream (Textual)"
        print(
            f"  {label:38} whole answer on screen after {median('total_s'):.2f} s; "
            f"loop lag p95 {median('lag_p95_ms'):.0f} ms, max {median('lag_max_ms'):.0f} ms"
        )


if __name__ == "__main__":
    main()

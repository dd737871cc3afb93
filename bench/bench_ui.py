"""Benchmarks of the full-screen app; prints figures, asserts nothing.

1. launch → first frame showing the catalog (a fresh process each time; target ≤ 1 s)
2. first paint of a 1,000,000-row result after its query finished (target ≤ 0.5 s)
3. a 4,000-token answer streamed at ~1,000 tokens/s from the fake server: time until it is
   fully rendered against the stream's own duration (target ≤ 1.2×), and the event-loop
   lag while it streams (target p95 ≤ 50 ms)
4. a long run_sql call streamed into its live tool block: the event-loop lag meanwhile

Run: `uv run python bench/bench_ui.py [--runs N]`. State, config and cache go to a temp dir.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from astro_tui.config import Settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZE = (160, 48)


def _isolate(tmp: Path) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASTRO_MODEL"):
        os.environ.pop(var, None)
    os.environ.setdefault("ASTRO_STATE_DIR", str(tmp / "state"))
    os.environ.setdefault("ASTRO_CONFIG_DIR", str(tmp / "config"))
    os.environ.setdefault("ASTRO_CACHE_DIR", str(tmp / "cache"))


def _shop(tmp: Path) -> Path:
    from tests.support.ui import make_shop

    path = tmp / "shop.duckdb"
    if not path.exists():
        make_shop(path)
    return path


# --------------------------------------------------------------------------- 1. launch


def _startup_child(db: str) -> None:
    """Runs in a fresh process: print seconds from the parent's spawn to the first frame (the
    layout, the catalog still loading) and to the first frame whose tree shows the schemas."""
    spawned = float(os.environ["ASTRO_BENCH_T0"])
    from textual.screen import Screen

    from astro_tui.config import Settings, state_dir
    from astro_tui.session import CatalogLoaded, Session
    from astro_tui.ui.app import AstroApp
    from astro_tui.ui.panes.catalog import CatalogTree

    first_frame: list[float] = []
    paint = Screen._compositor_refresh  # Textual's paint of a screen (a private method)

    def timed_paint(screen: Screen[Any]) -> None:
        paint(screen)
        if not first_frame:
            first_frame.append(time.time() - spawned)

    Screen._compositor_refresh = timed_paint  # type: ignore[method-assign]

    class Timed(AstroApp):
        def on_astro_app_reported(self, message: Any) -> None:
            # AstroApp's router fills the tree in this same dispatch; the next refresh shows it.
            super().on_astro_app_reported(message)
            if isinstance(message.event, CatalogLoaded):
                self.call_after_refresh(self._shown)

        def _shown(self) -> None:
            schemas = len(self.query_one(CatalogTree).root.children)
            assert schemas, "the catalog tree is empty"
            print(f"{first_frame[0]:.4f} {time.time() - spawned:.4f}", flush=True)
            self.exit()

    async def main() -> None:
        app = Timed(Session([db] if db else [], Settings(), state_dir=state_dir()))
        async with app.run_test(size=SIZE) as pilot:
            while app.is_running:
                await pilot.pause(0.005)

    asyncio.run(main())


def bench_startup(db: Path | None, runs: int, pycache: Path | None) -> tuple[list[float], list[float]]:
    """Fresh processes; (first frame, catalog visible) times. With `pycache`, bytecode is cached
    there (as in any installed app; this environment sets PYTHONDONTWRITEBYTECODE, which makes
    every start compile ~300 modules)."""
    env = dict(os.environ)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    frames: list[float] = []
    catalogs: list[float] = []
    for run in range(runs + (1 if pycache is not None else 0)):
        env["ASTRO_BENCH_T0"] = repr(time.time())
        out = subprocess.run(
            [sys.executable, __file__, "--startup-child", str(db or "")],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        if pycache is not None and run == 0:
            continue  # this run fills the bytecode cache
        frame, catalog = out.stdout.strip().splitlines()[-1].split()
        frames.append(float(frame))
        catalogs.append(float(catalog))
    return frames, catalogs


def _bare_child() -> None:
    """The floor: a bare Textual app (a line of text and a footer) to its first frame."""
    spawned = float(os.environ["ASTRO_BENCH_T0"])
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("hello")
            yield Footer()

        def on_mount(self) -> None:
            self.call_after_refresh(self._shown)

        def _shown(self) -> None:
            print(f"{time.time() - spawned:.4f}", flush=True)
            self.exit()

    async def run() -> None:
        app = Bare()
        async with app.run_test(size=SIZE) as pilot:
            while app.is_running:
                await pilot.pause(0.005)

    asyncio.run(run())


def bench_bare(runs: int, pycache: Path) -> list[float]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    times = []
    for run in range(runs + 1):
        env["ASTRO_BENCH_T0"] = repr(time.time())
        out = subprocess.run(
            [sys.executable, __file__, "--bare-child"], capture_output=True, text=True, env=env, check=True
        )
        if run:
            times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


# --------------------------------------------------------------------------- 2. a million rows


async def bench_million(db: Path) -> tuple[float, float]:
    from astro_tui.config import Settings
    from astro_tui.data.database import Database
    from astro_tui.session import Result
    from tests.support.ui import make_app, ready

    settings = Settings(row_cap=2_000_000)
    with Database.open([str(db)], settings) as source:
        started = time.perf_counter()
        result = source.execute(
            "SELECT i AS id, i * 0.5 AS amount, 'customer ' || (i % 9973) AS name, "
            "DATE '2020-01-01' + (i % 2000)::INT AS day, "  # a DOUBLE: shown whole, as decimals
            "(i * 0.37)::DOUBLE AS ratio FROM range(1000000) t(i)"
        )
        query_s = time.perf_counter() - started
    app = make_app(db, settings, live_clocks=False)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        # A person runs a query seconds after start, when the background warm-up is done.
        while any(w.group == "warm" and not w.is_finished for w in app.workers):
            await asyncio.sleep(0.01)
        painted: list[float] = []
        started = time.perf_counter()
        app.results.add_result(Result(1, "sql 1", "sql", result, result.sql))
        while app.results.table_widget is None:
            await asyncio.sleep(0.001)
        app.call_after_refresh(lambda: painted.append(time.perf_counter()))
        while not painted:
            await asyncio.sleep(0.001)
        assert app.results.table_widget.row_count == 1_000_000
    return query_s, painted[0] - started


# --------------------------------------------------------------------------- 3. streaming


def _answer_text(tokens: int) -> tuple[str, list[str]]:
    """~4 characters a token, as Markdown with paragraphs, lists and bold, one token per chunk."""
    words = ("revenue", "grew", "in", "the", "east", "region", "while", "returns", "fell", "sharply")
    pieces: list[str] = []
    for i in range(tokens):
        if i % 120 == 119:
            pieces.append("\n\n")
        elif i % 40 == 39:
            pieces.append("\n- ")
        elif i % 17 == 0:
            pieces.append(" **" + words[i % len(words)] + "**")
        else:
            pieces.append(" " + words[i % len(words)])
    return "".join(pieces).strip(), pieces


def _reply(pieces: list[str], delay_s: float) -> Any:
    from tests.support.fake_openai import Reply, chunk, finish_chunk, role_chunk

    chunks = [role_chunk(), *(chunk({"content": p}) for p in pieces), finish_chunk("stop")]
    return Reply(tuple(chunks), delay_s=delay_s)


def _long_sql(tokens: int) -> str:
    """A valid statement of about `tokens` × 4 characters, one short line per column."""
    return "SELECT\n" + ",\n".join(f"  {i} AS c{i}" for i in range(max(1, tokens * 4 // 14)))


def _serve_child(tokens: int, delay_s: float, replies: int, kind: str = "text") -> None:
    """The fake model server in its own process, as a real server would be: prints its URL."""
    from tests.support.fake_openai import FakeOpenAI, text_reply, tool_call_reply

    _, pieces = _answer_text(tokens)
    with FakeOpenAI() as fake:
        if kind == "tool":
            sql = _long_sql(tokens)
            fake.script(tool_call_reply([("run_sql", {"sql": sql})], chunk_size=4, delay_s=delay_s))
            fake.script(text_reply("done"))
        else:
            fake.script(*(_reply(pieces, delay_s) for _ in range(replies)))
        print(fake.base_url, flush=True)
        sys.stdin.read()


def _shown_text(streamed: str) -> str:
    """What the conversation shows of the streamed text: all of it, unless the app caps very
    long model text."""
    try:
        from astro_tui.ui.widgets.answer_card import capped
    except ImportError:
        return streamed.strip()
    return capped(0, streamed).strip()


class LoopLag:
    """The event loop's lag while a block runs: a probe asks to wake every 10 ms, and how late
    it wakes is the lag. `async with LoopLag() as lag: …`, then `lag.ms(0.95)`."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._probe())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task
        self.lags.sort()

    async def _probe(self) -> None:
        while not self._stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            self.lags.append(max(0.0, time.perf_counter() - before - 0.01))

    def ms(self, quantile: float) -> float:
        """The lag at `quantile` (1.0: the largest), in milliseconds."""
        return 1000 * self.lags[min(len(self.lags) - 1, int(len(self.lags) * quantile))]


@contextlib.contextmanager
def _fake_model(spec: str) -> Iterator[Settings]:
    """The fake model server in a child process (`--serve-child spec`), and settings for it.
    Re-asking is off: the benchmarks' plain-text answers are meant as they are."""
    from astro_tui.config import Settings

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve-child", spec],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        yield Settings(model="fake-model", base_url=base_url, read_timeout_s=60, max_retries=0, max_reasks=0)
    finally:
        server.communicate("")


async def bench_stream(db: Path, tokens: int, delay_s: float) -> dict[str, float]:
    from astro_tui.config import state_dir
    from astro_tui.data.database import Database
    from astro_tui.session import Session
    from astro_tui.ui.widgets.markdown_text import StreamingMarkdown
    from tests.support.ui import make_app, ready, submit

    _, pieces = _answer_text(tokens)
    shown = _shown_text("".join(pieces))
    with _fake_model(f"{tokens},{delay_s},2") as settings:
        # The stream's own duration: the same agent and server, no screen.
        with Database.open([str(db)], settings) as source:
            session = Session.over(source, settings, state_dir=state_dir())
            await asyncio.to_thread(session.read_catalog)  # as before: the catalog read ahead
            started = time.perf_counter()
            async for _ in session.run("bench"):
                pass
            stream_s = time.perf_counter() - started
            await session.aclose()

        app = make_app(db, settings, live_clocks=True)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            async with LoopLag() as lag:
                started = time.perf_counter()
                await submit(pilot, "bench")
                conversation = app.conversation

                def rendered() -> bool:
                    found = conversation.log_view.query(StreamingMarkdown)
                    return bool(found) and not conversation.running and found.last().source.strip() == shown

                while not rendered():
                    await asyncio.sleep(0.002)
                painted: list[float] = []
                app.call_after_refresh(lambda: painted.append(time.perf_counter()))
                while not painted:
                    await asyncio.sleep(0.001)
                ui_s = painted[0] - started
    return {
        "tokens": tokens,
        "nominal_s": tokens * delay_s,
        "stream_s": stream_s,
        "ui_s": ui_s,
        "ratio": ui_s / stream_s,
        "lag_p50_ms": lag.ms(0.5),
        "lag_p95_ms": lag.ms(0.95),
        "lag_max_ms": lag.ms(1.0),
    }


async def bench_tool_stream(db: Path, tokens: int, delay_s: float) -> dict[str, float]:
    """A run_sql call of `tokens` tokens streamed into its live block: the loop's lag meanwhile."""
    from astro_tui.ui.widgets.tool_block import ToolBlock
    from tests.support.ui import make_app, ready, submit

    with _fake_model(f"{tokens},{delay_s},2,tool") as settings:
        app = make_app(db, settings, live_clocks=True)
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            async with LoopLag() as lag:
                started = time.perf_counter()
                await submit(pilot, "bench")
                while not app.conversation.query(ToolBlock) or (
                    app.conversation.query_one(ToolBlock).state == "streaming"
                ):
                    await asyncio.sleep(0.002)
                written_s = time.perf_counter() - started
    return {
        "chars": len(_long_sql(tokens)),
        "written_s": written_s,
        "lag_p95_ms": lag.ms(0.95),
        "lag_max_ms": lag.ms(1.0),
    }


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=4_000)
    parser.add_argument("--only", choices=("startup", "million", "stream", "toolcall"), help="run one part")
    parser.add_argument("--startup-child")
    parser.add_argument("--bare-child", action="store_true")
    parser.add_argument("--serve-child")
    args = parser.parse_args()
    if args.startup_child is not None:
        _startup_child(args.startup_child)
        return
    if args.bare_child:
        _bare_child()
        return
    if args.serve_child is not None:
        tokens, delay, replies, *kind = args.serve_child.split(",")
        _serve_child(int(tokens), float(delay), int(replies), *kind)
        return

    tmp = Path(tempfile.mkdtemp(prefix="astro-bench-"))
    _isolate(tmp)
    db = _shop(tmp)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    def median(times: list[float]) -> str:
        return f"median {statistics.median(times):.2f} s, best {min(times):.2f} s"

    def report(label: str, times: tuple[list[float], list[float]]) -> None:
        frames, catalogs = times
        print(
            f"launch → first frame ({label}, {len(frames)} fresh processes): {median(frames)}   "
            f"(target ≤ 1 s); → catalog tree on screen: {median(catalogs)}"
        )

    pycache = tmp / "pycache"
    if args.only in (None, "startup"):
        report("small DuckDB, bytecode cached", bench_startup(db, args.runs, pycache))
        report("small DuckDB, no bytecode cache", bench_startup(db, args.runs, None))
        from astro_tui.data.engines.duckdb.sample import ensure_sample

        ensure_sample()
        report("sample warehouse, bytecode cached", bench_startup(None, args.runs, pycache))
        print(
            f"floor: a bare Textual app (a line and a footer) → first frame, bytecode cached: "
            f"{median(bench_bare(args.runs, pycache))}"
        )

    if args.only in (None, "million"):
        query_s, paint_s = asyncio.run(bench_million(db))
        print(
            f"1,000,000-row result (5 columns, one DOUBLE): query {query_s:.2f} s; "
            f"first paint after the query finished {paint_s:.3f} s   (target ≤ 0.5 s)"
        )

    if args.only in (None, "stream"):
        figures = asyncio.run(bench_stream(db, args.tokens, 0.001))
        print(
            f"streaming {figures['tokens']:,} tokens at ~1,000 tokens/s: stream {figures['stream_s']:.2f} s "
            f"(nominal {figures['nominal_s']:.1f} s), fully rendered after {figures['ui_s']:.2f} s = "
            f"{figures['ratio']:.2f}× the stream   (target ≤ 1.2×)"
        )
        print(
            f"event-loop lag while streaming: p50 {figures['lag_p50_ms']:.1f} ms, "
            f"p95 {figures['lag_p95_ms']:.1f} ms, max {figures['lag_max_ms']:.1f} ms   (target p95 ≤ 50 ms)"
        )

    if args.only in (None, "toolcall"):
        tool = asyncio.run(bench_tool_stream(db, args.tokens // 2, 0.001))
        print(
            f"a run_sql call of {tool['chars']:,} characters streamed at ~1,000 tokens/s into its live "
            f"block ({tool['written_s']:.2f} s): event-loop lag p95 {tool['lag_p95_ms']:.1f} ms, "
            f"max {tool['lag_max_ms']:.1f} ms   (target p95 ≤ 50 ms)"
        )


if __name__ == "__main__":
    main()

"""The agent's own cost: overhead per tool round trip, and the prompt size at two catalog sizes.

Run: uv run python bench/bench_agent.py [--quick]

Overhead is measured by driving the real loop with an in-process scripted model
(no HTTP) that answers instantly; the time inside the model stream and the
database's own execution time are subtracted, so what is left is the agent:
parsing, validation, threads, formatting, history, events and the saved file.
The 10,000-table figure uses `bench/synthetic.py`'s catalog (built once, cached;
the first build takes minutes) unless `--quick`, which builds the same shape in memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from astro_tui.agent.events import Done
from astro_tui.agent.loop import Agent
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings, cache_dir
from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
from astro_tui.data.database import Database
from astro_tui.llm import Completion, ToolCallRequest, Usage

ROUNDS = 19
TURNS = 15
SQL = "-- one row\nSELECT 42 AS answer"


class ScriptedClient:
    """A model that replies instantly from a script; `model_s` is the time spent inside it."""

    model = "scripted"

    def __init__(self, replies: Callable[[int], Completion]) -> None:
        self._replies = replies
        self._n = 0
        self.model_s = 0.0

    async def stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_retry: Any = None
    ) -> AsyncIterator[Completion]:
        started = time.perf_counter()
        json.dumps(messages)  # what a real client pays to serialise the request
        completion = self._replies(self._n)
        self._n += 1
        self.model_s += time.perf_counter() - started
        yield completion

    async def aclose(self) -> None:
        return None


def _reply(n: int) -> Completion:
    index = n % (ROUNDS + 1)
    usage = Usage(100, 10, 110)
    if index < ROUNDS:
        call = ToolCallRequest(f"c{n}", "run_sql", json.dumps({"sql": SQL}))
    else:
        arguments = {"inputs": {"a": SQL}, "template": "The answer is {{ a.value | number }}."}
        call = ToolCallRequest(f"c{n}", "submit_result", json.dumps(arguments))
    return Completion(tool_calls=[call], finish_reason="tool_calls", usage=usage)


class _TimedDatabase:
    """Counts the wall time of every `execute` (guard, engine, Arrow fetch): the data layer's share."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._lock = threading.Lock()
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    def execute(self, sql: str, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._db.execute(sql, **kwargs)
        finally:
            with self._lock:
                self.seconds += time.perf_counter() - started


async def _overhead(raw_db: Database, state: Path) -> tuple[float, float, float]:
    """Median agent overhead per round trip (ms), and mean model and database ms per round."""
    db = _TimedDatabase(raw_db)
    catalog = load_catalog(raw_db)
    settings = Settings(model="scripted", max_tool_calls=ROUNDS + 1, max_completions=ROUNDS + 2)
    per_round: list[float] = []
    model_ms: list[float] = []
    db_ms: list[float] = []
    for _ in range(TURNS + 1):
        client = ScriptedClient(_reply)
        agent = Agent(db, catalog, settings, state_dir=state, client=client)  # type: ignore[arg-type]
        db.seconds = 0.0
        started = time.perf_counter()
        events = [event async for event in agent.run("what is the answer?")]
        total = time.perf_counter() - started
        database_s = db.seconds
        if not isinstance(events[-1], Done) or events[-1].reason != "answer":
            raise SystemExit(f"benchmark turn did not end with an answer: {events[-1]}")
        rounds = ROUNDS + 1
        per_round.append((total - client.model_s - database_s) / rounds * 1000)
        model_ms.append(client.model_s / rounds * 1000)
        db_ms.append(database_s / rounds * 1000)
    return statistics.median(per_round[1:]), statistics.mean(model_ms[1:]), statistics.mean(db_ms[1:])


def _prompt_size(db: Database, catalog: Catalog, state: Path) -> tuple[int, int]:
    agent = Agent(db, catalog, Settings(model="x"), state_dir=state)
    system = len(agent.system_prompt())
    tools = len(json.dumps(agent.tool_schemas(), ensure_ascii=False, separators=(",", ":")))  # as sent
    return system, tools


def _memory_catalog(tables: int = 10_000, columns: int = 30, schemas: int = 20) -> Catalog:
    cols = tuple(Column(f"column_{i}", "VARCHAR", True, f"Comment of column {i}.") for i in range(columns))
    per = tables // schemas
    return Catalog(
        tuple(
            Schema(
                None,
                f"schema_{s:02d}",
                tuple(Table(None, f"schema_{s:02d}", f"table_{t:05d}", "table", cols) for t in range(per)),
            )
            for s in range(schemas)
        )
    )


def _report_prompt(label: str, system: int, tools: int, target: int) -> None:
    total = system + tools
    verdict = "ok" if total <= target else "OVER"
    print(
        f"prompt size, {label}: {total:,} chars (system {system:,} + tool schemas {tools:,}); "
        f"target <= {target:,}: {verdict}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="in-memory 10,000-table catalog")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        try:
            sample = Database.open([], Settings())
        except Exception as exc:  # the sample builder is another module; report rather than crash
            print(f"sample warehouse unavailable ({exc}); using a tiny database instead")
            import duckdb

            path = Path(tmp) / "tiny.duckdb"
            duckdb.connect(str(path)).close()
            sample = Database.open([str(path)], Settings())
        with sample:
            overhead, model_ms, db_ms = asyncio.run(_overhead(sample, state))
            verdict = "ok" if overhead <= 5 else "OVER"
            print(
                f"agent overhead per tool round trip: {overhead:.2f} ms median over {TURNS} turns of "
                f"{ROUNDS + 1} rounds (target <= 5 ms: {verdict}); excluded per round: "
                f"model {model_ms:.2f} ms, database {db_ms:.2f} ms"
            )
            system, tools = _prompt_size(sample, load_catalog(sample), state)
            _report_prompt(f"{sample.label}", system, tools, 10_000)

        if args.quick:
            catalog = _memory_catalog()
            with Database.open([str(_empty_db(Path(tmp)))], Settings()) as empty:
                system, tools = _prompt_size(empty, catalog, state)
            _report_prompt("10,000 tables (in memory)", system, tools, 16_000)
        else:
            from bench.synthetic import synthetic_catalog_db

            target = cache_dir() / "bench" / "synthetic-10000x30.duckdb"
            built = time.perf_counter()
            path = synthetic_catalog_db(target, tables=10_000, columns=30)
            if time.perf_counter() - built > 5:
                print(f"(built the synthetic catalog in {time.perf_counter() - built:.0f} s: {path})")
            with Database.open([str(path)], Settings()) as big:
                catalog = load_catalog(big)
                system, tools = _prompt_size(big, catalog, state)
            _report_prompt(f"{len(catalog.tables):,} tables", system, tools, 16_000)


def _empty_db(folder: Path) -> Path:
    import duckdb

    path = folder / "empty.duckdb"
    duckdb.connect(str(path)).close()
    return path


if __name__ == "__main__":
    main()

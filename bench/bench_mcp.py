"""`astro mcp` beside `mcp-server-motherduck`: run_sql per-call latency over stdio and streamable
HTTP, and the tool lists.

Every server runs twice, over stdio and over streamable HTTP on loopback (its own
process, `astro mcp --http` / `--transport http`), all reached by the same client
(the `mcp` SDK's) on the same DuckDB file in one run. Each round visits every
server in a shuffled order and runs every query on it `BURST` times in a row, one
call at a time. The figure per query is
the median wall time of `call_tool` as the client sees it (request written,
result parsed), and the ratio astro / the other server (≤ 1.0 means astro is
as fast). mcp-server-motherduck runs twice: as installed (a new DuckDB
connection per query, its default for read-only files) and with
`--no-ephemeral-connections` (one connection kept open, its fastest).

mcp-server-motherduck is not a project dependency: the script installs it into
bench/.cache/motherduck-env (uv venv + uv pip install) on first use. It pins an
older DuckDB, so the file is built with that DuckDB, which astro's reads too.

    uv run python bench/bench_mcp.py [--rounds 30] [--rows 1000000] [--transport stdio|http|both]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

CACHE = Path(__file__).resolve().parent / ".cache"
MOTHERDUCK_VERSION = "1.1.*"
BURST = 3
"""Calls of one query in a row on one server, as an agent makes them: a pause between calls would
hide a server that waits for TCP's delayed acknowledgement (40 ms per call) — how astro's HTTP
answered in ~50 ms while an interleaved run showed ~10."""
QUERIES = {
    "count": "SELECT count(*) AS n FROM orders",
    "group by": "SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY 1 ORDER BY 1",
    "500 rows": "SELECT * FROM orders ORDER BY id LIMIT 500",
}


def _motherduck() -> Path:
    env = CACHE / "motherduck-env"
    exe = env / "bin" / "mcp-server-motherduck"
    if not exe.exists():
        subprocess.run(["uv", "venv", "-q", "--python", "3.11", str(env)], check=True)
        subprocess.run(
            [
                "uv",
                "pip",
                "install",
                "-q",
                "--compile-bytecode",
                "--python",
                str(env / "bin" / "python"),
                f"mcp-server-motherduck=={MOTHERDUCK_VERSION}",
            ],
            check=True,
        )
    return exe


def _build(path: Path, rows: int, python: Path) -> None:
    """With the other server's (older) DuckDB, so both can open the file."""
    if path.exists():
        return
    script = f"""
import duckdb
con = duckdb.connect({str(path)!r})
con.execute('''CREATE TABLE orders AS SELECT range AS id,
    ['north', 'south', 'east', 'west', 'centre'][1 + range % 5] AS region,
    round(random() * 500, 2)::DECIMAL(10, 2) AS amount,
    DATE '2024-01-01' + (range % 730)::INTEGER AS placed_on
    FROM range({rows})''')
con.execute('CHECKPOINT')
con.close()
"""
    subprocess.run([str(python), "-c", script], check=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _commands(db: Path) -> dict[str, list[str]]:
    exe = str(_motherduck())
    return {
        "astro": [sys.executable, "-m", "astro_tui.cli", "mcp", str(db)],
        "motherduck": [exe, "--db-path", str(db)],
        "motherduck (persistent)": [exe, "--db-path", str(db), "--no-ephemeral-connections"],
    }


def _http_args(name: str, port: int) -> list[str]:
    if name == "astro":
        return ["--http", f"127.0.0.1:{port}"]
    return ["--transport", "http", "--host", "127.0.0.1", "--port", str(port)]


@asynccontextmanager
async def _http_server(command: list[str], env: dict[str, str], port: int) -> AsyncIterator[str]:
    """The server as its own process, its log discarded; the URL once the port accepts."""
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        command, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command[0]} did not start on port {port}") from None
                await anyio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


TOOL = {"astro": ("run_sql", "sql"), "motherduck": ("execute_query", "sql")}


def _tool(server: str) -> tuple[str, str]:
    return TOOL["astro" if server.startswith("astro") else "motherduck"]


async def _run(rounds: int, db: Path, state: Path, transports: list[str]) -> None:
    env = {**os.environ, "ASTRO_STATE_DIR": str(state)}
    root = str(Path(__file__).resolve().parent.parent)
    async with AsyncExitStack() as stack:
        clients: dict[tuple[str, str], Client] = {}
        for transport in transports:
            for name, command in _commands(db).items():
                if transport == "stdio":
                    source: Any = StdioServerParameters(
                        command=command[0], args=command[1:], env=env, cwd=root
                    )
                else:
                    port = _free_port()
                    source = await stack.enter_async_context(
                        _http_server(command + _http_args(name, port), env, port)
                    )
                clients[(transport, name)] = await stack.enter_async_context(Client(source))
        print("tool lists (characters of JSON, as listed to the client):")
        for (transport, name), client in clients.items():
            if transport != transports[0]:
                continue
            listed = (await client.list_tools()).tools
            tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]
            names = ", ".join(t["name"] for t in tools)
            print(f"  {name:<24} {len(tools)} tools  {len(json.dumps(tools)):>6,} chars  ({names})")
        times: dict[tuple[str, str, str], list[float]] = {}
        for _warm in range(3):
            for (_, name), client in clients.items():
                tool, arg = _tool(name)
                for sql in QUERIES.values():
                    result = await client.call_tool(tool, {arg: sql})
                    assert not result.is_error, (name, result)
        order = list(clients)
        for _ in range(rounds):
            random.shuffle(order)
            for key in order:
                tool, arg = _tool(key[1])
                for label, sql in QUERIES.items():
                    for _call in range(BURST):
                        started = time.perf_counter()
                        await clients[key].call_tool(tool, {arg: sql})
                        elapsed = (time.perf_counter() - started) * 1000
                        times.setdefault((key[0], label, key[1]), []).append(elapsed)
        others = [n for n in _commands(db) if n != "astro"]
        for transport in transports:
            print(f"\nrun_sql per call over {transport}, median of {rounds} rounds × {BURST} calls (ms):")
            header = f"  {'query':<10} {'astro':>8}" + "".join(f" {n:>24}" for n in others)
            print(header + "".join(f"  {'astro / ' + n:>34}" for n in others))
            for label in QUERIES:
                astro = statistics.median(times[(transport, label, "astro")])
                row = f"  {label:<10} {astro:>8.2f}"
                ratios = ""
                for name in others:
                    other = statistics.median(times[(transport, label, name)])
                    row += f" {other:>24.2f}"
                    ratios += f"  {astro / other:>33.2f}×"
                print(row + ratios)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--transport", choices=["stdio", "http", "both"], default="both", help="default: both, in one run"
    )
    args = parser.parse_args()
    exe = _motherduck()
    db = CACHE / f"mcp-bench-{args.rows}.duckdb"
    _build(db, args.rows, exe.parent / "python")
    print(f"file: {db.name}, orders {args.rows:,} rows; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as state:
        transports = ["stdio", "http"] if args.transport == "both" else [args.transport]
        anyio.run(_run, args.rounds, db, Path(state), transports)


if __name__ == "__main__":
    main()

"""`astro mcp` as a client starts it: a real subprocess over stdio, and over streamable HTTP.

The HTTP side is attacked from outside: a foreign Origin (a web page in the
user's browser) and a rebound Host are refused, a request without the bearer
token gets 401, and the server refuses to listen beyond loopback without one.
A target that cannot be opened ends the command at start with exit code 2.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import duckdb
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from astro_tui.cli import main
from tests.support.agent_attacks import CROSS_JOIN
from tests.support.sql_corpus import build_watched
from tests.support.waiting import wait_for, wait_for_async

TOKEN = "t0ken-for-the-test-suite-0123456789"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_watched(tmp_path_factory.mktemp("mcp-transport"))


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "astro_tui.cli", "mcp", *args]


def _proc(pid: str, name: str) -> str:
    try:
        return (Path("/proc") / pid / name).read_bytes().decode(errors="replace")
    except OSError:
        return ""


def worker_cpu_ticks(target: Path) -> int:
    """CPU time of the DuckDB statement workers of the `astro mcp` serving `target` (Linux /proc):
    a runaway is running when it grows."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or "duckdb.worker" not in _proc(entry.name, "cmdline"):
            continue
        fields = _proc(entry.name, "stat").rpartition(")")[2].split()
        if len(fields) > 12 and str(target) in _proc(fields[1], "cmdline"):
            ticks += int(fields[11]) + int(fields[12])
    return ticks


def saved_turns(state: Path) -> list[dict[str, Any]]:
    turns = []
    for path in sorted((state / "conversations").glob("*.jsonl")):
        turns += [json.loads(line) for line in path.read_text().splitlines() if '"type":"turn"' in line]
    return turns


async def test_stdio_end_to_end_with_a_cancelled_runaway(shop: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "ASTRO_STATE_DIR": str(state)}
    params = StdioServerParameters(
        command=sys.executable, args=command(str(shop), "--timeout", "600")[1:], env=env
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "run_sql" in names and len(names) == 6
        counted = await client.call_tool("run_sql", {"sql": "SELECT count(*) AS n FROM sales.orders"})
        assert counted.structured_content is not None and counted.structured_content["rows"] == [[100]]
        refused = await client.call_tool("run_sql", {"sql": "COPY sales.orders TO '/tmp/astro-stolen.csv'"})
        assert refused.is_error and refused.content[0].text.startswith("run_sql: refused")  # type: ignore[union-attr]

        idle = worker_cpu_ticks(shop)
        async with anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "run_sql", {"sql": CROSS_JOIN})
            await wait_for_async(lambda: worker_cpu_ticks(shop) > idle + 20, what="the runaway to run")
            group.cancel_scope.cancel()
        # the server saves a cancelled call once its statement has stopped; the limit is 600 s
        await wait_for_async(
            lambda: [t["status"] for t in saved_turns(state)] == ["text", "error", "cancelled"],
            what="the runaway to stop on the server",
        )
        after = await client.call_tool("run_sql", {"sql": "SELECT 7 AS ok"})
        assert after.structured_content is not None and after.structured_content["rows"] == [[7]]
    assert not Path("/tmp/astro-stolen.csv").exists()


def test_a_target_that_cannot_be_opened_exits_2_at_start(tmp_path: Path) -> None:
    broken = tmp_path / "broken.duckdb"
    broken.write_text("not a database")
    for target in (str(tmp_path / "missing.duckdb"), str(broken), "postgresql://nobody@127.0.0.1:1/none"):
        done = run_cli(target)
        assert done.exit_code == 2, done.stderr
        assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("astro: ")


# streamable HTTP ------------------------------------------------------------------------------------------


@pytest.fixture
def http_server(shop: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """`astro mcp --http` on a free port; the URL it prints. Indirect parameters: extra args, env."""
    args, extra_env = getattr(request, "param", ((), {}))
    env = {**os.environ, "ASTRO_STATE_DIR": str(tmp_path / "state"), **extra_env}
    proc = subprocess.Popen(
        command(str(shop), "--http", "127.0.0.1:0", *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    url = ""
    for line in proc.stderr:
        found = re.search(r" at (http://\S+) ", line)
        if found:
            url = found.group(1)
            break
    try:
        assert url, "the server never said where it listens"
        yield url
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 143  # SIGTERM ends it, after its cleanup


@asynccontextmanager
async def connected(url: str, headers: dict[str, str] | None = None, mode: str = "auto") -> Any:
    async with (
        httpx2.AsyncClient(headers=headers or {}) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    base = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    return httpx2.post(url, json=body, headers={**base, **headers}, timeout=60)


async def test_http_end_to_end_and_dns_rebinding_refused(http_server: str, tmp_path: Path) -> None:
    async with connected(http_server) as client:
        result = await client.call_tool("run_sql", {"sql": "SELECT sum(amount) AS total FROM sales.orders"})
        assert result.structured_content is not None and result.structured_content["rows"] == [["5050.00"]]
    port = http_server.split(":")[2].split("/")[0]
    assert post(http_server, {"origin": "https://evil.example"}).status_code == 403
    assert post(http_server, {"host": f"evil.example:{port}"}).status_code == 421
    assert post(http_server, {"origin": f"http://localhost:{port}"}).status_code != 403
    # two legacy clients at once (each with its Mcp-Session-Id): each its own `cd`, both served
    # while the other's statement runs, and two saved conversations
    async with connected(http_server, mode="legacy") as one, connected(http_server, mode="legacy") as two:
        await one.call_tool("shell", {"command": "cd /sales"})
        results: dict[int, Any] = {}

        async def count(n: int, client: Any) -> None:
            sql = f"SELECT {n} AS n, count(*) AS c FROM range(2000000) a, range(3) b"
            results[n] = await client.call_tool("run_sql", {"sql": sql})

        async with anyio.create_task_group() as group:
            group.start_soon(count, 1, one)
            group.start_soon(count, 2, two)
        assert [results[n].structured_content["rows"] for n in (1, 2)] == [[[1, 6000000]], [[2, 6000000]]]
        assert (await two.call_tool("shell", {"command": "pwd"})).content[0].text.strip() == "/"  # type: ignore[union-attr]
        assert (await one.call_tool("shell", {"command": "pwd"})).content[0].text.strip() == "/sales"  # type: ignore[union-attr]
    wait_for(lambda: len(list((tmp_path / "state" / "conversations").glob("*.jsonl"))) == 3)


@pytest.mark.parametrize(
    "http_server", [(("--http", "0.0.0.0:0"), {"ASTRO_MCP_TOKEN": TOKEN})], indirect=True
)
async def test_beyond_loopback_with_a_token_every_request_needs_it(http_server: str) -> None:
    url = http_server.replace("0.0.0.0", "127.0.0.1")
    missing = post(url, {})
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert post(url, {"authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    assert post(url, {"authorization": TOKEN}).status_code == 401
    async with connected(url, {"authorization": f"Bearer {TOKEN}"}) as client:
        result = await client.call_tool("run_sql", {"sql": "SELECT 'in' AS door"})
        assert result.structured_content is not None and result.structured_content["rows"] == [["in"]]


def run_cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, ["mcp", *args], env=env)


def test_listening_beyond_loopback_without_a_token_is_refused(shop: Path, tmp_path: Path) -> None:
    for address in ("0.0.0.0:0", "[::]:0", "192.0.2.1:8765"):
        done = run_cli(str(shop), "--http", address, env={"ASTRO_MCP_TOKEN": ""})
        assert done.exit_code == 2 and "needs a bearer token" in done.stderr, done.stderr
    loose = tmp_path / "token"
    loose.write_text(TOKEN)
    loose.chmod(0o644)
    done = run_cli(str(shop), "--http", "0.0.0.0:0", "--token-file", str(loose))
    assert done.exit_code == 2 and "chmod 600" in done.stderr
    loose.write_text("short")
    loose.chmod(0o600)
    done = run_cli(str(shop), "--http", "0.0.0.0:0", "--token-file", str(loose))
    assert done.exit_code == 2 and "at least 16" in done.stderr and "short" not in done.stderr
    for bad in ("nowhere", "127.0.0.1:99999"):
        done = run_cli(str(shop), "--http", bad)
        assert done.exit_code == 2 and "HOST:PORT" in done.stderr


# one promise over the wire: verified, one row count, a replayable answer ---------------------------------

BIG = "SELECT i FROM range(200000) t(i)"
COUNTED = re.compile(r"([\d,]+) of ([\d,]+) rows")


def replay_cli(state: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["replay", *args], env={"ASTRO_STATE_DIR": str(state)})


async def test_stdio_answers_keep_one_verified_one_row_count_and_replay(tmp_path: Path) -> None:
    shop = build_watched(tmp_path / "data")
    state = tmp_path / "state"
    env = {**os.environ, "ASTRO_STATE_DIR": str(state)}
    params = StdioServerParameters(command=sys.executable, args=command(str(shop))[1:], env=env)
    totals = {
        "n": "SELECT count(*) AS n FROM sales.orders",
        "total": "SELECT sum(amount) AS total FROM sales.orders",
    }
    async with Client(params) as client:
        typed = await client.call_tool(
            "submit_result", {"inputs": {"n": totals["n"]}, "template": "Exactly 42 orders, {{ n.value }}."}
        )
        data = typed.structured_content
        assert data is not None and data["text"] == "Exactly 42 orders, 100."
        assert data["verified"] is False and data["unverified_numbers"] == ["42"]
        assert "Not verified: typed into the template or title, not from a query: 42" in typed.content[0].text  # type: ignore[union-attr]

        answered = await client.call_tool(
            "submit_result",
            {
                "inputs": {**totals, "big": BIG},
                "template": "{{ n.value }} orders worth {{ total.value | money }}; from {{ big.rows[0].i }}.",
                "title": "Orders",
            },
        )
        data = answered.structured_content
        assert data is not None and data["verified"] is True and data["unverified_numbers"] == []
        big = next(i["result"] for i in data["inputs"] if i["name"] == "big")
        assert big["total_rows"] == 200_000 and big["truncated"] and 0 < big["row_count"] < 100_000
        # after the answer (whose note says what its values were read from), the reply's one count
        # per input is the structured result's: rows here, of the true total
        said = answered.content[0].text  # type: ignore[union-attr]
        assert data["text"] in said and data["complete"] is False
        reply = said[said.index(data["text"]) + len(data["text"]) :]
        assert COUNTED.findall(reply) == [(f"{big['row_count']:,}", "200,000")], said

        ran = await client.call_tool("run_sql", {"sql": BIG})
        data = ran.structured_content
        said = ran.content[0].text  # type: ignore[union-attr]
        assert data is not None and data["total_rows"] == 200_000 and data["truncated"]
        assert {(f"{data['row_count']:,}", "200,000")} == set(COUNTED.findall(said)), said
        assert data["notice"] in said and "(the table above shows the first 20)" in said

        column = await client.call_tool(
            "submit_result",
            {"inputs": {"top": "SELECT 'x' AS label, 7 AS value"}, "template": "{{ top.value }}"},
        )
        assert column.is_error and "top['value']" in column.content[0].text  # type: ignore[union-attr]

    def answered_saved() -> list[Path]:
        return [p for p in (state / "conversations").glob("*.jsonl") if '"verified":true' in p.read_text()]

    wait_for(lambda: len(answered_saved()) == 1)
    conversation = answered_saved()[0].stem
    done = replay_cli(state, conversation, "--to", "sql", "-o", str(tmp_path / "r.sql"))
    assert done.exit_code == 0, done.stderr
    script = (tmp_path / "r.sql").read_text()
    assert all(sql in script for sql in (*totals.values(), BIG)) and "Exactly 42" not in script
    done = replay_cli(state, conversation, "--check")
    assert (done.exit_code, done.stdout) == (0, ""), done.stderr
    with duckdb.connect(str(shop)) as con:
        con.execute("UPDATE sales.orders SET amount = amount + 1000 WHERE id = 1")
    done = replay_cli(state, conversation, "--check")
    assert done.exit_code == 1 and done.stdout == "A1 Orders · total: $5,050.00 → $6,050.00\n", done.stdout


async def test_http_connections_send_without_waiting_for_acknowledgements() -> None:
    """The listener names TCP, so asyncio (uvicorn serves on it) turns Nagle's algorithm off on each
    connection: a reply written in pieces is not held back until the client's delayed ACK."""
    import asyncio
    import socket

    from astro_tui.mcp.http import Address, HttpSetupError, listen

    listener = listen(Address("127.0.0.1", 0))
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        assert await accepted != 0
        writer.close()
        with pytest.raises(HttpSetupError, match=r"^--http 127\.0\.0\.1:\d+: "):
            listen(Address("127.0.0.1", listener.getsockname()[1]))
    finally:
        server.close()

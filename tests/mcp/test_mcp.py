"""`astro mcp` through the SDK's own client, in memory, against a real DuckDB file.

What an outside agent gets: the six tools (read-only, small enough to send with
every request), structured results that say when they were cut and never
exceed the byte budget, inert cell text, one-line errors after which the
server goes on, several calls at once with a bounded number running, a runaway
stopped by the time limit and by the client's cancel, the hostile corpus
refused with the file unchanged, and every call saved as a conversation the
app can resume.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult

from astro_tui.agent.conversations import load_conversation
from astro_tui.config import Settings, state_dir
from astro_tui.mcp.calls import MAX_RUNNING
from astro_tui.mcp.record import MAX_SESSIONS, CallRecord, Conversations
from astro_tui.mcp.server import AstroServer
from astro_tui.mcp.shaping import CELL_CHARS, RESULT_BYTES, text_result
from astro_tui.session import Session
from astro_tui.ui.screens.resume import ResumeScreen
from tests.support.agent_attacks import CROSS_JOIN
from tests.support.fake_openai import FakeOpenAI
from tests.support.mcp import call, text
from tests.support.sql_corpus import CORPUS, REASON_PREFIXES, build_watched, render, snapshot
from tests.support.ui import SIZE, log_text, make_app, ready, shop_db, submit, wait_until
from tests.support.waiting import wait_for_async

__all__ = ["shop_db"]

TOOLS = {"shell", "show_table", "search_metadata", "run_sql", "submit_result", "read_context"}
TOOL_LIST_CHARS = 8_000


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("mcp-watched")
    return root, build_watched(root)


def open_session(path: Path, state: Path, **limits: Any) -> Iterator[Session]:
    with Session([str(path)], Settings(**limits), state_dir=state) as session:
        yield session.open()


@pytest.fixture(scope="module")
def opened(watched: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """Limits far above any wait in these tests: what stops a query here is the client's cancel."""
    yield from open_session(watched[1], tmp_path_factory.mktemp("mcp-state"), query_timeout_s=600)


@pytest.fixture(scope="module")
def strict(watched: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A limit a runaway reaches, long enough for a loaded machine (two suites at once) to read
    a scan's first rows within it (at 1 s it sometimes did not)."""
    yield from open_session(watched[1], tmp_path_factory.mktemp("mcp-strict"), query_timeout_s=4, row_cap=10)


@pytest.fixture
async def server(opened: Session) -> AsyncIterator[AstroServer]:
    server = AstroServer(opened)
    yield server
    server.close()


def one_line_error(result: CallToolResult) -> str:
    assert result.is_error, text(result)
    message = text(result)
    assert message and "\n" not in message
    return message


def wire_size(result: CallToolResult) -> int:
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


# the tool list -------------------------------------------------------------------------------------------


async def test_the_tool_list_is_the_six_tools_read_only_and_small(server: AstroServer) -> None:
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]
    assert {t["name"] for t in dumped} == TOOLS
    size = len(json.dumps(dumped))
    assert size <= TOOL_LIST_CHARS, size
    for tool in dumped:
        assert tool["annotations"]["readOnlyHint"] is True, tool["name"]
        assert tool["annotations"]["openWorldHint"] is False, tool["name"]
        assert len(tool["description"]) > 80, tool["name"]
        assert "title" not in json.dumps(tool["inputSchema"]).replace('"title": {', ""), tool["name"]
    agent_tools = server.session.tools()  # the names and arguments are the app's agent's
    for tool in dumped:
        properties = tool["inputSchema"].get("properties", {})
        assert set(properties) == set(agent_tools[tool["name"]].model.model_fields), tool["name"]
    by_name = {t["name"]: t for t in dumped}
    assert "DuckDB" in by_name["run_sql"]["description"] and "600 s" in by_name["run_sql"]["description"]
    assert by_name["run_sql"]["inputSchema"]["required"] == ["sql"]
    assert set(by_name["run_sql"]["outputSchema"]["properties"]) >= {"rows", "truncated", "total_rows"}
    assert by_name["submit_result"]["inputSchema"]["required"] == ["inputs", "template"]


# targets ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["glob", "named"])
async def test_files_globs_and_named_connections_are_served(tmp_path: Path, kind: str) -> None:
    """The session opens what `astro` opens: here a glob of CSV files, and a named connection
    (`@NAME`) to a data file."""
    for i in (1, 2):
        (tmp_path / f"part{i}.csv").write_text("id,amount\n" + "".join(f"{i}{j},{j}\n" for j in range(3)))
    target, settings, table = {
        "glob": (str(tmp_path / "part*.csv"), Settings(), "main.part"),
        "named": ("@shop", Settings(connections={"shop": str(tmp_path / "part2.csv")}), "main.part2"),
    }[kind]
    with Session([target], settings, state_dir=tmp_path / "state") as session:
        server = AstroServer(session.open())
        try:
            listed = await call(server, "shell", {"command": "ls /main"})
            counted = await call(
                server, "run_sql", {"sql": f"SELECT count(*) AS n, sum(amount) AS s FROM {table}"}
            )
        finally:
            server.close()
    assert table.split(".")[1] + ".table" in text(listed)
    assert counted.structured_content is not None
    assert counted.structured_content["rows"] == (
        [[6, "6"]] if kind == "glob" else [[3, "3"]]
    )  # HUGEINT: text


# results ---------------------------------------------------------------------------------------------------


async def test_run_sql_returns_structured_rows_and_a_short_text(server: AstroServer) -> None:
    result = await call(
        server,
        "run_sql",
        {"sql": "-- the first orders\nSELECT id, region, amount FROM sales.orders ORDER BY id LIMIT 3"},
    )
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    assert data["columns"] == [
        {"name": "id", "type": "INTEGER"},
        {"name": "region", "type": "VARCHAR"},
        {"name": "amount", "type": "DECIMAL(10,2)"},
    ]
    assert data["rows"] == [[1, "north", "1.00"], [2, "north", "2.00"], [3, "north", "3.00"]]
    assert (data["row_count"], data["total_rows"], data["truncated"], data["notice"]) == (3, 3, False, None)
    assert data["elapsed_ms"] >= 0 and "sales.orders" in data["sql"]
    lines = text(result).splitlines()
    assert lines[0].split() == ["id", "region", "amount"] and lines[-1] == "3 rows"


async def test_a_cut_result_says_so_with_the_exact_total_when_it_is_cheap(strict: Session) -> None:
    """The total of a plain scan is in DuckDB's metadata; any other is counted within the time
    limit (the agent's own run_sql), and stays "more than N" when it cannot be."""
    server = AstroServer(strict)
    try:
        plain = await call(server, "run_sql", {"sql": "SELECT * FROM sales.orders"})
        filtered = await call(server, "run_sql", {"sql": "SELECT * FROM sales.orders WHERE amount > 5"})
        endless = await call(
            server, "run_sql", {"sql": "SELECT i FROM range(100000000000) t(i) WHERE i % 7 = 3"}
        )
    finally:
        server.close()
    data = plain.structured_content
    assert data is not None
    assert (data["row_count"], data["truncated"], data["total_rows"]) == (10, True, 100)
    assert "10 of 100 rows" in data["notice"] and "aggregate" in data["notice"]
    data = filtered.structured_content
    assert data is not None
    assert (data["row_count"], data["truncated"], data["total_rows"]) == (10, True, 95)
    assert "10 of 95 rows" in data["notice"] and data["notice"] in text(filtered)
    data = endless.structured_content
    assert data is not None
    assert (data["row_count"], data["truncated"], data["total_rows"]) == (10, True, None)
    assert "10 of more than 10 rows" in data["notice"]


async def test_no_result_exceeds_the_byte_budget(server: AstroServer) -> None:
    wide = await call(
        server, "run_sql", {"sql": "SELECT i, repeat('x', 1500) AS filler FROM range(5000) t(i)"}
    )
    data = wide.structured_content
    assert data is not None
    assert data["truncated"] is True and data["total_rows"] == 5000
    assert 0 < data["row_count"] < 40 and data["rows"][-1][0] == data["row_count"] - 1
    assert "result budget" in data["notice"]
    assert wire_size(wide) <= RESULT_BYTES + 1_000  # the envelope: content type, field names
    huge = await call(server, "run_sql", {"sql": "SELECT repeat('y', 200000) AS v"})
    data = huge.structured_content
    assert data is not None
    assert data["rows"][0][0] == "y" * CELL_CHARS + "…" and "longer than" in data["notice"]
    assert wire_size(huge) <= RESULT_BYTES + 1_000


async def test_cell_text_is_inert(server: AstroServer) -> None:
    sql = "SELECT chr(27) || ']52;c;cHduZWQ=' || chr(7) AS \"b\x1bad\", 'abc' || chr(8238) || 'def' AS bidi"
    result = await call(server, "run_sql", {"sql": sql})
    data = result.structured_content
    assert data is not None
    wire = json.dumps(data, ensure_ascii=False) + text(result)
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in wire
    assert data["rows"] == [["\\x1b]52;c;cHduZWQ=\\x07", "abc\\u202edef"]]
    assert data["columns"][0]["name"] == "b\\x1bad"


async def test_every_type_becomes_exact_inert_json(server: AstroServer) -> None:
    sql = (
        "SELECT 1.50::DECIMAL(10,2) AS d, DATE '2024-02-29' AS day, TIMESTAMP '2024-01-02 03:04:05' AS ts,"
        " 'nan'::DOUBLE AS nan, 2.5::DOUBLE AS x, [chr(27) || 'a', 'b'] AS list,"
        " {'k': chr(7) || 'v'} AS struct, '\\xDE\\xAD'::BLOB AS blob, NULL AS nothing"
    )
    result = await call(server, "run_sql", {"sql": sql})
    data = result.structured_content
    assert data is not None, text(result)
    assert data["rows"] == [
        [
            "1.50",
            "2024-02-29",
            "2024-01-02 03:04:05",
            "nan",
            2.5,
            ["\\x1ba", "b"],
            {"k": "\\x07v"},
            "dead",
            None,
        ]
    ]


def test_text_results_keep_to_the_budget() -> None:
    long = ("line of the catalog \x1b[2J\n" * 10_000).strip()
    cut = text_result(long)
    assert len(cut.encode()) <= RESULT_BYTES and cut.endswith(f"(cut at {RESULT_BYTES:,} bytes)")
    assert "\x1b" not in cut and "\\x1b[2J" in cut


async def test_text_tools(server: AstroServer) -> None:
    listing = await call(server, "shell", {"command": "ls -l /sales"})
    assert not listing.is_error and "orders.table" in text(listing) and listing.structured_content is None
    card = await call(
        server, "show_table", {"table_names": "sales.orders"}
    )  # a bare string, as weak clients send
    assert not card.is_error and "id" in text(card) and "sample rows" in text(card)
    found = await call(server, "search_metadata", {"queries": ["order amount"], "keywords": ["north"]})
    assert not found.is_error and "sales.orders" in text(found)
    notes = await call(server, "read_context", {})
    assert not notes.is_error and text(notes)


async def test_submit_result_renders_from_queries_with_their_sql(server: AstroServer) -> None:
    result = await call(
        server,
        "submit_result",
        {
            "inputs": {
                "n": "SELECT count(*) FROM sales.orders",
                "top": "SELECT id FROM sales.orders ORDER BY amount DESC LIMIT 2",
            },
            "template": "{{ n.value | number }} orders; the largest are "
            "{% for r in top.rows %}{{ r.id }} {% endfor %}and 7 more.",
            "title": "Orders",
        },
    )
    assert not result.is_error, text(result)
    data = result.structured_content
    assert data is not None
    assert data["text"] == "100 orders; the largest are 100 99 and 7 more."
    assert data["verified"] is False and data["unverified_numbers"] == ["7"]  # one typed number: not verified
    assert data["title"] == "Orders" and data["complete"] is True and data["notice"] is None
    spans = [
        (p["text"], [(s["input"], s["row"], s["column"]) for s in p["sources"]]) for p in data["provenance"]
    ]
    assert spans == [
        ("100", [("n", 0, "count_star()")]),
        ("100", [("top", 0, "id")]),
        ("99", [("top", 1, "id")]),
    ]
    assert all(data["text"][p["start"] : p["end"]] == p["text"] for p in data["provenance"])
    inputs = {i["name"]: i["result"] for i in data["inputs"]}
    assert inputs["n"]["rows"] == [[100]] and inputs["top"]["rows"] == [[100], [99]]
    assert "count" in inputs["n"]["sql"]
    assert text(result).startswith("Orders\n\n100 orders") and "SQL as executed" in text(result)


async def test_a_long_answer_keeps_to_the_budget_and_a_cut_input_makes_it_incomplete(
    server: AstroServer, strict: Session
) -> None:
    many = await call(
        server,
        "submit_result",
        {
            "inputs": {"t": "SELECT i FROM range(3000) t(i)"},
            "template": "{% for r in t.rows %}{{ r.i }} {% endfor %}",
        },
    )
    data = many.structured_content
    assert data is not None, text(many)
    assert 0 < len(data["provenance"]) < 3000 and "more values left out" in data["notice"]
    assert data["complete"] is True and wire_size(many) <= RESULT_BYTES + 1_000
    cut_server = AstroServer(strict)
    try:
        cut = await call(
            cut_server,
            "submit_result",
            {
                "inputs": {"t": "SELECT id FROM sales.orders"},
                "template": "{% for r in t.rows %}{{ r.id }} {% endfor %}",
            },
        )
    finally:
        cut_server.close()
    data = cut.structured_content
    assert data is not None, text(cut)
    assert data["complete"] is False and "Not complete" in data["notice"]
    assert data["inputs"][0]["result"]["truncated"] is True


# bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("drop_everything", {}, "unknown tool 'drop_everything'; the tools are: "),
        ("run_sql", {}, "run_sql: missing required argument: sql. Call it as run_sql(sql)."),
        ("run_sql", {"sql": 42}, "run_sql: 'sql': Input should be a valid string"),
        (
            "run_sql",
            {"sql": "DROP TABLE sales.orders"},
            "run_sql: refused: DROP is not a read-only statement",
        ),
        ("run_sql", {"sql": "SELECT 1; SELECT 2"}, "run_sql: refused: "),
        (
            "run_sql",
            {"sql": "SELECT carier FROM sales.orders"},
            'run_sql: Binder Error: Referenced column "carier"',
        ),
        ("show_table", {"table_names": ["nope"]}, "show_table: no table 'nope'"),
        (
            "submit_result",
            {"inputs": {"n": "SELECT 1"}, "template": "{{ n.nope.deeper }}"},
            "submit_result: ",
        ),
        ("submit_result", {"inputs": {}, "template": "x"}, "submit_result: give at least one input query"),
        ("shell", {"command": "rm -rf /"}, "rm: "),
    ],
)
async def test_bad_calls_are_one_line_tool_errors_and_the_server_goes_on(
    server: AstroServer, name: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(server) as client:
        failed = await client.call_tool(name, arguments)
        after = await client.call_tool("run_sql", {"sql": "SELECT 6 * 7 AS answer"})
    if name == "shell":  # a shell's error is its output, as in a terminal
        assert expected in text(failed)
    else:
        assert one_line_error(failed).startswith(expected), text(failed)
    assert after.structured_content is not None and after.structured_content["rows"] == [[42]]


async def test_the_hostile_corpus_is_refused_over_mcp_and_nothing_changes(
    watched: tuple[Path, Path], server: AstroServer
) -> None:
    root, path = watched
    before = snapshot(root)
    accepted = []
    async with Client(server) as client:
        for item in CORPUS:
            result = await client.call_tool("run_sql", {"sql": render(item["sql"], root, path)})
            reason = text(result).removeprefix("run_sql: ")
            if not result.is_error or "\n" in reason or not reason.startswith(REASON_PREFIXES):
                accepted.append((item["sql"], text(result)))
        count = await client.call_tool("run_sql", {"sql": "SELECT count(*), sum(amount) FROM sales.orders"})
    assert accepted == []
    assert count.structured_content is not None and count.structured_content["rows"] == [[100, "5050.00"]]
    assert snapshot(root) == before


# limits, concurrency, cancel -----------------------------------------------------------------------------


async def test_a_runaway_is_stopped_by_the_time_limit_and_the_server_stays_usable(strict: Session) -> None:
    server = AstroServer(strict)
    try:
        async with Client(server) as client:
            stopped = await client.call_tool("run_sql", {"sql": CROSS_JOIN})
            after = await client.call_tool("run_sql", {"sql": "SELECT 1 AS ok"})
    finally:
        server.close()
    assert "time limit" in one_line_error(stopped)
    assert after.structured_content is not None and after.structured_content["rows"] == [[1]]


async def test_a_cancelled_call_stops_its_query_on_the_server(server: AstroServer) -> None:
    async with Client(server) as client, anyio.create_task_group() as group:
        group.start_soon(client.call_tool, "run_sql", {"sql": CROSS_JOIN})
        await wait_for_async(lambda: server.calls.running == 1, what="the runaway to run")
        group.cancel_scope.cancel()
    # the limit is 600 s: only the cancel can have ended it within the wait's guard
    await wait_for_async(lambda: server.calls.running == 0, what="the runaway to stop")
    after = await call(server, "run_sql", {"sql": "SELECT 2 AS ok"})
    assert after.structured_content is not None and after.structured_content["rows"] == [[2]]
    server.conversations.close()
    record = json.loads(_turn_lines(server)[0])
    assert record["status"] == "cancelled" and CROSS_JOIN.splitlines()[0][3:] in record["question"]


async def test_eight_calls_at_once_all_answer_with_a_bounded_number_running(server: AstroServer) -> None:
    results: dict[int, CallToolResult] = {}
    async with Client(server) as client:

        async def one(i: int) -> None:
            results[i] = await client.call_tool(
                "run_sql", {"sql": f"SELECT {i} AS i, count(*) AS n FROM range(3000000) a, range(3) b"}
            )

        async with anyio.create_task_group() as group:
            for i in range(8):
                group.start_soon(one, i)
    assert sorted(results) == list(range(8))
    for i, result in results.items():
        assert result.structured_content is not None, text(result)
        assert result.structured_content["rows"] == [[i, 9000000]]
    assert 2 <= server.calls.peak <= MAX_RUNNING


# the saved conversation ------------------------------------------------------------------------------------


def _turn_lines(server: AstroServer) -> list[str]:
    (conversation_id,) = server.conversations.conversation_ids()
    path = server.session.state_dir / "conversations" / f"{conversation_id}.jsonl"
    return [line for line in path.read_text().splitlines() if '"type":"turn"' in line]


async def test_every_call_is_saved_as_a_conversation_the_app_can_resume(server: AstroServer) -> None:
    async with Client(server) as client:
        await client.call_tool("shell", {"command": "ls /"})
        await client.call_tool("run_sql", {"sql": "-- how many\nSELECT count(*) AS n FROM sales.orders"})
        await client.call_tool("run_sql", {"sql": "DELETE FROM sales.orders"})
    server.conversations.close()
    (conversation_id,) = server.conversations.conversation_ids()
    session = server.session
    listed = {c.id: c for c in session.conversations()}
    assert listed[conversation_id].turns == 3 and listed[conversation_id].title == 'MCP shell: command="ls /"'
    header, turns = load_conversation(session.state_dir, conversation_id)
    assert header["model"] == "MCP client mcp" and header["db_label"] == session.label
    assert [t.status for t in turns] == ["text", "text", "error"]
    ran = turns[1].entries[-1].message["content"]
    assert (
        "SQL as executed" in ran
        and "count(*) AS n FROM sales.orders" in ran
        and "1 row × 1 column (n)" in ran
    )
    assert "refused: DELETE" in turns[2].entries[-1].message["content"]
    with Session.over(session.database(), Settings(), state_dir=session.state_dir) as resumed:
        resumed.catalog = session.catalog
        assert len(resumed.resume(conversation_id)) == 3
        agent = resumed.agent
        assert agent is not None
        assert agent.messages()[-1]["content"] == turns[2].entries[-1].message["content"]


def test_a_long_running_server_keeps_only_the_last_sessions_in_memory(opened: Session) -> None:
    conversations = Conversations(opened)
    try:
        for n in range(MAX_SESSIONS + 5):
            conversations.add(f"s{n}", "mcp", CallRecord("shell", {"command": "ls /"}, outcome="ok"))
        conversations.add("s0", "mcp", CallRecord("shell", {"command": "pwd"}, outcome="/"))
    finally:
        conversations.close()
    assert len(conversations._open) == MAX_SESSIONS and "s0" in conversations._open
    first, again = conversations.conversation_ids("s0")
    listed = {c.id: c.turns for c in opened.conversations()}
    assert listed[first] == 1 and listed[again] == 1
    assert all(len(conversations.conversation_ids(f"s{n}")) == 1 for n in range(1, MAX_SESSIONS + 5))


async def test_the_app_resumes_an_mcp_session_and_shows_what_ran(
    shop_db: Path, fake_openai: FakeOpenAI
) -> None:
    session = Session([str(shop_db)], Settings(), state_dir=state_dir()).open()
    server = AstroServer(session)
    try:
        async with Client(server) as client:
            await client.call_tool(
                "run_sql", {"sql": "-- every order\nSELECT count(*) AS orders FROM sales.orders"}
            )
            await client.call_tool("run_sql", {"sql": "UPDATE sales.orders SET amount = 0"})
    finally:
        server.close()
        session.close()
    app = make_app(shop_db, fake_openai.settings())
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/resume")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await pilot.press("enter")
        await wait_until(pilot, lambda: "resumed conversation" in log_text(app))
        shown = log_text(app)
    assert "MCP run_sql: -- every order SELECT count(*) AS orders FROM sales.orders" in shown
    assert "SQL as executed" in shown and "1 row × 1 column (orders)" in shown
    assert "run_sql: refused: UPDATE" in shown
    assert fake_openai.chat_requests == []  # resuming asks the model nothing

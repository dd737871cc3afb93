"""The agent loop through the fake OpenAI-compatible server and a real DuckDB file."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from astro_tui.agent import loop as loop_module
from astro_tui.agent.conversations import list_conversations, load_conversation
from astro_tui.agent.events import (
    AgentEvent,
    Answer,
    Done,
    ErrorEvent,
    Notice,
    Reasked,
    ReasoningDelta,
    RetryEvent,
    TextDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallSkipped,
    ToolCallStarted,
    ToolResult,
    UsageEvent,
)
from astro_tui.agent.loop import Agent
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.llm import ReasoningDelta as LLMReasoningDelta
from astro_tui.llm import TextDelta as LLMTextDelta
from tests.support.agent import build_shop
from tests.support.fake_openai import (
    FakeOpenAI,
    cut,
    error,
    no_tools_error,
    reasoning_reply,
    stall,
    text_reply,
    text_tool_call_reply,
    think_reply,
    tool_call_reply,
)
from tests.support.waiting import HANG_GUARD_S, wait_for_async

BY_REGION = "-- orders by region\nSELECT region, count(*) AS n FROM sales.orders GROUP BY 1 ORDER BY 1"
TOTAL = "SELECT sum(amount) AS revenue FROM sales.orders"
SLOW = "SELECT count(*) FROM range(10000000000) a, range(10) b"


@pytest.fixture
def shop_db(tmp_path: Path) -> Iterator[Database]:
    db = Database.open([str(build_shop(tmp_path / "shop.duckdb"))], Settings())
    yield db
    db.close()


def make_agent(fake: FakeOpenAI, db: Database, state: Path, **overrides: Any) -> Agent:
    settings = fake.settings(**overrides)
    return Agent(db, load_catalog(db), settings, state_dir=state)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def agent(fake_openai: FakeOpenAI, shop_db: Database, state: Path) -> Iterator[Agent]:
    yield make_agent(fake_openai, shop_db, state)


async def collect(agent: Agent, question: str) -> list[AgentEvent]:
    return [event async for event in agent.run(question)]


def of(events: list[AgentEvent], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def assert_consistent(messages: list[dict[str, Any]]) -> None:
    """Every tool call is answered by a tool message before anything else is said."""
    pending: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in pending, message
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"unanswered tool calls {pending} before {message}"
        if role == "assistant" and message.get("tool_calls"):
            pending = {c["id"] for c in message["tool_calls"]}
            for call in message["tool_calls"]:
                json.loads(call["function"]["arguments"])
    assert not pending


def submit(template: str = "Revenue was {{ rev.value | money }}.", sql: str = TOTAL) -> Any:
    return tool_call_reply([("submit_result", {"inputs": {"rev": sql}, "template": template})])


async def test_text_only_reply_is_an_unverified_answer(
    agent: Agent, fake_openai: FakeOpenAI, state: Path
) -> None:
    fake_openai.script(text_reply("I think about 12 orders."))
    events = await collect(agent, "how many orders?")
    assert "".join(e.text for e in of(events, TextDelta)) == "I think about 12 orders."
    answer = of(events, Answer)[0]
    assert (answer.kind, answer.verified, answer.text) == ("unverified", False, "I think about 12 orders.")
    assert answer.unverified_numbers == ("12",)
    assert events[-1] == Done("text", 0, of(events, UsageEvent)[0], 1)
    request = fake_openai.chat_requests[0].body
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][1] == {"role": "user", "content": "how many orders?"}
    assert {t["function"]["name"] for t in request["tools"]} >= {"run_sql", "submit_result"}
    saved = list_conversations(state, agent.db.key)
    assert [c.id for c in saved] == [agent.conversation_id] and saved[0].title == "how many orders?"


async def test_tool_rounds_then_submit_result(
    agent: Agent, fake_openai: FakeOpenAI, shop_db: Database
) -> None:
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": BY_REGION})], text="Let me look."),
        submit(),
    )
    events = await collect(agent, "total revenue?")
    kinds = [
        type(e).__name__ for e in events if not isinstance(e, TextDelta | UsageEvent | ToolCallArguments)
    ]
    assert kinds == [
        "ToolCallStarted",
        "ToolCallFinished",
        "ToolResult",
        "ToolCallStarted",
        "ToolCallFinished",
        "ToolResult",
        "Answer",
        "Done",
    ]
    finished = of(events, ToolCallFinished)[0]
    assert finished.summary == "-- orders by region" and finished.arguments == {"sql": BY_REGION}
    first = of(events, ToolResult)[0]
    assert (
        first.ok and first.result_name == "df_1" and first.result is not None and first.result.row_count == 3
    )
    answer = of(events, Answer)[0]
    expected = shop_db.execute(TOTAL).table.column(0)[0].as_py()
    assert answer.text == f"Revenue was ${expected:,.2f}." and answer.verified and answer.kind == "result"
    assert answer.sql == [TOTAL]
    assert events[-1].reason == "answer" and events[-1].tool_calls == 2 and events[-1].completions == 2
    second = fake_openai.chat_requests[1].body["messages"]
    assert second[2]["role"] == "assistant" and second[2]["content"] == "Let me look."
    assert second[3]["role"] == "tool" and second[3]["content"].startswith("df_1: 3 rows × 2 columns")
    assert [e.name for e in agent.workspace.entries()] == ["df_1"]
    assert_consistent(agent.messages()[1:])


async def test_invalid_json_arguments_are_reported_and_the_loop_goes_on(
    agent: Agent, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(tool_call_reply([("run_sql", '{"sql": "SELECT 1"')]), submit())
    events = await collect(agent, "q")
    bad = of(events, ToolResult)[0]
    assert not bad.ok and "not valid JSON" in bad.content
    assert of(events, ToolCallFinished)[0].arguments is None
    replayed = fake_openai.chat_requests[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert replayed == "{}"
    assert events[-1].reason == "answer"


async def test_unknown_tool_and_bad_arguments_are_tool_results(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        tool_call_reply(
            [("execute_python", {"code": "1+1"}), ("run_sql", {"query": "SELECT 1"})], style="ollama"
        ),
        submit(),
    )
    events = await collect(agent, "q")
    results = of(events, ToolResult)
    assert "unknown tool 'execute_python'" in results[0].content
    assert (
        "missing required argument: sql" in results[1].content
        and "unknown argument: query" in results[1].content
    )
    assert events[-1].reason == "answer"
    assert_consistent(agent.messages()[1:])


async def test_output_tool_errors_go_back_and_the_loop_goes_on(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(submit("{{ revenue.value }}"), submit())
    events = await collect(agent, "q")
    assert not of(events, ToolResult)[0].ok and "'revenue' is undefined" in of(events, ToolResult)[0].content
    assert len(of(events, Answer)) == 1 and events[-1].reason == "answer"


async def test_calls_after_an_answer_are_not_run(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        tool_call_reply(
            [
                ("submit_result", {"inputs": {"rev": TOTAL}, "template": "{{ rev.value }}"}),
                ("run_sql", {"sql": "SELECT 1"}),
            ]
        )
    )
    events = await collect(agent, "q")
    assert len(of(events, ToolCallFinished)) == 1 and events[-1].tool_calls == 1
    skipped = of(events, ToolCallSkipped)
    assert [(s.name, s.reason) for s in skipped] == [
        ("run_sql", "not run: the turn already ended with an answer")
    ]
    assert skipped[0].call_id == of(events, ToolCallStarted)[1].call_id  # the block that streamed
    messages = agent.messages()
    assert any(m.get("content") == "not run: the turn already ended with an answer" for m in messages)
    assert_consistent(messages[1:])


async def test_tool_call_limit(fake_openai: FakeOpenAI, shop_db: Database, state: Path) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_tool_calls=3)
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": "SELECT 1"}), ("run_sql", {"sql": "SELECT 2"})]),
        tool_call_reply([("run_sql", {"sql": "SELECT 3"}), ("run_sql", {"sql": "SELECT 4"})]),
    )
    events = await collect(agent, "q")
    errors = of(events, ErrorEvent)
    assert errors and errors[0].kind == "limit" and "max_tool_calls = 3" in errors[0].message
    assert events[-1].reason == "limit" and events[-1].tool_calls == 3
    contents = [m.get("content") or "" for m in fake_openai.chat_requests[1].body["messages"]]
    assert any("1 tool call left in this turn" in c for c in contents)
    assert_consistent(agent.messages()[1:])
    assert agent.turns[-1].status == "limit"


async def test_completion_limit(fake_openai: FakeOpenAI, shop_db: Database, state: Path) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_completions=2)
    fake_openai.script(*[tool_call_reply([("read_context", {})]) for _ in range(2)])
    events = await collect(agent, "q")
    assert events[-1].reason == "limit" and events[-1].completions == 2
    assert "max_completions = 2" in of(events, ErrorEvent)[0].message
    fake_openai.assert_script_consumed()


async def test_server_error_ends_the_turn_with_a_clear_message(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(500, "the GPU caught fire"))
    events = await collect(agent, "q")
    assert (
        of(events, ErrorEvent)[0].kind == "server" and "GPU caught fire" in of(events, ErrorEvent)[0].message
    )
    assert events[-1].reason == "error"
    assert agent.turns[-1].status == "error"


async def test_retry_is_announced_while_waiting(
    fake_openai: FakeOpenAI, shop_db: Database, state: Path
) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_retries=1)
    fake_openai.script(error(429, "slow down", retry_after=0.05), text_reply("ok"))
    events = await collect(agent, "q")
    retry = of(events, RetryEvent)
    assert retry and "retrying" in retry[0].message
    assert events.index(retry[0]) < events.index(of(events, Answer)[0])


async def test_a_truncated_stream_is_reported(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(cut(text_reply("half an ans"), abrupt=False))
    events = await collect(agent, "q")
    assert of(events, ErrorEvent)[0].kind == "truncated" and events[-1].reason == "error"


async def test_a_reply_cut_by_the_length_limit_is_flagged(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("The answer is", finish_reason="length"))
    events = await collect(agent, "q")
    assert of(events, Answer)[0].text == "The answer is"
    assert of(events, ErrorEvent)[0].kind == "warning" and events[-1].reason == "text"


async def test_reasoning_is_separate_from_text(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(reasoning_reply("thinking hard", "the answer"))
    events = await collect(agent, "q")
    assert "".join(e.text for e in of(events, ReasoningDelta)) == "thinking hard"
    assert of(events, Answer)[0].text == "the answer"


async def test_turn_deadline(fake_openai: FakeOpenAI, shop_db: Database, state: Path) -> None:
    agent = make_agent(fake_openai, shop_db, state)
    fake_openai.script(text_reply("warm"), stall(text_reply("never fin"), seconds=HANG_GUARD_S))
    await collect(agent, "warm up")  # the SDK's first request looks up the platform in a thread
    agent.settings = dataclasses.replace(agent.settings, turn_deadline_s=0.5)
    started = time.monotonic()
    events = await collect(agent, "q")
    assert time.monotonic() - started < HANG_GUARD_S / 2, "the turn waited for the stalled stream"
    assert of(events, ErrorEvent)[0].kind == "timeout" and events[-1].reason == "limit"
    assert fake_openai.wait_for_disconnect()


async def test_no_model_configured(shop_db: Database, state: Path) -> None:
    agent = Agent(shop_db, load_catalog(shop_db), Settings(), state_dir=state)
    events = await collect(agent, "q")
    assert of(events, ErrorEvent)[0].kind == "config" and events[-1].reason == "error"


async def test_cancel_mid_stream_closes_the_stream_and_keeps_history_consistent(
    agent: Agent, fake_openai: FakeOpenAI, state: Path
) -> None:
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": BY_REGION})]),
        stall(text_reply("I am still typ"), seconds=30),
    )
    got_text = asyncio.Event()
    seen: list[AgentEvent] = []

    async def consume() -> None:
        async for event in agent.run("q1"):
            seen.append(event)
            if isinstance(event, TextDelta):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), HANG_GUARD_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fake_openai.wait_for_disconnect()
    assert not of(seen, Done)
    assert agent.turns[-1].status == "cancelled"
    assert_consistent(agent.messages()[1:])
    _, saved = load_conversation(state, agent.conversation_id)
    assert saved[-1].status == "cancelled"

    fake_openai.script(text_reply("fine"))
    events = await collect(agent, "q2")
    assert events[-1].reason == "text"
    last = fake_openai.chat_requests[-1].body["messages"]
    assert_consistent(last[1:])
    assert any("cancelled" in (m.get("content") or "") for m in last if m["role"] == "assistant")


async def test_cancel_mid_query_interrupts_it(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(tool_call_reply([("run_sql", {"sql": SLOW})]))
    started = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run("slow"):
            if isinstance(event, ToolCallFinished):
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), HANG_GUARD_S)
    token = agent._ctx.cancel
    await wait_for_async(lambda: token.running, what="run_sql to start its query")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert token.cancelled
    # SLOW alone would run for hours: ending within the guard proves the interrupt.
    await wait_for_async(lambda: not token.running, what="the query to stop after the turn was cancelled")
    assert agent.turns[-1].status == "cancelled"
    assert_consistent(agent.messages()[1:])


async def test_aclose_is_a_cancellation_too(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(stall(text_reply("partial"), seconds=30))
    stream = agent.run("q")
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    assert agent.turns[-1].status == "cancelled"
    assert fake_openai.wait_for_disconnect()


async def test_follow_up_sees_earlier_turns_summarised(
    agent: Agent, fake_openai: FakeOpenAI, shop_db: Database, state: Path
) -> None:
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": BY_REGION})]),
        submit(),
        tool_call_reply([("run_sql", {"sql": "SELECT 1 AS one"})]),
        text_reply("done"),
    )
    await collect(agent, "revenue?")
    await collect(agent, "and per region?")
    follow_up = fake_openai.chat_requests[2].body["messages"]
    assert [m["role"] for m in follow_up[:2]] == ["system", "user"]
    tool_contents = [m["content"] for m in follow_up if m["role"] == "tool"]
    assert tool_contents[0] == "df_1: 3 rows × 2 columns (region, n)"
    assert tool_contents[1].startswith("Shown to the person:")
    assert follow_up[-1] == {"role": "user", "content": "and per region?"}
    assert follow_up[0] == fake_openai.chat_requests[0].body["messages"][0]
    assert [e.name for e in agent.workspace.entries()] == ["df_1", "df_2"]

    resumed = Agent(shop_db, agent.catalog, agent.settings, state_dir=state, client=None)
    resumed.resume(agent.conversation_id)
    assert resumed.messages()[1:] == agent.messages()[1:]
    assert resumed.workspace.next_index == 3
    assert [t.status for t in resumed.turns] == ["answer", "text"]
    fake_openai.script(tool_call_reply([("run_sql", {"sql": "SELECT 2"})]), text_reply("ok"))
    events = await collect(resumed, "third")
    assert of(events, ToolResult)[0].result_name == "df_3"
    assert_consistent(resumed.messages()[1:])
    ids = [c["id"] for m in resumed.messages() for c in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids))


async def test_new_conversation_forgets(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(tool_call_reply([("run_sql", {"sql": "SELECT 1"})]), text_reply("a"), text_reply("b"))
    await collect(agent, "one")
    first_id = agent.conversation_id
    agent.new_conversation()
    assert agent.conversation_id != first_id and len(agent.workspace) == 0 and agent.turns == []
    await collect(agent, "two")
    assert [m["role"] for m in fake_openai.chat_requests[-1].body["messages"]] == ["system", "user"]


async def test_the_api_key_is_never_stored(fake_openai: FakeOpenAI, shop_db: Database, state: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    agent = make_agent(fake_openai, shop_db, state, api_key=secret)
    fake_openai.script(error(401, f"bad key {secret}"))
    events = await collect(agent, "q")
    assert secret not in of(events, ErrorEvent)[0].message
    for path in state.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8")


@pytest.fixture
def slow_db(tmp_path: Path) -> Iterator[Database]:
    """The shop plus a view whose every read takes minutes (an aggregate over 10^11 rows)."""
    path = build_shop(tmp_path / "slow.duckdb")
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE VIEW main.slow AS SELECT CAST(count(*) AS VARCHAR) AS name "
        "FROM range(10000000000) a, range(10) b"
    )
    con.close()
    db = Database.open([str(path)], Settings())
    yield db
    db.close()


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("show_table", {"table_names": ["main.slow"]}),
        ("shell", {"command": "sample /main/slow.view"}),
        ("shell", {"command": "sample -c name /main/slow.view"}),
        ("search_metadata", {"queries": [], "keywords": ["Berlin"]}),
    ],
)
async def test_cancel_reaches_the_queries_of_every_tool(
    fake_openai: FakeOpenAI, slow_db: Database, state: Path, tool: str, arguments: dict[str, Any]
) -> None:
    agent = make_agent(fake_openai, slow_db, state)
    fake_openai.script(tool_call_reply([(tool, arguments)]))
    started = asyncio.Event()

    async def consume() -> None:
        async for event in agent.run("slow"):
            if isinstance(event, ToolCallFinished):
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), HANG_GUARD_S)
    token = agent._ctx.cancel
    # A first import (pandas, for a sample) can take seconds on a loaded machine.
    await wait_for_async(lambda: token.running, what=f"{tool} to run its query under the turn's cancel token")
    # No pause for the statement to start: an interrupt that lands first is repeated
    # until it takes (`_Running.stop`), and cancelling at once tests exactly that.
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for_async(lambda: not token.running, what="the query to stop after the turn was cancelled")


async def test_the_conversation_is_written_off_the_event_loop(
    agent: Agent, fake_openai: FakeOpenAI, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writers: list[threading.Thread] = []
    original = loop_module.atomic_write_text

    def recording(path: Path, text: str) -> None:
        writers.append(threading.current_thread())
        original(path, text)

    monkeypatch.setattr(loop_module, "atomic_write_text", recording)
    fake_openai.script(text_reply("one"), stall(text_reply("partial"), seconds=30))
    await collect(agent, "first")
    assert writers and threading.main_thread() not in writers
    _, saved = load_conversation(state, agent.conversation_id)
    assert [t.status for t in saved] == ["text"]
    stream = agent.run("second")  # cancelled: written before the cancellation goes on
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    _, saved = load_conversation(state, agent.conversation_id)
    assert [t.status for t in saved] == ["text", "cancelled"]


async def test_tokens_are_passed_on_as_the_client_made_them(agent: Agent, fake_openai: FakeOpenAI) -> None:
    assert TextDelta is LLMTextDelta and ReasoningDelta is LLMReasoningDelta
    fake_openai.script(reasoning_reply("hmm", "the answer is 3"))
    events = await collect(agent, "q")
    assert of(events, ReasoningDelta) and of(events, TextDelta)


async def test_run_refuses_a_second_turn_while_one_runs(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(stall(text_reply("partial"), seconds=30))
    first = agent.run("one")
    await anext(first)
    with pytest.raises(RuntimeError, match="a turn is running"):
        await anext(agent.run("two"))
    await first.aclose()


async def test_one_deadline_timer_per_model_reply_not_per_token(
    agent: Agent, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    timers: list[float] = []
    original = asyncio.timeout_at

    def counting(when: float | None) -> asyncio.Timeout:
        timers.append(when or 0.0)
        return original(when)

    monkeypatch.setattr(asyncio, "timeout_at", counting)
    fake_openai.script(text_reply("x" * 400, chunk_size=1))
    events = await collect(agent, "q")
    assert len(of(events, TextDelta)) == 400 and events[-1].reason == "text"
    assert len(timers) == 1


# --------------------------------------------------------------------------- real servers' ways


async def test_a_tool_call_shows_while_the_model_is_still_writing_it(
    agent: Agent, fake_openai: FakeOpenAI
) -> None:
    """Started on its name, arguments as they stream: the reply never finishes here (a stall),
    yet the whole SQL has reached the consumer."""
    fake_openai.script(stall(tool_call_reply([("run_sql", {"sql": BY_REGION})], chunk_size=5), seconds=30))
    seen: list[AgentEvent] = []
    written = ""
    async with contextlib.aclosing(agent.run("orders by region?")) as events:
        async for event in events:
            seen.append(event)
            if isinstance(event, ToolCallArguments):
                written += event.text
                if written.endswith("}") and json.loads(written) == {"sql": BY_REGION}:
                    break
    started = of(seen, ToolCallStarted)
    assert [s.name for s in started] == ["run_sql"]
    assert len(of(seen, ToolCallArguments)) > 10 and not of(seen, ToolCallFinished)
    assert {e.call_id for e in of(seen, ToolCallArguments)} == {started[0].call_id}


async def test_the_streamed_call_is_the_one_that_runs(agent: Agent, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(tool_call_reply([("run_sql", {"sql": "SELECT 1"})], style="vllm"), submit())
    events = await collect(agent, "q")
    first = of(events, ToolCallStarted)[0]
    assert events.index(first) < events.index(of(events, UsageEvent)[0])  # before the reply ended
    assert of(events, ToolCallFinished)[0].call_id == first.call_id == of(events, ToolResult)[0].call_id
    assert "".join(a.text for a in of(events, ToolCallArguments) if a.call_id == first.call_id) == (
        '{"sql": "SELECT 1"}'
    )


async def test_a_plain_text_reply_is_asked_once_for_a_tool_answer(
    fake_openai: FakeOpenAI, shop_db: Database, state: Path
) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_reasks=Settings().max_reasks)
    fake_openai.script(text_reply("Revenue is about 5,000."), submit())
    events = await collect(agent, "total revenue?")
    assert len(of(events, Reasked)) == 1
    answer = of(events, Answer)[0]
    assert answer.verified and answer.kind == "result"
    asked = fake_openai.chat_requests[1].body["messages"]
    assert asked[-2] == {"role": "assistant", "content": "Revenue is about 5,000."}
    assert asked[-1] == {"role": "user", "content": loop_module.REASK_INSTRUCTION}
    assert events[-1].reason == "answer" and events[-1].completions == 2
    assert_consistent(agent.messages()[1:])


async def test_a_second_plain_text_reply_stands_as_unverified(
    fake_openai: FakeOpenAI, shop_db: Database, state: Path
) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_reasks=1)
    fake_openai.script(text_reply("About 5,000."), text_reply("I cannot say more than about 5,000."))
    events = await collect(agent, "total revenue?")
    assert len(of(events, Reasked)) == 1
    answer = of(events, Answer)[0]
    assert (answer.kind, answer.text) == ("unverified", "I cannot say more than about 5,000.")
    assert events[-1].reason == "text" and events[-1].completions == 2
    fake_openai.assert_script_consumed()


async def test_asking_again_counts_in_the_turns_limits(
    fake_openai: FakeOpenAI, shop_db: Database, state: Path
) -> None:
    agent = make_agent(fake_openai, shop_db, state, max_reasks=1, max_completions=1)
    fake_openai.script(text_reply("About 5,000."))
    events = await collect(agent, "total revenue?")
    assert not of(events, Reasked) and of(events, Answer)[0].kind == "unverified"
    assert len(fake_openai.chat_requests) == 1


@pytest.mark.parametrize("opened", [True, False])
async def test_think_tags_in_the_content_are_reasoning(
    agent: Agent, fake_openai: FakeOpenAI, opened: bool
) -> None:
    fake_openai.script(think_reply("First, the orders table.", "Not something I can count.", opened=opened))
    events = await collect(agent, "q")
    answer = of(events, Answer)[0]
    assert answer.text == "Not something I can count."
    if opened:  # the tag is seen as it streams
        assert "".join(e.text for e in of(events, ReasoningDelta)) == "First, the orders table."
        assert "think>" not in "".join(e.text for e in of(events, TextDelta))
    assert agent.messages()[-1] == {"role": "assistant", "content": "Not something I can count."}


@pytest.mark.parametrize("style", ["hermes", "json", "fenced", "mistral", "list"])
async def test_tool_calls_written_as_text_are_run(agent: Agent, fake_openai: FakeOpenAI, style: str) -> None:
    fake_openai.script(text_tool_call_reply([("run_sql", {"sql": BY_REGION})], style=style), submit())  # type: ignore[arg-type]
    events = await collect(agent, "orders by region?")
    assert "--jinja" in of(events, Notice)[0].message
    result = of(events, ToolResult)[0]
    assert result.ok and result.result is not None and result.result.row_count == 3
    assert of(events, Answer)[0].verified
    assert_consistent(agent.messages()[1:])


@pytest.mark.parametrize(
    "text",
    [
        'Here is the call: {"name": "run_sql", "arguments": {"sql": "SELECT 1"}}',
        '{"name": "drop_everything", "arguments": {}}',
        '{"name": "run_sql", "arguments": {"sql": "SELECT 1"}, "note": "extra"}',
        '<tool_call>{"name": "run_sql", "arguments": {"sql": "SELECT 1"}}</tool_call> and then some',
    ],
)
async def test_text_that_only_looks_like_a_call_stays_text(
    agent: Agent, fake_openai: FakeOpenAI, text: str
) -> None:
    fake_openai.script(text_reply(text))
    events = await collect(agent, "q")
    assert not of(events, Notice) and not of(events, ToolResult)
    assert of(events, Answer)[0].kind == "unverified"


@pytest.mark.parametrize(
    ("server", "fix"),
    [
        ("ollama", "pick one that has"),
        ("vllm", "--enable-auto-tool-choice --tool-call-parser"),
        ("llama.cpp", "start llama-server with --jinja"),
    ],
)
async def test_a_server_without_tool_calling_gets_one_line_naming_the_fix(
    agent: Agent, fake_openai: FakeOpenAI, server: str, fix: str
) -> None:
    fake_openai.script(no_tools_error(server))
    events = await collect(agent, "q")
    error_event = of(events, ErrorEvent)[0]
    assert error_event.kind == "config" and fix in error_event.message
    assert "\n" not in error_event.message and "cannot call tools" in error_event.message
    assert len(fake_openai.chat_requests) == 1  # not retried

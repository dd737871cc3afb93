"""Model-server faults, injected through the fake OpenAI-compatible server.

Every scenario in `FAULTS` runs three ways:

- `astro ask` in-process (`run_ask`), plain and `--json`: one clear message, the right
  exit code, nothing half-printed on stdout, and it returns promptly;
- an `Agent` carrying a conversation (what the app drives): a good turn, then the
  fault, then a retry. The event loop keeps ticking throughout (a heartbeat task
  measures it), the saved JSONL still holds the earlier turn byte for byte, and the
  retry is answered;
- for the 401 (the server echoing the key back), the real `astro ask` in a subprocess:
  exit code and stderr bytes as a person sees them.

A fault either ends the turn with one message ("error"), is absorbed by the loop and
answered ("recovered": the model gets the error as a tool result, or the client waits
as the server asked), or is simply an answer ("answer": a huge reply is printed whole).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from astro_tui.agent.conversations import conversations_dir, load_conversation
from astro_tui.agent.events import AgentEvent, Answer, Done, ErrorEvent, RetryEvent, ToolResult
from astro_tui.agent.loop import Agent
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.headless.ask import run_ask
from astro_tui.llm import ChatClient
from astro_tui.session import Session
from tests.support.fake_openai import (
    FakeOpenAI,
    ScriptItem,
    error,
    text_reply,
    tool_call_reply,
)
from tests.support.security_figures import CLI_FAULTS, FAULTS, HUGE_TEXT, Fault
from tests.support.sql_corpus import build_watched

GOOD_QUESTION = "how many orders are there?"
COUNT_SQL = "SELECT count(*) AS n FROM sales.orders"
MAX_LOOP_GAP_S = 2.0  # a frozen loop, not a slow one: these machines are noisy


SECRET = "sk-fault-test-0123456789abcdef"


def fault(fault_id: str) -> Fault:
    return next(f for f in FAULTS if f.id == fault_id)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = Database.open([str(build_watched(tmp_path_factory.mktemp("faults")))], Settings())
    yield db
    db.close()


@pytest.fixture(scope="module")
def catalog(shop: Database) -> Any:
    return load_catalog(shop)


class Heartbeat:
    """Ticks on the event loop; the longest gap between ticks is how long the loop was blocked."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.max_gap = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.period)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last - self.period)
            last = now

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Heartbeat]:
        self._task = asyncio.create_task(self._beat())
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def one_line(text: str) -> bool:
    return bool(text.strip()) and "\n" not in text and "Traceback" not in text


# --------------------------------------------------------------------------- astro ask, in-process


@pytest.mark.parametrize("case", FAULTS, ids=[f.id for f in FAULTS])
async def test_fault_in_astro_ask(
    case: Fault, shop: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    settings = fake_openai.settings(**case.settings)
    for json_output in (False, True):
        fake_openai.script(*case.script())
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        session = Session.over(shop, settings, state_dir=tmp_path)
        code = await run_ask("q", session, json_output=json_output, out=out, err=err)
        assert time.monotonic() - started < 8, "astro ask did not return promptly"
        assert fake_openai.remaining == case.unused
        fake_openai.clear_script()
        stdout, stderr = out.getvalue(), err.getvalue()
        assert "Traceback" not in stderr
        messages = [line for line in stderr.splitlines() if line.startswith("astro: ")]
        if case.outcome == "error":
            assert code == case.exit_code
            assert len(messages) == 1 and case.expect in messages[0] and one_line(messages[0])
            assert stderr.splitlines()[-1] == messages[0]
            if json_output:
                record = json.loads(stdout)
                assert record["answer"] is None and case.expect in record["error"]
            else:
                assert stdout == ""
        else:
            assert code == 0 and messages == []
            if json_output:
                assert json.loads(stdout)["answer"]
            else:
                assert stdout.strip()
            if case.outcome == "recovered":
                assert case.expect in stderr
            elif not json_output:
                assert case.expect in stdout
            if case.id == "huge-text-reply":
                answer = json.loads(stdout)["answer"] if json_output else stdout
                assert HUGE_TEXT.strip() in answer


# --------------------------------------------------------------------------- an Agent with a conversation


class Switch:
    """The agent's one client: the working server, except during the fault turn.

    Only `connection-refused` needs another address; the others differ in timeouts
    and retries. The agent uses `model`, `stream` and `aclose` of its client.
    """

    def __init__(self, good: ChatClient, faulty: ChatClient) -> None:
        self.good, self.faulty = good, faulty
        self.current = good

    @property
    def model(self) -> str:
        return self.current.model

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.current.stream(*args, **kwargs)

    async def aclose(self) -> None:
        await self.good.aclose()
        await self.faulty.aclose()


def good_turn() -> list[ScriptItem]:
    return [
        tool_call_reply([("run_sql", {"sql": "-- orders\n" + COUNT_SQL})]),
        tool_call_reply(
            [("submit_result", {"inputs": {"n": COUNT_SQL}, "template": "{{ n.value }} orders."})]
        ),
    ]


def saved_lines(state: Path, conversation_id: str) -> list[dict[str, Any]]:
    """Every line of the saved JSONL parses on its own."""
    text = (conversations_dir(state) / f"{conversation_id}.jsonl").read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def turn_records(lines: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [r for r in lines if r.get("index") == index or r.get("turn") == index]


async def collect(agent: Agent, question: str) -> list[AgentEvent]:
    return [event async for event in agent.run(question)]


@pytest.mark.parametrize("case", FAULTS, ids=[f.id for f in FAULTS])
async def test_fault_keeps_the_conversation_and_a_retry_works(
    case: Fault, shop: Database, catalog: Any, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    settings = fake_openai.settings(**case.settings)
    client = Switch(ChatClient(fake_openai.settings()), ChatClient(settings))
    agent = Agent(shop, catalog, settings, state_dir=state, client=client)  # type: ignore[arg-type]
    fake_openai.script(*good_turn(), *case.script())
    for each in (client.good, client.faulty):  # what the app's start-up does off the loop
        await each.prepare()
    async with Heartbeat().running() as heartbeat:
        first = await collect(agent, GOOD_QUESTION)
        assert isinstance(first[-1], Done) and first[-1].reason == "answer"
        before = turn_records(saved_lines(state, agent.conversation_id), 0)

        client.current = client.faulty
        events = await collect(agent, "and the fault?")
        client.current = client.good
        assert fake_openai.remaining == case.unused
        fake_openai.clear_script()

        errors = [e for e in events if isinstance(e, ErrorEvent) and e.kind != "warning"]
        done = events[-1]
        assert isinstance(done, Done)
        if case.outcome == "error":
            assert len(errors) == 1 and case.expect in errors[0].message and one_line(errors[0].message)
            assert done.reason in ("error", "limit")
        else:
            assert errors == [] and done.reason in ("text", "answer")
            assert any(isinstance(e, Answer) for e in events)
        if case.outcome == "recovered":
            notices = [e.content for e in events if isinstance(e, ToolResult) and not e.ok]
            notices += [e.message for e in events if isinstance(e, RetryEvent)]
            assert any(case.expect in n for n in notices), notices

        lines = saved_lines(state, agent.conversation_id)
        assert turn_records(lines, 0) == before, "the earlier turn changed on disk"
        header, turns = load_conversation(state, agent.conversation_id)
        assert header["turns"] == 2 and [t.question for t in turns] == [GOOD_QUESTION, "and the fault?"]
        assert turns[0].status == "answer"

        fake_openai.script(text_reply("Retried: fine now."))
        retry = await collect(agent, "and the fault?")
        assert isinstance(retry[-1], Done) and retry[-1].reason == "text"
    await client.aclose()
    fake_openai.assert_script_consumed()
    sent = fake_openai.chat_requests[-1].body["messages"]
    assert sent[1] == {"role": "user", "content": GOOD_QUESTION}
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        GOOD_QUESTION,
        "and the fault?",
        "and the fault?",
    ]
    _, turns = load_conversation(state, agent.conversation_id)
    assert [t.status for t in turns] == ["answer", turns[1].status, "text"]
    print(f"{case.id}: longest event-loop stall {heartbeat.max_gap * 1000:.0f} ms")
    assert heartbeat.max_gap < MAX_LOOP_GAP_S, f"the event loop was blocked for {heartbeat.max_gap:.2f} s"


# --------------------------------------------------------------------------- the real CLI


def cli_env(home: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASTRO_"))}
    env.update(
        HOME=str(home),
        ASTRO_STATE_DIR=str(home / "state"),
        ASTRO_CONFIG_DIR=str(home / "config"),
        ASTRO_CACHE_DIR=str(home / "cache"),
        OPENAI_BASE_URL=base_url,
        ASTRO_MODEL="fake-model",
        OPENAI_API_KEY=SECRET,
        NO_COLOR="1",
    )
    return env


def test_faults_in_the_real_astro_ask(tmp_path: Path) -> None:
    """Real processes, real stderr bytes: one `astro:` line, retry notices at most, no key, no traceback."""
    db = build_watched(tmp_path / "data")
    with contextlib.ExitStack() as stack:
        runs: list[tuple[Fault, subprocess.Popen[bytes], Path]] = []
        for fault_id in CLI_FAULTS:
            case = fault(fault_id)
            home = tmp_path / fault_id
            (home / "config").mkdir(parents=True)
            if "base_url" in case.settings:
                url = case.settings["base_url"]
            else:
                fake = stack.enter_context(FakeOpenAI())
                items = case.script()
                if fault_id == "http-401":
                    items = [error(401, f"Incorrect API key provided: {SECRET}")]
                fake.script(*items)
                url = fake.base_url
            command = [sys.executable, "-m", "astro_tui.cli", "ask", "how many orders?", str(db)]
            process = subprocess.Popen(
                command, env=cli_env(home, url), stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            runs.append((case, process, home))
        for case, process, home in runs:
            stdout, stderr = process.communicate(timeout=60)
            text = stderr.decode()
            assert process.returncode == case.exit_code, text
            assert stdout == b""
            lines = text.splitlines()
            assert len([line for line in lines if line.startswith("astro: ")]) == 1, text
            assert lines[-1].startswith("astro: ") and case.expect in lines[-1]
            assert all(line.startswith(("astro: ", "… ")) for line in lines), text
            assert SECRET not in text and b"\x1b" not in stderr
            # A question that failed before the model said anything is not kept (issue 37).
            assert not list((home / "state" / "conversations").glob("*.jsonl")), fault_id
            kept = [p for p in (home / "state").rglob("*") if p.is_file()]
            assert all(SECRET not in p.read_text(errors="replace") for p in kept), fault_id

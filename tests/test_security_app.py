"""Issue 6 in the app: model-server faults, a runaway query, hostile output and hostile data.

Every test drives the real `AstroApp` with Textual's pilot against the real fake
OpenAI-compatible server (`tests/fake_openai.py`): real sockets, real SSE, the real
agent and the real `ChatClient`. The data-layer, agent and `astro ask` halves of the
same promises live in the other `tests/test_security_*.py` files.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from textual.pilot import Pilot
from textual.widgets import Markdown, Static

from astro_tui.agent.conversations import conversations_dir, load_conversation
from astro_tui.llm import ChatClient
from astro_tui.ui.app import AstroApp
from astro_tui.ui.panes.shell import ShellPane
from astro_tui.ui.widgets.answer_card import AnswerCard
from astro_tui.ui.widgets.tool_block import ToolBlock
from tests.fake_openai import (
    FakeOpenAI,
    ScriptItem,
    cut,
    error,
    stall,
    text_reply,
    tool_call_reply,
)
from tests.test_ui_support import SIZE, log_text, make_app, plain, ready, shop_db, submit, wait_until

__all__ = ["shop_db"]

COUNT_SQL = "SELECT count(*) AS n FROM sales.orders"
GOOD_QUESTION = "how many orders are there?"
FAULT_QUESTION = "and by region?"
RETRY_TEXT = "Retried: fine now."
HUGE = 2_000_000
# The app loop may stall this long at most while a fault plays out (a loaded 2-core CI box).
MAX_LOOP_GAP_S = 1.0


# --------------------------------------------------------------------------- model-server faults

Outcome = Literal["error", "recovered", "answer"]


def dead_url() -> str:
    """A local port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass(frozen=True)
class Fault:
    """One fault: what the server does, how the turn must end, and the words the user must see.

    `client` overrides the model client's settings for the fault turn only (an address
    nobody listens on, a short read timeout), so the good turn before it and the retry
    after it talk to the working server in the same app session.
    """

    id: str
    script: Callable[[], list[ScriptItem]]
    outcome: Outcome
    expect: str
    client: dict[str, Any] = field(default_factory=dict)
    unused: int = 0


FAULTS: list[Fault] = [
    Fault("connection-refused", lambda: [], "error", "connection refused", {"base_url": dead_url()}),
    Fault("http-401", lambda: [error(401, "Incorrect API key provided")], "error", "rejected the API key"),
    Fault(
        "http-404-unknown-model",
        lambda: [error(404, "The model `fake-model` does not exist", code="model_not_found")],
        "error",
        "model 'fake-model' not found",
    ),
    Fault(
        "http-429-retry-after",
        lambda: [error(429, "Rate limit reached", retry_after=30)],
        "error",
        "asks to wait 30 s",
    ),
    Fault(
        "http-429-retry-after-then-ok",
        lambda: [error(429, "Rate limit reached", retry_after=0.2), text_reply("Waited, then answered.")],
        "recovered",
        "retrying in 0.2 s",
        {"max_retries": 1},
    ),
    Fault("http-500", lambda: [error(500, "the GPU caught fire")], "error", "failed (HTTP 500): the GPU caught fire"),
    Fault(
        "stalled-stream",
        lambda: [stall(text_reply("I am thinking abo"), seconds=20)],
        "error",
        "stopped responding for 0.5 s",
        {"read_timeout_s": 0.5},
    ),
    Fault(
        "stream-cut-before-done",
        lambda: [cut(text_reply("The answer is 4"), abrupt=True)],
        "error",
        "closed the connection in the middle of a reply",
    ),
    Fault(
        "invalid-tool-json",
        lambda: [tool_call_reply([("run_sql", '{"sql": "SELECT 1"')]), text_reply("Sorry, fixed.")],
        "recovered",
        "not valid JSON",
    ),
    Fault(
        "unknown-tool",
        lambda: [tool_call_reply([("drop_database", {"name": "all"})]), text_reply("Sorry, fixed.")],
        "recovered",
        "unknown tool 'drop_database'",
    ),
    Fault(
        "endless-tool-calls",
        lambda: [tool_call_reply([("read_context", {})]) for _ in range(4)],
        "error",
        "max_tool_calls = 3",
        unused=1,
    ),
    Fault("huge-text-reply", lambda: [text_reply("x" * HUGE, chunk_size=65_536)], "answer", "x" * 100),
]


class SwitchClient:
    """The agent's one client: the working server, except during the fault turn.

    The agent uses only `model`, `stream` and `aclose`; swapping the object under
    it is the one seam this test needs (everything else is the app as shipped).
    """

    def __init__(self, good: ChatClient) -> None:
        self.good = good
        self.current = good
        self._others: list[ChatClient] = []

    @property
    def model(self) -> str:
        return self.current.model

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        return self.current.stream(*args, **kwargs)

    def use(self, client: ChatClient | None) -> None:
        if client is not None:
            self._others.append(client)
        self.current = client or self.good

    async def aclose(self) -> None:
        for client in (self.good, *self._others):
            await client.aclose()


class Heartbeat:
    """Ticks on the app's event loop; the longest gap between ticks is how long the loop was blocked."""

    def __init__(self, period: float = 0.02) -> None:
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


def good_turn() -> list[ScriptItem]:
    """A verified answer in two tool calls: what a working model does."""
    return [
        tool_call_reply([("run_sql", {"sql": "-- orders\n" + COUNT_SQL})]),
        tool_call_reply(
            [("submit_result", {"inputs": {"n": COUNT_SQL}, "template": "There are {{ n.value }} orders."})]
        ),
    ]


def saved_lines(app: AstroApp) -> list[dict[str, Any]]:
    """The saved conversation, every line parsed on its own (a torn line would fail here)."""
    assert app.agent is not None
    path = conversations_dir(app.agent.state_dir) / f"{app.agent.conversation_id}.jsonl"
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def turn_records(lines: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [r for r in lines if r.get("index") == index or r.get("turn") == index]


def error_blocks(app: AstroApp) -> list[str]:
    return [plain(w) for w in app.conversation.log_view.query(".error-block").results(Static)]


async def ask_and_wait(pilot: Pilot[Any], question: str, timeout: float = 20.0) -> None:
    app = pilot.app
    assert isinstance(app, AstroApp)
    turn = app.conversation._turn
    await submit(pilot, question)
    assert app.conversation._turn == turn + 1, "the question box did not take the question"
    await wait_until(pilot, lambda: not app.conversation.running, timeout=timeout)


async def shell_answers(pilot: Pilot[Any], command: str) -> str:
    """Run a command in the catalog's shell pane and return its output: proof the app still works."""
    pane = pilot.app.query_one(ShellPane)
    before = len(pane._scrollback)
    pane.submit(command)
    await wait_until(pilot, lambda: len(pane._scrollback) >= before + 2, timeout=10)
    return pane._scrollback[-1].plain


@pytest.mark.parametrize("case", FAULTS, ids=[f.id for f in FAULTS])
async def test_fault_in_the_app(case: Fault, shop_db: Path, fake_openai: FakeOpenAI) -> None:
    """A good turn, the fault, a retry: one clear message, nothing lost, the app keeps working."""
    app = make_app(shop_db, fake_openai.settings(max_tool_calls=3))
    switch = SwitchClient(ChatClient(fake_openai.settings()))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            assert app.agent is not None
            app.agent._client = switch  # type: ignore[assignment]

            fake_openai.script(*good_turn())
            await ask_and_wait(pilot, GOOD_QUESTION)
            assert "There are 2000 orders." in log_text(app)
            before_lines = saved_lines(app)
            before = turn_records(before_lines, 0)
            assert before, "the first turn was saved"

            switch.use(ChatClient(fake_openai.settings(**case.client)) if case.client else None)
            fake_openai.script(*case.script())
            started = time.monotonic()
            async with Heartbeat().running() as heartbeat:
                await ask_and_wait(pilot, FAULT_QUESTION)
            took = time.monotonic() - started
            switch.use(None)
            assert fake_openai.remaining == case.unused
            fake_openai.clear_script()

            shown = log_text(app)
            errors = error_blocks(app)
            if case.outcome == "error":
                assert len(errors) == 1, errors
                assert case.expect in errors[0] and "\n" not in errors[0] and "Traceback" not in errors[0]
            else:
                assert errors == [], errors
                assert case.expect in shown
            # The earlier turn is still on screen and on disk, untouched.
            assert GOOD_QUESTION in shown and "There are 2000 orders." in shown
            assert len(app.conversation.query(AnswerCard)) >= 1
            lines = saved_lines(app)
            assert turn_records(lines, 0) == before, "the earlier turn changed on disk"
            header, turns = load_conversation(app.agent.state_dir, app.agent.conversation_id)
            assert [t.question for t in turns] == [GOOD_QUESTION, FAULT_QUESTION]
            assert turns[0].status == "answer"
            # Still responsive: the shell answers and the question box takes a new question.
            assert "sales" in await shell_answers(pilot, "ls /")
            fake_openai.script(text_reply(RETRY_TEXT))
            await ask_and_wait(pilot, FAULT_QUESTION)
            assert app.conversation.log_view.query(Markdown).last().source == RETRY_TEXT
            _, turns = load_conversation(app.agent.state_dir, app.agent.conversation_id)
            assert len(turns) == 3 and turns[-1].status == "text"
            print(f"{case.id}: {took:.2f} s, max loop gap {heartbeat.max_gap:.2f} s")
            assert heartbeat.max_gap < MAX_LOOP_GAP_S, f"the app's loop was blocked {heartbeat.max_gap:.2f} s"
    finally:
        await switch.aclose()
    fake_openai.assert_script_consumed()

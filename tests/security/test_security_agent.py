"""The model's `run_sql` tool under attack: the hostile corpus, and a query that never ends.

The same corpus as `astro sql` (`test_security_sql.py`), sent two ways: by a scripted
model through the whole agent loop (what a hostile or confused model does), and
through the tool registry exactly as the loop invokes it (parse, then invoke). Every
statement must come back as an unsuccessful tool result naming its reason, the
database file must keep every byte, and nothing may appear in the watched directory.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.agent.events import AgentEvent, Answer, Done, ToolCallStarted, ToolResult
from astro_tui.agent.loop import Agent
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import Database
from tests.support.agent_attacks import CROSS_JOIN, TIMEOUT_S
from tests.support.fake_openai import FakeOpenAI, text_reply, tool_call_reply
from tests.support.sql_corpus import CORPUS, REASON_PREFIXES, build_watched, render, snapshot

BATCH = 32  # run_sql calls per scripted model reply


class Watched:
    """A watched directory holding the database the agent has open for the whole module."""

    def __init__(self, root: Path, path: Path, db: Database) -> None:
        self.root, self.path, self.db = root, path, db
        self.catalog: Catalog = load_catalog(db)

    def statements(self) -> list[str]:
        return [render(item["sql"], self.root, self.path) for item in CORPUS]


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    root = tmp_path_factory.mktemp("agent-watched")
    path = build_watched(root)
    db = Database.open([str(path)], Settings(query_timeout_s=TIMEOUT_S))
    yield Watched(root, path, db)
    db.close()


def agent_for(watched: Watched, fake: FakeOpenAI, state: Path, **overrides: object) -> Agent:
    return Agent(watched.db, watched.catalog, fake.settings(**overrides), state_dir=state)


async def collect(agent: Agent, question: str) -> list[AgentEvent]:
    return [event async for event in agent.run(question)]


def is_refusal(content: str) -> bool:
    """A reason the model can read: the guard's words, on the first line."""
    first = content.splitlines()[0]
    return first.startswith(REASON_PREFIXES) and len(first.split()) >= 3


async def test_corpus_through_the_models_run_sql(
    watched: Watched, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    statements = watched.statements()
    before = snapshot(watched.root)
    batches = [statements[i : i + BATCH] for i in range(0, len(statements), BATCH)]
    fake_openai.script(
        *[tool_call_reply([("run_sql", {"sql": sql}) for sql in batch], style="ollama") for batch in batches],
        text_reply("Nothing I tried was allowed."),
    )
    agent = agent_for(
        watched,
        fake_openai,
        tmp_path / "state",
        max_tool_calls=len(statements) + 10,
        max_completions=len(batches) + 2,
    )
    events = await collect(agent, "do your worst")

    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == len(statements)
    accepted = [(sql, r.content) for sql, r in zip(statements, results, strict=True) if r.ok]
    unexplained = [
        (sql, r.content) for sql, r in zip(statements, results, strict=True) if not is_refusal(r.content)
    ]
    assert accepted == [] and unexplained == []
    assert isinstance(events[-1], Done) and events[-1].reason == "text"
    # The model read every reason: the last request carries one tool message per statement.
    tool_messages = [m for m in fake_openai.chat_requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == len(statements) and all(is_refusal(m["content"]) for m in tool_messages)
    assert snapshot(watched.root) == before
    assert watched.db.execute("SELECT count(*) FROM sales.orders").rows() == [(100,)]


async def test_corpus_through_the_registry_as_the_loop_calls_it(watched: Watched, tmp_path: Path) -> None:
    before = snapshot(watched.root)
    agent = Agent(watched.db, watched.catalog, Settings(), state_dir=tmp_path / "state")
    outcomes = []
    for n, sql in enumerate(watched.statements()):
        call = agent.registry.parse(f"call_{n}", "run_sql", json.dumps({"sql": sql}))
        assert call.error is None, call.error
        outcomes.append((sql, await agent.registry.invoke(call)))
    assert [(sql, o.content) for sql, o in outcomes if o.ok or not is_refusal(o.content)] == []
    assert len(agent.workspace) == 0, "a refused statement left a result in the workspace"
    assert snapshot(watched.root) == before


async def test_a_runaway_query_is_interrupted_and_the_next_one_works(
    watched: Watched, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": CROSS_JOIN})]),
        tool_call_reply([("run_sql", {"sql": "SELECT 6 * 7 AS answer"})]),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {"inputs": {"n": "SELECT count(*) FROM sales.orders"}, "template": "{{ n.value }}"},
                )
            ]
        ),
    )
    agent = agent_for(watched, fake_openai, tmp_path / "state", query_timeout_s=TIMEOUT_S)
    stamps: dict[str, float] = {}
    events: list[AgentEvent] = []
    async for event in agent.run("count the universe"):
        events.append(event)
        if isinstance(event, ToolCallStarted | ToolResult):
            stamps[f"{type(event).__name__}:{event.call_id}"] = time.monotonic()

    results = [e for e in events if isinstance(e, ToolResult)]
    runaway, follow_up, answer_call = results
    took = stamps[f"ToolResult:{runaway.call_id}"] - stamps[f"ToolCallStarted:{runaway.call_id}"]
    assert not runaway.ok and "time limit" in runaway.content
    assert TIMEOUT_S * 0.9 <= took < TIMEOUT_S + 1.0, f"interrupted after {took:.2f} s"
    assert follow_up.ok and follow_up.result is not None and follow_up.result.rows() == [(42,)]
    assert answer_call.ok
    answer = next(e for e in events if isinstance(e, Answer))
    assert answer.text == "100" and answer.verified

"""Small local models: the text tool protocol against the stock llama-cpp-python server's quirks,
the small profile, and plain-text answers traced to cells."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from astro_tui.agent.events import AgentEvent, Answer, Done, Notice, Reasked
from astro_tui.agent.loop import Agent
from astro_tui.agent.prompts import schema_digest
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import ConfigError, Settings
from astro_tui.data.database import Database
from astro_tui.llm.text_protocol import as_text_messages
from tests.support.agent import build_shop
from tests.support.fake_openai import FakeOpenAI, Reply, Respond, error, text_reply, text_tool_call_reply

COUNT = "SELECT count(*) AS customers FROM sales.customers"
BY_CITY = "SELECT city, count(*) AS n FROM sales.customers GROUP BY city ORDER BY city"


class StockServer:
    """What llama-cpp-python's server (`--chat_format chatml`) does with a request, as the issue
    measured it: the prompt it renders, or the error it answers."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, reply: Reply) -> Callable[[Any], Reply | Respond]:
        def serve(request: Any) -> Reply | Respond:
            body = request.body
            messages = body["messages"]
            if any(m.get("content") is None for m in messages):
                return error(500, "Internal Server Error")
            if body.get("stream") and body.get("tools") and body.get("tool_choice") == "auto":
                return error(400, "Automatic streaming tool choice is not supported")
            # chatml renders system, user and assistant text only: no tools, no tool results
            self.prompts.append(
                "".join(
                    f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
                    for m in messages
                    if m["role"] in ("system", "user", "assistant")
                )
            )
            return reply

        return serve


@pytest.fixture
def shop_db(tmp_path: Path) -> Iterator[Database]:
    db = Database.open([str(build_shop(tmp_path / "shop.duckdb"))], Settings())
    yield db
    db.close()


def small_agent(fake: FakeOpenAI, db: Database, state: Path, **overrides: Any) -> Agent:
    settings = fake.settings(tool_protocol="text", agent_profile="small", **overrides)
    return Agent(db, load_catalog(db), settings, state_dir=state)


def prose_agent(fake: FakeOpenAI, db: Database, state: Path) -> Agent:
    """The full profile with no re-asking: a plain-text reply after results is traced at once."""
    settings = fake.settings(tool_protocol="text", max_reasks=0)
    return Agent(db, load_catalog(db), settings, state_dir=state)


async def collect(agent: Agent, question: str) -> list[AgentEvent]:
    return [event async for event in agent.run(question)]


def answer_of(events: list[AgentEvent]) -> Answer:
    return next(e for e in events if isinstance(e, Answer))


async def test_the_text_protocol_gets_tools_and_results_through_the_stock_server(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    stock = StockServer()
    template = "There are {{ n.value }} customers."
    fake_openai.script(
        stock(text_tool_call_reply([("run_sql", {"sql": COUNT})])),
        stock(text_tool_call_reply([("submit_result", {"inputs": {"n": COUNT}, "template": template})])),
    )
    settings = fake_openai.settings(tool_protocol="text")
    agent = Agent(shop_db, load_catalog(shop_db), settings, state_dir=tmp_path / "state")
    events = await collect(agent, "how many customers?")
    answer = answer_of(events)
    assert (answer.text, answer.verified) == ("There are 3 customers.", True)
    assert not [e for e in events if isinstance(e, Notice)]  # calls as text are this protocol's way
    for request in fake_openai.chat_requests:
        assert "tools" not in request.body and "tool_choice" not in request.body
        assert {m["role"] for m in request.body["messages"]} <= {"system", "user", "assistant"}
        assert all(isinstance(m["content"], str) for m in request.body["messages"])
    first, second = stock.prompts
    assert '<tools>\n{"type": "function", "function": {"name": "shell"' in first
    assert f'<tool_call>\n{{"name": "run_sql", "arguments": {{"sql": "{COUNT}"}}}}\n</tool_call>' in second
    assert "<|im_start|>user\n<tool_response>\ndf_1: 1 row × 1 column" in second
    assert second.startswith(first.removesuffix("<|im_start|>user\nhow many customers?<|im_end|>\n"))


async def test_the_native_protocol_meets_each_quirk_of_the_stock_server(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """Why the text protocol exists: the native request's tools, its null content beside a call and
    its tool results are what this server drops or refuses."""
    stock = StockServer()
    fake_openai.script(stock(text_tool_call_reply([("run_sql", {"sql": COUNT})])), stock(text_reply("3")))
    settings = fake_openai.settings(max_reasks=0)
    agent = Agent(shop_db, load_catalog(shop_db), settings, state_dir=tmp_path / "state")
    events = await collect(agent, "how many customers?")
    assert "<tools>" not in stock.prompts[0] and '"name": "run_sql"' not in stock.prompts[0]
    assert fake_openai.chat_requests[0].body["tools"]
    second = fake_openai.chat_requests[1].body["messages"]
    assert [m["content"] for m in second if m["role"] == "assistant"] == [None]
    assert not [e for e in events if isinstance(e, Answer)]  # the 500 ended the turn
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    refused = StockServer()(text_reply("x"))(
        type("Request", (), {"body": {"stream": True, "tools": [{}], "tool_choice": "auto", "messages": []}})
    )
    assert isinstance(refused, Respond) and refused.status == 400


def test_text_messages_merge_consecutive_results_and_keep_prose_beside_calls() -> None:
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "run_sql", "arguments": '{"sql": "x"}'}},
                {"id": "b", "type": "function", "function": {"name": "run_sql", "arguments": "{bad"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"},
    ]
    out = as_text_messages(messages, [{"type": "function", "function": {"name": "run_sql"}}])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[0]["content"].startswith("S\n\n# Tools\n")
    assert out[2]["content"] == (
        'Let me look.\n<tool_call>\n{"name": "run_sql", "arguments": {"sql": "x"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "run_sql", "arguments": "{bad"}\n</tool_call>'
    )
    assert (
        out[3]["content"] == "<tool_response>\none\n</tool_response>\n<tool_response>\ntwo\n</tool_response>"
    )
    assert "_tool_results" not in out[3]


async def test_a_call_after_prose_and_without_its_closing_tag_is_read(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    call = json.dumps({"name": "run_sql", "arguments": {"sql": BY_CITY}})
    fake_openai.script(
        text_reply(f"I will count them by city.\n<tool_call>\n{call}\n"),
        text_reply("Berlin has 2 customers and Paris has 1."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "customers per city?")
    answer = answer_of(events)
    assert answer.verified and answer.text == "Berlin has 2 customers and Paris has 1."
    assert [(s.text, s.sources[0].row, s.sources[0].column) for s in answer.provenance] == [
        ("2", 0, "n"),
        ("1", 1, "n"),
    ]


async def test_a_number_matching_no_cell_or_several_cells_is_unverified(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    sql = "SELECT name, id, id AS same FROM sales.customers WHERE id = 2"
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": sql})]),
        text_reply("Grace has id 2, and there are 7 others."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "who is customer 2?")
    answer = answer_of(events)
    assert answer.verified is False
    assert answer.unverified_numbers == ("2", "7")
    assert [t.sql for t in answer.tables] == [sql]  # Grace is a cell: the answer cites the result


async def test_a_traced_number_is_shown_as_the_cell_formats_it(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    sql = "SELECT sum(amount) AS total, 0.4567 AS share FROM sales.orders"
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": sql})]),
        text_reply("Orders total $7,575.00, a share of 45.7%."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "total?")
    answer = answer_of(events)
    assert answer.verified and answer.text == "Orders total $7,575.00, a share of 45.7%."
    assert [str(s.value) for s in answer.provenance] == ["7575.00", "0.4567"]


async def test_a_prose_reply_citing_no_cell_stays_unverified(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": COUNT})]), text_reply("The query worked, 4 rows.")
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "how many customers?")
    answer = answer_of(events)
    assert (answer.kind, answer.verified, answer.tables) == ("unverified", False, ())
    assert answer.unverified_numbers == ("4",)


async def test_the_small_profile_answers_with_the_result_of_its_query(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    bad = "SELECT count(*) AS customers FROM sales.customer"
    fake_openai.script(
        text_reply(f"Here is the query:\n```sql\n{bad}\n```"),
        text_reply(f"```sql\n{COUNT}\n```"),
    )
    agent = small_agent(fake_openai, shop_db, tmp_path / "state")
    events = await collect(agent, "how many customers?")
    answer = answer_of(events)
    assert (answer.kind, answer.text, answer.verified) == ("result", "customers: 3", True)
    assert [t.sql for t in answer.tables] == [COUNT]
    assert [(s.text, s.sources[0].column) for s in answer.provenance] == [("3", "customers")]
    first, second = (r.body for r in fake_openai.chat_requests)
    system = first["messages"][0]["content"]
    assert "tools" not in first and "<tools>" not in system
    assert "```sql" in system and "sales.customers(id INTEGER" in system
    replayed, error_text = second["messages"][2:]
    assert replayed == {"role": "assistant", "content": f"Here is the query:\n```sql\n{bad}\n```"}
    assert error_text["role"] == "user" and "<tool_response>" in error_text["content"]
    assert 'Did you mean "customers"?' in error_text["content"]  # the engine's own hint goes back
    assert isinstance(events[-1], Done) and events[-1].reason == "answer"


async def test_the_small_profile_tells_its_model_about_an_empty_result_once(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    empty = "SELECT name FROM sales.customers WHERE city = 'berlin'"
    right = "SELECT name FROM sales.customers WHERE city = 'Berlin' ORDER BY name"
    fake_openai.script(text_reply(f"```sql\n{empty}\n```"), text_reply(f"```sql\n{right}\n```"))
    events = await collect(small_agent(fake_openai, shop_db, tmp_path / "state"), "customers in Berlin?")
    answer = answer_of(events)
    assert answer.text == "2 rows, shown below." and answer.verified
    assert answer.tables[0].result.rows() == [("Ada",), ("Linus",)]
    hint = fake_openai.chat_requests[1].body["messages"][-1]["content"]
    assert "(no rows)" in hint and "check the values your filters use" in hint


async def test_a_reply_without_a_query_is_asked_for_one(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    fake_openai.script(text_reply("6"), text_reply("I think 6."))
    agent = small_agent(fake_openai, shop_db, tmp_path / "state", max_reasks=1)
    events = await collect(agent, "how many customers?")
    assert [e.instruction for e in events if isinstance(e, Reasked)] == [
        "Reply with one SQL query that answers the question, in a ```sql block."
    ]
    answer = answer_of(events)
    assert (answer.kind, answer.verified, answer.unverified_numbers) == ("unverified", False, ("6",))


async def test_the_small_profile_offers_run_sql_alone_when_the_schema_fits(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    catalog = load_catalog(shop_db)
    digest = schema_digest(catalog, 3_000)
    assert digest is not None and "sales.orders(id INTEGER, customer_id INTEGER, region VARCHAR" in digest
    assert schema_digest(catalog, 10) is None
    fits = small_agent(fake_openai, shop_db, tmp_path / "a")
    assert fits.registry.names == ["run_sql"] and digest in fits.system_prompt()
    assert fits.tool_schemas() == []
    lazy = small_agent(fake_openai, shop_db, tmp_path / "b", schema_prompt_tokens=10)
    assert lazy.registry.names == ["search_metadata", "shell", "run_sql"]
    assert [t["function"]["name"] for t in lazy.tool_schemas()] == lazy.registry.names
    assert "call search_metadata" in lazy.system_prompt()


async def test_a_forbidden_statement_in_a_text_call_is_refused_by_the_guard(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    fake_openai.script(
        text_reply("```sql\nDROP TABLE sales.customers\n```"), text_reply("Done: 3 customers.")
    )
    events = await collect(small_agent(fake_openai, shop_db, tmp_path / "state", max_reasks=0), "drop it")
    answer = answer_of(events)
    assert answer.verified is False and answer.tables == ()
    assert "<tool_response>" in fake_openai.chat_requests[1].body["messages"][-1]["content"]
    assert shop_db.execute("SELECT count(*) FROM sales.customers").rows() == [(3,)]


def test_a_protocol_or_profile_outside_the_choices_is_one_line() -> None:
    with pytest.raises(
        ConfigError,
        match=r"tool_protocol = 'xml' \(Settings\(tool_protocol=…\)\): expected one of native, text",
    ):
        Settings(tool_protocol="xml")
    with pytest.raises(ConfigError, match=r"agent_profile = .*: expected one of full, small"):
        Settings(agent_profile="tiny")

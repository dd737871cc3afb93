"""Each tool against a real DuckDB file, plus the workspace, notes, charts and saved conversations."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from astro_tui.agent.chart_draw import render_chart_text
from astro_tui.agent.charts import ChartError, build_chart_spec
from astro_tui.agent.context_notes import ContextNotes, notes_path
from astro_tui.agent.conversations import (
    ConversationError,
    list_conversations,
    load_conversation,
    save_conversation,
)
from astro_tui.agent.events import Answer
from astro_tui.agent.history import Entry, History, Turn
from astro_tui.agent.loop import Agent
from astro_tui.agent.registry import ToolRegistry
from astro_tui.agent.tools import build_registry
from astro_tui.agent.tools.context import TURN_CANCEL, ToolContext
from astro_tui.agent.workspace import Workspace, sql_description
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.database import CancelToken, Database
from tests.support.agent import build_shop, call


@pytest.fixture
def shop_db(tmp_path: Path) -> Iterator[Database]:
    db = Database.open([str(build_shop(tmp_path / "shop.duckdb"))], Settings())
    yield db
    db.close()


@pytest.fixture
def ctx(shop_db: Database, tmp_path: Path) -> ToolContext:
    return ToolContext(
        shop_db,
        load_catalog(shop_db),
        shop_db.settings,
        Workspace(),
        ContextNotes(tmp_path / "state", shop_db.key),
    )


@pytest.fixture
def registry(ctx: ToolContext) -> ToolRegistry:
    return build_registry(ctx)


def test_the_ten_tools_have_the_designed_names_and_arguments(registry: ToolRegistry) -> None:
    params = {
        s["function"]["name"]: set(s["function"]["parameters"]["properties"]) for s in registry.schemas()
    }
    assert params == {
        "shell": {"command"},
        "show_table": {"table_names"},
        "search_metadata": {"queries", "keywords"},
        "run_sql": {"sql"},
        "read_context": set(),
        "update_context": {"note"},
        "submit_result": {"inputs", "template", "title"},
        "submit_observation": {"observation", "supporting_queries"},
        "render_chart": {"sql", "kind", "x", "y", "title"},
        "send_message": {"message"},
    }
    outputs = {n for n in registry.names if registry[n].output}
    assert outputs == {"submit_result", "submit_observation", "render_chart", "send_message"}


# ---------------------------------------------------------------------------- run_sql and the workspace


async def test_run_sql_names_results_and_shows_the_model_a_preview(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    first = await call(
        registry,
        "run_sql",
        sql="-- orders by region\nSELECT region, count(*) AS n FROM sales.orders GROUP BY 1 ORDER BY 1",
    )
    second = await call(registry, "run_sql", sql="SELECT id, note, ordered_at FROM sales.orders ORDER BY id")
    assert first.ok and second.ok
    assert first.result_name == "df_1" and second.result_name == "df_2"
    assert first.content.splitlines()[:3] == [
        "df_1: 3 rows × 2 columns",
        "columns: region VARCHAR, n BIGINT",
        "region | n",
    ]
    assert "east | 33" in first.content
    assert first.summary == "df_1: 3 rows × 2 columns (region, n)"
    lines = second.content.splitlines()
    assert lines[0] == "df_2: 100 rows × 3 columns"
    assert "first 20 rows:" in lines
    assert len([line for line in lines if line[:1].isdigit()]) == 20
    assert max(len(line) for line in lines) < 120
    assert "…" in second.content
    entries = ctx.workspace.entries()
    assert [e.name for e in entries] == ["df_1", "df_2"]
    assert entries[0].description == "orders by region"
    assert entries[0].result.description == "orders by region"
    assert entries[1].result.row_count == 100


async def test_run_sql_reports_truncation(tmp_path: Path) -> None:
    db = Database.open([str(build_shop(tmp_path / "capped.duckdb"))], Settings(row_cap=10))
    try:
        context = ToolContext(
            db, load_catalog(db), db.settings, Workspace(), ContextNotes(tmp_path, "capped")
        )
        registry = build_registry(context)
        outcome = await call(registry, "run_sql", sql="SELECT * FROM sales.orders")
        filtered = await call(registry, "run_sql", sql="SELECT * FROM sales.orders WHERE id > 1")
    finally:
        db.close()
    assert outcome.ok and outcome.result is not None and outcome.result.truncated
    assert "CUT by the row cap: the query returns 100 rows" in outcome.content  # a plain scan: metadata
    assert "CUT by the row cap: the query returns 99 rows" in filtered.content  # a bounded count
    assert "Only the first 10 rows were read" in filtered.content


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT nope FROM sales.orders", "nope"),
        ("DELETE FROM sales.orders", "DELETE"),
        ("SELECT 1; SELECT 2", "one statement"),
    ],
)
async def test_run_sql_errors_go_back_to_the_model(registry: ToolRegistry, sql: str, expected: str) -> None:
    outcome = await call(registry, "run_sql", sql=sql)
    assert not outcome.ok
    assert expected.lower() in outcome.content.lower()
    assert outcome.content.count("\n") <= 1  # the engine's hint ("Candidate bindings: …") may follow


def test_workspace_names_keep_counting_and_evict_the_oldest() -> None:
    con = duckdb.connect()
    from astro_tui.data.results import QueryResult

    result = QueryResult("-- one\nSELECT 1", con.sql("SELECT 1").to_arrow_table(), False, 1.0)
    space = Workspace(next_index=4, max_entries=2)
    names = [space.add(result).name for _ in range(3)]
    assert names == ["df_4", "df_5", "df_6"]
    assert [e.name for e in space.entries()] == ["df_5", "df_6"]
    assert space.get("df_4") is None and space.get("df_6") is not None
    assert sql_description("  -- revenue by month \nSELECT 1") == "revenue by month"
    assert sql_description("SELECT 1 -- not leading") is None


# ---------------------------------------------------------------------------- catalog tools


async def test_shell_lists_and_remembers_the_directory(registry: ToolRegistry) -> None:
    listing = await call(registry, "shell", command="ls /")
    assert listing.ok and "sales" in listing.content and "marketing" in listing.content
    await call(registry, "shell", command="cd /sales")
    here = await call(registry, "shell", command="ls")
    assert "orders.table" in here.content and "customers.table" in here.content
    card = await call(registry, "shell", command="cat orders.table | grep -i eur")
    assert "Order total in EUR" in card.content
    bad = await call(registry, "shell", command="ls /nope")
    assert bad.ok and "nope" in bad.content
    assert (await call(registry, "shell", command="grep -ri zzzzzz /")).content.startswith("(no output")


async def test_search_metadata_ranks_tables_and_finds_values(registry: ToolRegistry) -> None:
    outcome = await call(registry, "search_metadata", queries=["customer city"], keywords=["Berlin"])
    assert outcome.ok
    assert "sales.customers" in outcome.content
    assert "Berlin" in outcome.content and "city" in outcome.content
    only_words = await call(registry, "search_metadata", queries=["order total"])
    assert only_words.ok and "sales.orders" in only_words.content
    nothing = await call(registry, "search_metadata", queries=[])
    assert not nothing.ok and "at least one query or keyword" in nothing.content


async def test_show_table_gives_the_card_and_sample_rows(registry: ToolRegistry) -> None:
    outcome = await call(registry, "show_table", table_names=["sales.orders", "customers"])
    assert outcome.ok
    assert "sales.orders" in outcome.content and "Order total in EUR" in outcome.content
    assert "sample rows:" in outcome.content
    assert "People who bought something" in outcome.content
    assert "Berlin" in outcome.content


async def test_show_table_explains_unknown_and_ambiguous_names(registry: ToolRegistry) -> None:
    outcome = await call(registry, "show_table", table_names=["orders", "sales.order"])
    assert not outcome.ok
    assert "'orders' is ambiguous: marketing.orders, sales.orders" in outcome.content
    assert "no table 'sales.order' (did you mean sales.orders" in outcome.content
    partial = await call(registry, "show_table", table_names=["sales.customers", "nope"])
    assert partial.ok and "no table 'nope'" in partial.content


async def test_show_table_accepts_a_bare_string(registry: ToolRegistry) -> None:
    outcome = await call(registry, "show_table", table_names="sales.customers")
    assert outcome.ok and "sales.customers" in outcome.content


# ---------------------------------------------------------------------------- notes


async def test_context_notes_read_and_append_atomically(registry: ToolRegistry, ctx: ToolContext) -> None:
    empty = await call(registry, "read_context")
    assert empty.ok and empty.content == "(no notes yet for this database)"
    saved = await call(registry, "update_context", note="orders.amount is in EUR,\n  net of tax")
    assert saved.ok and saved.content.startswith("saved: - orders.amount is in EUR, net of tax (")
    await call(registry, "update_context", note="customers.city is free text")
    text = (await call(registry, "read_context")).content
    assert text.count("\n- ") == 2 and "## Notes from the assistant" in text
    folder = ctx.notes.path.parent
    assert [p.name for p in folder.iterdir()] == [ctx.notes.path.name]
    refused = await call(registry, "update_context", note="   ")
    assert not refused.ok and "empty" in refused.content


def test_sample_notes_are_seeded_on_first_read(tmp_path: Path) -> None:
    notes = ContextNotes(tmp_path, "sample", "# Sample warehouse\nRevenue excludes refunds.\n")
    assert "Revenue excludes refunds." in notes.read()
    assert notes_path(tmp_path, "sample").read_text(encoding="utf-8").startswith("# Sample warehouse")
    notes.append("a new fact")
    assert "Revenue excludes refunds." in notes.read() and "a new fact" in notes.read()
    assert ContextNotes(tmp_path, "other").read() == ""
    assert notes_path(tmp_path, "../../etc/passwd").parent == tmp_path / "context"


def test_sample_notes_are_read_when_the_state_directory_cannot_be_written(
    tmp_path: Path, shop_db: Database
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")  # mkdir below it fails, even for root
    notes = ContextNotes(blocked / "state", "sample", "# Sample warehouse\nRevenue excludes refunds.\n")
    assert "Revenue excludes refunds." in notes.read()
    assert not notes.path.exists()
    agent = Agent(shop_db, load_catalog(shop_db), shop_db.settings, state_dir=blocked / "state")
    agent.notes = notes
    assert "Revenue excludes refunds." in agent.system_prompt()


async def test_reset_session_rebuilds_the_search_index_with_new_notes(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    before = await call(registry, "search_metadata", queries=["zebra crossing"])
    assert "matched context notes" not in before.content
    await call(registry, "update_context", note="sales.customers: zebra crossing loyalty flag lives here")
    ctx.reset_session()  # a new conversation
    after = await call(registry, "search_metadata", queries=["zebra crossing"])
    assert "sales.customers" in after.content and "context notes" in after.content


async def test_tool_threads_keep_the_cancel_token_of_their_turn(ctx: ToolContext) -> None:
    """The loop replaces `ctx.cancel` every turn; a thread of an earlier turn keeps its own token."""
    first = ctx.cancel = CancelToken()
    release = threading.Event()
    seen: list[CancelToken] = []

    def slow_tool() -> None:
        release.wait(5)
        seen.append(ctx.turn_cancel())

    token = TURN_CANCEL.set(first)
    try:
        thread = asyncio.ensure_future(asyncio.to_thread(slow_tool))  # copies the context now
    finally:
        TURN_CANCEL.reset(token)
    second = ctx.cancel = CancelToken()  # the next turn starts while the thread still runs
    token = TURN_CANCEL.set(second)
    try:
        release.set()
        await thread
    finally:
        TURN_CANCEL.reset(token)
    assert seen == [first]


# ---------------------------------------------------------------------------- output tools


async def test_submit_result_executes_fresh_sql_and_renders(
    registry: ToolRegistry, shop_db: Database
) -> None:
    sql = "SELECT sum(amount) AS revenue FROM sales.orders"
    outcome = await call(
        registry,
        "submit_result",
        inputs={
            "rev": sql,
            "by_region": "SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY 1",
        },
        template="Revenue was {{ rev.value | money }} in {{ by_region.row_count }} regions, not 999.",
        title="Revenue",
    )
    assert outcome.ok
    answer = outcome.value
    assert isinstance(answer, Answer)
    expected = shop_db.execute(sql).table.column(0)[0].as_py()
    assert answer.text == f"Revenue was ${expected:,.2f} in 3 regions, not 999."
    assert answer.kind == "result" and answer.title == "Revenue"
    assert answer.sql[0] == sql
    assert answer.main_result is not None and answer.main_result.row_count == 3
    # one typed number and the answer is not verified, whatever else came from the data
    assert answer.unverified_numbers == ("999",) and not answer.verified
    assert "Shown to the person:" in outcome.content and "marked unverified: 999" in outcome.content


async def test_verified_only_when_no_number_was_typed_in_the_template_or_the_title(
    registry: ToolRegistry,
) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    for template, title, typed in (
        ("{{ n.value }} orders.", "Orders in 2025", ("2025",)),  # a year the model typed, too
        ("{{ n.value }} orders.", "All orders", ()),
        ("Exactly 42 orders, {{ n.value }}.", None, ("42",)),
        ("{{ n.value }} orders.", "Top 5 orders", ("5",)),
    ):
        answer = (await call(registry, "submit_result", inputs=inputs, template=template, title=title)).value
        assert isinstance(answer, Answer)
        assert answer.unverified_numbers == typed and answer.verified is (not typed), template
    chart = await call(
        registry,
        "render_chart",
        sql="SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY 1",
        kind="bar",
        x="region",
        y="revenue",
        title="Top 3 regions",
    )
    assert chart.value.unverified_numbers == ("3",) and not chart.value.verified
    assert "marked unverified: 3" in chart.content


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"inputs": {}, "template": "x"}, "at least one input"),
        ({"inputs": {"total revenue": "SELECT 1"}, "template": "x"}, "rename: 'total revenue'"),
        ({"inputs": {"rev": "SELECT nope"}, "template": "{{ rev.value }}"}, "input 'rev' failed"),
        ({"inputs": {"rev": "DROP TABLE sales.orders"}, "template": "x"}, "input 'rev' failed"),
        ({"inputs": {"rev": "SELECT 1"}, "template": "{{ revenue.value }}"}, "'revenue' is undefined"),
        ({"inputs": {"rev": "SELECT 1"}, "template": "{% for %}"}, "syntax error"),
        ({"inputs": {"rev": "SELECT 1"}}, "missing required argument: template"),
        (
            {"inputs": {"top": "SELECT 'science' AS kind, 7 AS Value"}, "template": "{{ top.value }}"},
            "input 'top' has a column named 'Value', so `top.value` is ambiguous",
        ),
    ],
)
async def test_submit_result_failures_go_back_to_the_model(
    registry: ToolRegistry, arguments: dict[str, object], expected: str
) -> None:
    outcome = await call(registry, "submit_result", **arguments)
    assert not outcome.ok and outcome.value is None
    assert expected in outcome.content


async def test_submit_observation(registry: ToolRegistry) -> None:
    outcome = await call(
        registry,
        "submit_observation",
        observation="Berlin has {{ berlin.value }} customers, the most of any city.",
        supporting_queries={"berlin": "SELECT count(*) FROM sales.customers WHERE city = 'Berlin'"},
    )
    assert outcome.ok and isinstance(outcome.value, Answer)
    assert outcome.value.kind == "observation" and outcome.value.verified
    assert outcome.value.text == "Berlin has 2 customers, the most of any city."


async def test_render_chart_validates_and_draws(registry: ToolRegistry) -> None:
    sql = "SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY 1 ORDER BY 1"
    outcome = await call(
        registry, "render_chart", sql=sql, kind="bar", x="region", y="revenue", title="By region"
    )
    assert outcome.ok and isinstance(outcome.value, Answer)
    answer = outcome.value
    assert answer.kind == "chart" and answer.verified and answer.chart is not None
    assert answer.chart.y == ("revenue",) and answer.sql == [sql]
    text = render_chart_text(answer.chart, width=60, height=15)
    assert "By region" in text and "north" in text and "\x1b" not in text

    line = await call(
        registry,
        "render_chart",
        sql="SELECT ordered_at, amount, amount * 2 AS double FROM sales.orders ORDER BY 1",
        kind="line",
        x="ordered_at",
        y=["amount", "double"],
        title="Daily",
    )
    assert line.ok and "Daily" in render_chart_text(line.value.chart, 70, 15)
    hist = await call(
        registry,
        "render_chart",
        sql="SELECT amount FROM sales.orders",
        kind="hist",
        x="amount",
        y="amount",
        title="Spread",
    )
    assert hist.ok and "Spread" in render_chart_text(hist.value.chart)


@pytest.mark.parametrize(
    ("sql", "kind", "x", "y", "expected"),
    [
        (
            "SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY 1",
            "bar",
            "regio",
            "revenue",
            "x column 'regio' is not in the query's columns: region, revenue",
        ),
        ("SELECT region, count(*) n FROM sales.orders GROUP BY 1", "bar", "region", "region", "not a number"),
        ("SELECT range AS id, range AS amount FROM range(150)", "bar", "id", "amount", "unreadable"),
        ("SELECT id, amount FROM sales.orders WHERE false", "line", "id", "amount", "no rows"),
        ("SELECT region FROM sales.orders", "hist", "region", "region", "must be numeric"),
    ],
)
async def test_render_chart_refuses_specs_that_do_not_fit(
    registry: ToolRegistry, sql: str, kind: str, x: str, y: str, expected: str
) -> None:
    outcome = await call(registry, "render_chart", sql=sql, kind=kind, x=x, y=y, title="t")
    assert not outcome.ok and expected in outcome.content


async def test_render_chart_kind_is_checked_before_running(registry: ToolRegistry) -> None:
    outcome = await call(registry, "render_chart", sql="SELECT 1", kind="pie", x="a", y="b", title="t")
    assert (
        not outcome.ok
        and "'kind'" in outcome.content
        and "'bar', 'line', 'scatter' or 'hist'" in outcome.content
    )


def test_chart_spec_is_case_insensitive(shop_db: Database) -> None:
    result = shop_db.execute("SELECT region AS Region, count(*) AS N FROM sales.orders GROUP BY 1")
    spec = build_chart_spec(result, "bar", "region", ["n"], "")
    assert spec.x == "Region" and spec.y == ("N",) and spec.title == "chart"
    with pytest.raises(ChartError):
        build_chart_spec(result, "bar", "region", [], "t")


async def test_send_message_is_an_unverified_message(registry: ToolRegistry) -> None:
    outcome = await call(registry, "send_message", message="Do you mean the 3 regions or the 12 months?")
    assert outcome.ok and isinstance(outcome.value, Answer)
    assert outcome.value.kind == "message" and not outcome.value.verified
    assert outcome.value.unverified_numbers == ("3", "12")


def test_call_summaries(registry: ToolRegistry) -> None:
    """Each tool says where it is defined how a call of it reads in one line."""

    def call_summary(name: str, arguments: dict[str, Any] | None) -> str:
        return registry[name].summary(arguments)

    assert call_summary("run_sql", {"sql": "-- revenue by region\nSELECT 1"}) == "-- revenue by region"
    assert call_summary("run_sql", {"sql": "SELECT   region\nFROM x"}) == "SELECT region FROM x"
    assert call_summary("shell", {"command": "ls /sales"}) == "ls /sales"
    assert call_summary("show_table", {"table_names": ["a", "b"]}) == "a, b"
    assert call_summary("submit_result", {"inputs": {"rev": "x"}, "template": "t", "title": None}) == "rev"
    assert call_summary("render_chart", {"kind": "bar", "title": "T"}) == "bar T"
    assert call_summary("run_sql", None) == ""
    assert len(call_summary("send_message", {"message": "x" * 500})) == 70


# ---------------------------------------------------------------------------- conversations


def _turns() -> list[Turn]:
    history = History()
    turn = history.begin("revenue by region?", 1)
    turn.entries.append(
        Entry(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "run_sql", "arguments": "{}"}}
                ],
            }
        )
    )
    turn.entries.append(
        Entry({"role": "tool", "tool_call_id": "c1", "content": "df_1: …" * 50}, "df_1: 3 rows")
    )
    turn.status = "answer"
    turn.workspace_next = 2
    return history.turns


def test_conversation_round_trip_and_listing(tmp_path: Path) -> None:
    turns = _turns()
    save_conversation(
        tmp_path, "20250101-000000-aaaaaa", turns, db_key="shop", db_label="shop", model="m", created="t0"
    )
    save_conversation(
        tmp_path, "20250102-000000-bbbbbb", turns, db_key="shop", db_label="shop", model="m", created="t1"
    )
    save_conversation(
        tmp_path, "20250103-000000-cccccc", turns, db_key="other", db_label="o", model="m", created="t2"
    )
    header, loaded = load_conversation(tmp_path, "20250101-000000-aaaaaa")
    assert header["db_key"] == "shop" and header["title"] == "revenue by region?" and header["turns"] == 1
    assert loaded[0].question == "revenue by region?" and loaded[0].status == "answer"
    assert loaded[0].workspace_next == 2
    assert [e.message for e in loaded[0].entries] == [e.message for e in turns[0].entries]
    assert loaded[0].entries[2].summary == "df_1: 3 rows"
    listed = list_conversations(tmp_path, "shop")
    assert [c.id for c in listed] == ["20250102-000000-bbbbbb", "20250101-000000-aaaaaa"]
    assert len(list_conversations(tmp_path)) == 3
    with pytest.raises(ConversationError):
        load_conversation(tmp_path, "missing")
    with pytest.raises(ConversationError):
        load_conversation(tmp_path, "../secrets")


def test_what_the_person_saw_is_kept_beside_the_text_for_the_model(tmp_path: Path) -> None:
    """Version 2 saves it as a field; a version 1 file had it only after "Shown to the person"
    in the text for the model (or, for send_message, in the call), and still reads."""
    turns = _turns()
    turns[0].entries[-1].shown = "Revenue was 12."
    save_conversation(tmp_path, "new", turns, db_key="k", db_label="k", model="m", created="t")
    assert load_conversation(tmp_path, "new")[1][0].shown_answer == "Revenue was 12."

    def legacy(content: str, call: str = "submit_result", arguments: str = "{}") -> str | None:
        calls = [{"id": "c1", "type": "function", "function": {"name": call, "arguments": arguments}}]
        lines = [
            {"type": "header", "version": 1, "id": "old", "db_key": "k"},
            {"type": "turn", "index": 0, "question": "q", "status": "answer", "workspace_next": 1},
            {"type": "message", "turn": 0, "message": {"role": "user", "content": "q"}},
            {"type": "message", "turn": 0, "message": {"role": "assistant", "tool_calls": calls}},
            {
                "type": "message",
                "turn": 0,
                "message": {"role": "tool", "tool_call_id": "c1", "content": content},
            },
        ]
        conversations = tmp_path / "conversations"
        conversations.mkdir(exist_ok=True)
        (conversations / "old.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        return load_conversation(tmp_path, "old")[1][0].shown_answer

    assert legacy("Shown to the person:\nRevenue was 12.") == "Revenue was 12."
    assert legacy("Shown to the person.", "send_message", '{"message": "Which year?"}') == "Which year?"
    assert legacy("df_1: 3 rows") is None


@pytest.mark.parametrize(
    "bad_line",
    [
        "[1, 2]",
        '"just a string"',
        '{"type": "turn", "index": 0, "question": "q", "workspace_next": "x"}',
        '{"type": "turn", "index": 0, "question": "q", "workspace_next": null}',
        '{"type": "message", "turn": 0}',
        '{"type": "message", "turn": 0, "message": "hello"}',
        '{"type": "message", "turn": 0, "message": {"role": "assistant", "tool_calls": 5}}',
        '{"type": "message", "turn": 0, "message": {"role": "assistant", "tool_calls": [{"id": []}]}}',
        "[" * 100_000,
    ],
)
def test_malformed_conversation_files_are_errors_and_do_not_break_the_list(
    tmp_path: Path, bad_line: str
) -> None:
    save_conversation(tmp_path, "good", _turns(), db_key="k", db_label="k", model="m", created="t")
    path = save_conversation(tmp_path, "bad", _turns(), db_key="k", db_label="k", model="m", created="t")
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines[:2], bad_line, *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(ConversationError, match="line 3"):
        load_conversation(tmp_path, "bad")
    for header in ("[1]", '{"type": "header", "turns": "many"}', '{"type": "header", "model": [1]}'):
        (tmp_path / "conversations" / "odd.jsonl").write_text(header + "\n", encoding="utf-8")
        assert {c.id for c in list_conversations(tmp_path)} == {"good", "bad"}
    assert load_conversation(tmp_path, "good")[1][0].question == "revenue by region?"


def test_a_crash_while_saving_leaves_the_previous_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = _turns()
    path = save_conversation(tmp_path, "c", turns, db_key="k", db_label="k", model=None, created="t")
    before = path.read_text(encoding="utf-8")
    turns[0].question = "changed"

    def crash(*args: object) -> None:
        raise OSError("killed")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        save_conversation(tmp_path, "c", turns, db_key="k", db_label="k", model=None, created="t")
    assert path.read_text(encoding="utf-8") == before
    for line in before.splitlines():
        json.loads(line)


def test_history_condenses_earlier_turns_only() -> None:
    history = History(_turns())
    current = history.begin("and by month?", 2)
    current.entries.append(Entry({"role": "tool", "tool_call_id": "c2", "content": "full content"}, "short"))
    messages = history.messages("system")
    assert messages[0] == {"role": "system", "content": "system"}
    assert messages[3]["content"] == "df_1: 3 rows"
    assert messages[-1]["content"] == "full content"


def test_rollback_drops_a_round_with_unanswered_calls() -> None:
    history = History()
    turn = history.begin("q", 1)
    calls = [
        {"id": i, "type": "function", "function": {"name": "run_sql", "arguments": "{}"}} for i in ("a", "b")
    ]
    turn.entries.append(Entry({"role": "assistant", "content": None, "tool_calls": calls}))
    turn.entries.append(Entry({"role": "tool", "tool_call_id": "a", "content": "ok"}))
    history.rollback_to_consistent(turn)
    assert [e.message["role"] for e in turn.entries] == ["user"]

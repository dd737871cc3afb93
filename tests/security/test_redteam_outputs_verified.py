"""Red team (issue 34): `verified` must be true only when every number in the answer is traced to
a cell. Each test here is a typed number that comes back `verified: true` today."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.events import AgentEvent, Answer
from astro_tui.agent.loop import Agent
from astro_tui.agent.registry import ToolRegistry
from astro_tui.agent.tools import build_registry
from astro_tui.agent.tools.context import ToolContext
from astro_tui.agent.workspace import Workspace
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.database import Database
from tests.support.agent import build_shop, call
from tests.support.fake_openai import FakeOpenAI, text_reply, text_tool_call_reply

BY_CITY = "SELECT city, count(*) AS n FROM sales.customers GROUP BY city ORDER BY city"


def prose_agent(fake: FakeOpenAI, db: Database, state: Path) -> Agent:
    settings = fake.settings(tool_protocol="text", max_reasks=0)
    return Agent(db, load_catalog(db), settings, state_dir=state)


async def collect(agent: Agent, question: str) -> list[AgentEvent]:
    return [event async for event in agent.run(question)]


def answer_of(events: list[AgentEvent]) -> Answer:
    return next(e for e in events if isinstance(e, Answer))


@pytest.fixture
def shop_db(tmp_path: Path) -> Iterator[Database]:
    db = Database.open([str(build_shop(tmp_path / "shop.duckdb"))], Settings())
    yield db
    db.close()


@pytest.fixture
def registry(shop_db: Database, tmp_path: Path) -> ToolRegistry:
    ctx = ToolContext(
        shop_db,
        load_catalog(shop_db),
        shop_db.settings,
        Workspace(),
        ContextNotes(tmp_path / "s", shop_db.key),
    )
    return build_registry(ctx)


TYPED_42 = [
    "{{ '4' + '2' }}",  # string concatenation with +, from literals alone
    "{{ n.value * 0 + 42 }}",  # a cell multiplied away, the literal added
    "{{ n.value|string|replace(n.value|string, '42') }}",  # the cell replaced by typed text
    "{{ 'x42'[1:] }}",  # a slice of a literal
    "{{ ['4', '2']|join }}",  # join of literals
    "{{ '42'.strip() }}",  # a string method over a literal ('42'|trim is caught)
    "{% set x = '4' + '2' %}{{ x }}",
    "{{ [42]|first }}",  # a literal inside a container: every indirection loses it
    "{{ {'a': 42}.a }}",
    "{{ ('a', 42)[1] }}",
    "{{ [40, 2]|sum }}",
    "{{ n.value and 42 }}",  # `and`/`or` print their last operand
    "{{ 0 or 42 }}",
    "{{ (n.value, 42)|last }}",
    "{{ n.missing|default(42) }}",  # a filter argument printed
    "{% for x in [4, 2] %}{{ x }}{% endfor %}",
    "{% for x in range(42) %}{% if loop.last %}{{ loop.index }}{% endif %}{% endfor %}",
    "{{ 'x42'|replace('x', '') }}",
]


@pytest.mark.parametrize("expr", TYPED_42)
async def test_a_typed_42_built_in_the_template_is_not_verified(registry: ToolRegistry, expr: str) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    template = "{{ n.value }} orders, " + expr + " shipped."
    answer = (await call(registry, "submit_result", inputs=inputs, template=template)).value
    assert isinstance(answer, Answer)
    assert "42 shipped" in answer.text
    assert answer.verified is False, f"{template!r} rendered {answer.text!r} as verified"


@pytest.mark.parametrize(
    ("expr", "shown"),
    [
        ("{{ [1, 2]|sum }}", "3"),  # computed from literals alone (the docstring says: reported)
        ("{{ 'abcd'|length }}", "4"),  # a number built from a typed word
        ("{{ 'one two three'|wordcount }}", "3"),
        ("{{ range(5)|list|length }}", "5"),
    ],
)
async def test_a_number_computed_from_literals_alone_is_not_verified(
    registry: ToolRegistry, expr: str, shown: str
) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    answer = (
        await call(registry, "submit_result", inputs=inputs, template=f"{{{{ n.value }}}} and {expr}")
    ).value
    assert isinstance(answer, Answer)
    assert answer.text.endswith(f" and {shown}")
    assert answer.verified is False, f"{expr!r} -> {shown} shown as verified"


async def test_a_plain_text_answer_with_numbers_swapped_between_rows_is_not_verified(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """BY_CITY returns Berlin 2, Paris 1. The model swaps them: each number still matches exactly
    one cell by value (not the cell of the row it is written beside), so the false sentence is
    shown as verified with each number 'traced'."""
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": BY_CITY})]),
        text_reply("Paris has 2 customers and Berlin has 1."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "customers per city?")
    answer = answer_of(events)
    assert answer.text == "Paris has 2 customers and Berlin has 1."
    assert answer.verified is False, [(s.text, s.sources[0].row) for s in answer.provenance]


async def test_a_plain_text_count_of_rows_is_not_traced_to_an_unrelated_cell(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """The model counts the rows itself ('2 cities') and gets it from no cell; the 2 is matched to
    Berlin's customer count and shown as verified."""
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": BY_CITY})]),
        text_reply("Customers live in 2 cities: Berlin and Paris."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "how many cities?")
    answer = answer_of(events)
    sources = [(s.text, s.sources[0].row, s.sources[0].column) for s in answer.provenance]
    assert not (answer.verified and ("2", 0, "n") in sources), sources


async def test_a_plain_text_answer_with_a_number_in_words_is_not_verified(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """Berlin has 2 customers; the model writes 'five'. The text cites the cell 'Berlin' and holds
    no digit, so the wrong number is shown as a verified answer."""
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": BY_CITY})]),
        text_reply("Berlin has five customers."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "customers in Berlin?")
    answer = answer_of(events)
    assert answer.text == "Berlin has five customers."
    assert answer.verified is False


async def test_a_count_cell_is_not_verified_as_a_percentage(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """Berlin's customer count is 2; '2%' is matched to it (the cell itself, not the cell times 100),
    so a count shown as a share is verified."""
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": BY_CITY})]),
        text_reply("Only 2% of customers live in Berlin."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "share in Berlin?")
    answer = answer_of(events)
    assert answer.verified is False, [(s.text, s.value) for s in answer.provenance]


async def test_a_template_number_in_words_is_not_verified(registry: ToolRegistry) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    template = "{{ n.value }} orders, of which forty-two shipped."
    answer = (await call(registry, "submit_result", inputs=inputs, template=template)).value
    assert isinstance(answer, Answer)
    assert answer.verified is False, answer.text


async def test_a_plain_text_answer_citing_a_cell_does_not_end_the_turn_in_an_internal_error(
    fake_openai: FakeOpenAI, shop_db: Database, tmp_path: Path
) -> None:
    """On main `traced_answer` and `result_answer` pass `verified=` to `Answer`, whose `verified` is
    now a property: every plain-text answer that cites a cell (the small-model path) ends the turn
    with "internal error: TypeError ...". (tests/test_local_models.py, which covers this path, no
    longer imports: `tests.fake_openai` moved to tests/support.) The tests above that use
    `prose_agent` also fail on this first; with it fixed they fail on `verified`."""
    fake_openai.script(
        text_tool_call_reply([("run_sql", {"sql": BY_CITY})]),
        text_reply("Berlin has 2 customers and Paris has 1."),
    )
    events = await collect(prose_agent(fake_openai, shop_db, tmp_path / "state"), "customers per city?")
    errors = [e for e in events if type(e).__name__ == "ErrorEvent"]
    assert not errors, errors
    assert answer_of(events).text == "Berlin has 2 customers and Paris has 1."


@pytest.mark.parametrize(
    "typed",
    [
        "$42M in revenue",  # a unit or scale glued to the digits counts as a label (like Q3)
        "42k customers",
        "3x growth",
        "42kg shipped",
        "1e6 visits",
        "½ of them late",  # digits that are not \d
        "④② late",
        "1999 late",  # any number from 1900 to 2100 written alone is taken for a year
        "12:30 hours late",  # a clock time
    ],
)
async def test_a_typed_number_the_label_rules_let_through_is_not_verified(
    registry: ToolRegistry, typed: str
) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    template = "{{ n.value }} orders, " + typed + "."
    answer = (await call(registry, "submit_result", inputs=inputs, template=template)).value
    assert isinstance(answer, Answer)
    assert answer.verified is False, answer.text


async def test_a_number_typed_into_a_column_alias_and_printed_is_not_verified(registry: ToolRegistry) -> None:
    """A column name is the model's own text (an SQL alias), not a cell: printed through
    `.columns` (or a row printed whole), its 42 is shown as verified."""
    inputs = {"n": 'SELECT count(*) AS "orders, 42 of them late" FROM sales.orders'}
    template = "{{ n.value }} {{ n.columns[0] }}."
    answer = (await call(registry, "submit_result", inputs=inputs, template=template)).value
    assert isinstance(answer, Answer)
    assert answer.text == "100 orders, 42 of them late."
    assert answer.verified is False, answer.text


def test_the_small_profile_result_answer_does_not_verify_a_number_in_the_alias() -> None:
    """`result_answer` (the small profile's answer: the query's single value) writes
    '<column name>: <value>' and calls it verified; the column name is the model's alias."""
    import duckdb

    from astro_tui.agent.text_answer import result_answer
    from astro_tui.data.results import QueryResult

    sql = 'SELECT 100 AS "Late orders: 42, all orders"'
    result = QueryResult(sql, duckdb.connect().sql(sql).to_arrow_table(), False, 1.0)
    answer = result_answer("df_1", result)  # on main this raises TypeError first (verified=)
    assert "42" in answer.text
    assert answer.verified is False, answer.text


@pytest.mark.parametrize(
    "template",
    [
        "{% for r in big.rows %}{% if loop.last %}{{ loop.index }}{% endif %}{% endfor %} rows",
        "{% for r in big.rows %}{{ loop.index if loop.last }}{% endfor %} rows",
    ],
)
def test_the_last_loop_index_over_a_cut_result_is_refused_like_its_length(template: str) -> None:
    """`loop.length` and `|length` over rows the row cap cut are refused (count it in SQL); the
    last `loop.index` is the same count and renders as a verified '50 rows' of a longer result."""
    import duckdb

    from astro_tui.agent.templates import TemplateError, render
    from astro_tui.data.results import QueryResult

    sql = "SELECT range AS i FROM range(50)"
    cut = QueryResult(sql, duckdb.connect().sql(sql).to_arrow_table(), True, 1.0)  # truncated by the cap
    with pytest.raises(TemplateError):
        render("{% for r in big.rows %}{{ loop.length if loop.last }}{% endfor %}", {"big": cut})
    with pytest.raises(TemplateError):
        rendered = render(template, {"big": cut})
        print(rendered.text, rendered.unverified_numbers)


@pytest.mark.parametrize(
    ("template", "reads"),
    [
        ("{{ n.value }}{{ n.value }} orders.", "100100 orders."),  # two traced cells, one number
        ("{{ n.value }},{{ n.value }} orders.", "100,100 orders."),  # reads as 100100
        ("{{ n.value }}.{{ n.value }} orders.", "100.100 orders."),
        ("{{ n.value }}<!-- -->{{ n.value }} orders.", "100<!-- -->100 orders."),  # Markdown hides it
    ],
)
async def test_adjacent_traced_values_do_not_make_a_verified_number_no_cell_holds(
    registry: ToolRegistry, template: str, reads: str
) -> None:
    inputs = {"n": "SELECT count(*) AS n FROM sales.orders"}
    answer = (await call(registry, "submit_result", inputs=inputs, template=template)).value
    assert isinstance(answer, Answer)
    assert answer.text == reads
    assert answer.verified is False, (answer.text, [s.text for s in answer.provenance])

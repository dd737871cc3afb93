"""Provenance: every span of a verified answer points at the value the database holds there.

The property tests build small results from literal rows on each real engine
(DuckDB here, a few examples on the PostgreSQL and Spark Connect servers the
suite starts), render random templates over them, and check each span against a
fresh run of the SQL it names. Markers `⟦ ⟧` around every printed value let the
test also check the converse: each value written is covered by exactly one span.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.conversations import ConversationError, load_conversation
from astro_tui.agent.events import Answer
from astro_tui.agent.loop import Agent
from astro_tui.agent.numbers import numbers_in_text
from astro_tui.agent.provenance import Span, answer_from_record, answer_record, saved_answer
from astro_tui.agent.registry import ToolRegistry
from astro_tui.agent.templates import TemplateError, render
from astro_tui.agent.tools import build_registry
from astro_tui.agent.tools import context as tool_context
from astro_tui.agent.tools.context import ToolContext
from astro_tui.agent.workspace import Workspace
from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.results import QueryResult
from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.support.agent import build_shop, call
from tests.support.fake_openai import FakeOpenAI, tool_call_reply
from tests.support.pg_server import PgServer
from tests.support.spark_server import SparkServer

KINDS = ("int", "dec", "flt", "txt", "day", "ts", "flag")
NUMERIC = ("int", "dec", "flt")
SQL_TYPES = {
    "DuckDB": {"int": "BIGINT", "dec": "DECIMAL(18,3)", "flt": "DOUBLE", "txt": "VARCHAR"},
    "PostgreSQL": {"int": "BIGINT", "dec": "NUMERIC(18,3)", "flt": "DOUBLE PRECISION", "txt": "TEXT"},
    "Spark SQL": {"int": "BIGINT", "dec": "DECIMAL(18,3)", "flt": "DOUBLE", "txt": "STRING"},
}
_SHARED_TYPES = {"day": "DATE", "ts": "TIMESTAMP", "flag": "BOOLEAN"}
_MARKED = re.compile(r"⟦([^⟦⟧]*)⟧")


# --------------------------------------------------------------------------- results from literal rows


@dataclass(frozen=True)
class Table:
    kinds: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @property
    def columns(self) -> list[str]:
        return [f"{kind}_{i}" for i, kind in enumerate(self.kinds)]

    def numeric_columns(self, *, non_null: bool = False) -> list[str]:
        return [
            name
            for i, (name, kind) in enumerate(zip(self.columns, self.kinds, strict=True))
            if kind in NUMERIC and not (non_null and any(row[i] is None for row in self.rows))
        ]


def _values(kind: str, floats_special: bool) -> st.SearchStrategy[Any]:
    strategy: st.SearchStrategy[Any] = {
        "int": st.integers(-(2**63) + 1, 2**63 - 1),
        "dec": st.decimals(-(10**14), 10**14, places=3, allow_nan=False, allow_infinity=False),
        "flt": st.floats(allow_nan=floats_special, allow_infinity=floats_special),
        "txt": st.text(
            st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="⟦⟧"),
            min_size=1,
            max_size=10,
        ),
        "day": st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)),
        "ts": st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 12, 31)),
        "flag": st.booleans(),
    }[kind]
    return st.one_of(st.none(), strategy)


@st.composite
def tables(draw: st.DrawFn, floats_special: bool = True, max_rows: int = 4) -> Table:
    kinds = tuple(draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4)))
    n = draw(st.integers(0, max_rows))
    rows = tuple(tuple(draw(_values(kind, floats_special)) for kind in kinds) for _ in range(n))
    return Table(kinds, rows)


def _literal(db: Database, kind: str, value: Any) -> str:
    types = {**SQL_TYPES[db.dialect.name], **_SHARED_TYPES}
    if value is None:
        return f"CAST(NULL AS {types[kind]})"
    if kind == "txt":
        return db.dialect.literal(value)
    if kind == "day":
        return f"DATE '{value.isoformat()}'"
    if kind == "ts":
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if kind == "flag":
        return "TRUE" if value else "FALSE"
    text = repr(value) if kind == "flt" else str(value)
    return f"CAST('{text}' AS {types[kind]})"


def table_sql(db: Database, table: Table) -> str:
    names = ", ".join(table.columns)
    rows = table.rows or (tuple(None for _ in table.kinds),)
    values = ", ".join(
        "(" + ", ".join([str(i), *(_literal(db, k, v) for k, v in zip(table.kinds, row, strict=True))]) + ")"
        for i, row in enumerate(rows)
    )
    where = "" if table.rows else " WHERE k < 0"
    return f"SELECT {names} FROM (VALUES {values}) AS t(k, {names}){where} ORDER BY k"


# --------------------------------------------------------------------------- random templates


def _filters(kind: str, nullable: bool) -> list[str]:
    shown = ["", "|string", "|default('n/a')"]
    if kind in NUMERIC:
        shown += ["|number", "|number(2)", "|money", "|percent(0)"]
        if not nullable:
            shown += ["|round(2)", "|abs", "|int"]
    elif kind in ("day", "ts"):
        shown += ["|date('%b %d, %Y')", "|date"]
    elif kind == "txt":
        shown += ["|upper", "|title", "|trim"] + ([] if nullable else ["|truncate(4, true, '…', 0)"])
    return shown


@st.composite
def fragments(draw: st.DrawFn, name: str, table: Table) -> str:
    """One piece of template that prints values of input `name`, each inside ⟦ ⟧."""
    columns = table.columns
    n = len(table.rows)
    i = draw(st.integers(0, len(columns) - 1))
    column, kind = columns[i], table.kinds[i]
    nullable = any(row[i] is None for row in table.rows)
    shown = draw(st.sampled_from(_filters(kind, nullable)))
    choices = [
        f"{{% for r in {name}.rows %}}⟦{{{{ r.{column}{shown} }}}}⟧;{{% endfor %}}",
        f"⟦{{{{ {name}.rows | map(attribute='{column}') | join('⟧, ⟦') }}}}⟧" if n else "",
        f"#⟦{{{{ {name}.row_count }}}}⟧",
        f"#⟦{{{{ {name}.rows | length }}}}⟧",
    ]
    if n:
        row = draw(st.integers(0, n - 1))
        other = draw(st.integers(0, n - 1))
        j = draw(st.integers(0, len(columns) - 1))
        choices += [
            f"⟦{{{{ {name}.rows[{row}].{column}{shown} }}}}⟧",
            f"⟦{{{{ {name}.rows[{row}].{column} ~ '⟧ / ⟦' ~ {name}.rows[{other}].{columns[j]} }}}}⟧",
            f"{{{{ {name}.rows[{row}] }}}}",
            f"{{{{ {name} }}}}",
        ]
        if i == 0:
            choices.append(f"⟦{{{{ {name}.value{shown} }}}}⟧")
        numeric = [c for c in table.numeric_columns() if c in columns]
        if numeric:
            a, b = draw(st.sampled_from(numeric)), draw(st.sampled_from(numeric))
            ka, kb = table.kinds[columns.index(a)], table.kinds[columns.index(b)]
            if "flt" not in (ka, kb) or ka == kb:  # Decimal and float do not mix in Python
                x, y = f"{name}.rows[{row}].{a}", f"{name}.rows[{other}].{b}"
                choices.append(
                    f"{{% if {x} is not none and {y} is not none %}}±⟦{{{{ {x} + {y} + {y} }}}}⟧{{% endif %}}"
                )
        summable = [c for c in table.numeric_columns(non_null=True) if table.kinds[columns.index(c)] != "flt"]
        if summable:
            choices.append(f"Σ⟦{{{{ {name}.rows | sum(attribute='{draw(st.sampled_from(summable))}') }}}}⟧")
    return draw(st.sampled_from([c for c in choices if c]))


@st.composite
def templates(draw: st.DrawFn, inputs: dict[str, Table]) -> str:
    parts = [
        draw(fragments(name, inputs[name]))
        for name in draw(st.lists(st.sampled_from(sorted(inputs)), min_size=1, max_size=5))
    ]
    return "[" + " | ".join(parts) + "]"


# --------------------------------------------------------------------------- the checks


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return (type(a) is type(b) and a == b) or (a is None and b is None)


class Oracle:
    """The database's own answer for any source: the SQL as executed, run again."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.results: dict[str, QueryResult] = {}

    def result(self, sql: str) -> QueryResult:
        if sql not in self.results:
            self.results[sql] = self.db.execute(sql)
        return self.results[sql]

    def cell(self, sql: str, row: int, column: str) -> Any:
        return self.result(sql).table.column(column)[row].as_py()


def check_spans(oracle: Oracle, text: str, spans: tuple[Span, ...], sqls: set[str]) -> None:
    """Every span is a stretch of the text whose sources name real cells holding its values."""
    end = 0
    for span in spans:
        assert end <= span.start < span.end <= len(text), "spans are in order and do not overlap"
        end = span.end
        assert text[span.start : span.end] == span.text
        assert span.sources, span
        for source in span.sources:
            assert source.sql in sqls
            result = oracle.result(source.sql)
            if source.row is None:
                assert source.column is None and source.value == result.row_count
            elif source.column is None:
                assert 0 <= source.row < result.row_count
            else:
                assert same(oracle.cell(source.sql, source.row, source.column), source.value), source
        if not span.derived:
            assert len(span.sources) == 1 and same(span.value, span.sources[0].value), span


def check_marked(text: str, spans: tuple[Span, ...], unverified: tuple[str, ...] = ()) -> None:
    """Each value the template wrote between ⟦ ⟧ is exactly one span, or (a cell's text changed by
    a filter, `'0a'|upper`) shows no number that is not listed as typed."""
    edges = {(s.start, s.end) for s in spans}
    for match in _MARKED.finditer(text):
        if match.group(1) and (match.start(1), match.end(1)) not in edges:
            shown = numbers_in_text(match.group(1))
            assert shown and set(shown) <= set(unverified), (match.group(1), text, spans)


def render_and_check(db: Database, inputs: dict[str, Table], template: str) -> None:
    oracle = Oracle(db)
    results = {name: oracle.result(table_sql(db, table)) for name, table in inputs.items()}
    for name, table in inputs.items():
        assert results[name].row_count == len(table.rows)
    rendered = render(template, results)
    check_spans(oracle, rendered.text, rendered.spans, {r.sql for r in results.values()})
    check_marked(rendered.text, rendered.spans, rendered.unverified_numbers)
    assert rendered.complete
    by_start = {span.start: span for span in rendered.spans}
    for match in _MARKED.finditer(rendered.text):  # what a derived value is, by the sign before it
        sign = rendered.text[match.start() - 1]
        span = by_start.get(match.start(1))
        if sign == "Σ" and span is not None:
            assert span.derived and span.value == sum(s.value for s in span.sources)
        elif sign == "±" and span is not None:
            values = [s.value for s in span.sources]
            a, b = values if len(values) == 2 else values * 2
            assert span.derived and span.value in (
                a + b + b,
                b + a + a,
            )  # as the template adds, left to right
        elif sign == "#" and span is not None:
            assert span.derived and [(s.row, s.column) for s in span.sources] == [(None, None)]


@st.composite
def cases(draw: st.DrawFn, *, floats_special: bool = True) -> tuple[dict[str, Table], str]:
    names = draw(st.sampled_from([["a"], ["a", "b"]]))
    inputs = {name: draw(tables(floats_special)) for name in names}
    return inputs, draw(templates(inputs))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_span_points_at_the_duckdb_value(
    sample_db: Database, case: tuple[dict[str, Table], str]
) -> None:
    render_and_check(sample_db, *case)


@pytest.fixture(scope="module")
def pg(pg_server: PgServer) -> Iterator[Database]:
    db = Database.open([pg_server.url()], Settings())
    yield db
    db.close()


@pytest.fixture(scope="module")
def spark(spark_server: SparkServer) -> Iterator[Database]:
    db = Database.open([spark_server.url], Settings())
    yield db
    db.close()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(floats_special=False))
def test_every_span_points_at_the_postgres_value(pg: Database, case: tuple[dict[str, Table], str]) -> None:
    render_and_check(pg, *case)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(floats_special=False))
def test_every_span_points_at_the_spark_value(spark: Database, case: tuple[dict[str, Table], str]) -> None:
    render_and_check(spark, *case)


# --------------------------------------------------------------------------- cut results, through the tools

ORDERS = "SELECT id, region, amount FROM sales.orders ORDER BY id"


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[Database]:
    """The shop with a row cap of 10: its 100 orders are a cut result."""
    db = Database.open([str(build_shop(tmp_path / "capped.duckdb"))], Settings(row_cap=10))
    yield db
    db.close()


def tools(db: Database, tmp_path: Path) -> ToolRegistry:
    context = ToolContext(db, load_catalog(db), db.settings, Workspace(), ContextNotes(tmp_path, "capped"))
    return build_registry(context)


@pytest.mark.parametrize(
    ("template", "what"),
    [
        ("There are {{ all.row_count }} rows.", "all.row_count"),
        ("There are {{ all.rows | length }} rows.", "|length"),
        ("There are {{ all.rows | list | length }} rows.", "|length"),
        ("There are {{ all.rows | count }} rows.", "|length"),
        ("{{ all.rows | sum(attribute='amount') | money }} in all", "|sum"),
        ("{{ all.rows | map(attribute='amount') | sum }}", "|sum"),
        ("largest {{ all.rows | map(attribute='amount') | max }}", "|max"),
        ("{{ all.rows | selectattr('region', 'eq', 'north') | list | length }} northern", "|length"),
        ("{{ all.rows | map(attribute='region') | unique | list | length }} regions", "|unique"),
        ("{{ all.rows | groupby('region') | length }} regions", "|groupby"),
        ("last: {{ (all.rows | last).id }}", "|last"),
        (
            "{% for r in all.rows %}{% if loop.last %}{{ loop.length }} rows{% endif %}{% endfor %}",
            "loop.length",
        ),
        ("{% for r in all.rows if r.amount > 0 %}{{ loop.revindex }} {% endfor %}", "loop.revindex"),
        (
            "{% for r in all.rows if r.id > 0 %}{% if loop.last %}{{ loop.length }}{% endif %}{% endfor %}",
            "loop.length",
        ),
    ],
)
async def test_counting_a_cut_result_is_refused_with_the_fix(
    capped: Database, tmp_path: Path, template: str, what: str
) -> None:
    outcome = await call(tools(capped, tmp_path), "submit_result", inputs={"all": ORDERS}, template=template)
    assert not outcome.ok
    assert f"`{what}`" in outcome.content
    assert "holds only 10 of 100 rows (the row cap cut it)" in outcome.content
    assert "count it in SQL" in outcome.content


async def test_listing_a_cut_result_says_it_shows_the_first_rows(capped: Database, tmp_path: Path) -> None:
    template = "{% for r in all.rows %}{{ r.id }}: {{ r.amount | money }}\n{% endfor %}{{ n.value }} orders"
    outcome = await call(
        tools(capped, tmp_path),
        "submit_result",
        inputs={"all": ORDERS, "n": "SELECT count(*) AS n FROM sales.orders"},
        template=template,
    )
    assert outcome.ok, outcome.content
    answer = outcome.value
    assert isinstance(answer, Answer)
    assert answer.complete is False
    assert answer.text.endswith(
        "100 orders\n\n(Shows the first 10 of 100 rows of all: the row cap cut the result.)"
    )
    assert "marked incomplete" in outcome.content
    check_spans(Oracle(capped), answer.text, answer.provenance, {t.sql for t in answer.tables})
    rows = [s for s in answer.provenance if s.sources[0].input == "all"]
    assert [(s.sources[0].row, s.sources[0].column) for s in rows[:4]] == [
        (0, "id"),
        (0, "amount"),
        (1, "id"),
        (1, "amount"),
    ]
    assert len(rows) == 20
    count = answer.provenance[-1]
    assert count.text == "100" and count.sources[0].input == "n" and not count.derived


async def test_a_whole_result_counts_and_sums(capped: Database, tmp_path: Path) -> None:
    inputs = {"top": "SELECT region, sum(amount) AS amount FROM sales.orders GROUP BY 1 ORDER BY 2 DESC"}
    template = (
        "{{ top.row_count }} regions, {{ top.rows | sum(attribute='amount') | money }} in all; "
        "{% for r in top.rows %}{{ r.region }} "
        "{{ (r.amount / (top.rows | sum(attribute='amount'))) | percent }}"
        "{% if not loop.last %}, {% endif %}{% endfor %}"
    )
    outcome = await call(tools(capped, tmp_path), "submit_result", inputs=inputs, template=template)
    assert outcome.ok, outcome.content
    answer = outcome.value
    assert isinstance(answer, Answer) and answer.complete
    assert answer.unverified_numbers == ()  # `* 100` and a typed `%` would be the model's: |percent
    check_spans(Oracle(capped), answer.text, answer.provenance, {t.sql for t in answer.tables})
    regions, total, first, share = answer.provenance[:4]
    assert regions.text == "3" and regions.derived and regions.sources[0].row is None
    assert (
        total.derived
        and {s.row for s in total.sources} == {0, 1, 2}
        and total.value == sum(s.value for s in total.sources)
    )
    assert first.text == Oracle(capped).cell(inputs["top"], 0, "region") and not first.derived
    assert share.derived and share.text.endswith("%") and share.text[:-1].replace(".", "").isdigit()
    assert {(s.row, s.column) for s in share.sources} == {(0, "amount"), (1, "amount"), (2, "amount")}


async def test_an_observation_is_traced_the_same_way(capped: Database, tmp_path: Path) -> None:
    outcome = await call(
        tools(capped, tmp_path),
        "submit_observation",
        observation=(
            "Orders in {{ first.day | date('%B') }} came to {{ jan.total | money }}, "
            "{{ (jan.total / year.total) | percent }} of {{ year.total | money }}."
        ),
        supporting_queries={
            "first": "SELECT min(ordered_at) AS day FROM sales.orders",
            "jan": "SELECT sum(amount) AS total FROM sales.orders WHERE ordered_at < DATE '2025-02-01'",
            "year": "SELECT sum(amount) AS total FROM sales.orders",
        },
    )
    assert outcome.ok, outcome.content
    answer = outcome.value
    assert isinstance(answer, Answer) and answer.kind == "observation" and answer.complete
    check_spans(Oracle(capped), answer.text, answer.provenance, {t.sql for t in answer.tables})
    assert answer.provenance[0].text == "January"
    assert [[src.input for src in s.sources] for s in answer.provenance] == [
        ["first"],
        ["jan"],
        ["jan", "year"],
        ["year"],
    ]
    assert [s.derived for s in answer.provenance] == [False, False, True, False]


def test_typed_numbers_stay_unverified_even_when_computed(sample_db: Database) -> None:
    result = sample_db.execute("SELECT 42 AS n")
    rendered = render(
        "{{ n.value }} {{ 1000 * 1 }} {{ -5 }} {{ (7 * 3) | number }} {{ n.value * 100 }}", {"n": result}
    )
    assert rendered.text == "42 1000 -5 21 4200"
    assert rendered.unverified_numbers == ("1000", "-5", "21", "4200")  # a literal operand: typed
    assert [(s.text, s.derived) for s in rendered.spans] == [("42", False)]


def test_cells_of_other_types_are_traced_whole(sample_db: Database) -> None:
    result = sample_db.execute("SELECT INTERVAL 3 DAY AS d, [1, 2] AS l, {'a': 1} AS s, 'x'::BLOB AS b")
    rendered = render("{{ r.d }} | {{ r.l }} | {{ r.s }} | {{ r.b }} | {{ r.l[1] }}", {"r": result})
    check_spans(Oracle(sample_db), rendered.text, rendered.spans, {result.sql})
    assert [s.sources[0].column for s in rendered.spans] == ["d", "l", "s", "b", "l"]
    assert rendered.spans[-1].text == "2" and rendered.spans[-1].derived


def test_refusals_name_the_input_even_inside_a_set_block(sample_db: Database) -> None:
    cut = dataclass_replace(sample_db.execute("SELECT range AS i FROM range(5)"), truncated=True)
    with pytest.raises(TemplateError, match="input 'big' holds only 5 of more than 5 rows"):
        render("{% set x %}{{ big.rows | length }}{% endset %}{{ x }}", {"big": cut})


# --------------------------------------------------------------------------- run_sql: how much was cut


async def test_run_sql_says_more_than_n_when_counting_takes_too_long(
    capped: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool_context, "TOTAL_COUNT_S", 0.3)
    outcome = await call(
        tools(capped, tmp_path), "run_sql", sql="SELECT a.range AS a FROM range(100000) a, range(100000) b"
    )
    assert outcome.ok, outcome.content
    assert "CUT by the row cap: the query returns more than 10 rows" in outcome.content
    assert "Only the first 10 rows were read" in outcome.content


@pytest.fixture
def pg_capped(pg_server: PgServer) -> Iterator[Database]:
    db = Database.open([pg_server.url()], Settings(row_cap=3))
    yield db
    db.close()


@pytest.fixture
def spark_capped(spark_server: SparkServer) -> Iterator[Database]:
    db = Database.open([spark_server.url], Settings(row_cap=3))
    yield db
    db.close()


async def test_run_sql_gives_the_exact_total_on_postgres(pg_capped: Database, tmp_path: Path) -> None:
    outcome = await call(
        tools(pg_capped, tmp_path), "run_sql", sql="SELECT g FROM generate_series(1, 50) AS g WHERE g % 2 = 0"
    )
    assert outcome.ok, outcome.content
    assert "3 rows × 1 column (CUT by the row cap: the query returns 25 rows)" in outcome.content
    assert outcome.result is not None and outcome.result.total_rows == 25


async def test_run_sql_gives_the_exact_total_on_spark(spark_capped: Database, tmp_path: Path) -> None:
    outcome = await call(
        tools(spark_capped, tmp_path), "run_sql", sql="SELECT id FROM range(50) WHERE id % 2 = 0"
    )
    assert outcome.ok, outcome.content
    assert "3 rows × 1 column (CUT by the row cap: the query returns 25 rows)" in outcome.content


# --------------------------------------------------------------------------- ask --json, saved conversations

SUBMIT = {
    "inputs": {
        "by_status": "SELECT status, count(*) AS orders FROM sales.orders GROUP BY 1 ORDER BY 1",
        "rev": "SELECT sum(total_amount) AS revenue FROM sales.orders WHERE status = 'completed'",
    },
    "template": "{% for r in by_status.rows %}{{ r.status }}: {{ r.orders | number }}\n{% endfor %}"
    "Completed revenue {{ rev.value | money }}.",
    "title": "Orders",
}


async def test_ask_json_carries_provenance_and_it_is_saved(
    sample_db: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(tool_call_reply([("submit_result", SUBMIT)]))
    out, err = io.StringIO(), io.StringIO()
    session = Session.over(sample_db, fake_openai.settings(), state_dir=tmp_path)
    code = await run_ask("orders?", session, json_output=True, out=out, err=err)
    assert code == 0, err.getvalue()
    record = json.loads(out.getvalue())
    assert record["complete"] is True
    text, spans = record["answer"], record["provenance"]
    statuses = sample_db.execute(SUBMIT["inputs"]["by_status"])
    assert len(spans) == 2 * statuses.row_count + 1
    for span in spans:
        assert text[span["start"] : span["end"]] == span["text"]
        [source] = span["sources"]
        assert set(source) == {"input", "sql", "row", "column", "value"} and span["derived"] is False
        cell = sample_db.execute(source["sql"]).table.column(source["column"])[source["row"]].as_py()
        assert source["value"] == (str(cell) if isinstance(cell, Decimal) else cell) == span["value"]
    revenue = spans[-1]
    assert revenue["sources"][0]["input"] == "rev" and revenue["text"].startswith("$")

    _, turns = load_conversation(tmp_path, record["conversation_id"])
    saved = turns[0].answer
    assert saved is not None and saved.complete and saved.text == text
    assert [s.to_json() for s in saved.provenance] == spans
    agent = Agent(sample_db, load_catalog(sample_db), fake_openai.settings(), state_dir=tmp_path)
    agent.resume(record["conversation_id"])
    assert agent.turns[0].answer == saved


async def test_ask_json_says_incomplete_for_a_cut_result(
    capped: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    listing = {"inputs": {"all": ORDERS}, "template": "{% for r in all.rows %}{{ r.id }} {% endfor %}"}
    fake_openai.script(tool_call_reply([("submit_result", listing)]))
    out, err = io.StringIO(), io.StringIO()
    session = Session.over(capped, fake_openai.settings(), state_dir=tmp_path)
    code = await run_ask("orders", session, json_output=True, out=out, err=err)
    assert code == 0, err.getvalue()
    record = json.loads(out.getvalue())
    assert record["complete"] is False and record["data"]["truncated"] is True
    assert (
        record["answer"].startswith("1 2 3") and "Shows the first 10 of 100 rows of all" in record["answer"]
    )
    assert [s["sources"][0]["row"] for s in record["provenance"]] == list(range(10))


def test_saved_answers_round_trip_and_old_files_still_load(sample_db: Database, tmp_path: Path) -> None:
    result = sample_db.execute("SELECT DATE '2025-03-04' AS day, 1.5::DECIMAL(4,2) AS x, NULL AS z")
    rendered = render("{{ r.day | date('%d %b') }} / {{ r.x }} / {{ r.z }}", {"r": result})
    answer = Answer(kind="result", text=rendered.text, provenance=rendered.spans)
    record = json.loads(json.dumps(answer_record(saved_answer(answer))))
    back = answer_from_record(record)
    assert [s.text for s in back.provenance] == ["04 Mar", "1.50", "—"]
    assert [s.sources[0].value for s in back.provenance] == ["2025-03-04", "1.50", None]
    assert {s.sources[0].sql for s in back.provenance} == {result.sql}

    folder = tmp_path / "conversations"
    folder.mkdir()
    lines = [
        {"type": "header", "version": 1, "id": "old", "db_key": "k", "created": "", "title": "q", "turns": 1},
        {"type": "turn", "index": 0, "question": "q", "status": "answer", "started": "", "workspace_next": 2},
        {"type": "message", "turn": 0, "message": {"role": "user", "content": "q"}},
    ]
    (folder / "old.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    _, turns = load_conversation(tmp_path, "old")
    assert turns[0].answer is None and turns[0].question == "q"

    lines[1]["answer"] = {**record, "spans": [[0, 999, 1, False, [], 0]]}
    (folder / "bad.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(ConversationError, match="line 2 has a turn whose answer is not a saved answer"):
        load_conversation(tmp_path, "bad")


async def test_a_sampled_line_chart_is_marked_incomplete(sample_db: Database, tmp_path: Path) -> None:
    registry = tools(sample_db, tmp_path)
    sql = "SELECT range AS x, range * 2 AS y FROM range(3000)"
    drawn = await call(registry, "render_chart", sql=sql, kind="line", x="x", y="y", title="t")
    whole = await call(
        registry, "render_chart", sql=sql + " WHERE range < 100", kind="line", x="x", y="y", title="t"
    )
    assert isinstance(drawn.value, Answer) and drawn.value.complete is False
    assert isinstance(whole.value, Answer) and whole.value.complete is True

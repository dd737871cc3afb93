"""Answer templates: the layout language, its sandbox and its bounds."""

from __future__ import annotations

import datetime as dt
import time
import tracemalloc
from decimal import Decimal
from typing import Any

import duckdb
import pytest

from astro_tui.agent import templates
from astro_tui.agent.templates import (
    MAX_OUTPUT_CHARS,
    TemplateError,
    f_date,
    f_money,
    f_number,
    f_percent,
    input_names_error,
    numbers_in_text,
    render,
)
from astro_tui.data.results import QueryResult

_CON = duckdb.connect()


def q(sql: str) -> QueryResult:
    return QueryResult(sql, _CON.sql(sql).to_arrow_table(), False, 1.0)


@pytest.fixture(scope="module")
def inputs() -> dict[str, QueryResult]:
    return {
        "rev": q("SELECT 1234567.891::DECIMAL(18,3) AS revenue"),
        "n": q("SELECT 42 AS orders"),
        "top": q("SELECT * FROM (VALUES ('North', 10.5), ('South', 20.25)) t(region, \"total revenue\")"),
        "big": q("SELECT range AS i FROM range(2000)"),
        "empty": q("SELECT 1 AS x WHERE false"),
        "day": q("SELECT DATE '2025-03-04' AS d"),
    }


def test_design_example(inputs: dict[str, QueryResult]) -> None:
    out = render(
        "Revenue in 2025 was {{ rev.value | money }} across {{ n.value | number }} orders.",
        inputs,
    )
    assert out.text == "Revenue in 2025 was $1,234,567.89 across 42 orders."
    assert out.unverified_numbers == ("2025",)  # the year is the model's: "a number typed literally"
    traced = render("Revenue in {{ day.value | date('%Y') }} was {{ rev.value | money }}.", inputs)
    assert (traced.text, traced.unverified_numbers) == ("Revenue in 2025 was $1,234,567.89.", ())


def test_rows_columns_and_row_count(inputs: dict[str, QueryResult]) -> None:
    template = (
        "{% for r in top.rows %}- {{ r.region }}: {{ r['total revenue'] | money }}\n{% endfor %}"
        "{{ top.columns | join(', ') }} / {{ top.row_count }} / {{ top.rows[1].REGION }}"
    )
    out = render(template, inputs)
    assert out.text == "- North: $10.50\n- South: $20.25\nregion, total revenue / 2 / South"


def test_column_of_first_row_and_scalar_printing(inputs: dict[str, QueryResult]) -> None:
    assert render("{{ rev.revenue | number(1) }} {{ n }}", inputs).text == "1,234,567.9 42"


def test_an_input_attribute_never_reads_a_column_of_its_name() -> None:
    """`.value`, `.rows`, `.columns`, `.row_count` are the input's; a column of one of those names is
    reached by item (`top['value']`), and the attribute over it is an error that says so."""
    named = {
        "top": q("SELECT 'science loans' AS label, 7 AS value, 2 AS Rows"),
        "plain": q("SELECT 'science loans' AS label, 7 AS amount"),
    }
    for attribute, column in (("value", "value"), ("rows", "Rows")):
        with pytest.raises(TemplateError) as caught:
            render(f"{{{{ top.{attribute} }}}}", named)
        message = str(caught.value)
        assert f"column named '{column}', so `top.{attribute}` is ambiguous" in message
        assert f"top[{column!r}]" in message and f"top.rows[0][{column!r}]" in message
    with pytest.raises(TemplateError, match=r"top\.rows` is ambiguous"):
        render("{% for r in top.rows %}{{ r.label }}{% endfor %}", named)
    out = render("{{ top['value'] }} {{ top['ROWS'] }} {{ top.label }} {{ top.columns | join(',') }}", named)
    assert out.text == "7 2 science loans label,value,Rows" and out.unverified_numbers == ()
    assert [(s.text, s.sources[0].column) for s in out.spans[:2]] == [("7", "value"), ("2", "Rows")]
    assert render("{{ plain.value }} {{ plain.row_count }}", named).text == "science loans 1"
    with pytest.raises(TemplateError, match="has no column 'value'; use one of its columns: label, amount"):
        render("{{ plain['value'] }}", named)


def test_filters() -> None:
    assert f_number(1234567) == "1,234,567"
    assert f_number(1234.5) == "1,234.50"
    assert f_number(Decimal("0.125"), 1) == "0.1"
    assert f_number(None) == "—"
    assert f_money(-1234.5) == "-$1,234.50"
    assert f_money(Decimal("99.999"), "€", 0) == "€100"
    assert f_percent(0.1234) == "12.3%"
    assert f_percent(Decimal("0.5"), 0) == "50%"
    assert f_date(dt.date(2025, 3, 4), "%b %d, %Y") == "Mar 04, 2025"
    assert f_date("2025-03-04T10:00:00") == "2025-03-04"
    assert f_number(float("nan")) == "nan"
    with pytest.raises(TemplateError, match="number filter needs a number"):
        f_number("north")
    with pytest.raises(TemplateError, match="decimals"):
        f_number(1, 99)
    with pytest.raises(TemplateError, match="date filter needs a date"):
        f_date(12)


def test_null_and_empty_results_render_as_a_dash(inputs: dict[str, QueryResult]) -> None:
    assert render("{{ empty.value }} {{ empty.value | money }} {{ empty.row_count }}", inputs).text == "— — 0"


def test_date_values(inputs: dict[str, QueryResult]) -> None:
    assert render("{{ day.value | date('%d/%m/%Y') }}", inputs).text == "04/03/2025"


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ rev.value.__class__ }}",
        "{{ rev._result }}",
        "{{ top.rows[0]._values }}",
        "{{ rev.rows.__len__() }}",
        "{{ ''.center(1000000000) }}",
        "{{ 'x'.ljust(10**9) }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ lipsum() }}",
        "{{ cycler }}",
        "{{ namespace() }}",
    ],
)
def test_sandbox_escapes_are_refused(inputs: dict[str, QueryResult], template: str) -> None:
    with pytest.raises(TemplateError):
        render(template, inputs)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macros are not available"),
        ("{% include 'x' %}", "include"),
        ("{% import 'x' as y %}", "import"),
        ("{{ 'a' * 1000000000 }}", "longer than"),
        ("{{ big.rows * 100000 }}", "longer than"),
        ("{{ '%999999999s' % 1 }}", "%-formatting"),
        ("{{ 9 ** 100000 }}", "too large"),
        ("{% set a = 'x' * 90000 %}{% set b = a ~ a %}{{ b }}", "longer than"),
        ("{% set a = 'x' * 90000 %}{{ (a + a) | length }}", "longer than"),
        ("{{ big.rows | join('x' * 90000) }}", "join would build"),
        ("{{ ('ab' * 40000) | replace('a', 'a' * 1000) }}", "replace would build"),
    ],
)
def test_bounded_constructs(inputs: dict[str, QueryResult], template: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        render(template, inputs)


@pytest.mark.parametrize(
    "template",
    [
        "{% for a in big.rows %}{% for b in big.rows %}{% endfor %}{% endfor %}",
        "{% set s = big.rows | sort(attribute='i') %}"
        "{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
        "{{ range(10**9) | list | length }}",
        "{% for i in range(100000) %}{{ big.rows | sort(attribute='i') | length }}{% endfor %}",
        "{% for i in range(3000) %}{% for r in big.rows %}{% endfor %}{% endfor %}",
    ],
)
def test_loop_work_is_bounded(inputs: dict[str, QueryResult], template: str) -> None:
    started = time.perf_counter()
    with pytest.raises(TemplateError, match=r"too much work|longer than"):
        render(template, inputs)
    assert time.perf_counter() - started < 3.0


def test_output_is_bounded(inputs: dict[str, QueryResult]) -> None:
    with pytest.raises(TemplateError, match=f"longer than {MAX_OUTPUT_CHARS:,} characters"):
        render("{% for i in range(50000) %}one line of text\n{% endfor %}", inputs)


def test_a_normal_loop_over_many_rows_is_fine(inputs: dict[str, QueryResult]) -> None:
    out = render("{% for r in big.rows %}{% if loop.last %}{{ r.i }}{% endif %}{% endfor %}", inputs)
    assert out.text == "1999"


def test_missing_input_names_the_inputs(inputs: dict[str, QueryResult]) -> None:
    with pytest.raises(TemplateError, match=r"'revenue' is undefined; the inputs are: rev, n, top"):
        render("{{ revenue.value }}", inputs)


def test_missing_column_names_the_columns(inputs: dict[str, QueryResult]) -> None:
    with pytest.raises(TemplateError, match="no column 'amount'; its columns are: region, total revenue"):
        render("{% for r in top.rows %}{{ r.amount }}{% endfor %}", inputs)
    with pytest.raises(TemplateError, match="no attribute or column 'total'"):
        render("{{ rev.total }}", inputs)


def test_syntax_errors_carry_the_line(inputs: dict[str, QueryResult]) -> None:
    with pytest.raises(TemplateError, match="syntax error on line 2"):
        render("ok\n{% for r in top.rows %}", inputs)


def test_literal_numbers_are_reported(inputs: dict[str, QueryResult]) -> None:
    out = render(
        "Revenue grew 12% to {{ rev.value | money }}, about 3 times the 1,500 of Q3 2024 "
        "(since 2024-01-01 at 10:30). {{ 1234 }} {{ '99 red' }} {% set k = 7 %}{{ k }} "
        "{{ top.rows | length }} {{ rev.value | number(2) }} {{ top.rows[0].region }}",
        inputs,
    )
    assert out.unverified_numbers == ("12%", "3", "1,500", "2024", "2024-01-01", "10:30", "1234", "99", "7")


def test_list_markers_and_labels_are_numbers_the_model_typed() -> None:
    """No label exemption: the person reads each as a number, and none came from a cell."""
    assert numbers_in_text("1. North\n2) South\nTop 5 in H1, p95 and the 2nd df_2") == [
        "1", "2", "5", "1", "95", "2nd", "2",
    ]  # fmt: skip
    assert numbers_in_text("$1,234.50 and -3.5 and 40 %") == ["$1,234.50", "-3.5", "40 %"]


def test_input_names_must_be_identifiers() -> None:
    assert input_names_error(["rev", "by_region"]) is None
    problem = input_names_error(["total revenue", "1st", "for", "_x"])
    assert problem is not None
    assert "'total revenue'" in problem and "'1st'" in problem and "'for'" in problem and "'_x'" in problem


def test_batch_is_bounded_before_it_allocates(inputs: dict[str, QueryResult]) -> None:
    """`batch` pads its last batch to the batch size: a size of 3*10**7 used to build 240 MB first."""
    tracemalloc.start()
    try:
        with pytest.raises(TemplateError, match="batch needs a whole number"):
            render("{{ [1] | batch(3*10**7, 0) | first | length }}", inputs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000
    out = render("{% for row in top.rows | batch(3, '-') %}{{ row | length }}{% endfor %}", inputs)
    assert out.text == "3"
    with pytest.raises(TemplateError, match="too much work"):
        render("{% for i in range(10) %}{{ [i] | batch(90000, 0) | first | length }}{% endfor %}", inputs)
    with pytest.raises(TemplateError, match="too much work"):  # constants are folded while compiling
        render("{{ [1] | batch(90000, 0) | first | length }}" * 6, inputs)


def test_a_template_is_parsed_once(inputs: dict[str, QueryResult], monkeypatch: pytest.MonkeyPatch) -> None:
    env = templates._environment()
    calls: list[str] = []
    original = env._parse

    def counting(source: str, name: str | None, filename: str | None) -> Any:
        calls.append(source)
        return original(source, name, filename)

    monkeypatch.setattr(env, "_parse", counting)
    out = render("{{ n.value }} orders, {{ 1234 }}", inputs)
    assert out.text == "42 orders, 1234" and out.unverified_numbers == ("1234",)
    assert len(calls) == 1

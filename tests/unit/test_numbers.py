"""The numbers a reader sees in an answer, and which lie within a span astro rendered from a cell."""

from __future__ import annotations

import duckdb
import pytest

from astro_tui.agent.numbers import numbers_in_text, typed_numbers
from astro_tui.agent.templates import render
from astro_tui.data.results import QueryResult


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Berlin has 2 customers and Paris has 1.", ["2", "1"]),
        ("$42M in revenue, 42k customers, 3x growth, 42kg, 1e6 visits", ["$42M", "42k", "3x", "42kg", "1e6"]),
        ("½ late, ④② late, ٤٢ late", ["½", "④②", "٤٢"]),
        ("in 1999 at 12:30 on 2024-01-05", ["1999", "12:30", "2024-01-05"]),
        ("forty-two shipped, one hundred and five left", ["forty-two", "one hundred and five"]),
        ("-5 and $ 3.50 and 42 % and −7", ["-5", "$ 3.50", "42 %", "−7"]),
        (
            "100,100 and 100<!-- -->100 and 1**00** and 1\u200b00",
            ["100,100", "100<!-- -->100", "1**00", "1\u200b00"],
        ),
        ("1 000 people, 2 3 apart, 2, 3 listed", ["1 000", "2", "3", "2", "3"]),
        ("Q3 and p95 and df_2", ["3", "95", "2"]),
        ("&#52;&#50; late, 1&#8203;00 and &frac12; but R&amp;D", ["&#52;&#50;", "1&#8203;00", "&frac12;"]),
        ("someone often attends, nothing here", []),
    ],
)
def test_every_number_like_run_is_found_with_what_changes_its_meaning(text: str, numbers: list[str]) -> None:
    assert numbers_in_text(text) == numbers


def test_a_run_is_traced_only_when_it_lies_within_one_span() -> None:
    text = "100 and 100100 and 100 k"
    spans = [(0, 3), (8, 11), (11, 14), (19, 22)]
    assert typed_numbers(text, spans) == ["100100"]  # two spans side by side are no cell's
    assert typed_numbers("42k", [(0, 2)]) == ["42k"]  # a scale typed beside a traced 42
    assert typed_numbers("Berlin 2", [(0, 8)]) == []


def result(sql: str, *, truncated: bool = False) -> QueryResult:
    return QueryResult(sql, duckdb.connect().sql(sql).to_arrow_table(), truncated, 1.0)


@pytest.mark.parametrize(
    "template",
    [
        "{{ n.value }} orders",
        "{{ n.value|number }} orders, {{ (n.value / n.value)|percent }} of them",
        "{{ d.value|date('%Y') }} was the year, {{ d.value }} the day",
        "Q{{ q.value }} led",
        "{% for r in t.rows %}{{ loop.index }}. {{ r.city }} has {{ r.n }}\n{% endfor %}",
        "{{ t.rows|length }} cities",
    ],
)
def test_values_rendered_from_cells_are_verified(template: str) -> None:
    inputs = {
        "n": result("SELECT 1234 AS n"),
        "d": result("SELECT DATE '2024-01-05' AS d"),
        "q": result("SELECT 3 AS q"),
        "t": result("SELECT * FROM (VALUES ('Berlin', 2), ('Paris', 1)) v(city, n)"),
    }
    rendered = render(template, inputs)
    assert rendered.unverified_numbers == (), rendered.text


@pytest.mark.parametrize(
    ("template", "typed"),
    [
        ("{{ n.value * 100 }}", "123400"),  # a literal operand: use |percent
        ("{{ n.value|string|truncate(3, true, '99', 0) }}", "199"),
        ("{{ 'Berlin'|int(42) }} and {{ c.value|int(42) }}", "42"),  # the default, not the cell
        ("{% for x in range(3) %}{{ loop.index }} {% endfor %}", "1"),
        ("{{ n.value }}-{{ n.value }}", "1234-1234"),
        ("{{ n.value|string|replace('3', '') }}", "124"),  # digits cut out of a cell
        ("{{ (n.value|number)[:1] }}", "1"),
        ("{{ (n.value|number).split(',')|last }}", "234"),
        ("{{ (n.value|string).lstrip('1') }}", "234"),
    ],
)
def test_values_the_template_made_from_literals_are_typed(template: str, typed: str) -> None:
    inputs = {"n": result("SELECT 1234 AS n"), "c": result("SELECT 'Berlin' AS c")}
    rendered = render(template, inputs)
    assert typed in rendered.unverified_numbers, (rendered.text, rendered.unverified_numbers)

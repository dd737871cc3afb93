"""Fuzzing the four places untrusted text is parsed: no input may raise anything unplanned.

- the metadata shell (`parse`, `Shell.run`): only `ShellSyntaxError` from the parser, and
  `run` always returns a capped `ShellResult`; no command may fall into the shell's
  catch-all ("cat: TypeError: ...");
- tool-argument validation (`ToolRegistry.parse` then `invoke`, as the loop calls them):
  parsing never raises, and no tool may fall into the registry's catch-all ("run_sql
  failed: TypeError: ..."), which would mean a failure the product did not plan for;
- the template renderer: a `Rendered` or a `TemplateError`, nothing else;
- the stream accumulator: any sequence of JSON-object chunks gives a `Completion`.

Bounded for CI: `FUZZ_EXAMPLES` is how many examples each target runs (SECURITY.md
quotes these figures; `test_security_doc.py` checks them), no deadline, no example
database written into the working tree.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astro_tui.agent.loop import Agent
from astro_tui.agent.registry import ParsedCall, ToolOutcome
from astro_tui.agent.templates import Rendered, TemplateError, render
from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell, ShellResult
from astro_tui.catalog.syntax import ShellSyntaxError, parse
from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.results import QueryResult
from astro_tui.llm.accumulator import DeltaAccumulator
from astro_tui.llm.messages import Completion
from tests.support.security_figures import FUZZ_EXAMPLES
from tests.support.sql_corpus import build_watched

FUZZ = settings(
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def fuzz(target: str) -> settings:
    return settings(FUZZ, max_examples=FUZZ_EXAMPLES[target])


# What a catch-all handler prints: "name: TypeError: ..." (shell) or "name failed: KeyError: ..." (registry).
SHELL_CATCH_ALL = re.compile(r"^\S+: [A-Za-z_.]*(Error|Exception|error|Warning): ", re.M)
REGISTRY_CATCH_ALL = re.compile(r"^\w+ failed: \w+: ")


class Fixture:
    def __init__(self, db: Database, tmp: Path) -> None:
        self.db = db
        self.catalog = load_catalog(db)
        self.agent = Agent(db, self.catalog, db.settings, state_dir=tmp / "state")
        self.loop = asyncio.new_event_loop()
        self.results: dict[str, QueryResult] = {
            "t": db.execute("SELECT * FROM sales.orders ORDER BY id LIMIT 5"),
            "n": db.execute("SELECT count(*) AS n FROM sales.orders"),
            "e": db.execute("SELECT * FROM sales.orders WHERE false"),
        }


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fixture]:
    root = tmp_path_factory.mktemp("fuzz")
    db = Database.open([str(build_watched(root / "data"))], Settings(query_timeout_s=2, row_cap=1_000))
    fixture = Fixture(db, root)
    yield fixture
    fixture.loop.close()
    db.close()


def ran(counter: list[int]) -> None:
    counter[0] += 1


# --------------------------------------------------------------------------- the shell

SHELL_TOKENS = [
    "ls", "ls -l", "cat", "head", "head -n 2", "tail", "tree", "find", "-name", "grep", "grep -rin",
    "grep -E", "-e", "wc -l", "sort -rn", "uniq -c", "sample", "sample -c region", "echo", "xargs",
    "help", "cd", "pwd", "less", "ll", "/", "/sales", "/sales/orders.table", "/sales/big.view",
    "..", ".", "~", "*", "*.table", "[", "]", "?", "|", "||", "&&", ";", "&", ">", ">>", "<", "2>",
    "2>&1", "/dev/null", "'", '"', "\\", "$", "`", "(", ")", "{", "}", "#", "-", "--", "-n",
    "-99999999999999999999", "0", "region", "north", "'a b'", '"x y"', "\x1b[2J", "\u202e", "\x00",
]  # fmt: skip


def shell_lines() -> st.SearchStrategy[str]:
    words = st.one_of(st.sampled_from(SHELL_TOKENS), st.text(max_size=8))
    return st.one_of(
        st.text(max_size=60),
        st.lists(words, max_size=10).map(" ".join),
        st.lists(words, max_size=10).map("".join),
    )


def test_fuzz_shell(fx: Fixture) -> None:
    count = [0]
    shell = Shell(fx.catalog, fx.db)

    @fuzz("shell")
    @given(line=shell_lines())
    def check(line: str) -> None:
        ran(count)
        try:
            parse(line)
        except ShellSyntaxError as exc:
            assert str(exc)
        result = shell.run(line)
        assert isinstance(result, ShellResult) and isinstance(result.output, str)
        assert 0 <= result.exit_code < 256
        assert len(result.output) <= shell.max_output_chars + 200
        assert not SHELL_CATCH_ALL.search(result.output), result.output
        shell.cwd = "/"

    check()
    assert count[0] >= FUZZ_EXAMPLES["shell"]


# --------------------------------------------------------------------------- tool arguments

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
SQL_SNIPPETS = [
    "SELECT 1", "SELECT * FROM sales.orders", "SELECT region, count(*) FROM sales.orders GROUP BY 1",
    "-- about\nSELECT amount FROM sales.orders LIMIT 3", "SELECT", "DROP TABLE sales.orders",
    "SELECT * FROM nope", "SELECT 1/0", "SELECT 'a' || 1", "SELECT [1,2][5]", "SELECT NULL",
    "SELECT {'a': 1} AS s", "SELECT now()", "SELECT 1e400", "SELECT '\ud800'",
]  # fmt: skip
TEMPLATE_BITS = [
    "{{ t.value }}", "{{ n.value | number }}", "{{ t.rows[0].region }}",
    "{% for r in t.rows %}{{ r.amount | money }}{% endfor %}", "{{ x.value }}", "{{", "}}", "{% if %}",
    "{{ t.value | date }}", "{{ t.value | percent(30) }}", "plain text 42",
]  # fmt: skip


def tool_arguments() -> st.SearchStrategy[tuple[str, str]]:
    """(tool name, raw arguments text): plausible calls with fuzzed values, and garbage."""
    sql = st.one_of(st.sampled_from(SQL_SNIPPETS), st.text(max_size=40))
    template = st.one_of(st.sampled_from(TEMPLATE_BITS), st.text(max_size=40))
    names = st.one_of(st.sampled_from(["t", "n", "rev", "_x", "for", "1a", ""]), st.text(max_size=6))
    value = st.one_of(JSON_VALUES, sql)
    plausible = st.one_of(
        st.tuples(st.just("run_sql"), st.fixed_dictionaries({"sql": sql})),
        st.tuples(st.just("shell"), st.fixed_dictionaries({"command": shell_lines()})),
        st.tuples(
            st.just("show_table"),
            st.fixed_dictionaries(
                {
                    "table_names": st.one_of(
                        st.lists(
                            st.sampled_from(["sales.orders", "orders", "nope", "x.y.z"])
                            | st.text(max_size=10),
                            max_size=3,
                        ),
                        value,
                    )
                }
            ),
        ),
        st.tuples(
            st.just("search_metadata"),
            st.fixed_dictionaries(
                {"queries": st.lists(st.text(max_size=12), max_size=2) | value},
                optional={"keywords": st.lists(st.text(max_size=12), max_size=2)},
            ),
        ),
        st.tuples(st.just("update_context"), st.fixed_dictionaries({"note": st.text(max_size=40) | value})),
        st.tuples(st.just("read_context"), st.dictionaries(st.text(max_size=5), value, max_size=2)),
        st.tuples(
            st.just("submit_result"),
            st.fixed_dictionaries(
                {"inputs": st.dictionaries(names, sql, max_size=3) | value, "template": template},
                optional={"title": st.text(max_size=10) | value},
            ),
        ),
        st.tuples(
            st.just("submit_observation"),
            st.fixed_dictionaries(
                {
                    "observation": template,
                    "supporting_queries": st.dictionaries(names, sql, max_size=3) | value,
                }
            ),
        ),
        st.tuples(
            st.just("render_chart"),
            st.fixed_dictionaries(
                {
                    "sql": sql,
                    "kind": st.sampled_from(["bar", "line", "scatter", "hist", "pie"]),
                    "x": st.sampled_from(["region", "amount", "id", "nope"]) | st.text(max_size=5),
                    "y": st.one_of(
                        st.sampled_from(["amount", "id", "region"]),
                        st.lists(st.sampled_from(["amount", "id", "nope"]), max_size=3),
                        value,
                    ),
                    "title": st.text(max_size=10),
                }
            ),
        ),
        st.tuples(st.just("send_message"), st.fixed_dictionaries({"message": st.text(max_size=40) | value})),
    ).map(lambda pair: (pair[0], json.dumps(pair[1])))
    garbage = st.tuples(
        st.one_of(st.sampled_from(["run_sql", "shell", "submit_result", "nope", ""]), st.text(max_size=10)),
        st.one_of(
            st.text(max_size=40), JSON_VALUES.map(json.dumps), st.just('{"sql": "SELECT 1"'), st.just("null")
        ),
    )
    return st.one_of(plausible, garbage)  # type: ignore[arg-type]


def test_fuzz_tool_arguments(fx: Fixture) -> None:
    count = [0]
    registry = fx.agent.registry

    @fuzz("tool arguments")
    @given(call=tool_arguments())
    def check(call: tuple[str, str]) -> None:
        ran(count)
        name, raw = call
        parsed = registry.parse("call_1", name, raw)
        assert isinstance(parsed, ParsedCall)
        json.loads(parsed.replay_arguments)  # always safe to put back in the history
        if parsed.error is None:
            assert parsed.arguments is not None and parsed.spec is not None
        outcome = fx.loop.run_until_complete(registry.invoke(parsed))
        assert isinstance(outcome, ToolOutcome) and isinstance(outcome.content, str)
        assert not REGISTRY_CATCH_ALL.match(outcome.content), outcome.content

    check()
    assert count[0] >= FUZZ_EXAMPLES["tool arguments"]


# --------------------------------------------------------------------------- templates

TEMPLATE_TOKENS = [
    "{{", "}}", "{%", "%}", "{#", "#}", " for ", " in ", " endfor ", " if ", " else ", " endif ", " set ",
    " = ", "t", "n", "e", "t.rows", "t.value", "n.value", "e.value", "t.columns", "t.row_count", "r",
    "r.region", "r.amount", "loop.index", ".", "|", " number", " money", " percent", " date", "(", ")",
    "[", "]", ",", "'%Y'", "2", "-1", "1e308", "10**9", " ~ ", " + ", " * ", " ** ", " // ", " / ",
    "'x'", "None", "true", "join(',')", "replace('a','bb')", "length", "sum", "sort", "upper", "list",
    "default('-')", "round", "int", "__class__", "__init__", "mro", "range(3)", "range(10**9)",
    "lipsum", "self", "cycler", "namespace", "attr('x')", "map(attribute='region')", "first",
    "batch(2)", "groupby('region')", "dictsort", "\n", " ", "text ", "42", "\x1b", "\ud800",
]  # fmt: skip


def templates() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=60),
        st.lists(st.sampled_from(TEMPLATE_TOKENS), max_size=25).map("".join),
        st.lists(st.one_of(st.sampled_from(TEMPLATE_TOKENS), st.text(max_size=4)), max_size=25).map("".join),
    )


def test_fuzz_templates(fx: Fixture) -> None:
    count = [0]

    @fuzz("templates")
    @given(template=templates())
    def check(template: str) -> None:
        ran(count)
        try:
            rendered = render(template, fx.results)
        except TemplateError as exc:
            assert str(exc)
        else:
            assert isinstance(rendered, Rendered) and isinstance(rendered.text, str)

    check()
    deep = "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"  # found while writing this: a RecursionError
    with pytest.raises(TemplateError, match="nesting too deep"):
        render(deep, fx.results)
    assert count[0] >= FUZZ_EXAMPLES["templates"]


# --------------------------------------------------------------------------- the stream accumulator


# Wrong-typed fields: a leaf or a flat list or object is enough, and far cheaper to draw.
ODD = st.one_of(
    JSON_LEAVES,
    st.lists(JSON_LEAVES, max_size=2),
    st.dictionaries(st.text(max_size=4), JSON_LEAVES, max_size=2),
)


def call_deltas() -> st.SearchStrategy[dict[str, Any]]:
    anything = ODD
    function = st.fixed_dictionaries(
        {},
        optional={
            "name": st.sampled_from(["run_sql", "shell", "", "run_"]) | anything,
            "arguments": st.sampled_from(['{"sql": ', '"SELECT 1"', "}", "{}", ""]) | anything,
        },
    )
    return st.fixed_dictionaries(
        {},
        optional={
            "index": st.integers(min_value=-2, max_value=3) | anything,
            "id": st.sampled_from(["call_a", "call_b", ""]) | anything,
            "type": st.just("function") | anything,
            "function": function | anything,
        },
    )


def stream_chunks() -> st.SearchStrategy[list[dict[str, Any]]]:
    anything = ODD
    delta = st.fixed_dictionaries(
        {},
        optional={
            "role": st.just("assistant") | anything,
            "content": st.text(max_size=10) | anything,
            "reasoning_content": st.text(max_size=10) | anything,
            "reasoning": st.text(max_size=10) | anything,
            "refusal": st.text(max_size=10) | anything,
            "tool_calls": st.lists(call_deltas() | anything, max_size=3) | anything,
            "function_call": st.fixed_dictionaries({}, optional={"name": anything, "arguments": anything})
            | anything,
        },
    )
    choice = st.fixed_dictionaries(
        {},
        optional={
            "index": st.sampled_from([0, 0, 1]) | anything,
            "delta": delta | anything,
            "finish_reason": st.sampled_from(["stop", "tool_calls", "length", None]) | anything,
        },
    )
    usage = st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": anything,
            "completion_tokens": anything,
            "total_tokens": anything,
            "prompt_tokens_details": anything,
        },
    )
    chunk = st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "choices": st.lists(choice, max_size=2) | anything,
                "usage": usage | anything,
                "id": anything,
            },
        ),
        st.dictionaries(st.text(max_size=8), anything, max_size=3),
    )
    return st.lists(chunk, max_size=8)


def test_fuzz_stream_accumulator() -> None:
    count = [0]

    @fuzz("stream chunks")
    @given(chunks=stream_chunks())
    def check(chunks: list[dict[str, Any]]) -> None:
        ran(count)
        acc = DeltaAccumulator()
        for chunk in chunks:
            assert isinstance(acc.feed(chunk), list)
            assert isinstance(acc.finish(), Completion)  # a snapshot at any point
        completion = acc.finish()
        assert isinstance(completion.text, str)
        for call in completion.tool_calls:
            assert isinstance(call.id, str) and call.id and isinstance(call.name, str)
            assert isinstance(call.arguments, str)
        assert len({c.id for c in completion.tool_calls}) == len(completion.tool_calls)

    check()
    assert count[0] >= FUZZ_EXAMPLES["stream chunks"]

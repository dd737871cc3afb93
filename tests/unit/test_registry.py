"""The tool registry: schemas from signatures, and every way a call can be wrong."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Annotated, Literal

import pytest
from pydantic import Field

from astro_tui.agent.registry import ToolError, ToolRegistry, ToolReturn, tool
from astro_tui.data.errors import QueryError


def lookup(
    table_names: Annotated[list[str], Field(description="Tables to look up.")],
    limit: int = 5,
) -> str:
    """Look tables up.

    Second paragraph of the description.
    """
    return f"{','.join(table_names)}:{limit}"


async def chart(
    kind: Literal["bar", "line"],
    y: str | list[str],
    inputs: dict[str, str],
    title: str | None = None,
) -> ToolReturn:
    """Draw something."""
    await asyncio.sleep(0)
    return ToolReturn(content=f"{kind}:{y}:{sorted(inputs)}:{title}", value={"drawn": True})


def broken() -> str:
    """Always fails."""
    raise RuntimeError("boom\nsecond line")


def refuses(sql: str) -> str:
    """Fails the way tools fail on purpose."""
    if sql == "data":
        raise QueryError("Catalog Error: Table with name nope does not exist!")
    raise ToolError("refuses: say please")


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.add(lookup)
    reg.add(tool(output=True)(chart))
    reg.add(broken)
    reg.add(refuses)
    return reg


def test_schema_from_signature_docstring_and_field(registry: ToolRegistry) -> None:
    schemas = {s["function"]["name"]: s["function"] for s in registry.schemas()}
    look = schemas["lookup"]
    assert look["description"] == "Look tables up. Second paragraph of the description."
    props = look["parameters"]["properties"]
    assert props["table_names"] == {
        "description": "Tables to look up.",
        "items": {"type": "string"},
        "type": "array",
    }
    assert props["limit"]["default"] == 5
    assert look["parameters"]["required"] == ["table_names"]
    assert "title" not in json.dumps(look)
    draw = schemas["chart"]["parameters"]
    assert draw["properties"]["kind"]["enum"] == ["bar", "line"]
    assert draw["properties"]["inputs"]["additionalProperties"] == {"type": "string"}
    assert set(draw["required"]) == {"kind", "y", "inputs"}
    assert registry["chart"].output and not registry["lookup"].output


async def test_valid_sync_call_runs_in_a_thread(registry: ToolRegistry) -> None:
    seen: list[str] = []

    def where(x: int) -> str:
        """Report the thread."""
        seen.append(threading.current_thread().name)
        return str(x * 2)

    registry.add(where)
    outcome = await registry.invoke(registry.parse("c1", "where", '{"x": 21}'))
    assert outcome.ok and outcome.content == "42"
    assert seen and seen[0] != threading.main_thread().name


async def test_async_tool_is_awaited_and_returns_value(registry: ToolRegistry) -> None:
    call = registry.parse(
        "c1", "chart", json.dumps({"kind": "bar", "y": ["a", "b"], "inputs": {"q": "select 1"}})
    )
    assert call.error is None and call.is_output
    outcome = await registry.invoke(call)
    assert outcome.ok
    assert outcome.content == "bar:['a', 'b']:['q']:None"
    assert outcome.value == {"drawn": True}


async def test_invalid_json_is_an_error_result_and_never_replayed(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "lookup", '{"table_names": ["a"')
    assert call.arguments is None
    assert call.replay_arguments == "{}"
    assert "not valid JSON" in (call.error or "")
    outcome = await registry.invoke(call)
    assert not outcome.ok and "not valid JSON" in outcome.content


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "42", "null"])
def test_arguments_must_be_an_object(registry: ToolRegistry, raw: str) -> None:
    call = registry.parse("c1", "lookup", raw)
    assert call.replay_arguments == "{}"
    assert "must be a JSON object" in (call.error or "")


def test_empty_arguments_mean_no_arguments(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "broken", "")
    assert call.error is None and call.arguments == {}
    assert call.replay_arguments == "{}"


async def test_unknown_tool_lists_the_tools(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "drop_table", '{"x": 1}')
    outcome = await registry.invoke(call)
    assert not outcome.ok
    assert "unknown tool 'drop_table'" in outcome.content
    assert "lookup" in outcome.content and "chart" in outcome.content
    assert json.loads(call.replay_arguments) == {"x": 1}


def test_missing_arguments_are_listed_by_name(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "chart", '{"title": "t"}')
    assert call.error is not None
    assert "missing required arguments: kind, y, inputs" in call.error
    assert "chart(kind, y, inputs, title)" in call.error


def test_wrong_types_name_the_argument(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "chart", json.dumps({"kind": "pie", "y": "v", "inputs": {"q": 1}}))
    assert call.error is not None
    assert "'kind'" in call.error and "'bar' or 'line'" in call.error and '"pie"' in call.error
    assert "'inputs.q'" in call.error


def test_unknown_arguments_are_named_alongside_missing_ones(registry: ToolRegistry) -> None:
    call = registry.parse("c1", "lookup", '{"tables": ["a"]}')
    assert call.error is not None
    assert "missing required argument: table_names" in call.error
    assert "unknown argument: tables" in call.error


def test_lenient_collections(registry: ToolRegistry) -> None:
    bare = registry.parse("c1", "lookup", '{"table_names": "sales.orders"}')
    assert bare.arguments == {"table_names": ["sales.orders"], "limit": 5}
    encoded = registry.parse("c1", "lookup", json.dumps({"table_names": '["a", "b"]'}))
    assert encoded.arguments is not None and encoded.arguments["table_names"] == ["a", "b"]
    mapping = registry.parse(
        "c1", "chart", json.dumps({"kind": "bar", "y": "v", "inputs": '{"q": "select 1"}'})
    )
    assert mapping.error is None and mapping.arguments is not None
    assert mapping.arguments["inputs"] == {"q": "select 1"}
    assert mapping.arguments["y"] == "v"


async def test_exception_inside_the_tool_becomes_a_result(registry: ToolRegistry) -> None:
    outcome = await registry.invoke(registry.parse("c1", "broken", "{}"))
    assert not outcome.ok
    assert outcome.content == "broken failed: RuntimeError: boom second line"


async def test_tool_and_data_errors_are_passed_as_is(registry: ToolRegistry) -> None:
    plain = await registry.invoke(registry.parse("c1", "refuses", '{"sql": "x"}'))
    assert not plain.ok and plain.content == "refuses: say please"
    data = await registry.invoke(registry.parse("c1", "refuses", '{"sql": "data"}'))
    assert not data.ok and data.content.startswith("Catalog Error")


async def test_long_output_is_capped(registry: ToolRegistry) -> None:
    def huge() -> str:
        """Too much."""
        return "x" * 50_000

    registry.add(huge)
    outcome = await registry.invoke(registry.parse("c1", "huge", "{}"))
    assert len(outcome.content) < 13_000 and "output cut" in outcome.content


async def test_cancellation_propagates(registry: ToolRegistry) -> None:
    started = asyncio.Event()

    async def slow() -> str:
        """Never finishes."""
        started.set()
        await asyncio.sleep(60)
        return "never"

    registry.add(slow)
    task = asyncio.create_task(registry.invoke(registry.parse("c1", "slow", "{}")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

"""Tool calls a server returned as text: the model called a tool, the server did not parse it.

llama.cpp without ``--jinja``, vLLM without a tool-call parser and some Ollama
templates pass the model's call through as content: a JSON object with a name
and arguments, in a code fence, between ``<tool_call>`` tags (Hermes, Qwen) or
after ``[TOOL_CALLS]`` (Mistral). A reply is read as calls only when it is
nothing else: every object names a tool the agent has and carries an object of
arguments. Prose with JSON inside stays prose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from astro_tui.llm.messages import ToolCallRequest

_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_OPEN_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_SQL_BLOCK = re.compile(r"```sql[ \t]*\n(.*?)(?:```|$)", re.DOTALL | re.IGNORECASE)


def sql_block(text: str) -> str | None:
    """The query in the first ```sql block of `text` (a small model's way of calling run_sql)."""
    found = _SQL_BLOCK.search(text)
    sql = found.group(1).strip() if found else ""
    return sql or None


def recover_tool_calls(
    text: str, tools: Collection[str], *, in_prose: bool = False
) -> list[ToolCallRequest] | None:
    """The calls written in `text`, or None when it is not unambiguously only calls.

    `in_prose` is for the text protocol, where the prompt asked for `<tool_call>` blocks: there
    the blocks count wherever they are (a small model writes a sentence first, or stops before
    the closing tag), and the prose around them is dropped."""
    body = text.strip()
    if not body:
        return None
    if in_prose and "<tool_call>" in body:
        objects_in_prose: list[Any] = []
        for part in _OPEN_TAGGED.findall(body):
            parsed = _json(part.strip())
            if parsed is None:
                return None
            objects_in_prose += parsed if isinstance(parsed, list) else [parsed]
        return _calls(objects_in_prose, tools)
    if body.startswith("<tool_call>"):
        found = _TAGGED.findall(body)
        if not found or _TAGGED.sub("", body).strip():
            return None
        objects: list[Any] = []
        for part in found:
            parsed = _json(part)
            if parsed is None:
                return None
            objects += parsed if isinstance(parsed, list) else [parsed]
    else:
        body = body.removeprefix(_MISTRAL).strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        parsed = _json(body)
        if parsed is None:
            return None
        objects = parsed if isinstance(parsed, list) else [parsed]
    return _calls(objects, tools)


def _calls(objects: list[Any], tools: Collection[str]) -> list[ToolCallRequest] | None:
    calls: list[ToolCallRequest] = []
    for position, item in enumerate(objects):
        call = _call(item, tools, position)
        if call is None:
            return None
        calls.append(call)
    return calls or None


def _json(text: str) -> Any:
    if not text.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _call(item: Any, tools: Collection[str], position: int) -> ToolCallRequest | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):  # the OpenAI wire shape, written out
        item = item["function"]
    name = item.get("name")
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(name, str) or name not in tools or not isinstance(arguments, dict):
        return None
    if set(item) - {"name", "arguments", "parameters", "id", "type"}:
        return None
    text = json.dumps(arguments, ensure_ascii=False)
    return ToolCallRequest(f"text_call_{position}", name, text, position)

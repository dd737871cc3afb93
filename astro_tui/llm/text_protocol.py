"""Tools carried in the prompt text, for servers that cannot carry them in the request.

llama-cpp-python's stock server (`--chat_format chatml`) renders plain messages
only: with `stream: true` it drops `tools`, refuses `tool_choice: "auto"`, never
renders `role: tool` messages and answers 500 to `"content": null`. Written the
way Qwen2.5's and Hermes' own chat templates write them (the tool list in the
system message, each call as a `<tool_call>` block in the assistant's text, each
result as a `<tool_response>` block in a user message), the request needs none of
those features and the model sees the prompt its template would have produced.
The calls come back as text and are read by `text_tool_calls`.
"""

from __future__ import annotations

import json
from typing import Any

TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def tools_text(tools: list[dict[str, Any]]) -> str:
    lines = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return f"{TOOLS_HEADER}{lines}{TOOLS_FOOTER}"


def _call_text(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        arguments: Any = json.loads(raw)
    except ValueError:
        arguments = raw  # replayed as the model sent it; the tool result says what was wrong
    body = json.dumps({"name": function.get("name", ""), "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _written_out(message: dict[str, Any]) -> bool:
    """Whether the reply's text already holds every call (a query in a ```sql block, read as a
    run_sql call): it is replayed as the model wrote it."""
    content = message.get("content") or ""
    for call in message["tool_calls"]:
        try:
            sql = json.loads((call.get("function") or {}).get("arguments") or "{}").get("sql")
        except (ValueError, AttributeError):
            return False
        if not isinstance(sql, str) or not sql or sql not in content:
            return False
    return bool(content)


def as_text_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with only system, user and assistant messages of string content."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "system" and tools and not out:
            out.append({"role": "system", "content": f"{content}\n\n{tools_text(tools)}"})
        elif role == "assistant" and message.get("tool_calls") and _written_out(message):
            out.append({"role": "assistant", "content": content})
        elif role == "assistant" and message.get("tool_calls"):
            parts = [content.strip()] if content.strip() else []
            parts += [_call_text(call) for call in message["tool_calls"]]
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            block = f"<tool_response>\n{content}\n</tool_response>"
            previous = out[-1] if out else None
            if previous is not None and previous.get("_tool_results"):
                previous["content"] += f"\n{block}"
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
        else:
            out.append({"role": role, "content": content})
    if tools and (not out or out[0]["role"] != "system"):
        out.insert(0, {"role": "system", "content": tools_text(tools)})
    for message in out:
        message.pop("_tool_results", None)
    return out

"""Turns streamed chat-completion chunks into deltas and one final Completion.

Servers that claim OpenAI compatibility disagree on how tool calls stream: Ollama
sends each call whole, OpenAI and vLLM send argument fragments, some omit
``index`` or ``id``, some repeat them on every chunk, some say "stop" after
calling tools. The accumulator decides by what actually arrived.

It works on the parsed JSON dicts (the client streams those: building the SDK's
pydantic chunk objects costs ~100x more per token than this whole module) and
also accepts SDK ``ChatCompletionChunk`` objects, converted on the way in. Any
field may be missing or of the wrong type; such fields are ignored.
"""

from __future__ import annotations

import json
from typing import Any

from astro_tui.llm.messages import (
    Completion,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallRequest,
    Usage,
)
from astro_tui.llm.think_tags import ThinkSplitter, split_unopened

_LEGACY_FUNCTION_CALL = -1


class _Call:
    """A tool call being assembled; fragments are joined once, at the end."""

    __slots__ = ("announced", "id", "name", "parts", "position", "size")

    def __init__(self, position: int) -> None:
        self.id: str | None = None
        self.name: str = ""
        self.parts: list[str] = []
        self.size = 0
        self.position = position
        self.announced = False


class DeltaAccumulator:
    """Feed one chunk at a time; ``finish()`` may be called at any point for a snapshot."""

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_finish_reason",
        "_last",
        "_reasoning",
        "_text",
        "_think",
        "_usage",
    )

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}
        self._last: _Call | None = None
        self._finish_reason: str | None = None
        self._usage: Any = None
        self._think = ThinkSplitter()

    @property
    def started(self) -> bool:
        """Whether any content (text, reasoning or a tool call) has arrived."""
        return bool(self._text or self._reasoning or self._calls)

    def feed(self, chunk: Any) -> list[StreamDelta]:
        """Take one chunk (parsed JSON dict, or an SDK ``ChatCompletionChunk``)."""
        if type(chunk) is not dict:
            chunk = as_dict(chunk)
        usage = chunk.get("usage")
        if usage:
            self._usage = usage
        choices = chunk.get("choices")
        if not choices or type(choices) is not list:
            return []
        out: list[StreamDelta] = []
        for choice in choices:
            if type(choice) is not dict or choice.get("index"):
                continue  # n > 1 is never requested; ignore stray alternatives
            delta = choice.get("delta")
            if delta and type(delta) is dict:
                self._feed_delta(delta, out)
            reason = choice.get("finish_reason")
            if reason and isinstance(reason, str):
                self._finish_reason = reason
        return out

    def _feed_delta(self, delta: dict[str, Any], out: list[StreamDelta]) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning and isinstance(reasoning, str):
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))

        content = delta.get("content")
        if content and isinstance(content, str):
            if self._think.settled:  # the common case, per token: no splitting left to do
                self._text.append(content)
                out.append(TextDelta(content))
            else:
                self._feed_content(content, out)
        refusal = delta.get("refusal")
        if refusal and isinstance(refusal, str):
            self._text.append(refusal)
            out.append(TextDelta(refusal))

        tool_calls = delta.get("tool_calls")
        if tool_calls and type(tool_calls) is list:
            for tc in tool_calls:
                if type(tc) is not dict:
                    continue
                fn = tc.get("function")
                if type(fn) is not dict:
                    fn = {}
                self._feed_call(tc.get("index"), tc.get("id"), fn.get("name"), fn.get("arguments"), out)
        else:
            legacy = delta.get("function_call")
            if legacy and type(legacy) is dict:
                self._feed_call(_LEGACY_FUNCTION_CALL, None, legacy.get("name"), legacy.get("arguments"), out)

    def _feed_content(self, content: str, out: list[StreamDelta]) -> None:
        for is_reasoning, piece in self._think.feed(content):
            if is_reasoning:
                self._reasoning.append(piece)
                out.append(ReasoningDelta(piece))
            else:
                self._text.append(piece)
                out.append(TextDelta(piece))

    def _feed_call(self, index: Any, call_id: Any, name: Any, arguments: Any, out: list[StreamDelta]) -> None:
        call = self._call_for(index, call_id)
        if name and isinstance(name, str) and name != call.name:
            if not call.name or name.startswith(call.name):
                call.name = name
            elif not call.parts:
                call.name += name

        fragment = ""
        if arguments:
            if not isinstance(arguments, str):
                # A few servers send the arguments as an object, not JSON text.
                text = json.dumps(arguments, ensure_ascii=False)
                call.parts = [text]
                call.size = len(text)
                fragment = text
            elif not (
                call.size
                and len(arguments) == call.size
                and arguments[-1] == "}"
                and arguments == "".join(call.parts)
            ):  # else: the whole arguments repeated in a closing chunk
                call.parts.append(arguments)
                call.size += len(arguments)
                fragment = arguments

        if not call.name:
            return  # announced once the name arrives, with what came before it
        if not call.announced:
            call.announced = True
            out.append(ToolCallDelta(call.position, call.id or "", call.name, "".join(call.parts)))
        elif fragment:
            out.append(ToolCallDelta(call.position, call.id or "", call.name, fragment))

    def _call_for(self, index: Any, call_id: Any) -> _Call:
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if type(index) is int:
            call = self._by_index.get(index)
            if call is None:
                call = (self._by_id.get(call_id) if call_id else None) or self._new_call()
                self._by_index[index] = call
            elif call_id and call.id and call_id != call.id:
                # Some servers put every call at index 0; a new id means a new call.
                call = self._by_id.get(call_id) or self._new_call()
                self._by_index[index] = call
        elif call_id:
            call = self._by_id.get(call_id) or self._new_call()
        else:
            call = self._last or self._new_call()
        if call_id and call.id is None:
            call.id = call_id
            self._by_id[call_id] = call
        self._last = call
        return call

    def _new_call(self) -> _Call:
        call = _Call(len(self._calls))
        self._calls.append(call)
        return call

    def finish(self) -> Completion:
        """Build the Completion from everything fed so far; safe to call repeatedly."""
        calls: list[ToolCallRequest] = []
        taken = {c.id for c in self._calls if c.id}
        for position, call in enumerate(self._calls):
            if not call.name and not call.parts:
                continue
            call_id = call.id
            if call_id is None:
                call_id = f"call_{position}"
                n = position
                while call_id in taken:
                    n += 1
                    call_id = f"call_{n}"
                taken.add(call_id)
            calls.append(ToolCallRequest(call_id, call.name, "".join(call.parts), call.position))

        reason = self._finish_reason
        if calls and reason == "stop":
            reason = "tool_calls"
        text, reasoning = "".join(self._text), "".join(self._reasoning)
        held = self._think.rest()
        if held is not None:
            if held[0]:
                reasoning += held[1]
            else:
                text += held[1]
        unopened = split_unopened(text)
        if unopened is not None:
            reasoning, text = reasoning + unopened[0], unopened[1]
        return Completion(
            text=text,
            reasoning=reasoning,
            tool_calls=calls,
            finish_reason=reason,
            usage=_usage(self._usage),
            truncated=reason is None,
        )


def as_dict(chunk: Any) -> dict[str, Any]:
    """A plain dict from an SDK model (extra fields such as ``reasoning`` included)."""
    dump = getattr(chunk, "model_dump", None)
    if dump is None:
        raise TypeError(f"cannot read a stream chunk of type {type(chunk).__name__}")
    data = dump(warnings=False)
    return data if isinstance(data, dict) else {}


def completion_as_chunk(body: dict[str, Any]) -> dict[str, Any]:
    """A whole (non-streamed) chat completion reshaped as one chunk: ``message`` becomes ``delta``."""
    choices = body.get("choices")
    return {
        "choices": [
            {
                "index": choice.get("index") or 0,
                "delta": choice.get("message") or {},
                "finish_reason": choice.get("finish_reason"),
            }
            for choice in (choices if isinstance(choices, list) else [])
            if isinstance(choice, dict)
        ],
        "usage": body.get("usage"),
    }


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    total = _int(raw.get("total_tokens")) or prompt + completion
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(prompt, completion, total, cached if isinstance(cached, int) else None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

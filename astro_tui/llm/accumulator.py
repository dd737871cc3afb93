"""Turns streamed chat-completion chunks into deltas and one final Completion.

Servers that claim OpenAI compatibility disagree on how tool calls stream: Ollama
sends each call whole, OpenAI and vLLM send argument fragments, some omit
``index`` or ``id``, some repeat them on every chunk, some say "stop" after
calling tools. The accumulator reads chunks by attribute only (it never imports
openai) and decides by what actually arrived.
"""

from __future__ import annotations

import json
from typing import Any

from astro_tui.llm.messages import (
    Completion,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallRequest,
    Usage,
)

_LEGACY_FUNCTION_CALL = -1


class _Call:
    """A tool call being assembled; fragments are joined once, at the end."""

    __slots__ = ("id", "name", "parts", "size")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str = ""
        self.parts: list[str] = []
        self.size = 0


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

    @property
    def started(self) -> bool:
        """Whether any content (text, reasoning or a tool call) has arrived."""
        return bool(self._text or self._reasoning or self._calls)

    def feed(self, chunk: Any) -> list[StreamDelta]:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = usage
        choices = getattr(chunk, "choices", None)
        if not choices:
            return []
        out: list[StreamDelta] = []
        for choice in choices:
            if getattr(choice, "index", 0):
                continue  # n > 1 is never requested; ignore stray alternatives
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._feed_delta(delta, out)
            reason = getattr(choice, "finish_reason", None)
            if reason:
                self._finish_reason = reason
        return out

    def _feed_delta(self, delta: Any, out: list[StreamDelta]) -> None:
        extra = getattr(delta, "__pydantic_extra__", None)
        if extra is None:
            reasoning = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
        elif extra:
            reasoning = extra.get("reasoning_content") or extra.get("reasoning")
        else:
            reasoning = None
        if reasoning and isinstance(reasoning, str):
            self._reasoning.append(reasoning)
            out.append(ReasoningDelta(reasoning))

        content = getattr(delta, "content", None)
        if content and isinstance(content, str):
            self._text.append(content)
            out.append(TextDelta(content))
        refusal = getattr(delta, "refusal", None)
        if refusal and isinstance(refusal, str):
            self._text.append(refusal)
            out.append(TextDelta(refusal))

        tool_calls = getattr(delta, "tool_calls", None)
        if tool_calls:
            for tc in tool_calls:
                fn = getattr(tc, "function", None)
                self._feed_call(
                    getattr(tc, "index", None),
                    getattr(tc, "id", None),
                    getattr(fn, "name", None) if fn is not None else None,
                    getattr(fn, "arguments", None) if fn is not None else None,
                )
        else:
            legacy = getattr(delta, "function_call", None)
            if legacy is not None:
                self._feed_call(
                    _LEGACY_FUNCTION_CALL,
                    None,
                    getattr(legacy, "name", None),
                    getattr(legacy, "arguments", None),
                )

    def _feed_call(self, index: Any, call_id: Any, name: Any, arguments: Any) -> None:
        call_id = call_id if isinstance(call_id, str) and call_id else None
        if isinstance(index, int):
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

        if name and isinstance(name, str) and name != call.name:
            if not call.name or name.startswith(call.name):
                call.name = name
            elif not call.parts:
                call.name += name

        if arguments:
            if not isinstance(arguments, str):
                # A few servers send the arguments as an object, not JSON text.
                text = json.dumps(arguments, ensure_ascii=False)
                call.parts = [text]
                call.size = len(text)
                return
            if (
                call.size
                and len(arguments) == call.size
                and arguments[-1] == "}"
                and arguments == "".join(call.parts)
            ):
                return  # the whole arguments repeated in a closing chunk
            call.parts.append(arguments)
            call.size += len(arguments)

    def _new_call(self) -> _Call:
        call = _Call()
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
            calls.append(ToolCallRequest(call_id, call.name, "".join(call.parts)))

        reason = self._finish_reason
        if calls and reason == "stop":
            reason = "tool_calls"
        return Completion(
            text="".join(self._text),
            reasoning="".join(self._reasoning),
            tool_calls=calls,
            finish_reason=reason,
            usage=_usage(self._usage),
            truncated=reason is None,
        )


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = _int(getattr(raw, "prompt_tokens", None))
    completion = _int(getattr(raw, "completion_tokens", None))
    total = _int(getattr(raw, "total_tokens", None)) or prompt + completion
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(prompt, completion, total, cached if isinstance(cached, int) else None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0

"""The typed items a model stream produces.

Frozen slotted dataclasses: they are created per token on the hot path and handed
across tasks, so they must be cheap and must not be mutated after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's visible reply, in arrival order (unverified: not an answer)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, from servers that stream it; never the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A tool call as it streams: the first one for a call carries its name, later ones
    a fragment of its JSON arguments (the fragment may be empty in the first).

    ``position`` is the call's place in the reply (the ``position`` of its final
    `ToolCallRequest`); ``call_id`` is the server's id if it has arrived yet.
    """

    position: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One tool call as the model sent it.

    ``arguments`` is the raw JSON text: validating it is the tool registry's job,
    and it may be malformed (cut streams, weak local models).
    """

    id: str
    name: str
    arguments: str
    position: int = -1

    def as_message_part(self, arguments: str | None = None) -> dict[str, Any]:
        """The wire form for replaying the call in history; pass sanitised arguments if needed."""
        return {
            "id": self.id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": self.arguments if arguments is None else arguments,
            },
        }


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts; ``cached_tokens`` tells whether the stable prompt prefix hit a cache."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """Everything one streamed completion amounted to; always the last stream item.

    ``finish_reason`` is normalised: a server that says "stop" after calling tools
    reports "tool_calls" here. ``truncated`` means the stream ended without any
    finish reason, so text and tool arguments may be incomplete.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    truncated: bool = False

    def assistant_message(self) -> dict[str, Any]:
        """The assistant turn in OpenAI chat format, ready to append to the history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        return message


StreamDelta = TextDelta | ReasoningDelta | ToolCallDelta
StreamItem = TextDelta | ReasoningDelta | ToolCallDelta | Completion

"""OpenAI-compatible streaming client and the delta accumulator.

Nothing here imports openai at import time; see ``client.ChatClient``.
"""

from astro_tui.llm.accumulator import DeltaAccumulator
from astro_tui.llm.client import ChatClient
from astro_tui.llm.errors import (
    LLMError,
    deadline_error,
    missing_key_message,
    model_not_configured_message,
    truncation_error,
)
from astro_tui.llm.messages import (
    Completion,
    ReasoningDelta,
    StreamDelta,
    StreamItem,
    TextDelta,
    ToolCallDelta,
    ToolCallRequest,
    Usage,
)

__all__ = [
    "ChatClient",
    "Completion",
    "DeltaAccumulator",
    "LLMError",
    "ReasoningDelta",
    "StreamDelta",
    "StreamItem",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallRequest",
    "Usage",
    "deadline_error",
    "missing_key_message",
    "model_not_configured_message",
    "truncation_error",
]

"""The agent: the loop, the tool registry, the data tools, answers and prompts.

Kept import-light: the UI imports `agent.events` at start-up, and the loop pulls
in the model client, Jinja and pydantic, which the first screen does not need.
The agent is built by the session (`session/core.py`), never by a front end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from astro_tui.agent.loop import Agent

__all__ = ["Agent"]


def __getattr__(name: str) -> Any:
    if name == "Agent":
        from astro_tui.agent.loop import Agent

        return Agent
    raise AttributeError(name)

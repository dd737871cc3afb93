"""The ten tools of DESIGN.md, bound to one session's context, in one registry.

Each tool group marks its tools with `@tool` where they are defined (output or
not, how a call reads in one line); the registry collects them in that order.
"""

from __future__ import annotations

from astro_tui.agent.registry import ToolRegistry
from astro_tui.agent.tools.context import ToolContext
from astro_tui.agent.tools.explore import ExploreTools
from astro_tui.agent.tools.notes import NoteTools
from astro_tui.agent.tools.output import OutputTools
from astro_tui.agent.tools.sql import SqlTools


def build_registry(ctx: ToolContext) -> ToolRegistry:
    registry = ToolRegistry()
    for group in (ExploreTools(ctx), SqlTools(ctx), NoteTools(ctx), OutputTools(ctx)):
        registry.collect(group)
    return registry


__all__ = ["ToolContext", "build_registry"]

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

SMALL_RUN_SQL = (
    "Run one read-only SQL query. You see its columns and first 20 rows; then answer in plain text "
    "with the values as the result shows them, or fix the query if it failed."
)
SMALL_EXPLORE = ("search_metadata", "shell")
"""Offered to the small profile only when the schema is not in its prompt."""


def build_registry(ctx: ToolContext, *, profile: str = "full", schema_in_prompt: bool = True) -> ToolRegistry:
    """The full profile's ten tools; the small profile's run_sql (and, for a catalog too big for
    its prompt, the two finding tools): a small model follows one tool and a plain answer."""
    registry = ToolRegistry()
    if profile != "small":
        for group in (ExploreTools(ctx), SqlTools(ctx), NoteTools(ctx), OutputTools(ctx)):
            registry.collect(group)
        return registry
    if not schema_in_prompt:
        explore = ExploreTools(ctx)
        for name in SMALL_EXPLORE:
            registry.add(getattr(explore, name))
    registry.add(SqlTools(ctx).run_sql, description=SMALL_RUN_SQL)
    return registry


__all__ = ["ToolContext", "build_registry"]

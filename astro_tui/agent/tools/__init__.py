"""The ten tools of DESIGN.md, bound to one session's context, in one registry."""

from __future__ import annotations

from typing import Any

from astro_tui.agent.registry import ToolRegistry
from astro_tui.agent.tools.context import ToolContext
from astro_tui.agent.tools.explore import ExploreTools
from astro_tui.agent.tools.notes import NoteTools
from astro_tui.agent.tools.output import OutputTools
from astro_tui.agent.tools.sql import SqlTools
from astro_tui.agent.workspace import sql_description
from astro_tui.text import one_line

INTERNAL_TOOLS = ("shell", "show_table", "search_metadata", "run_sql", "read_context", "update_context")
OUTPUT_TOOLS = ("submit_result", "submit_observation", "render_chart", "send_message")
SUMMARY_CHARS = 70


def build_registry(ctx: ToolContext) -> ToolRegistry:
    explore, sql, notes, output = ExploreTools(ctx), SqlTools(ctx), NoteTools(ctx), OutputTools(ctx)
    registry = ToolRegistry()
    for func in (
        explore.shell,
        explore.show_table,
        explore.search_metadata,
        sql.run_sql,
        notes.read_context,
        notes.update_context,
    ):
        registry.add(func)
    for func in (output.submit_result, output.submit_observation, output.render_chart, output.send_message):
        registry.add(func, output=True)
    return registry


def _cut(text: str, limit: int = SUMMARY_CHARS) -> str:
    return one_line(text, limit)


def _sql_label(sql: Any) -> str:
    text = str(sql or "")
    description = sql_description(text)
    return f"-- {_cut(description)}" if description else _cut(text)


def call_summary(name: str, arguments: dict[str, Any] | None) -> str:
    """One line saying what a call does, for progress lines: `run_sql  -- revenue by region`."""
    if not arguments:
        return ""
    if name == "run_sql":
        return _sql_label(arguments.get("sql"))
    if name == "shell":
        return _cut(arguments.get("command", ""))
    if name == "show_table":
        names = arguments.get("table_names") or []
        return _cut(", ".join(map(str, names)) if isinstance(names, list) else str(names))
    if name == "search_metadata":
        parts = [*(arguments.get("queries") or []), *(arguments.get("keywords") or [])]
        return _cut(", ".join(map(str, parts)))
    if name == "update_context":
        return _cut(arguments.get("note", ""))
    if name in ("submit_result", "submit_observation"):
        inputs = arguments.get("inputs") or arguments.get("supporting_queries") or {}
        label = arguments.get("title") or (", ".join(inputs) if isinstance(inputs, dict) else "")
        return _cut(label)
    if name == "render_chart":
        return _cut(f"{arguments.get('kind', '')} {arguments.get('title', '')}")
    if name == "send_message":
        return _cut(arguments.get("message", ""))
    return ""


__all__ = ["INTERNAL_TOOLS", "OUTPUT_TOOLS", "ToolContext", "build_registry", "call_summary"]

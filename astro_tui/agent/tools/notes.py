"""`read_context` / `update_context`: what the model learned about this database, kept across sessions."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from astro_tui.agent.registry import tool
from astro_tui.agent.tools.context import ToolContext

MAX_READ_CHARS = 20_000


class NoteTools:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    @tool()
    def read_context(self) -> str:
        """Read the saved notes about this database (business rules, join keys, quirks)."""
        text = self.ctx.notes.read().strip()
        if not text:
            return "(no notes yet for this database)"
        if len(text) > MAX_READ_CHARS:
            return text[:MAX_READ_CHARS] + "\n… (notes cut here)"
        return text

    @tool(summary=lambda a: str(a.get("note") or ""))
    def update_context(
        self,
        note: Annotated[str, Field(description="One durable fact, a sentence or two.")],
    ) -> str:
        """Save a durable fact about this database for future sessions (a join key, a unit, a
        status code's meaning, a pitfall). Not for answers or one-off numbers."""
        line = self.ctx.notes.append(note)
        return f"saved: {line}"

"""The seam between `astro mcp` and the rest of astro — THE PLACE THAT BECOMES `Session` (issue 22).

Until the session core lands, this is the one module of `astro_tui/mcp/` that
opens the database, reads the catalog, binds the agent's own tools and saves
conversations, the way `astro ask` does today. The rest of the package only
calls what `Backend` offers (open, label and key, a tool set per MCP session,
save a conversation, close); when `Session` lands, `Backend` is replaced by
it and the server keeps calling the same few things.

The tools are the agent's (`agent/tools/*`), not copies: `run_sql` and
`submit_result` go through the same guard, the engine's lock, the statement
worker and its limits as the app.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.conversations import new_conversation_id, save_conversation
from astro_tui.agent.events import Answer
from astro_tui.agent.history import Entry, Turn
from astro_tui.agent.registry import ToolError
from astro_tui.agent.tools.context import TURN_CANCEL, ToolContext
from astro_tui.agent.tools.explore import ExploreTools
from astro_tui.agent.tools.notes import NoteTools
from astro_tui.agent.tools.output import OutputTools
from astro_tui.agent.tools.sql import SqlTools
from astro_tui.agent.workspace import Workspace
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.errors import DataError

TOOL_FAILURES: tuple[type[Exception], ...] = (ToolError, DataError)
"""What a tool raises for bad input, a refused statement or a failed query: one line for the client."""


@dataclass(frozen=True, slots=True)
class Toolset:
    """The agent's tools bound to one MCP session: its own `cd`, its own search index."""

    explore: ExploreTools
    sql: SqlTools
    notes: NoteTools
    output: OutputTools


class Backend:
    """One opened database and its catalog, shared by every MCP session of the server."""

    def __init__(self, db: Database, catalog: Catalog, settings: Settings, state_dir: Path) -> None:
        self.db = db
        self.catalog = catalog
        self.settings = settings
        self.state_dir = state_dir
        self._notes = ContextNotes(state_dir, db.key, db.context_seed)

    @classmethod
    def open(
        cls,
        targets: Sequence[str],
        settings: Settings,
        state_dir: Path,
        *,
        on_progress: Callable[[str], None] | None = None,
    ) -> Backend:
        """Open and make ready, or raise DataError: a server must not start on data it cannot read."""
        db = Database.open(list(targets), settings, on_build=on_progress)
        try:
            db.ready()
            catalog = db.load_catalog()
        except BaseException:
            db.close()
            raise
        return cls(db, catalog, settings, state_dir)

    @property
    def label(self) -> str:
        return self.db.label

    @property
    def key(self) -> str:
        return self.db.key

    @property
    def dialect(self) -> str:
        return self.db.dialect.name

    def toolset(self) -> Toolset:
        """A fresh set of the agent's tools; the workspace keeps only the last result (the client
        holds its results, the server must not hold every one)."""
        ctx = ToolContext(self.db, self.catalog, self.settings, Workspace(max_entries=1), self._notes)
        return Toolset(ExploreTools(ctx), SqlTools(ctx), NoteTools(ctx), OutputTools(ctx))

    def save_conversation(
        self, conversation_id: str, turns: list[Turn], *, created: str, client: str
    ) -> None:
        save_conversation(
            self.state_dir,
            conversation_id,
            turns,
            db_key=self.key,
            db_label=self.label,
            model=client,
            created=created,
        )

    def close(self) -> None:
        self.db.close()


__all__ = [
    "TOOL_FAILURES",
    "TURN_CANCEL",
    "Answer",
    "Backend",
    "CancelToken",
    "Entry",
    "Toolset",
    "Turn",
    "new_conversation_id",
]

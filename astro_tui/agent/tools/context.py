"""What every tool works on: one database, its catalog, the workspace and the notes.

The cancel token is replaced at the start of every turn: a token stays cancelled
once used, and Esc must stop only the turn it was pressed in. A tool runs in a
worker thread that may outlive its turn (a thread cannot be stopped), so the
token a tool uses is the one in `TURN_CANCEL` when it started: the loop sets it
before invoking a tool and `asyncio.to_thread` copies it into the thread. A
thread left over from an earlier turn keeps that turn's (cancelled) token.
"""

from __future__ import annotations

import dataclasses
import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.workspace import Workspace
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.results import QueryResult

if TYPE_CHECKING:
    from astro_tui.catalog.search import MetadataIndex
    from astro_tui.catalog.shell import Shell

TOTAL_COUNT_S = 5.0
"""How long counting a cut result's rows may take before the model is told "more than N"."""
TURN_CANCEL: ContextVar[CancelToken | None] = ContextVar("astro_turn_cancel", default=None)


@dataclass
class ToolContext:
    db: Database
    catalog: Catalog
    settings: Settings
    workspace: Workspace
    notes: ContextNotes
    cancel: CancelToken = field(default_factory=CancelToken)
    _shell: Shell | None = field(default=None, repr=False)
    _index: MetadataIndex | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def turn_cancel(self) -> CancelToken:
        """The token of the turn this tool call belongs to (see the module docstring)."""
        return TURN_CANCEL.get() or self.cancel

    def execute(self, sql: str, *, count_cut: bool = True) -> QueryResult:
        """Guarded, capped, cancellable; the result's SQL is the statement exactly as it ran.

        A result the cap cut is counted (`counted`) unless `count_cut` is False.
        """
        result = self.db.execute(sql, cancel=self.turn_cancel())
        return self.counted(result) if count_cut else result

    def counted(self, result: QueryResult) -> QueryResult:
        """A cut result with its exact total, when the engine did not know it and a count
        finishes within `TOTAL_COUNT_S` (else it stays "more than N")."""
        cancel = self.turn_cancel()
        if not result.truncated or result.total_rows is not None or cancel.cancelled:
            return result
        limit = min(self.settings.query_timeout_s, TOTAL_COUNT_S)
        total = self.db.count_rows(result.sql, timeout=limit, cancel=cancel)
        if total is None or total <= result.row_count:
            return result
        return dataclasses.replace(result, total_rows=total)

    def shell(self) -> Shell:
        """One shell per session, so `cd` is remembered between calls like in a terminal."""
        from astro_tui.catalog.shell import Shell

        with self._lock:
            if self._shell is None:
                self._shell = Shell(self.catalog, self.db)
            return self._shell

    def index(self) -> MetadataIndex:
        from astro_tui.catalog.search import MetadataIndex

        with self._lock:
            if self._index is None:
                self._index = MetadataIndex(self.catalog, context_notes=self.notes.read())
            return self._index

    def reset_session(self) -> None:
        """A new conversation: a fresh `cd`, and a search index with the notes as they are now."""
        with self._lock:
            self._shell = None
            self._index = None

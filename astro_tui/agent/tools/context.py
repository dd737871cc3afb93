"""What every tool works on: one database, its catalog, the workspace and the notes.

The cancel token is replaced at the start of every turn: a token stays cancelled
once used, and Esc must stop only the turn it was pressed in.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astro_tui.agent.context_notes import ContextNotes
from astro_tui.agent.workspace import Workspace, sql_description
from astro_tui.catalog.model import Catalog
from astro_tui.config import Settings
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.results import QueryResult

if TYPE_CHECKING:
    from astro_tui.catalog.search import MetadataIndex
    from astro_tui.catalog.shell import Shell


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

    def execute(self, sql: str) -> QueryResult:
        """Guarded, capped, cancellable; the result's SQL is the statement exactly as it ran."""
        result = self.db.execute(sql, cancel=self.cancel)
        description = sql_description(sql)
        return dataclasses.replace(result, description=description) if description else result

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
        with self._lock:
            self._shell = None

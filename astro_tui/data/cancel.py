"""Stopping a running statement from another thread, whatever the engine.

Esc in the app, Ctrl+C in the CLI and the end of an agent turn all hold a
`CancelToken`; each engine attaches what can stop its own statement (a DuckDB
cursor's interrupt, a PostgreSQL cancel request, a Spark operation tag) while
the statement runs.
"""

from __future__ import annotations

import threading
from typing import Protocol


class Stoppable(Protocol):
    """A running statement as its engine knows how to stop it."""

    def stop(self) -> None: ...


class CancelToken:
    """Lets another thread stop the statements a caller is running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[Stoppable] = set()
        self.cancelled = False

    @property
    def running(self) -> int:
        """How many statements this token can stop right now."""
        return len(self._running)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            running = list(self._running)
        for statement in running:
            statement.stop()

    def attach(self, statement: Stoppable) -> None:
        """A token cancelled before the statement started stops it at once."""
        with self._lock:
            self._running.add(statement)
            cancelled = self.cancelled
        if cancelled:
            statement.stop()

    def detach(self, statement: Stoppable) -> None:
        with self._lock:
            self._running.discard(statement)

"""Results of `run_sql` kept by name (`df_1`, `df_2`, …) so the person can browse what the model saw.

The model only gets the first rows back; the whole result stays here for the UI.
Names keep counting across the turns of a conversation (a summary of an old turn
says "df_3: …", so reusing that name later would mislead the model).
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from astro_tui.data.results import QueryResult

_LEADING_COMMENT = re.compile(r"\A\s*--[ \t]?(.*)")
MAX_ENTRIES = 200


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    name: str
    sql: str
    description: str | None
    result: QueryResult


def sql_description(sql: str) -> str | None:
    """The text of a leading `-- comment`, which is how the model labels a query."""
    match = _LEADING_COMMENT.match(sql)
    if match is None:
        return None
    text = match.group(1).strip()
    return text or None


class Workspace:
    """Thread-safe because tools run in worker threads while the UI reads the list."""

    def __init__(self, *, next_index: int = 1, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: OrderedDict[str, WorkspaceEntry] = OrderedDict()
        self._next = next_index
        self._max = max_entries
        self._lock = threading.Lock()

    @property
    def next_index(self) -> int:
        return self._next

    def add(
        self, result: QueryResult, *, description: str | None = None, sql: str | None = None
    ) -> WorkspaceEntry:
        """Name and store a result; the oldest entries go once there are too many to keep.

        `sql` is the statement as written: its leading `-- comment` is the description
        (the guard strips comments, so `result.sql` has none).
        """
        description = description or result.description or sql_description(sql or result.sql)
        if description and result.description != description:
            result = dataclasses.replace(result, description=description)
        with self._lock:
            name = f"df_{self._next}"
            self._next += 1
            entry = WorkspaceEntry(name, result.sql, description, result)
            self._entries[name] = entry
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        return entry

    def get(self, name: str) -> WorkspaceEntry | None:
        with self._lock:
            return self._entries.get(name)

    def entries(self) -> list[WorkspaceEntry]:
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self, *, next_index: int = 1) -> None:
        with self._lock:
            self._entries.clear()
            self._next = next_index

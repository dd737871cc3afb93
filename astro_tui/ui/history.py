"""Up/down recall of earlier entries, shell-style: the draft being typed is kept aside."""

from __future__ import annotations


class History:
    def __init__(self, limit: int = 500) -> None:
        self._items: list[str] = []
        self._limit = limit
        self._index: int | None = None
        self._draft = ""

    @property
    def items(self) -> list[str]:
        return list(self._items)

    def add(self, entry: str) -> None:
        entry = entry.strip()
        self._index = None
        if not entry or (self._items and self._items[-1] == entry):
            return
        self._items.append(entry)
        del self._items[: -self._limit]

    def previous(self, current: str) -> str | None:
        """The entry before the one shown, or None at the oldest."""
        if not self._items:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self._items)
        if self._index == 0:
            return None
        self._index -= 1
        return self._items[self._index]

    def next(self) -> str | None:
        """The entry after the one shown, the kept draft past the newest, None when not recalling."""
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self._items):
            self._index = None
            return self._draft
        return self._items[self._index]

    def reset(self) -> None:
        self._index = None

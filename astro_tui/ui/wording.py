"""Counts in words the way a person writes them: '1 schema', '2 schemas', '1,204 rows'."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"

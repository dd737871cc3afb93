"""Counts in words the way a person writes them: '1 schema', '2 schemas', '1,204 rows'."""

from __future__ import annotations

import re


def counted(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"


_COMMENT = re.compile(r"^\s*(?:--\s*(?P<line>[^\n]*)|/\*\s*(?P<block>.*?)\s*\*/)", re.S)
_NAME = r"(?:\"[^\"]+\"|`[^`]+`|[\w$]+)"
_FROM = re.compile(rf"\bfrom\s+({_NAME}(?:\s*\.\s*{_NAME})*)", re.I)


def sql_title(sql: str, width: int = 40) -> str:
    """What a query is about, for a result's name: its leading comment, else the first table
    it reads, else its first words."""
    match = _COMMENT.match(sql)
    if match:
        text = " ".join((match.group("line") or match.group("block") or "").split())
        if text:
            return _clip(text, width)
    found = _FROM.search(sql)
    if found:
        return _clip("from " + re.sub(r"\s*\.\s*", ".", found.group(1)), width)
    return _clip(" ".join(sql.split()), width)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"

"""Counts in words the way a person writes them: '1 schema', '2 schemas', '1,204 rows'."""

from __future__ import annotations

import re

from astro_tui.text import one_line


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
        text = one_line(match.group("line") or match.group("block") or "", width)
        if text:
            return text
    found = _FROM.search(sql)
    if found:
        return one_line("from " + re.sub(r"\s*\.\s*", ".", found.group(1)), width)
    return one_line(sql, width)

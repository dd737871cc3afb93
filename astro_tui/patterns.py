"""The spelling of a scope pattern (`schema[.table[.column]]`, `*` globs): read by the settings
when a `--hide` or `hide = [...]` is given, and by `data/scope.py` when a catalog is filtered.

It sits below both, so the settings check a pattern without importing the data layer.
"""

from __future__ import annotations

import re
import unicodedata

from astro_tui.errors import AstroError


class ScopeError(AstroError):
    """A pattern that cannot be read; the message is one line."""


_PART = re.compile(r'"((?:[^"]|"")*)"|([^".]+)')


def fold(name: str) -> str:
    """A name as patterns compare it: NFKC and case-folded, wider than DuckDB's ASCII folding,
    so a name DuckDB takes for the hidden one is always hidden (and a fullwidth or composed
    look-alike of it too)."""
    return unicodedata.normalize("NFKC", name).casefold()


def split_pattern(text: str) -> tuple[str, ...]:
    """`hr`, `hr.employees`, `*.*.email`, `"odd.schema".t` as their parts; anything else is a
    ScopeError."""
    raw = text.strip()
    parts: list[str] = []
    at = 0
    while raw and at <= len(raw):
        found = _PART.match(raw, at)
        if found is None:
            raise ScopeError(
                f"hide pattern {text!r}: an empty or unclosed part (write schema[.table[.column]])"
            )
        parts.append(
            found.group(1).replace('""', '"') if found.group(1) is not None else found.group(2).strip()
        )
        at = found.end()
        if at == len(raw):
            break
        if raw[at] != ".":
            raise ScopeError(f"hide pattern {text!r}: expected a dot after part {len(parts)}")
        at += 1
        if at == len(raw):
            raise ScopeError(f"hide pattern {text!r}: ends with a dot")
    if not parts or any(not p for p in parts):
        raise ScopeError(f"hide pattern {text!r}: an empty part (write schema[.table[.column]])")
    if len(parts) > 3:
        raise ScopeError(f"hide pattern {text!r}: at most three parts (schema.table.column)")
    return tuple(parts)

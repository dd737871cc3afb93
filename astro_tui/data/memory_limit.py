"""The `memory_limit` setting in bytes, for every engine that holds a statement to it."""

from __future__ import annotations

import os
import re

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_bytes(limit: str) -> int | None:
    """DuckDB's spelling of a memory limit (`4GB`, `500MiB`, `80%`) in bytes; None if unknown."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z%]*)\s*", limit)
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "%":
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return int(total * number / 100)
    return int(number * _UNITS[unit]) if unit in _UNITS else None

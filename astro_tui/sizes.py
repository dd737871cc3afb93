"""A memory size as DuckDB spells it (`4GB`, `500MiB`, `80%`): the `memory_limit` setting."""

from __future__ import annotations

import os
import re

_UNITS = {"b": 1, "byte": 1, "bytes": 1}
for _power, (_short, _long) in enumerate((("k", "kilo"), ("m", "mega"), ("g", "giga"), ("t", "tera")), 1):
    _UNITS |= dict.fromkeys((_short, f"{_short}b", f"{_long}byte", f"{_long}bytes"), 1000**_power)
    _UNITS[f"{_short}ib"] = 1024**_power


def memory_bytes(limit: str) -> int | None:
    """DuckDB's spelling of a memory limit (`4GB`, `4 gigabytes`, `500MiB`, `80%`) in bytes; None
    for what DuckDB would not read (a bare number among them)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z%]+)\s*", limit)
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2).lower()
    if unit == "%":
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return int(total * number / 100)
    return int(number * _UNITS[unit]) if unit in _UNITS else None

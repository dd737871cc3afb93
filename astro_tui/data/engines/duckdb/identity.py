"""What makes two opens of the same DuckDB files the same: the keys of astro's caches.

A file is named by its real path and known by its device, inode, size,
modification and status-change times, and so is its write-ahead log (DuckDB
replays it when the file opens), or its absence. The status-change time is
there because `cp -p` and `touch -r` can give changed data an old modification
time, and no one but the system sets it. DuckDB's own files are part of every
key: an upgrade may read the same file differently.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterable

SETTLED_S = 3.0
"""How old a file's last change must be before a key may vouch for its contents: a file
system's clock may be coarse (a second or two on some), so a file changed again within the
same tick would keep its times; a key that waits this long cannot be fooled that way."""


def duckdb_identity() -> str:
    """The installed DuckDB (an upgrade rewrites its files), without importing it."""
    spec = importlib.util.find_spec("duckdb")
    origin = spec.origin if spec is not None else None
    if origin is None:
        return "duckdb ?"
    st = os.stat(origin)
    return f"duckdb {origin} {st.st_size}:{st.st_mtime_ns}"


def files_identity(files: Iterable[tuple[str, str]], *, settled: bool = False) -> str | None:
    """Each (name, path) DuckDB opens, with its log; None when one cannot be read (the open
    will say what is wrong) or, with `settled`, changed less than SETTLED_S ago. As JSON, so
    no path, whatever it holds, can make two different sets of files read the same."""
    oldest_change = time.time() - SETTLED_S
    parts: list[str] = []
    for name, path in files:
        parts += [name, os.path.realpath(path)]
        for file in (path, f"{path}.wal"):
            try:
                st = os.stat(file)
            except FileNotFoundError:
                parts.append("-")
                continue
            except OSError:
                return None
            if settled and max(st.st_mtime, st.st_ctime) > oldest_change:
                return None
            parts.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return json.dumps(parts)

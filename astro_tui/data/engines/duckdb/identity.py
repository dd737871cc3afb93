"""What makes two opens of the same DuckDB files the same: the keys of astro's caches.

A file is named by its real path and known by its device, inode, size,
modification and status-change times, and so is its write-ahead log (DuckDB
replays it when the file opens), or its absence. The status-change time is
there because `cp -p` and `touch -r` can give changed data an old modification
time, and no one but the system sets it. DuckDB's own files are part of every
key: an upgrade may read the same file differently.

Only files no other account can swap or write are keyed (`_safe_place`,
`_private`): renaming a folder changes none of the times of the files in it, so
a folder another account could rename, or a folder where it could add a log
beside the file and take it away again, would let the file DuckDB opens differ
from the one both looks found; and a write through a shared mapping of a page
already written moves no time at all. The path DuckDB opens must be the one
checked, with no symbolic link on it (one swapped in and out between the looks
would point both at another file). DuckDB also reads a `.wal.checkpoint` a
writer left mid-checkpoint, and puts the log before a `?` of the path: a file
with either is not keyed.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import json
import os
import stat
import time
from collections.abc import Iterable

SETTLED_S = 3.0
"""How old a file's last change must be before a key may vouch for its contents: a file
system's clock may be coarse (a second or two on some), so a file changed again within the
same tick would keep its times; a key that waits this long cannot be fooled that way."""
_UNKEYED_SIDES = (".wal.checkpoint", ".wal.recovery")
"""What a writer that stopped mid-checkpoint leaves beside the file: DuckDB reads it on the
next open, so such a file is read afresh rather than keyed."""


@functools.cache
def duckdb_identity() -> str:
    """The installed DuckDB (its package and its library: an upgrade rewrites them), without
    importing it."""
    parts = ["duckdb"]
    for name in ("duckdb", "_duckdb"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            parts.append("?")
            continue
        st = os.stat(origin)
        parts.append(f"{origin} {st.st_size}:{st.st_mtime_ns}")
    return " ".join(parts)


def files_identity(files: Iterable[tuple[str, str]], *, settled: bool = False) -> str | None:
    """Each (name, path) DuckDB opens, with its log; None when one cannot be read (the open
    will say what is wrong) or, with `settled`, changed less than SETTLED_S ago, reached
    through a link, or where another account could swap or write it. As JSON, so no path,
    whatever it holds, can make two different sets of files read the same."""
    oldest_change = time.time() - SETTLED_S
    parts: list[str] = []
    for name, path in files:
        real = os.path.realpath(path)
        if "?" in real or (settled and (real != os.path.abspath(path) or not _safe_place(real))):
            return None  # what DuckDB opens must be the very path checked, with no link on it
        parts += [name, real]
        for file in (path, f"{path}.wal", *(f"{path}{side}" for side in _UNKEYED_SIDES)):
            try:
                st = os.lstat(file) if settled else os.stat(file)
            except FileNotFoundError:
                parts.append("-")
                continue
            except OSError:
                return None
            recent = max(st.st_mtime, st.st_ctime) > oldest_change
            if settled and (file.endswith(_UNKEYED_SIDES) or recent or not _private(st)):
                return None
            parts.append(f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}")
    return json.dumps(parts)


def _private(st: os.stat_result) -> bool:
    """A plain file only this user (or root) can write: a write through a page another account
    has mapped, and already changed, moves neither of the file's times."""
    return stat.S_ISREG(st.st_mode) and st.st_uid in (0, os.getuid()) and not st.st_mode & 0o022


def _safe_place(real: str) -> bool:
    """Only this user (or root) can replace the file or any folder above it, or add a file
    beside it: each is owned by one of them, no folder but a sticky one above the file's own
    is writable by anyone else, and the file's own folder is writable by no one else."""
    if not os.path.isabs(real) or not hasattr(os, "getuid"):
        return False
    owners = {0, os.getuid()}
    folder = os.path.dirname(real)
    chain = [real]
    while chain[-1] != os.path.dirname(chain[-1]):
        chain.append(os.path.dirname(chain[-1]))
    try:
        for entry, parent in itertools.pairwise(chain):
            if os.lstat(entry).st_uid not in owners:
                return False
            above = os.lstat(parent)
            if above.st_uid not in owners:
                return False
            if above.st_mode & 0o022 and (parent == folder or not above.st_mode & stat.S_ISVTX):
                return False
    except OSError:
        return False
    return True

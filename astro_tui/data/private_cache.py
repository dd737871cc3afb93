"""Entries astro keeps under the user's cache folder: read only if private, written whole.

An entry is read only if it and its folder belong to the user and no one else
can write them (the folder is created mode 0700), and never through a symbolic
link, so another account cannot plant one; it is written to a temporary file
and renamed, so a reader never sees half of one.
What an entry holds, and how far it is trusted, is its reader's business
(`catalog_cache.py`, `engines/duckdb/definitions_cache.py`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def read(path: Path) -> bytes | None:
    """The entry's bytes, or None: missing, unreadable, or not the user's alone."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not (_private(os.fstat(fh.fileno())) and _private(os.stat(path.parent))):
                return None
            return fh.read()
    except OSError:
        return None


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (where the system has owners)."""
    own = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return own and not st.st_mode & 0o022


def write(path: Path, data: bytes, *, keep: int) -> None:
    """Best effort: a read-only or full cache folder only costs the next reader its time. The
    folder keeps its `keep` most recently written entries of the same suffix."""
    folder = path.parent
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
        if hasattr(os, "getuid") and st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(folder, 0o700)  # made by an older astro, which left it to the umask
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(folder, path.suffix, keep)


def _prune(folder: Path, suffix: str, keep: int) -> None:
    entries = []
    for path in folder.glob(f"*{suffix}"):
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime, path))
    for _, path in sorted(entries, reverse=True)[keep:]:
        path.unlink(missing_ok=True)

"""The sample warehouse, built once per version of its builder into a per-user test cache and
shared by every session and worktree (see cached_sample)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

import duckdb
import platformdirs


def sample_cache_key() -> str:
    """Everything the built file depends on: the build SQL and DuckDB's version (the app's
    own digest) and the Python that runs the build. A change to any makes a new file."""
    from astro_tui.data.engines.duckdb import sample

    digest = hashlib.sha256()
    digest.update(sample.build_digest().encode())
    digest.update(f"\nduckdb {duckdb.__version__}\n".encode())
    digest.update(Path(sample.__file__).read_bytes())
    return digest.hexdigest()[:16]


_KEEP_UNUSED_S = 7 * 24 * 3600
"""A build no session has used for a week is removed; not at once, because checkouts of
other versions (worktrees, branches) share the cache and would rebuild in turn."""


def tests_cache_dir() -> Path:
    """Not the app's cache dir: the app deletes sample builds that are not its own."""
    return Path(os.environ.get("ASTRO_TEST_CACHE_DIR") or platformdirs.user_cache_dir("astro-tests"))


def cached_sample() -> Path:
    """The shared build, made by the first session that needs it.

    Two sessions starting at once: one builds while the other waits on the lock, then
    finds the file. The build goes to a temp file renamed into place (`build_sample`),
    so even without the lock no one is handed a half-written file.
    """
    from astro_tui.data.engines.duckdb.sample import build_sample

    folder = tests_cache_dir()
    path = folder / f"warehouse-{sample_cache_key()}.duckdb"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".build.lock", "a+b") as lock:
            with contextlib.suppress(ImportError):
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not path.is_file():
                build_sample(path)
    os.utime(path)  # "used now", for the pruning below
    now = time.time()
    for other in folder.glob("warehouse-*.duckdb"):
        with contextlib.suppress(OSError):
            if other != path and now - other.stat().st_mtime > _KEEP_UNUSED_S:
                other.unlink()
    for leftover in folder.glob(".warehouse-*.tmp*"):  # of a build that was killed
        with contextlib.suppress(OSError):
            if now - leftover.stat().st_mtime > 3600:
                leftover.unlink()
    return path

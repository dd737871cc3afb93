"""Shared fixtures: every test runs with its own state and config dirs and no real model keys.

The sample warehouse takes 13-17 s to build, so it is built once per version of its
builder and kept in a per-user test cache across sessions (see `cached_sample`); each
session gets its own copy in a session cache dir, so tests never touch the user's
cache, config or current directory, and none can write to the shared build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import platformdirs
import pytest

from astro_tui.config import Settings

pytest_plugins = [
    "tests.support.fake_openai",
    "tests.support.pg_server",
    "tests.support.spark_server",
    "tests.support.tiers",
]

_MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ASTRO_MODEL")


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("astro-cache")
    os.environ["ASTRO_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(autouse=True)
def isolated_env(session_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads the developer's keys or writes to their home or working directory."""
    for var in _MODEL_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(session_cache))
    monkeypatch.setenv("ASTRO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("ASTRO_CONFIG_DIR", str(tmp_path / "config"))
    yield


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


@pytest.fixture(scope="session")
def sample_path(session_cache: Path) -> Path:
    """The session's own copy, where the app looks for the sample (a copy of 60 MB takes
    well under a second), so no test can change the shared build."""
    from astro_tui.data.engines.duckdb.sample import ensure_sample, sample_path

    target = sample_path()
    if not target.is_file():
        shutil.copyfile(cached_sample(), target)
    return ensure_sample()


@pytest.fixture(scope="session")
def sample_db(sample_path: Path):  # type: ignore[no-untyped-def]
    """One read-only connection to the sample for the whole session (tests only read)."""
    from astro_tui.data.database import Database

    db = Database.open([], Settings())
    yield db
    db.close()

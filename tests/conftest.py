"""Shared fixtures: every test runs with its own state and config dirs and no real model keys.

The sample warehouse takes 13-17 s to build, so it is built once per version of its
builder and kept in a per-user test cache across sessions (see `cached_sample`); each
session gets its own copy in a session cache dir, so tests never touch the user's
cache, config or current directory, and none can write to the shared build.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from astro_tui.config import Settings
from tests.support.sample import cached_sample

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

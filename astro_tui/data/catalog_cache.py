"""The introspected catalog kept on disk, so the second open of a large database is near-instant.

Reading 10,000 tables' columns takes a DuckDB file over a second; loading them
back from here takes tens of milliseconds. An engine decides the key (for a
DuckDB file: the file's identity and size, its modification time and DuckDB's
version), so a changed file is simply a new entry. Entries are pickles of the
catalog model only: the unpickler refuses any other class, so a file planted in
the cache cannot run code, and an entry is read only if it belongs to the user
and no one else can write it (the folder is the user's alone, mode 0700).
Anything wrong with an entry means "not cached".
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import os
import pickle
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from astro_tui.config import cache_dir
from astro_tui.data import catalog_model
from astro_tui.data.catalog_model import Catalog

_KEEP = 32
"""Entries kept; the least recently written go first."""
_ALLOWED = frozenset({"Catalog", "Schema", "Table", "Column", "ForeignKey", "NOT_READ"})
"""The model's classes, and the one value an outline's tables have for their columns."""


class _ModelUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == catalog_model.__name__ and name in _ALLOWED:
            return getattr(catalog_model, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of the catalog model")


def loads(data: bytes) -> Any:
    """Catalog-model objects and plain values from trusted or untrusted bytes alike."""
    paused = gc.isenabled()
    gc.disable()  # hundreds of thousands of objects, none of them cyclic
    try:
        return _ModelUnpickler(io.BytesIO(data)).load()
    finally:
        if paused:
            gc.enable()


def dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def code_digest(*modules: ModuleType) -> str:
    """Part of every key: a change to the model's code (or a reader's) makes earlier entries
    unreadable. The files do not change while astro runs, so each is read once."""
    return "-".join(_file_digest(m.__file__ or "") for m in (catalog_model, *modules))


@functools.cache
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _folder() -> Path:
    return cache_dir() / "catalogs"


def _path(key: str) -> Path:
    return _folder() / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def read(key: str) -> Catalog | None:
    try:
        with _path(key).open("rb") as fh:
            if not _private(os.fstat(fh.fileno())):
                return None
            data = fh.read()
    except OSError:
        return None
    try:
        catalog = loads(data)
    except Exception:
        return None
    return catalog if isinstance(catalog, Catalog) else None


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (where the system has owners)."""
    own = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return own and not st.st_mode & 0o022


def write(key: str, data: bytes) -> None:
    """Best effort: a read-only or full cache directory only costs the next open its time."""
    folder = _folder()
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, _path(key))
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(folder)


def _prune(folder: Path) -> None:
    entries = []
    for path in folder.glob("*.pickle"):
        with contextlib.suppress(OSError):
            entries.append((path.stat().st_mtime, path))
    for _, path in sorted(entries, reverse=True)[_KEEP:]:
        path.unlink(missing_ok=True)

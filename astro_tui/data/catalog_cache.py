"""The introspected catalog kept on disk, so the second open of a large database is near-instant.

Reading 10,000 tables' columns takes a DuckDB file over a second; loading them
back from here takes tens of milliseconds. An engine decides the key (for a
DuckDB file: the file's identity and size, its modification time and DuckDB's
version), so a changed file is simply a new entry. Entries are pickles of the
catalog model only: the unpickler refuses any other class, so a file planted in
the cache cannot run code; and only the user's own entries are read
(`private_cache.py`). Anything wrong with an entry means "not cached".
"""

from __future__ import annotations

import functools
import gc
import hashlib
import io
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

from astro_tui.config import cache_dir
from astro_tui.data import catalog_model, private_cache
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


def _path(key: str) -> Path:
    return cache_dir() / "catalogs" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle"


def read(key: str) -> Catalog | None:
    data = private_cache.read(_path(key))
    if data is None:
        return None
    try:
        catalog = loads(data)
    except Exception:
        return None
    return catalog if isinstance(catalog, Catalog) else None


def write(key: str, data: bytes) -> None:
    private_cache.write(_path(key), data, keep=_KEEP)

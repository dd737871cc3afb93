"""What DuckDB files define, kept between processes, so the guard does not list it on every open.

Before the guard judges a statement it needs what the files define (macros,
views, tables with generated columns) and the names of DuckDB's own functions
(`resolved.FileDefinitions`). Listing them makes DuckDB build its whole
built-in catalog: 60–95 ms, the largest part of what a one-shot `astro sql`
cost beyond DuckDB's own one-liner. An entry here holds those listings, and is
used in their place only when it was written for exactly these files as they
are now:
- its key is DuckDB's own files, this reader's code, and each file's identity
  with its write-ahead log (`identity.py`: path, inode, size, modification and
  status-change times), taken by the engine before a worker opens the files;
- the worker takes the identity again once the files are open and attached,
  and reads or writes an entry only if the two are the same: whatever DuckDB
  loaded is what the key names (a change in between changes the status-change
  time, which no one but the system sets). A file changed less than
  `identity.SETTLED_S` ago is never keyed, so a coarse file-system clock cannot
  hide a second change;
- an entry is JSON of plain values, each field checked for its shape and the
  whole key compared, and only the user's own entries are read
  (`private_cache.py`). Anything wrong means "not kept": the listings are read
  from DuckDB as before.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from astro_tui.data import private_cache
from astro_tui.data.engines.duckdb import identity

if TYPE_CHECKING:
    from astro_tui.data.engines.duckdb.resolved import Listings

_KEEP = 64
"""Entries kept; the least recently written go first."""
_TEXT = (str,)
_SHAPES: dict[str, tuple[Any, ...]] = {
    "builtins": (_TEXT, _TEXT),
    "builtin_views": _TEXT,
    "macros": (_TEXT, _TEXT, _TEXT, _TEXT, (str, type(None)), (int,)),
    "views": (_TEXT, _TEXT, _TEXT, (str, type(None))),
    "generated": (_TEXT, _TEXT, _TEXT, [_TEXT]),
}
"""Each field of `Listings`: a list of rows, each row a list of these (a list in a list is a
list of text), or of bare text."""


def planned(files: list[tuple[str, str]], folder: Path) -> dict[str, Any] | None:
    """For the worker's setup, taken before it opens the files: None if they cannot be keyed."""
    found = identity.files_identity(files, settled=True)
    if found is None:
        return None
    key = "\n".join([identity.duckdb_identity(), _code_digest(), found])
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    return {"path": str(folder / f"{name}.json"), "key": key, "files": files, "identity": found}


@functools.cache
def _code_digest() -> str:
    here = Path(__file__)
    return "-".join(
        hashlib.sha256(here.with_name(name).read_bytes()).hexdigest()[:16]
        for name in ("resolved.py", "definitions_cache.py")
    )


class Store:
    """One entry, for files the worker has open and found as they were keyed."""

    def __init__(self, path: Path, key: str) -> None:
        self._path = path
        self._key = key

    @classmethod
    def verified(cls, plan: dict[str, Any] | None) -> Store | None:
        """Called once the files are open: an entry only if they are what the plan keyed."""
        if not plan:
            return None
        files = [(str(name), str(path)) for name, path in plan["files"]]
        if identity.files_identity(files, settled=True) != plan["identity"]:
            return None
        return cls(Path(plan["path"]), plan["key"])

    def load(self) -> Listings | None:
        from astro_tui.data.engines.duckdb.resolved import Listings

        data = private_cache.read(self._path)
        if data is None:
            return None
        try:
            entry = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != self._key:
            return None
        fields = {}
        for field, shape in _SHAPES.items():
            rows = entry.get(field)
            if not _shaped(rows, shape):
                return None
            fields[field] = [tuple(row) if isinstance(row, list) else row for row in rows]
        return Listings(**fields)

    def save(self, listings: Listings) -> None:
        entry = {"key": self._key, **listings._asdict()}
        private_cache.write(self._path, json.dumps(entry).encode(), keep=_KEEP)


def _shaped(value: Any, shape: Any) -> bool:
    """`value` is a list of rows of `shape` (see `_SHAPES`)."""
    if not isinstance(value, list):
        return False
    return all(_fits(row, shape) for row in value)


def _fits(value: Any, shape: Any) -> bool:
    if isinstance(shape, list):
        return _shaped(value, shape[0])
    if isinstance(shape, tuple) and shape and not isinstance(shape[0], type):
        return (
            isinstance(value, list)
            and len(value) == len(shape)
            and all(_fits(part, kind) for part, kind in zip(value, shape, strict=True))
        )
    return type(value) in shape

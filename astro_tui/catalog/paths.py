"""Turning what someone typed into nodes of the catalog tree, as forgivingly as a shell allows.

`..`, `.`, `~`, repeated and trailing slashes and paths relative to the working
directory work as in a shell. Beyond a shell: a name matches case-insensitively
when only one entry fits, a table file may be named without its `.table`/`.view`
suffix, a dotted SQL name (`sales.orders`) finds its table, and a bare table name
(`flights`) finds the one table of that name in any schema, so a database with one
schema (every set of files) needs no `main/` prefix.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from astro_tui.catalog.vfs import Dir, File, Node, VirtualFS
from astro_tui.errors import AstroError

_SUFFIXES = (".table", ".view")


class PathError(AstroError):
    """`str()` is the shell-style reason, e.g. `no such schema or table`."""


@dataclass(frozen=True, slots=True)
class Resolved:
    """A node and the canonical absolute path it was found at."""

    node: Node
    path: str


def absolute(cwd: str, path: str) -> list[str]:
    """Path components after applying cwd, `.`, `..` and `~`; the root is []."""
    if path == "~" or path.startswith("~/"):
        path = "/" + path[1:]
    parts = [] if path.startswith("/") else [p for p in cwd.split("/") if p]
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return parts


def join(parts: list[str]) -> str:
    return "/" + "/".join(parts)


def resolve(vfs: VirtualFS, cwd: str, path: str) -> Resolved:
    """Find one node, or raise PathError saying why not."""
    node: Node = vfs.root
    for part in absolute(cwd, path):
        if isinstance(node, File):
            raise PathError("not a directory")
        child = lookup(node, part)
        if child is None:
            dotted = _dotted(vfs, path)
            if dotted is not None:
                return dotted
            raise PathError("no such schema or table")
        node = child
    return Resolved(node, node.path)


def lookup(directory: Dir, name: str) -> Node | None:
    """Exact name, else the one case-insensitive match, else the one match without suffix."""
    child = directory.children.get(name)
    if child is not None:
        return child
    folded = directory.folded.get(name.lower(), [])
    if len(folded) == 1:
        return directory.children[folded[0]]
    if not name.lower().endswith(_SUFFIXES):
        candidates = [n for suffix in _SUFFIXES for n in directory.folded.get(name.lower() + suffix, [])]
        exact = [n for n in candidates if n.rsplit(".", 1)[0] == name]
        chosen = exact if len(exact) == 1 else candidates
        if len(chosen) == 1:
            return directory.children[chosen[0]]
    return None


def _dotted(vfs: VirtualFS, path: str) -> Resolved | None:
    """`sales.orders`, or a bare `orders` that only one schema holds, typed where a path was expected."""
    text = path.strip()
    if "/" in text or text in ("", ".", "..", "~"):
        return None
    bare = text.rsplit(".", 1)[0] if text.lower().endswith(_SUFFIXES) else text
    table = vfs.catalog.find_table(bare)
    node = vfs.node_for_table(table) if table is not None else None
    return Resolved(node, node.path) if node is not None else None


def expand(vfs: VirtualFS, cwd: str, pattern: str) -> list[str]:
    """Absolute paths matching a glob (`/sales/order*`, `*/*.view`), sorted in listing order.

    Matching is case-sensitive first, as in a shell; if that finds nothing it is
    retried case-insensitively. An empty list means no match.
    """
    for fold in (False, True):
        found = _expand(vfs, cwd, pattern, fold)
        if found:
            return found
    return []


def _expand(vfs: VirtualFS, cwd: str, pattern: str, fold: bool) -> list[str]:
    parts = absolute(cwd, pattern)
    current: list[Node] = [vfs.root]
    for part in parts:
        following: list[Node] = []
        for node in current:
            if not isinstance(node, Dir):
                continue
            if not has_magic(part):
                child = lookup(node, part)
                if child is not None:
                    following.append(child)
                continue
            following.extend(
                child for name, child in node.children.items() if _match(name, child, part, fold)
            )
        current = following
        if not current:
            return []
    return [node.path for node in current]


def _match(name: str, node: Node, pattern: str, fold: bool) -> bool:
    """A table file also matches by its bare name, so `ord?rs` finds `orders.table`."""
    names = [name, name.rsplit(".", 1)[0]] if isinstance(node, File) else [name]
    if fold:
        pattern = pattern.lower()
        names = [n.lower() for n in names]
    return any(fnmatch.fnmatchcase(n, pattern) for n in names)


def has_magic(text: str) -> bool:
    return any(c in text for c in "*?[")

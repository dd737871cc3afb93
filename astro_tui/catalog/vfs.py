"""The catalog seen as files: directories for databases and schemas, a card per table.

Person and model explore the same tree, so a card is plain text, one fact per
line: `grep` over cards then answers questions like "which tables have an email
column" with lines that name their table. Cards are rendered on first use and
kept; a recursive grep searches one Arrow array holding every card's lines, so
directory order is file order and a directory is a contiguous slice of it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from astro_tui.data.catalog_model import Catalog, Column, Table, quote_ident
from astro_tui.data.text_table import cell_len, pad

if TYPE_CHECKING:
    import pyarrow as pa

DirKind = Literal["root", "database", "schema"]

_NAME_WIDTH = 28
_TYPE_WIDTH = 18


def entry_name(name: str) -> str:
    """A slash inside a SQL name would split a path, so it is written %2F."""
    return name.replace("/", "%2F")


def table_path(table: Table) -> str:
    """`/sales/orders.table`, or `/db/sales/orders.view` when several databases are attached."""
    parts = [table.database] if table.database else []
    parts += [table.schema, f"{table.name}.{table.kind}"]
    return "/" + "/".join(entry_name(p) for p in parts)


def display_name(table: Table) -> str:
    """The dotted name people read; `Table.sql_name` is the one to paste into SQL."""
    parts = [table.database] if table.database else []
    return ".".join([*parts, table.schema, table.name])


def count_text(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


@lru_cache(maxsize=262_144)
def _ident(name: str, quote: str = '"') -> str:
    return quote_ident(name, quote)


@lru_cache(maxsize=262_144)
def _flat(text: str) -> str:
    return " ".join(text.split())


@lru_cache(maxsize=262_144)
def _column_parts(column: Column, name_width: int, type_width: int, quote: str) -> tuple[str, str]:
    """The aligned `name type nullability` part and the comment part; columns repeat across tables."""
    null = "" if column.nullable else "not null"
    prefix = (
        "  "
        + pad(_ident(column.name, quote), name_width)
        + "  "
        + column.type.ljust(type_width)
        + "  "
        + null.ljust(8)
    )
    return prefix, ("  " + _flat(column.comment) if column.comment else "")


def render_card(table: Table, *, referenced_by: Sequence[str] = ()) -> str:
    """The `cat` output: a header, the comment, one line per column, then keys and the SQL name.

    Each column line carries name, type, nullability, comment and key marks, so
    a grep hit is understandable on its own. `referenced_by` lists incoming
    foreign keys (`sales.order_items(order_id)`), which a table cannot know itself.
    """
    size = table.kind
    if table.row_count is not None and table.kind == "table":
        size += ", " + count_text(table.row_count, "row")
    lines = [f"{display_name(table)}  ({size})"]
    if table.comment:
        lines += ["  " + line.strip() for line in table.comment.strip().splitlines() if line.strip()]
    pk = {c.lower() for c in table.primary_key}
    refs: dict[str, str] = {}
    for fk in table.foreign_keys:
        if len(fk.columns) == 1:
            target = f"{fk.ref_schema}.{fk.ref_table}"
            refs[fk.columns[0].lower()] = f"{target}.{fk.ref_columns[0]}" if fk.ref_columns else target
    columns = table.columns
    q = table.identifier_quote
    name_width = min(max((cell_len(_ident(c.name, q)) for c in columns), default=0), _NAME_WIDTH)
    type_width = min(max((len(c.type) for c in columns), default=0), _TYPE_WIDTH)
    lines.append("columns:" if columns else "columns: (none)")
    keyed = bool(pk or refs)
    for column in columns:
        prefix, comment = _column_parts(column, name_width, type_width, q)
        if keyed:
            lowered = column.name.lower()
            ref = refs.get(lowered)
            line = prefix + (f"  -> {ref}" if ref else "") + comment + ("  [PK]" if lowered in pk else "")
            lines.append(line.rstrip())
        else:
            lines.append((prefix + comment).rstrip())
    if table.primary_key:
        lines.append("primary key: " + ", ".join(_ident(c, q) for c in table.primary_key))
    for fk in table.foreign_keys:
        ref_cols = ", ".join(_ident(c, q) for c in fk.ref_columns)
        lines.append(
            f"foreign key: {', '.join(_ident(c, q) for c in fk.columns)} -> "
            f"{_ident(fk.ref_schema, q)}.{_ident(fk.ref_table, q)}({ref_cols})"
        )
    for ref in referenced_by:
        lines.append(f"referenced by: {ref}")
    lines.append(f"sql: {table.sql_name}")
    return "\n".join(lines) + "\n"


@dataclass(eq=False, slots=True)
class File:
    """A table or view; `index` is its position in the whole tree's file order."""

    path: str
    name: str
    table: Table
    parent: Dir
    index: int

    is_dir = False


@dataclass(eq=False, slots=True)
class Dir:
    """The root, a database or a schema; files below it are `first <= index < last`."""

    path: str
    name: str
    kind: DirKind
    parent: Dir | None
    comment: str | None = None
    children: dict[str, Dir | File] = field(default_factory=dict)
    folded: dict[str, list[str]] = field(default_factory=dict)
    first: int = 0
    last: int = 0

    is_dir = True

    def add(self, node: Dir | File) -> None:
        self.children[node.name] = node
        self.folded.setdefault(node.name.lower(), []).append(node.name)

    def walk(self) -> Iterator[Dir | File]:
        """Every node below, depth first in listing order (not including this one)."""
        for child in self.children.values():
            yield child
            if isinstance(child, Dir):
                yield from child.walk()


Node = Dir | File


def string_array(lines: Sequence[str]) -> pa.Array:
    """Lines as an Arrow string array; a lone surrogate (not UTF-8) becomes U+FFFD. Arrow is
    imported here, for grep: `ls` and `cd` need none of it (~0.2 s)."""
    import pyarrow as pa

    try:
        return pa.array(lines, pa.large_string())
    except (UnicodeEncodeError, pa.ArrowException):
        fixed = [line.encode("utf-8", "replace").decode("utf-8") for line in lines]
        return pa.array(fixed, pa.large_string())


@dataclass(frozen=True, slots=True)
class CardLines:
    """Every card's lines in file order: file i's lines are `lines[starts[i]:starts[i + 1]]`."""

    lines: pa.Array
    owners: pa.Array
    """The file index of each line."""
    starts: list[int]


class VirtualFS:
    """The tree over one catalog, with cards rendered on demand and kept."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.root = Dir("/", "/", "root", None)
        self.files: list[File] = []
        self._cards: list[str | None] = []
        self._card_lines: CardLines | None = None
        self._incoming: dict[tuple[str, str], list[str]] | None = None
        self._lock = threading.Lock()
        self._build()

    def _build(self) -> None:
        databases: dict[str, Dir] = {}
        for schema in self.catalog.schemas:
            parent = self.root
            if schema.database is not None and self.catalog.multi_database:
                parent = databases.get(schema.database)
                if parent is None:
                    name = entry_name(schema.database)
                    parent = databases[schema.database] = Dir("/" + name, name, "database", self.root)
                    parent.first = len(self.files)
                    self.root.add(parent)
            name = entry_name(schema.name)
            base = "" if parent is self.root else parent.path
            directory = Dir(f"{base}/{name}", name, "schema", parent, schema.comment)
            directory.first = len(self.files)
            parent.add(directory)
            for table in schema.tables:
                file_name = f"{entry_name(table.name)}.{table.kind}"
                node = File(f"{directory.path}/{file_name}", file_name, table, directory, len(self.files))
                self.files.append(node)
                directory.add(node)
            directory.last = len(self.files)
            parent.last = len(self.files)
        self.root.last = len(self.files)
        self._cards = [None] * len(self.files)

    def card(self, node: File) -> str:
        text = self._cards[node.index]
        if text is None:
            text = self._cards[node.index] = render_card(node.table, referenced_by=self._referenced_by(node))
        return text

    def _referenced_by(self, node: File) -> list[str]:
        incoming = self._incoming
        if incoming is None:
            incoming = {}
            for table in self.catalog.tables:
                for fk in table.foreign_keys:
                    source = f"{display_name(table)}({', '.join(fk.columns)})"
                    incoming.setdefault((fk.ref_schema.lower(), fk.ref_table.lower()), []).append(source)
            self._incoming = incoming
        return incoming.get((node.table.schema.lower(), node.table.name.lower()), [])

    def card_lines(self) -> CardLines:
        """Every card's lines (as `splitlines` gives them) in one array, built once, for grep."""
        with self._lock:
            if self._card_lines is None:
                lines: list[str] = []
                starts = [0] * (len(self.files) + 1)
                for i, node in enumerate(self.files):
                    starts[i] = len(lines)
                    lines.extend(self.card(node).splitlines())
                starts[-1] = len(lines)
                array = string_array(lines)
                import pyarrow as pa
                import pyarrow.compute as pc

                lists = pa.ListArray.from_arrays(pa.array(starts, pa.int32()), array)
                owners = pc.list_parent_indices(lists)
                self._card_lines = CardLines(array, owners, starts)
            return self._card_lines

    def node_for_table(self, table: Table) -> File | None:
        node = self.root
        for part in table_path(table).strip("/").split("/"):
            child = node.children.get(part) if isinstance(node, Dir) else None
            if child is None:
                return None
            node = child
        return node if isinstance(node, File) else None

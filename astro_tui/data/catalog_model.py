"""The catalog as plain, immutable data: what every view of the schema is built from.

Engines read their catalogs into this model (`Engine.load_catalog`); the shell,
search, the agent and the app only ever see this model. An *outline*
(`Engine.load_outline`, `Catalog.complete` false) has every schema and table but
not their columns yet: its tables' `columns` (and, where they come with the
columns, their keys) is `NOT_READ`, which raises `ColumnsNotRead` on any use, so
no consumer can take "not read" for "none".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, NoReturn

from astro_tui.errors import AstroError

TableKind = Literal["table", "view"]


def quote_ident(name: str, quote: str = '"') -> str:
    """Quote only when SQL needs it, so cards show the identifier a user can paste.

    `quote` is the engine's identifier quote (`"` in DuckDB and PostgreSQL, a backtick in Spark).
    """
    if name.isidentifier() and name.islower() and name.upper() not in _RESERVED:
        return name
    return quote + name.replace(quote, quote * 2) + quote


_RESERVED = {
    "ALL", "AND", "ANY", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "CHECK", "COLUMN",
    "CREATE", "CROSS", "DEFAULT", "DESC", "DISTINCT", "ELSE", "END", "EXCEPT", "FALSE",
    "FETCH", "FOR", "FOREIGN", "FROM", "FULL", "GROUP", "HAVING", "IN", "INNER", "INTERSECT",
    "INTO", "IS", "JOIN", "LEFT", "LIKE", "LIMIT", "NOT", "NULL", "OFFSET", "ON", "OR",
    "ORDER", "OUTER", "PRIMARY", "REFERENCES", "RIGHT", "SELECT", "TABLE", "THEN", "TO",
    "TRUE", "UNION", "UNIQUE", "USING", "WHEN", "WHERE", "WINDOW", "WITH", "USER",
}  # fmt: skip


class ColumnsNotRead(AstroError):
    """A table's columns were used from an outline; read the whole catalog first (the shell
    does, and runs the line again). Phrased for the person where it is shown as it is. Not a
    `DataError`: the catalog's commands report those in place, and this one must reach the
    shell, which reads the columns and runs the line again."""


NOT_READ_MESSAGE = "the columns are still being read; try again in a moment"


class _NotRead(tuple):  # type: ignore[type-arg]
    """An outline table's columns or keys: empty, and refusing to be read as if that were the
    answer."""

    __slots__ = ()

    def _refuse(self, *_: object) -> NoReturn:
        raise ColumnsNotRead(NOT_READ_MESSAGE)

    __len__ = __iter__ = __getitem__ = __contains__ = __bool__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> str:
        return "NOT_READ"

    def __repr__(self) -> str:
        return "NOT_READ"


NOT_READ: tuple[Any, ...] = _NotRead()


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    nullable: bool
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_schema: str
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Table:
    """A table or view; `database` is set only when several databases are attached."""

    database: str | None
    schema: str
    name: str
    kind: TableKind
    columns: tuple[Column, ...]
    comment: str | None = None
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    row_count: int | None = None
    identifier_quote: str = field(default='"', repr=False)

    @property
    def sql_name(self) -> str:
        """The identifier to use in SQL, quoted where needed."""
        parts = [self.database] if self.database else []
        parts += [self.schema, self.name]
        return ".".join(self.quote(p) for p in parts)

    def quote(self, name: str) -> str:
        """A column or table name quoted the way this table's engine needs."""
        return quote_ident(name, self.identifier_quote)

    @property
    def file_name(self) -> str:
        return f"{self.name}.{self.kind}"

    def column(self, name: str) -> Column | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True, slots=True)
class Schema:
    database: str | None
    name: str
    tables: tuple[Table, ...]
    comment: str | None = None


class _Lookup(NamedTuple):
    by_key: dict[tuple[str | None, str, str], Table]
    by_name: dict[str, list[Table]]
    by_schema_name: dict[tuple[str, str], list[Table]]


@dataclass(frozen=True, slots=True)
class Catalog:
    """Schemas in display order; `databases` lists attached names when there are several;
    `complete` is false for an outline (see the module docstring)."""

    schemas: tuple[Schema, ...]
    databases: tuple[str, ...] = ()
    complete: bool = True
    _lookup: _Lookup | None = field(default=None, init=False, compare=False, repr=False)

    def _indexes(self) -> _Lookup:
        """Built on the first lookup, not with the catalog: the worker that reads a catalog only
        pickles it, and these dicts (~8 MB at 10,000 tables) were part of its peak memory.
        Two threads may both build them; either result is the same."""
        found = self._lookup
        if found is None:
            index: dict[tuple[str | None, str, str], Table] = {}
            by_name: dict[str, list[Table]] = {}
            by_schema_name: dict[tuple[str, str], list[Table]] = {}
            for schema in self.schemas:
                schema_lower = schema.name.lower()
                for table in schema.tables:
                    table_lower = table.name.lower()
                    index[(schema.database, schema_lower, table_lower)] = table
                    by_name.setdefault(table_lower, []).append(table)
                    by_schema_name.setdefault((schema_lower, table_lower), []).append(table)
            found = _Lookup(index, by_name, by_schema_name)
            object.__setattr__(self, "_lookup", found)  # frozen: set once, as a cache
        return found

    def __reduce__(self) -> tuple[type[Catalog], tuple[tuple[Schema, ...], tuple[str, ...], bool]]:
        """Pickled without its lookup indexes; they are rebuilt on load (`catalog_cache`)."""
        return (Catalog, (self.schemas, self.databases, self.complete))

    def __setstate__(self, state: object) -> None:
        """Never needed (`__reduce__` gives the constructor every field): a crafted cache entry
        could otherwise set the lookup indexes every `find_table` answers from."""
        raise TypeError("a catalog is made by its constructor, not from pickled state")

    @property
    def multi_database(self) -> bool:
        return len(self.databases) > 1

    @property
    def tables(self) -> list[Table]:
        return [t for s in self.schemas for t in s.tables]

    def find_table(self, name: str) -> Table | None:
        """Look up `table`, `schema.table` or `db.schema.table`, case-insensitively."""
        parts = [p.strip('"') for p in name.split(".")]
        lookup = self._indexes()
        if len(parts) == 3:
            found = lookup.by_key.get((parts[0], parts[1].lower(), parts[2].lower()))
            if found is not None or self.multi_database:
                return found
            matches = [
                t
                for t in lookup.by_schema_name.get((parts[1].lower(), parts[2].lower()), [])
                if (t.database or "").lower() in ("", parts[0].lower())
            ]
        elif len(parts) == 2:
            matches = lookup.by_schema_name.get((parts[0].lower(), parts[1].lower()), [])
        else:
            matches = lookup.by_name.get(parts[0].lower(), [])
        return matches[0] if len(matches) == 1 else None

    def counterpart(self, table: Table) -> Table | None:
        """This catalog's table of the same name as `table` (of an outline, say)."""
        return self._indexes().by_key.get((table.database, table.schema.lower(), table.name.lower()))

    def schema_summary(self) -> list[tuple[str, int]]:
        """(schema path, table count) pairs: the part of the catalog a prompt can afford."""
        return [(f"{s.database}.{s.name}" if s.database else s.name, len(s.tables)) for s in self.schemas]

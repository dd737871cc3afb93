"""A scope: the schemas, tables and columns kept away from the model (`--hide`, `hide = [...]`).

A pattern is `schema`, `schema.table` or `schema.table.column`; `*` matches any run of
characters, every part is matched case-insensitively, and a part in double quotes may hold
dots. The catalog every consumer sees is filtered here once (`filter_catalog`, called by
`Database.load_catalog` and `Database.load_outline`); what a statement reads is judged by the engine's guard
(DuckDB: `engines/duckdb/scoped.py`). Parsed once; a bad pattern is one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from astro_tui.data.catalog_model import NOT_READ, Catalog, Schema, Table
from astro_tui.errors import AstroError


class ScopeError(AstroError):
    """A pattern that cannot be read; the message is one line."""


_PART = re.compile(r'"((?:[^"]|"")*)"|([^".]+)')


@dataclass(frozen=True, slots=True)
class Pattern:
    text: str
    parts: tuple[re.Pattern[str], ...]
    source: str = "flag"

    def matches(self, names: tuple[str, ...]) -> bool:
        return len(names) >= len(self.parts) and all(
            p.fullmatch(n.lower()) is not None for p, n in zip(self.parts, names, strict=False)
        )


def parse_pattern(text: str, source: str = "flag") -> Pattern:
    """`hr`, `hr.employees`, `*.*.email`, `"odd.schema".t`; anything else is a ScopeError."""
    raw = text.strip()
    parts: list[str] = []
    at = 0
    while raw and at <= len(raw):
        found = _PART.match(raw, at)
        if found is None:
            raise ScopeError(
                f"hide pattern {text!r}: an empty or unclosed part (write schema[.table[.column]])"
            )
        parts.append(
            found.group(1).replace('""', '"') if found.group(1) is not None else found.group(2).strip()
        )
        at = found.end()
        if at == len(raw):
            break
        if raw[at] != ".":
            raise ScopeError(f"hide pattern {text!r}: expected a dot after part {len(parts)}")
        at += 1
        if at == len(raw):
            raise ScopeError(f"hide pattern {text!r}: ends with a dot")
    if not parts or any(not p for p in parts):
        raise ScopeError(f"hide pattern {text!r}: an empty part (write schema[.table[.column]])")
    if len(parts) > 3:
        raise ScopeError(f"hide pattern {text!r}: at most three parts (schema.table.column)")
    compiled = tuple(re.compile(".*".join(re.escape(s) for s in p.lower().split("*")), re.S) for p in parts)
    return Pattern(raw, compiled, source)


@dataclass(frozen=True, slots=True)
class Scope:
    """What is hidden; empty (falsy) when nothing is."""

    patterns: tuple[Pattern, ...] = ()

    @classmethod
    def parse(cls, patterns: Iterable[tuple[str, str] | str]) -> Scope:
        made: list[Pattern] = []
        for item in patterns:
            text, source = (item, "flag") if isinstance(item, str) else item
            pattern = parse_pattern(text, source)
            if all(p.text.lower() != pattern.text.lower() for p in made):
                made.append(pattern)
        return cls(tuple(made))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    @property
    def texts(self) -> list[str]:
        return [p.text for p in self.patterns]

    def hides_schema(self, schema: str) -> bool:
        return any(len(p.parts) == 1 and p.matches((schema,)) for p in self.patterns)

    def hides_table(self, schema: str, table: str) -> bool:
        """The table is hidden whole: its schema, itself, or every column (`s.t.*`)."""
        return any(
            (len(p.parts) <= 2 or p.parts[2].pattern == ".*") and p.matches((schema, table))
            for p in self.patterns
        )

    def hides_column(self, schema: str, table: str, column: str) -> bool:
        return any(p.matches((schema, table, column)) for p in self.patterns)

    def names_hidden(self, name: str) -> bool:
        """Whether a bare name could be something hidden: each pattern's most specific part
        that is not `*` (`*.*.email` → email). Used where a statement names a column without
        reading it (`* EXCLUDE (…)`), so that naming a hidden column and naming one that does
        not exist are refused alike."""
        lowered = name.lower()
        for p in self.patterns:
            specific = [part for part in p.parts if part.pattern != ".*"]
            if not specific or specific[-1].fullmatch(lowered):
                return True
        return False

    def filter_catalog(
        self,
        catalog: Catalog,
        hidden_views: Iterable[Iterable[str]] = (),
        hidden_columns: Iterable[Iterable[str]] = (),
    ) -> Catalog:
        """The catalog without what is hidden: schemas, tables, columns, the keys that name them,
        and what the engine found reading something hidden: views (`(database, schema, name)`)
        and generated columns (`(database, schema, table, column)`)."""
        if not self:
            return catalog
        views = {tuple(str(p).lower() for p in v) for v in hidden_views}
        derived = {tuple(str(p).lower() for p in c) for c in hidden_columns}
        schemas = []
        for schema in catalog.schemas:
            if self.hides_schema(schema.name):
                continue
            tables = tuple(
                self._visible_table(t, derived)
                for t in schema.tables
                if not self.hides_table(schema.name, t.name)
                and not _in_views(views, t.database, schema.name, t.name)
            )
            schemas.append(Schema(schema.database, schema.name, tables, schema.comment))
        return Catalog(tuple(schemas), catalog.databases, catalog.complete)

    def _visible_table(self, table: Table, derived: set[tuple[str, ...]]) -> Table:
        def hidden(column: str) -> bool:
            wanted = (table.schema.lower(), table.name.lower(), column.lower())
            return self.hides_column(table.schema, table.name, column) or any(
                c[1:] == wanted and (table.database is None or c[0] == table.database.lower())
                for c in derived
            )

        if table.columns is NOT_READ:  # an outline: its tables are filtered, their columns later
            return table
        columns = tuple(c for c in table.columns if not hidden(c.name))
        keys = tuple(
            fk
            for fk in table.foreign_keys
            if not any(hidden(c) for c in fk.columns)
            and not self.hides_table(fk.ref_schema, fk.ref_table)
            and not any(self.hides_column(fk.ref_schema, fk.ref_table, c) for c in fk.ref_columns)
        )
        primary = () if any(hidden(c) for c in table.primary_key) else table.primary_key
        return replace(table, columns=columns, foreign_keys=keys, primary_key=primary)


def _in_views(views: set[tuple[str, ...]], database: str | None, schema: str, name: str) -> bool:
    wanted = (schema.lower(), name.lower())
    return any(v[-2:] == wanted and (database is None or v[0] == database.lower()) for v in views)


def scope_of(
    specs: Iterable[str], hide: Iterable[tuple[str, str]], per_connection: dict[str, tuple[str, ...]]
) -> Scope:
    """The scope in force for these targets: the settings' patterns and those of every `@NAME`."""
    found = list(hide)
    for spec in specs:
        if spec.startswith("@"):
            found += [(p, f"file [connections.{spec[1:]}]") for p in per_connection.get(spec[1:], ())]
    return Scope.parse(found)

"""A scope: the schemas, tables and columns kept away from the model (`--hide`, `hide = [...]`).

A pattern is `schema`, `schema.table` or `schema.table.column`; `*` matches any run of
characters, every part is matched case-insensitively, and a part in double quotes may hold
dots. The catalog every consumer sees is filtered here once (`filter_catalog`, called by
`Database.load_catalog` and `Database.load_outline`); what a statement reads is judged by
the engine's guard (DuckDB: `engines/duckdb/scoped.py`, PostgreSQL:
`engines/postgres/scoped.py`, Spark: `engines/spark/scoped.py`). Parsed once; a bad pattern
is one line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from astro_tui.patterns import ScopeError as ScopeError  # raised by parse_pattern; its home
from astro_tui.patterns import fold, split_pattern

if TYPE_CHECKING:
    from astro_tui.data.catalog_model import Catalog, Table  # the model: imported where a catalog is filtered


_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Pattern:
    text: str
    parts: tuple[re.Pattern[str], ...]
    source: str = "flag"
    words: tuple[str, ...] = ()
    """Each part as written, folded (`*` kept)."""

    def matches(self, names: tuple[str, ...]) -> bool:
        return len(names) >= len(self.parts) and self.matches_prefix(names)

    def matches_prefix(self, names: tuple[str, ...]) -> bool:
        """Whether the first parts match these names (`hr.people.*` matches `hr`, `people`)."""
        return all(p.fullmatch(fold(n)) is not None for p, n in zip(self.parts, names, strict=False))


def parse_pattern(text: str, source: str = "flag") -> Pattern:
    """`hr`, `hr.employees`, `*.*.email`, `"odd.schema".t`; anything else is a ScopeError."""
    raw = text.strip()
    parts = split_pattern(text)
    compiled = tuple(re.compile(".*".join(re.escape(fold(s)) for s in p.split("*")), re.S) for p in parts)
    return Pattern(raw, compiled, source, tuple(fold(p) for p in parts))


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
            (p.matches((schema, table)) if len(p.parts) <= 2 else p.parts[2].pattern == ".*")
            and p.matches_prefix((schema, table))
            for p in self.patterns
        )

    def hides_column(self, schema: str, table: str, column: str) -> bool:
        return any(p.matches((schema, table, column)) for p in self.patterns)

    def names_hidden(self, name: str) -> bool:
        """Whether a bare name could be something hidden: each pattern's most specific part
        that is not `*` (`*.*.email` → email). Used where a statement names a column without
        reading it (`* EXCLUDE (…)`), so that naming a hidden column and naming one that does
        not exist are refused alike."""
        lowered = fold(name)
        for p in self.patterns:
            specific = [part for part in p.parts if part.pattern != ".*"]
            if not specific or specific[-1].fullmatch(lowered):
                return True
        return False

    def mentions_hidden(self, text: str, written: str = "", also: Iterable[str] = ()) -> bool:
        """Whether `text` names something hidden that `written` does not: a word `names_hidden`
        takes, a word of `also` (the file's views and generated columns that read something
        hidden), or a pattern's part that is no plain word (`"odd.schema"`) anywhere in it.
        Over-approximate: a comment or an error that says `salary` about anything is dropped."""
        folded, given = fold(text), fold(written)
        said = set(_WORD.findall(given))
        extra = {fold(a) for a in also}
        for word in set(_WORD.findall(folded)) - said:
            if word in extra or self.names_hidden(word):
                return True
        return any(
            part in folded and part not in given
            for p in self.patterns
            for part in p.words
            if "*" not in part and not _WORD.fullmatch(part)
        )

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
        from astro_tui.data.catalog_model import NOT_READ, Catalog, Schema

        views = {tuple(str(p).lower() for p in v) for v in hidden_views}
        derived = {tuple(str(p).lower() for p in c) for c in hidden_columns}
        names = {v[-1] for v in views} | {c[-1] for c in derived}

        def said(comment: str | None) -> str | None:
            return None if comment and self.mentions_hidden(comment, also=names) else comment

        schemas = []
        for schema in catalog.schemas:
            if self.hides_schema(schema.name):
                continue
            tables = [  # an outline's tables are filtered, their columns later
                (
                    t,
                    replace(t, comment=said(t.comment))
                    if t.columns is NOT_READ
                    else self._visible_table(t, derived, said),
                )
                for t in schema.tables
                if not self.hides_table(schema.name, t.name)
                and not _in_views(views, t.database, schema.name, t.name)
            ]
            kept = tuple(  # a table whose every column is hidden is gone (known once its columns are)
                shown for t, shown in tables if t.columns is NOT_READ or shown.columns or not t.columns
            )
            schemas.append(Schema(schema.database, schema.name, kept, said(schema.comment)))
        return Catalog(tuple(schemas), catalog.databases, catalog.complete)

    def _visible_table(
        self, table: Table, derived: set[tuple[str, ...]], said: Callable[[str | None], str | None]
    ) -> Table:
        place = (table.schema.lower(), table.name.lower())
        mine = {
            c[3]
            for c in derived
            if c[1:3] == place and (table.database is None or c[0] == table.database.lower())
        }
        patterns = [  # only these can hide a column here: most tables are left as they are, at once
            p for p in self.patterns if len(p.parts) == 3 and p.matches_prefix((table.schema, table.name))
        ]

        def hidden(column: str) -> bool:
            return column.lower() in mine or any(p.parts[2].fullmatch(fold(column)) for p in patterns)

        columns = tuple(
            c if c.comment is None or said(c.comment) == c.comment else replace(c, comment=None)
            for c in table.columns
            if not hidden(c.name)
        )
        keys = tuple(
            fk
            for fk in table.foreign_keys
            if not any(hidden(c) for c in fk.columns)
            and not self.hides_table(fk.ref_schema, fk.ref_table)
            and not any(self.hides_column(fk.ref_schema, fk.ref_table, c) for c in fk.ref_columns)
        )
        primary = () if any(hidden(c) for c in table.primary_key) else table.primary_key
        comment = said(table.comment)
        return replace(table, columns=columns, foreign_keys=keys, primary_key=primary, comment=comment)


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

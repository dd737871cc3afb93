"""What a scope hides that no bound plan shows: the file's views, macros and ENUM types.

DuckDB's binder inlines a view's query, a macro's body and a generated column's expression,
and resolves a cast to a named type into the type itself, so the plan `scoped.py` judges
keeps their scans but not their names. A view in a hidden schema that reads only visible
tables, or holds constants (`SELECT 'secret' AS k`), leaves no hidden scan; nor does
`enum_range(NULL::hidden_type)`. So, read once per worker with the built-ins first:

- a view or macro is hidden when its own name is (its schema, `schema.name`, or for a view
  any of its columns: a plan cannot tell a view's columns apart), or when its definition
  names one that is hidden — every object DuckDB could resolve the name to (by name and
  qualification, over-approximate), walked on demand;
- a table whose generated column names a hidden view or macro is hidden whole (the plan
  shows the expression, not the column);
- an ENUM type's labels are hidden when a hidden column (or a type of a hidden schema) has
  that ENUM and no visible column does.

A statement that names a hidden view or macro, scans such a table, or holds such an ENUM
anywhere but a scan's list of the table's own types, is refused by `scoped.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from astro_tui.data.engines.duckdb.guard import _scoped, ascii_lower
from astro_tui.data.engines.duckdb.resolved import rows_of, view_query
from astro_tui.data.scope import Scope

_SQL = "SELECT system.main.json_serialize_sql(?)"
_PLAN = "SELECT system.main.json_serialize_plan(?, skip_null := true, skip_empty := true, optimize := false)"
_Key = tuple[str, str, str]
_KINDS = {"table": "view", "function": "macro", "type": "type"}
Ref = tuple[str, str, str, str]
"""(kind: `table`, `function` or `type`, catalog, schema, name) as written, lower-cased."""


@dataclass(frozen=True, slots=True)
class _Object:
    key: _Key
    kind: str
    """What a name written as a `table`, `function` or `type` may be: `view`, `macro`, `type`."""
    body: str | None
    """A view's query, a macro's body as a SELECT, `enum` for an ENUM type; None if unread."""


class ScopedDefinitions:
    """The file's views, macros and ENUM types as a scope sees them (see the module)."""

    def __init__(self, scope: Scope, trusted: Callable[[], Any]) -> None:
        self.scope = scope
        self._trusted = trusted
        self._by_name: dict[str, list[_Object]] | None = None
        self._hidden: dict[_Key, bool] = {}
        self._generated: dict[_Key, list[str]] = {}
        self._tainted: dict[_Key, bool] = {}
        self._enums: tuple[set[tuple[str, ...]], set[tuple[str, ...]]] | None = None

    def names_hidden_definition(self, statement: str) -> bool:
        """Whether the statement names a view or macro the scope hides (or cannot be read)."""
        refs = self._refs(statement)
        return refs is None or any(self._reaches_hidden(ref) for ref in refs)

    def path_hidden(self, db: str, schema: str, name: str) -> bool:
        """Whether the file's view, macro or table of this path is hidden, by name or by what
        it reaches (a table: hidden whole, or a generated column calls something hidden)."""
        key = _key(db, schema, name)
        if self.scope.hides_table(schema, name) or self.table_tainted(*key):
            return True
        return any(self._is_hidden(o) for o in self._read().get(key[2], ()) if o.key == key)

    def shown_macro(self, catalog: str, schema: str, name: str) -> bool:
        """Whether a table function written so (lower-cased) could be a macro of the file that
        the scope does not hide: a hidden one is answered as a missing one is."""
        ref = ("function", catalog, schema, name)
        return any(not self._is_hidden(o) for o in self._candidates(ref, None))

    def table_tainted(self, catalog: str, schema: str, table: str) -> bool:
        """Whether a generated column of this table names a hidden view or macro."""
        self._read()
        key = (ascii_lower(catalog), ascii_lower(schema), ascii_lower(table))
        if key not in self._tainted:
            self._tainted[key] = False
            self._tainted[key] = any(
                refs is None or any(self._reaches_hidden(r, key) for r in refs)
                for refs in (self._refs(f"SELECT {e}") for e in self._generated.get(key, ()))
            )
        return self._tainted[key]

    def hidden_enum(self, plan: dict[str, Any]) -> bool:
        """Whether the plan holds an ENUM whose labels the scope hides (outside a scan's list
        of its table's types, which names every column, read or not)."""
        found = set(_enums(plan))
        if not found:
            return False
        hidden, visible = self._enum_labels()
        return any(labels in hidden and labels not in visible for labels in found)

    def _read(self) -> dict[str, list[_Object]]:
        if self._by_name is None:
            by_name: dict[str, list[_Object]] = {}
            for db, schema, name, sql in self._rows(
                "SELECT database_name, schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal"
            ):
                item = _Object(_key(db, schema, name), "view", view_query(sql))
                by_name.setdefault(item.key[2], []).append(item)
            for db, schema, name, kind, body in self._rows(
                "SELECT database_name, schema_name, function_name, function_type, macro_definition "
                "FROM duckdb_functions() WHERE NOT internal AND function_type IN ('macro', 'table_macro')"
            ):
                text = (body if kind == "table_macro" else f"SELECT {body}") if body else None
                item = _Object(_key(db, schema, name), "macro", text)
                by_name.setdefault(item.key[2], []).append(item)
            for db, schema, name, logical in self._rows(
                "SELECT database_name, schema_name, type_name, logical_type FROM duckdb_types() "
                "WHERE NOT internal"
            ):
                item = _Object(_key(db, schema, name), "type", "enum" if logical == "ENUM" else None)
                by_name.setdefault(item.key[2], []).append(item)
            for db, schema, table, expression in self._rows(
                "SELECT database_name, schema_name, table_name, generation_expression "
                "FROM duckdb_columns() WHERE is_generated"
            ):
                self._generated.setdefault(_key(db, schema, table), []).append(str(expression))
            self._view_columns: set[_Key] = set()
            if any(len(p.parts) == 3 for p in self.scope.patterns):
                for db, schema, view, column in self._rows(
                    "SELECT c.database_name, c.schema_name, c.table_name, c.column_name "
                    "FROM duckdb_columns() c JOIN duckdb_views() v ON c.database_name = v.database_name "
                    "AND c.schema_name = v.schema_name AND c.table_name = v.view_name WHERE NOT v.internal"
                ):
                    if scope_hides_column(self.scope, schema, view, column):
                        self._view_columns.add(_key(db, schema, view))
            self._by_name = by_name
        return self._by_name

    def _reaches_hidden(self, ref: Ref, home: _Key | None = None) -> bool:
        return any(self._is_hidden(o) for o in self._candidates(ref, home))

    def _candidates(self, ref: Ref, home: _Key | None) -> Iterator[_Object]:
        """What the name could resolve to; written in a definition (`home`), an unqualified
        name may also be of the definition's own schema (DuckDB binds a view there)."""
        kind, catalog, schema, name = ref
        for item in self._read().get(name, ()):
            if item.kind != _KINDS[kind]:
                continue
            local = home is not None and not catalog and not schema and item.key[:2] == home[:2]
            if local or could_name(catalog, schema, item.key[0], item.key[1]):
                yield item

    def _is_hidden(self, item: _Object) -> bool:
        """Depth first, memoised; an object met again while it is being walked adds nothing
        (a cycle), which is the least fixed point."""
        if item.key in self._hidden:
            return self._hidden[item.key]
        _, schema, name = item.key
        seed = self.scope.hides_table(schema, name) or item.key in self._view_columns
        self._hidden[item.key] = seed
        if not seed and item.kind == "type":
            if item.body == "enum":
                hidden, visible = self._enum_labels()
                labels = set(self._labels(f"SELECT CAST(NULL AS {quoted_path(item.key)})"))
                self._hidden[item.key] = any(t in hidden and t not in visible for t in labels)
        elif not seed:
            refs = self._refs(item.body) if item.body else None
            self._hidden[item.key] = refs is None or any(self._reaches_hidden(r, item.key) for r in refs)
        return self._hidden[item.key]

    def _refs(self, text: str) -> list[Ref] | None:
        """Every table and function the text names, as written; None if it cannot be parsed."""
        try:
            tree = json.loads(str(self._rows_params(_SQL, text)[0][0]))
        except (ValueError, IndexError, RecursionError):
            return None
        if not isinstance(tree, dict) or tree.get("error"):
            return None
        found: list[Ref] = []
        for node, ctes in _scoped(tree.get("statements", [])):
            if node.get("type") == "BASE_TABLE":
                parts = [_text(node.get(k)) for k in ("catalog_name", "schema_name", "table_name")]
                if parts[0] or parts[1] or parts[2] not in ctes:
                    found.append(("table", *parts))
            elif node.get("class") == "TYPE":
                found.append(("type", *(_text(node.get(k)) for k in ("catalog", "schema", "type_name"))))
            elif node.get("class") == "FUNCTION":
                parts = [_text(node.get(k)) for k in ("catalog", "schema", "function_name")]
                found.append(("function", *parts))
        return found

    def _enum_labels(self) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
        """(labels of hidden ENUMs, labels of visible columns' ENUMs), read on first need."""
        if self._enums is None:
            hidden: set[tuple[str, ...]] = set()
            visible: set[tuple[str, ...]] = set()
            tables: dict[_Key, list[str]] = {}
            for db, schema, table, column in self._rows(
                "SELECT c.database_name, c.schema_name, c.table_name, c.column_name "
                "FROM duckdb_columns() c JOIN duckdb_tables() t ON c.database_name = t.database_name "
                "AND c.schema_name = t.schema_name AND c.table_name = t.table_name "
                "WHERE c.data_type LIKE '%ENUM(%'"
            ):
                tables.setdefault((str(db), str(schema), str(table)), []).append(str(column))
            for (db, schema, table), columns in tables.items():
                whole = self.scope.hides_table(schema, table)
                for column in columns:
                    read = f"SELECT {quoted_path([column])} FROM {quoted_path([db, schema, table])}"
                    labels = set(self._labels(read))
                    hide = whole or scope_hides_column(self.scope, schema, table, column)
                    (hidden if hide else visible).update(labels)
            for db, schema, name in self._rows(
                "SELECT database_name, schema_name, type_name FROM duckdb_types() "
                "WHERE NOT internal AND logical_type = 'ENUM'"
            ):
                if self.scope.hides_table(schema, name):
                    hidden.update(self._labels(f"SELECT CAST(NULL AS {quoted_path([db, schema, name])})"))
            self._enums = (hidden, visible)
        return self._enums

    def _labels(self, sql: str) -> Iterator[tuple[str, ...]]:
        try:
            tree = json.loads(str(self._rows_params(_PLAN, sql)[0][0]))
        except (ValueError, IndexError, RecursionError):
            return iter(())
        return _enums(tree)

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return rows_of(self._trusted, sql)

    def _rows_params(self, sql: str, text: str) -> list[tuple[Any, ...]]:
        made = self._trusted()
        try:
            return made.execute(sql, [text]).fetchall()
        finally:
            made.close()


def could_name(catalog: str, schema: str, db: str, its_schema: str) -> bool:
    """Whether a name written with this catalog and schema (either may be empty; lower-cased)
    could resolve to an object of `db`.`its_schema` (lower-cased): `a.t` is schema `a` or
    database `a`; an unqualified name is looked up in `main` (no statement can change the
    search path)."""
    if catalog:
        return db == catalog and its_schema == (schema or "main")
    if schema:
        return its_schema == schema or (db == schema and its_schema == "main")
    return its_schema == "main"


def scope_hides_column(scope: Scope, schema: str, table: str, column: str) -> bool:
    return scope.hides_table(schema, table) or scope.hides_column(schema, table, column)


def _enums(tree: Any) -> Iterator[tuple[str, ...]]:
    """The labels of every ENUM in a plan, except in a scan's `returned_types` (every column
    of its table, read or not; a column that is read has its type in the steps above too)."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            info = item.get("type_info")
            if isinstance(info, dict) and info.get("type") == "ENUM_TYPE_INFO":
                yield tuple(str(v) for v in info.get("values") or ())
            scan = item.get("type") == "LOGICAL_GET"
            stack.extend(v for k, v in item.items() if not (scan and k == "returned_types"))


def _key(db: Any, schema: Any, name: Any) -> _Key:
    return (ascii_lower(str(db)), ascii_lower(str(schema)), ascii_lower(str(name)))


def _text(value: Any) -> str:
    return ascii_lower(value) if isinstance(value, str) else ""


def quoted_path(parts: Any) -> str:
    return ".".join('"' + str(p).replace('"', '""') + '"' for p in parts)

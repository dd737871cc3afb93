"""The scope on DuckDB: what a statement reads, as DuckDB's binder resolves it.

Run in the worker after the guard, on the statement the guard passed. Three readings, all
DuckDB's own, default deny:

1. *The parse* (`json_serialize_sql`): only a query can be judged (anything else is
   refused); `DESCRIBE`, `SHOW` and `SUMMARIZE` are refused (they list columns without
   scanning them); `COLUMNS(…)` with a pattern or a lambda and `*` under `LIKE`/`SIMILAR
   TO` are refused (a pattern probes names); a name in `* EXCLUDE/REPLACE/RENAME` that
   could be hidden is refused (it names a column without reading it); a table function
   other than a generator or a shown table macro, and `currval()`, are refused before
   DuckDB looks up the name in their argument (a hidden table and a missing one alike).
2. *The names the plan loses* (`scoped_definitions.py`): a view, macro or type the scope
   hides, or whose definition reaches one, named anywhere in the statement.
3. *The bound plan* (`json_serialize_plan`, unoptimised: what the binder asked for): every
   step must be a read-only step other than a constant chunk (DESCRIBE's), every scan a
   table of the file or a generator (`range`, `generate_series`, `unnest`, `json_each`,
   `json_tree`; every catalog function and system view is refused), and no scan may be of
   a hidden schema or table (or one whose every column is hidden, or whose generated
   column calls something hidden) or read a hidden column (`column_indexes`: what DuckDB
   binds for `*`, `COLUMNS(*)`, `t` as a value, `struct_pack(*)`, views, macros, generated
   columns, subqueries, CTEs, lateral joins, windows, GROUP/ORDER BY alike); no ENUM whose
   labels only hidden columns have may appear (`enum_range(NULL::t)`).

Reading something hidden, naming it, and naming something that does not exist get one and
the same refusal, chosen from the text and what the scope shows only (no message tells a
hidden name from a typo); a binding error is that refusal too, so DuckDB's "Did you mean"
never lists a hidden name, and any other refusal or error that names something hidden the
statement does not is replaced by it (`veil`). `*` is refused, not expanded: when the
statement has a `*` and names a table with hidden columns, the refusal lists its visible
ones — whether or not the `*` is what read a hidden column, so that `SELECT *, salary` and
`SELECT *, nosuch` read alike. A word the statement writes (outside comments) that the
scope would hide as a column of a table it scans is refused whether or not that column
exists: `salary` beside `(SELECT 1 AS salary)` is ambiguous, and fails to bind, only where
it does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duckdb

from astro_tui.data.engines.duckdb.guard import ascii_lower, walk
from astro_tui.data.engines.duckdb.resolved import _READ_ONLY_STEPS, Unbound, rows_of
from astro_tui.data.engines.duckdb.scoped_definitions import ScopedDefinitions, could_name, quoted_path
from astro_tui.data.errors import GuardError
from astro_tui.data.input_limits import too_deep
from astro_tui.data.scope import Scope

HIDDEN = (
    "refused: this statement reads or names a schema, table or column that does not exist or that "
    "the scope hides (while a scope is in force, DuckDB's binding errors are not detailed)"
)
_STEPS = _READ_ONLY_STEPS - {"LOGICAL_CHUNK_GET"}
_TABLE_FUNCTIONS = (
    "refused: while a scope is in force, table functions other than generators (range, unnest, …) "
    "are refused: catalog listings would show what it hides"
)
_BY_NAME = frozenset({"currval"})
"""Scalar functions that look a catalog object up by a name in text (a sequence): whether
one exists would show, hidden or not."""
_GENERATORS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree"})
_ROW_ID = 2**63
_SQL = "SELECT system.main.json_serialize_sql(?)"
_PLAN = (
    "SELECT system.main.json_serialize_plan(?, skip_null := true, skip_empty := true, "
    "skip_default := true, optimize := false)"
)
_WORD = re.compile(r"\w+")
_HINTS = re.compile(r"\s*(Did you mean|Candidate (bindings|tables|functions)|LINE \d+:).*", re.S | re.I)


class ScopeGuard:
    """The scope's judge over one open database (see the module docstring)."""

    def __init__(
        self,
        scope: Scope,
        cursor: Callable[[], duckdb.DuckDBPyConnection],
        trusted: Callable[[], duckdb.DuckDBPyConnection],
    ) -> None:
        self.scope = scope
        self._cursor = cursor
        self._trusted = trusted
        self._derived: dict[str, list[list[str]]] | None = None
        self.definitions = ScopedDefinitions(scope, trusted)

    def judge(self, statement: str, written: str) -> None:
        """Raise GuardError unless `statement` reads nothing hidden; `written` is the text as
        the caller wrote it (a refusal names a table only if it is written there)."""
        parsed = self._judge_parse(statement)
        try:
            if parsed.names_hidden or self.definitions.names_hidden_definition(statement):
                raise _Hidden
            tree = self._tree(self._cursor, _PLAN, statement)
            if tree.get("error"):
                message = str(tree.get("error_message", "")).lower()
                if "serializ" in message:
                    raise GuardError(
                        "refused: DuckDB cannot show how it would run this statement, so the scope "
                        "cannot be checked (EXPLAIN, a Parquet scan)"
                    )
                raise _Hidden
            words = _written_words(statement)
            for node in walk(tree.get("plans", [])):
                self._judge_step(node, words)
            if self.definitions.hidden_enum(tree):
                raise _Hidden
        except _Hidden:
            raise GuardError(self._refusal(parsed, written)) from None

    def refusal(self, statement: str, written: str) -> str:
        """The line for a statement DuckDB could not bind while the guard checked it: the one
        `judge` gives a hidden name, so a missing name is told apart from no hidden one."""
        try:
            parsed = self._judge_parse(statement)
        except GuardError as exc:
            return str(exc)
        return self._refusal(parsed, written)

    def guard_refusal(self, refused: GuardError, statement: str, written: str) -> str:
        """The guard's refusal as the scope lets it be said: a name DuckDB could not bind, or a
        definition of the file the scope hides (a view of a hidden schema whose body the guard
        refuses), gets the line a missing name gets; any other refusal, unless it names
        something hidden (`veil`)."""
        path = getattr(refused, "path", None)
        if isinstance(refused, Unbound) or (path and self.definitions.path_hidden(*path)):
            return self.refusal(statement, written)
        return self.veil(str(refused), written)

    def scrub(self, message: str, written: str) -> str:
        """An engine error without DuckDB's suggestions, which may name hidden things, and
        none at all if it still names one the statement does not."""
        return self.veil(_HINTS.sub("", message).strip() or HIDDEN, written)

    def veil(self, message: str, written: str) -> str:
        """The refusal or error itself, unless it names something hidden that `written` does not
        (the guard's refusals name the views and macros they judged, schema and all)."""
        derived = self.hidden_derived()
        also = [v[-1] for v in derived["views"]] + [c[-1] for c in derived["columns"]]
        return HIDDEN if self.scope.mentions_hidden(message, written, also) else message

    def hidden_derived(self) -> dict[str, list[list[str]]]:
        """What reads something hidden (or cannot be judged), and so is hidden too: the file's
        views, and tables whose generated columns call something hidden (`views`: database,
        schema, name), and generated columns (`columns`: … column). Read once: the file is open
        read-only."""
        if self._derived is not None:
            return self._derived
        views = [
            [str(p) for p in row]
            for row in self._rows(
                "SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal"
            )
            if self._reads_hidden(f"SELECT * FROM {quoted_path(row)}")
        ]
        views += [
            [str(p) for p in row]
            for row in self._rows(
                "SELECT DISTINCT database_name, schema_name, table_name FROM duckdb_columns() "
                "WHERE is_generated"
            )
            if self.definitions.table_tainted(*(str(p) for p in row))
        ]
        columns = [
            [str(p) for p in row]
            for row in self._rows(
                "SELECT database_name, schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE is_generated"
            )
            if self._reads_hidden(f"SELECT {quoted_path(row[3:])} FROM {quoted_path(row[:3])}")
        ]
        self._derived = {"views": views, "columns": columns}
        return self._derived

    def _reads_hidden(self, sql: str) -> bool:
        try:
            self.judge(sql, "")
        except GuardError:
            return True
        return False

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return rows_of(self._trusted, sql)

    def _tree(self, cursor: Callable[[], duckdb.DuckDBPyConnection], sql: str, text: str) -> dict[str, Any]:
        made = cursor()
        try:
            row = made.execute(sql, [text]).fetchone()
        finally:
            made.close()
        try:
            found = json.loads(str(row[0])) if row else {}
        except RecursionError:
            raise too_deep() from None
        return found if isinstance(found, dict) else {}

    def _judge_parse(self, statement: str) -> _Parse:
        """Refuse what the parse alone shows; what the refusal may say (see `_refusal`)."""
        tree = self._tree(self._trusted, _SQL, statement)
        if tree.get("error"):
            raise GuardError("refused: while a scope is in force, only queries run (SELECT, WITH, VALUES, …)")
        parsed = _Parse()
        for node in walk(tree.get("statements", [])):
            if node.get("type") == "SHOW_REF":
                raise GuardError(
                    "refused: DESCRIBE, SHOW and SUMMARIZE are refused while a scope is in force"
                )
            if node.get("type") == "TABLE_FUNCTION":  # refused before binding: no existence shows
                self._judge_table_function(node.get("function"))
            if ascii_lower(str(node.get("function_name", ""))) in _BY_NAME:
                raise GuardError(
                    f"refused: {node.get('function_name')}() looks a name up in the catalog, refused while a "
                    "scope is in force"
                )
            if node.get("type") == "BASE_TABLE":
                parsed.tables.append(
                    tuple(str(node.get(k) or "") for k in ("catalog_name", "schema_name", "table_name"))
                )
            patterned = node.get("is_operator") or "regexp" in str(node.get("function_name", ""))
            if node.get("class") == "FUNCTION" and patterned and _has_star_argument(node):
                raise GuardError("refused: `*` with a name pattern is refused while a scope is in force")
            if node.get("class") != "STAR":
                continue
            parsed.stars = True
            if node.get("expr") is not None:
                raise GuardError(
                    "refused: COLUMNS(…) with a pattern or a lambda is refused while a scope is in force"
                )
            named = [
                *(n for n in node.get("exclude_list") or [] if isinstance(n, str)),
                *(_strings(node.get("qualified_exclude_list"))),
                *(_strings(node.get("replace_list"))),
                *(_strings(node.get("rename_list"))),
            ]
            parsed.names_hidden = parsed.names_hidden or any(self.scope.names_hidden(n) for n in named)
        return parsed

    def _judge_table_function(self, function: Any) -> None:
        """A table function other than a generator is refused from the text alone, so that a
        hidden table and a missing one named in its arguments (`pragma_table_info('hr.t')`)
        get one answer; a table macro of the file the scope shows is left to the plan, and one it
        hides gets this same line."""
        if not isinstance(function, dict):
            raise GuardError(_TABLE_FUNCTIONS)
        name = ascii_lower(str(function.get("function_name", "")))
        where = [ascii_lower(str(function.get(k) or "")) for k in ("catalog", "schema")]
        builtin = where[0] in ("", "system") and where[1] in ("", "main")
        if not (builtin and name in _GENERATORS) and not self.definitions.shown_macro(*where, name):
            raise GuardError(_TABLE_FUNCTIONS)

    def _refusal(self, parsed: _Parse, written: str) -> str:
        """The one line for a statement that reads or names something hidden, or something that
        does not exist: a function of what is written and of what the scope shows, never of
        whether the hidden thing exists (`SELECT *, salary` and `SELECT *, nosuch` alike). With a
        `*` and a table written that has hidden columns, the line names its visible ones."""
        if not parsed.stars:
            return HIDDEN
        for catalog, schema, table in parsed.tables:
            if not re.search(rf"(?<![\w$]){re.escape(table)}(?![\w$])", written, re.I):
                continue
            visible = self._visible_columns(catalog, schema, table)
            if visible:
                return (
                    "refused: `*` here would read a column the scope hides (and a name that is not "
                    f"shown is refused alike); name the columns of {table} you need: {', '.join(visible)}"
                )
        return HIDDEN

    def _visible_columns(self, catalog: str, schema: str, table: str) -> list[str]:
        """The shown columns of the table the name could be, if it has hidden ones; else []."""
        derived = {tuple(str(p).lower() for p in r[1:]) for r in self.hidden_derived()["columns"]}
        found: dict[tuple[str, str, str], list[tuple[str, bool]]] = {}
        for db, its_schema, name, column in self._rows_for(table):
            d, t = ascii_lower(db), ascii_lower(its_schema)
            if not could_name(ascii_lower(catalog), ascii_lower(schema), d, t):
                continue
            if self.scope.hides_table(its_schema, name):
                continue
            hidden = self.scope.hides_column(its_schema, name, column)
            hidden = hidden or (t, name.lower(), column.lower()) in derived
            found.setdefault((db, its_schema, name), []).append((column, hidden))
        for (db, its_schema, name), columns in found.items():
            if self.definitions.table_tainted(db, its_schema, name):
                continue
            shown = [c for c, hidden in columns if not hidden]
            if shown and len(shown) < len(columns):
                return shown
        return []

    def _rows_for(self, table: str) -> list[tuple[str, str, str, str]]:
        """The columns of every table (not view) of that name, in order, read with the built-ins first."""
        made = self._trusted()
        try:
            rows = made.execute(
                "SELECT c.database_name, c.schema_name, c.table_name, c.column_name FROM duckdb_columns() c "
                "JOIN duckdb_tables() t ON c.database_name = t.database_name "
                "AND c.schema_name = t.schema_name AND c.table_name = t.table_name "
                "WHERE lower(c.table_name) = lower(?) ORDER BY 1, 2, c.column_index",
                [table],
            ).fetchall()
        finally:
            made.close()
        return [(str(a), str(b), str(c), str(d)) for a, b, c, d in rows]

    def _judge_step(self, node: dict[str, Any], words: set[str]) -> None:
        step = node.get("type")
        if not isinstance(step, str) or not step.startswith("LOGICAL_"):
            return
        if step not in _STEPS:
            shown = step.removeprefix("LOGICAL_").replace("_", " ").lower()
            raise GuardError(f"refused: a {shown} step is refused while a scope is in force")
        if step != "LOGICAL_GET":
            return
        path = [str(p) for p in (node.get("qname") or {}).get("path") or []]
        data = node.get("function_data")
        if path == ["seq_scan"] and isinstance(data, dict):
            self._judge_scan(node, data, words)
            return
        if len(path) == 3 and path[0].lower() == "system" and path[2].lower() in _GENERATORS:
            return
        raise GuardError(_TABLE_FUNCTIONS)

    def _judge_scan(self, node: dict[str, Any], data: dict[str, Any], words: set[str]) -> None:
        catalog, schema, table = (str(data.get(k, "")) for k in ("catalog", "schema", "table"))
        if not schema or not table or self.scope.hides_table(schema, table):
            raise _Hidden
        if any(self.scope.hides_column(schema, table, w) for w in words):
            raise _Hidden
        names = [str(n) for n in node.get("names") or []]
        if names and all(self.scope.hides_column(schema, table, n) for n in names):
            raise _Hidden  # every column hidden: the table is, even to count(*)
        if self.definitions.table_tainted(catalog, schema, table):
            raise _Hidden
        for entry in node.get("column_indexes") or []:
            index = entry.get("index", 0) if isinstance(entry, dict) else None
            if not isinstance(index, int):
                raise _Hidden
            if index >= _ROW_ID:
                continue
            if index >= len(names) or self.scope.hides_column(schema, table, names[index]):
                raise _Hidden


class _Hidden(Exception):
    """Something hidden (or missing) is read or named: `ScopeGuard._refusal` says which line."""


@dataclass(slots=True)
class _Parse:
    stars: bool = False
    names_hidden: bool = False
    """A name in `* EXCLUDE/REPLACE/RENAME` that could be a hidden one."""
    tables: list[tuple[str, ...]] = field(default_factory=list)
    """Every table as written: (catalog, schema, name)."""


def _written_words(sql: str) -> set[str]:
    """Every name the text could make DuckDB bind: quoted identifiers whole, and each word of
    any other token but a comment (strings too: `AS 'x'` names a column)."""
    try:
        tokens = duckdb.tokenize(sql)
    except Exception:  # a text DuckDB cannot split: every word counts
        return set(_WORD.findall(sql))
    ends = [start for start, _ in tokens[1:]] + [len(sql)]
    words: set[str] = set()
    for (start, kind), end in zip(tokens, ends, strict=True):
        if kind == duckdb.token_type.comment:
            continue
        text = sql[start:end].strip()
        if kind == duckdb.token_type.identifier and len(text) >= 2 and text[0] == text[-1] == '"':
            words.add(text[1:-1].replace('""', '"'))
        words.update(_WORD.findall(text))
    return words


def _has_star_argument(node: dict[str, Any]) -> bool:
    for argument in node.get("arguments") or []:
        expression = argument.get("expression") if isinstance(argument, dict) else None
        if isinstance(expression, dict) and expression.get("class") == "STAR":
            return True
        if isinstance(argument, dict) and argument.get("class") == "STAR":
            return True
    return False


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value (the names of an EXCLUDE, REPLACE or RENAME list)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []

"""The scope on DuckDB: what a statement reads, as DuckDB's binder resolves it.

Run in the worker after the guard, on the statement the guard passed. Two readings, both
DuckDB's own, default deny:

1. *The parse* (`json_serialize_sql`): only a query can be judged (anything else is
   refused); `DESCRIBE`, `SHOW` and `SUMMARIZE` are refused (they list columns without
   scanning them); `COLUMNS(…)` with a pattern or a lambda and `*` under `LIKE`/`SIMILAR
   TO` are refused (a pattern probes names); a name in `* EXCLUDE/REPLACE/RENAME` that
   could be hidden is refused (it names a column without reading it).
2. *The bound plan* (`json_serialize_plan`, unoptimised: what the binder asked for): every
   step must be a read-only step other than a constant chunk (DESCRIBE's), every scan a
   table of the file or a generator (`range`, `generate_series`, `unnest`, `json_each`,
   `json_tree`; every catalog function and system view is refused), and no scan may be of
   a hidden schema or table or read a hidden column (`column_indexes`: what DuckDB binds
   for `*`, `COLUMNS(*)`, `t` as a value, `struct_pack(*)`, views, macros, generated
   columns, subqueries, CTEs, lateral joins, windows, GROUP/ORDER BY alike).

Reading something hidden, naming it, and naming something that does not exist get one and
the same refusal (no message tells a hidden name from a typo); a binding error is that
refusal too, so DuckDB's "Did you mean" never lists a hidden name. `*` is refused, not
expanded: when the statement names the table, the refusal lists its visible columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import duckdb

from astro_tui.data.engines.duckdb.guard import walk
from astro_tui.data.engines.duckdb.resolved import _READ_ONLY_STEPS, rows_of
from astro_tui.data.errors import GuardError
from astro_tui.data.input_limits import too_deep
from astro_tui.data.scope import Scope

HIDDEN = (
    "refused: this statement reads or names a schema, table or column that does not exist or that "
    "the scope hides (while a scope is in force, DuckDB's binding errors are not detailed)"
)
_STEPS = _READ_ONLY_STEPS - {"LOGICAL_CHUNK_GET"}
_GENERATORS = frozenset({"range", "generate_series", "unnest", "json_each", "json_tree"})
_ROW_ID = 2**63
_SQL = "SELECT system.main.json_serialize_sql(?)"
_PLAN = (
    "SELECT system.main.json_serialize_plan(?, skip_null := true, skip_empty := true, "
    "skip_default := true, optimize := false)"
)
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

    def judge(self, statement: str, written: str) -> None:
        """Raise GuardError unless `statement` reads nothing hidden; `written` is the text as
        the caller wrote it (a refusal names a table only if it is written there)."""
        stars = self._judge_parse(statement)
        tree = self._tree(self._cursor, _PLAN, statement)
        if tree.get("error"):
            message = str(tree.get("error_message", "")).lower()
            if "serializ" in message:
                raise GuardError(
                    "refused: DuckDB cannot show how it would run this statement, so the scope cannot "
                    "be checked (EXPLAIN, a Parquet scan)"
                )
            raise GuardError(HIDDEN)
        for node in walk(tree.get("plans", [])):
            self._judge_step(node, stars, written)

    def scrub(self, message: str) -> str:
        """An engine error without DuckDB's suggestions, which may name hidden things."""
        return _HINTS.sub("", message).strip() or HIDDEN

    def hidden_derived(self) -> dict[str, list[list[str]]]:
        """What reads something hidden (or cannot be judged), and so is hidden too: the file's
        views (`views`: database, schema, name) and generated columns (`columns`: … column).
        Read once: the file is open read-only."""
        if self._derived is not None:
            return self._derived
        views = [
            [str(p) for p in row]
            for row in self._rows(
                "SELECT database_name, schema_name, view_name FROM duckdb_views() WHERE NOT internal"
            )
            if self._reads_hidden(f"SELECT * FROM {_path(row)}")
        ]
        columns = [
            [str(p) for p in row]
            for row in self._rows(
                "SELECT database_name, schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE is_generated"
            )
            if self._reads_hidden(f"SELECT {_path(row[3:])} FROM {_path(row[:3])}")
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

    def _judge_parse(self, statement: str) -> bool:
        """Refuse what the parse alone shows; whether the statement has a `*`."""
        tree = self._tree(self._trusted, _SQL, statement)
        if tree.get("error"):
            raise GuardError("refused: while a scope is in force, only queries run (SELECT, WITH, VALUES, …)")
        stars = False
        for node in walk(tree.get("statements", [])):
            if node.get("type") == "SHOW_REF":
                raise GuardError(
                    "refused: DESCRIBE, SHOW and SUMMARIZE are refused while a scope is in force"
                )
            patterned = node.get("is_operator") or "regexp" in str(node.get("function_name", ""))
            if node.get("class") == "FUNCTION" and patterned and _has_star_argument(node):
                raise GuardError("refused: `*` with a name pattern is refused while a scope is in force")
            if node.get("class") != "STAR":
                continue
            stars = True
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
            if any(self.scope.names_hidden(n) for n in named):
                raise GuardError(HIDDEN)
        return stars

    def _judge_step(self, node: dict[str, Any], stars: bool, written: str) -> None:
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
            self._judge_scan(node, data, stars, written)
            return
        if len(path) == 3 and path[0].lower() == "system" and path[2].lower() in _GENERATORS:
            return
        raise GuardError(
            "refused: while a scope is in force, table functions other than generators (range, "
            "unnest, …) are refused: catalog listings would show what it hides"
        )

    def _judge_scan(self, node: dict[str, Any], data: dict[str, Any], stars: bool, written: str) -> None:
        schema, table = str(data.get("schema", "")), str(data.get("table", ""))
        if not schema or not table or self.scope.hides_table(schema, table):
            raise GuardError(HIDDEN)
        names = [str(n) for n in node.get("names") or []]
        hidden = False
        for entry in node.get("column_indexes") or []:
            index = entry.get("index", 0) if isinstance(entry, dict) else None
            if not isinstance(index, int):
                raise GuardError(HIDDEN)
            if index >= _ROW_ID:
                continue
            if index >= len(names):
                raise GuardError(HIDDEN)
            hidden = hidden or self.scope.hides_column(schema, table, names[index])
        if not hidden:
            return
        if stars and re.search(rf"(?<![\w$]){re.escape(table)}(?![\w$])", written, re.I):
            derived = {(str(r[1]), str(r[2]), str(r[3])) for r in self.hidden_derived()["columns"]}
            visible = [
                n
                for n in names
                if not self.scope.hides_column(schema, table, n) and (schema, table, n) not in derived
            ]
            raise GuardError(
                f"refused: `*` here would read a column the scope hides; name the columns of {table} "
                f"you need: {', '.join(visible)}"
            )
        raise GuardError(HIDDEN)


def _path(parts: Any) -> str:
    return ".".join('"' + str(p).replace('"', '""') + '"' for p in parts)


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

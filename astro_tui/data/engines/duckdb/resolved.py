"""What a database file defines, and what DuckDB resolves a statement to over it.

A name in a statement is not the function or table that runs. DuckDB looks an
unqualified name up along its search path — temporary objects, the file's
`main`, then the built-ins — so a macro or view of the file can stand in for a
built-in of the same name, even one the statement never names (`count(*)` is
`count_star()`, `split_part` calls `string_split`, `information_schema.tables`
calls `duckdb_tables()`). A view runs its definition, a table its generated
columns, a macro its body and its default arguments: none of which the
statement shows.

So for a statement that can reach any of these, before it runs:
1. every definition it names (in any schema, any case: an over-approximation)
   is walked with the guard's own rules, transitively;
2. a macro of the file must be given every argument it declares: its default
   values are kept where no catalog listing shows them, and DuckDB evaluates
   them while binding;
3. DuckDB binds the statement (`json_serialize_plan`, not optimised: nothing
   runs) and every call in the bound plan is judged as resolved — a table
   function by its catalog path, a scan by its table, a function by name, a plan
   step against the read-only ones;
4. on a file that defines something under a built-in's name, the statement is
   also bound with the built-ins first in the search path, and refused unless
   both bindings are the same: a built-in's name never runs the file's code.
A statement that reaches none of it, the usual case, pays a word lookup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import duckdb

from astro_tui.data.engines.duckdb.guard import (
    SAFE_TABLE_FUNCTIONS,
    Rules,
    ascii_lower,
    check_ast,
    learn_builtins,
    refused_function,
    walk,
)
from astro_tui.data.errors import GuardError, QueryError, engine_message, one_line
from astro_tui.data.input_limits import too_deep

_WORD = re.compile(r"\w+")
_PLAN = (
    "SELECT system.main.json_serialize_plan(?, skip_null := true, skip_empty := true, "
    "skip_default := true, optimize := false)"
)
"""Qualified: the statement is bound as DuckDB will, but the call that binds it is DuckDB's."""
_BUILTIN = "internal AND database_name = 'system'"
"""DuckDB's own: its `system` catalog (a file named system.duckdb is opened as `system_db`).
Anything else is the file's, whatever flags its stored entries carry."""
_FUNCTIONS = (
    f"SELECT {_BUILTIN}, database_name, schema_name, function_name, function_type, "
    f"CASE WHEN {_BUILTIN} THEN NULL ELSE macro_definition END, len(parameters) FROM duckdb_functions()"
)
_VIEWS = f"SELECT {_BUILTIN}, database_name, schema_name, view_name, sql FROM duckdb_views()"
_GENERATED = (
    "SELECT database_name, schema_name, table_name, list(generation_expression) "
    "FROM duckdb_columns() WHERE is_generated GROUP BY ALL"
)
_READ_ONLY_STEPS = frozenset({
    "LOGICAL_PROJECTION", "LOGICAL_FILTER", "LOGICAL_AGGREGATE_AND_GROUP_BY", "LOGICAL_WINDOW",
    "LOGICAL_UNNEST", "LOGICAL_LIMIT", "LOGICAL_ORDER_BY", "LOGICAL_TOP_N", "LOGICAL_DISTINCT",
    "LOGICAL_SAMPLE", "LOGICAL_PIVOT", "LOGICAL_GET", "LOGICAL_CHUNK_GET", "LOGICAL_DELIM_GET",
    "LOGICAL_EXPRESSION_GET", "LOGICAL_DUMMY_SCAN", "LOGICAL_EMPTY_RESULT", "LOGICAL_CTE_REF",
    "LOGICAL_JOIN", "LOGICAL_DELIM_JOIN", "LOGICAL_COMPARISON_JOIN", "LOGICAL_ANY_JOIN",
    "LOGICAL_CROSS_PRODUCT", "LOGICAL_POSITIONAL_JOIN", "LOGICAL_ASOF_JOIN", "LOGICAL_DEPENDENT_JOIN",
    "LOGICAL_UNION", "LOGICAL_EXCEPT", "LOGICAL_INTERSECT", "LOGICAL_RECURSIVE_CTE",
    "LOGICAL_MATERIALIZED_CTE",
})  # fmt: skip
"""Plan steps of a query; anything else (an insert, a copy, a pragma, an extension's own
operator, whatever a DuckDB upgrade adds) is refused until someone looks at it."""


@dataclass(frozen=True, slots=True)
class Definition:
    """One thing the file (or a built-in that calls into the file) defines under a name."""

    what: str
    """How a refusal names it: `view main.v`, `macro s.m`, `generated column of table t`."""
    body: str | None
    """A SELECT the guard's rules can walk; None when it could not be read."""
    parameters: int = 0
    macro: bool = False
    path: tuple[str, str, str] = ("", "", "")
    """(database, schema, name): a scope hides a refusal that names a hidden one."""


class Listings(NamedTuple):
    """What the guard reads of the catalog, as plain values (kept by `definitions_cache.py`)."""

    builtins: list[tuple[str, str]]
    """DuckDB's own functions: lowercase name, kind."""
    builtin_views: list[str]
    """DuckDB's own views, lowercase."""
    macros: list[tuple[str, str, str, str, str | None, int]]
    """The files' macros: database, schema, name, kind, body, how many parameters."""
    views: list[tuple[str, str, str, str | None]]
    """The files' views (astro's own over Parquet too): database, schema, name, CREATE text."""
    generated: list[tuple[str, str, str, list[str]]]
    """Tables with generated columns: database, schema, name, the expressions."""


class Kept(Protocol):
    """Listings kept from an earlier open of the very same files."""

    def load(self) -> Listings | None: ...

    def save(self, listings: Listings) -> None: ...


def builtins_first(cursor: duckdb.DuckDBPyConnection) -> str:
    """A search path with DuckDB's built-ins first, then the default database's schemas (`main`
    first, so unqualified names mean what they meant; the others so that `schema.table` still
    finds its schema). Read with fully qualified calls: the file's own `duckdb_schemas()`
    could stand in for an unqualified one."""
    (database,) = cursor.execute("SELECT system.main.current_database()").fetchone() or ("",)
    rows = cursor.execute(
        "SELECT schema_name FROM system.main.duckdb_schemas() "
        "WHERE database_name = system.main.current_database()"
    ).fetchall()
    schemas = sorted((str(r[0]) for r in rows), key=lambda name: (name != "main", name))
    ours = [f"{_quoted(database)}.{_quoted(schema)}" for schema in schemas]
    return ",".join(["system.main", "system.pg_catalog", *ours])


def with_builtins_first(cursor: duckdb.DuckDBPyConnection, search_path: str) -> duckdb.DuckDBPyConnection:
    cursor.execute(f"SET search_path = {_literal(search_path)}")
    return cursor


class FileDefinitions:
    """The guard's view of an open database (`guard.Definitions`), read once per worker.

    `cursor` gives a new cursor of the worker's connection as a statement gets it (names
    resolved as DuckDB resolves them); `trusted` one with the built-ins first in its search
    path, for astro's own queries, which the file's macros must never stand in for (a
    `main.duckdb_views()` would hide the file's views from the guard). The worker can
    interrupt both. `trusted_views` are astro's own (the Parquet targets' views over their
    files). A plan that scans Parquet cannot be shown (DuckDB 2.0 cannot serialise that
    step), so a statement that needs its plan judged and reads one of those views is refused."""

    def __init__(
        self,
        cursor: Callable[[], duckdb.DuckDBPyConnection],
        trusted: Callable[[], duckdb.DuckDBPyConnection],
        *,
        trusted_views: Iterable[Iterable[str]] = (),
        kept: Kept | None = None,
    ) -> None:
        self._cursor = cursor
        self._trusted = trusted
        self._kept = kept
        self._own_views = {tuple(ascii_lower(p) for p in view) for view in trusted_views}
        self._defined: dict[str, list[Definition]] | None = None
        self._odd: list[str] = []
        self._macros: dict[str, list[Definition]] = {}
        self._clean: set[str] = set()
        self._tainted: dict[str, tuple[str, tuple[str, str, str]]] = {}
        self._shadows = False
        """Whether the file defines something under the name of a built-in."""

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection) -> FileDefinitions:
        """Over one connection, in the process that holds it (a worker has its own cursors, which
        it can interrupt)."""
        path = builtins_first(con)
        return cls(con.cursor, lambda: with_builtins_first(con.cursor(), path))

    def parser(self) -> duckdb.DuckDBPyConnection:
        return self._cursor()

    def mentioned(self, text: str) -> bool:
        return bool(self._reached(text))

    def defines(self, name: str) -> bool:
        """Whether the file defines something (a macro, a view, …) under this lowercase name."""
        return name in self._definitions()

    def judge(self, text: str, rules: Rules) -> None:
        reached = self._reached(text)
        self._vet(reached)
        self._check_calls(rules.calls)
        if reached or rules.unsettled or self._shadows:
            self._check_plan(text, rules)

    def _definitions(self) -> dict[str, list[Definition]]:
        """Read once, as kept from an earlier open of the same files (`definitions_cache`) or
        from DuckDB, whose function list also gives the guard the built-ins it would otherwise
        read itself."""
        if self._defined is None:
            listings = self._kept.load() if self._kept is not None else None
            if listings is None:
                listings = self._listings()
                if self._kept is not None:
                    self._kept.save(listings)
            learn_builtins(listings.builtins)
            defined: dict[str, list[Definition]] = {}
            for key, definition in self._read(listings):
                defined.setdefault(key, []).append(definition)
            self._macros = {k: [d for d in v if d.macro] for k, v in defined.items()}
            self._odd = [k for k in defined if not _WORD.fullmatch(k)]
            if defined:
                builtin = {name for name, _ in listings.builtins} | set(listings.builtin_views)
                self._shadows = bool(builtin & set(defined))
            self._defined = defined
        return self._defined

    def _listings(self) -> Listings:
        """One pass over DuckDB's function list (its longest listing: ~30 ms) and its views, and
        the tables with generated columns: astro's own queries, the built-ins first."""
        functions = rows_of(self._trusted, _FUNCTIONS)
        views = rows_of(self._trusted, _VIEWS)
        generated = rows_of(self._trusted, _GENERATED)
        return Listings(
            builtins=sorted({(str(row[3]).lower(), str(row[4])) for row in functions if row[0]}),
            builtin_views=sorted({str(row[3]).lower() for row in views if row[0]}),
            macros=[
                (str(db), str(schema), str(name), str(kind), None if body is None else str(body), int(n or 0))
                for builtin, db, schema, name, kind, body, n in functions
                if not builtin and kind in ("macro", "table_macro")
            ],
            views=[
                (str(db), str(schema), str(name), None if sql is None else str(sql))
                for builtin, db, schema, name, sql in views
                if not builtin
            ],
            generated=[
                (str(db), str(schema), str(name), [str(e) for e in exprs])
                for db, schema, name, exprs in generated
            ],
        )

    def _read(self, listings: Listings) -> Iterable[tuple[str, Definition]]:
        """The file's macros, views (not astro's own) and tables with generated columns."""
        for db, schema, name, kind, body, parameters in listings.macros:
            select = body if kind == "table_macro" else f"SELECT {body}"
            what = f"{kind.replace('_', ' ')} {db}.{schema}.{name}"
            path = (db, schema, name)
            yield name.lower(), Definition(what, select if body else None, parameters, True, path)
        for db, schema, name, sql in listings.views:
            if (ascii_lower(db), ascii_lower(schema), ascii_lower(name)) not in self._own_views:
                what = f"view {db}.{schema}.{name}"
                yield name.lower(), Definition(what, view_query(sql), path=(db, schema, name))
        for db, schema, name, expressions in listings.generated:
            what = f"generated columns of table {db}.{schema}.{name}"
            yield name.lower(), Definition(what, "SELECT " + ", ".join(expressions), path=(db, schema, name))

    def _reached(self, text: str) -> set[str]:
        defined = self._definitions()
        if not defined:
            return set()
        lowered = text.lower()
        reached = {word for word in _WORD.findall(lowered) if word in defined}
        for key in self._odd:
            if any(form in lowered for form in (key, key.replace('"', '""'), key.replace("'", "''"))):
                reached.add(key)
        return reached

    def _vet(self, keys: Iterable[str]) -> None:
        """Walk every definition reachable from `keys` with the guard's rules; a refusal names
        the definition. Iterative: a chain of views may be long, and a cycle adds nothing."""
        defined = self._definitions()
        pending = [k for k in keys if k not in self._clean]
        if not pending:
            return
        seen: set[str] = set()
        parser = self.parser()
        try:
            self._walk(defined, pending, seen, parser)
        finally:
            parser.close()
        self._clean |= seen

    def _walk(
        self,
        defined: dict[str, list[Definition]],
        pending: list[str],
        seen: set[str],
        parser: duckdb.DuckDBPyConnection,
    ) -> None:
        while pending:
            key = pending.pop()
            if key in seen or key in self._clean:
                continue
            seen.add(key)
            if key in self._tainted:
                raise DefinitionRefused(*self._tainted[key])
            for definition in defined.get(key, ()):
                try:
                    if definition.body is None:
                        raise GuardError("refused: its definition cannot be read")
                    rules = Rules(resolving=True)
                    check_ast(definition.body, rules, parser)
                    self._check_calls(rules.calls)
                except GuardError as exc:
                    reason = str(exc).removeprefix("refused: ")
                    message = f"refused: the {definition.what} is not allowed here: {reason}"
                    self._tainted[key] = (message, definition.path)
                    raise DefinitionRefused(message, definition.path) from None
                pending.extend(self._reached(definition.body))

    def _check_calls(self, calls: list[tuple[str, int]]) -> None:
        self._definitions()
        for name, given in calls:
            for macro in self._macros.get(name.lower(), ()):
                if macro.parameters > given:
                    raise DefinitionRefused(
                        f"refused: {name}() is the {macro.what} of the database, which declares "
                        f"{macro.parameters} parameters; give all of them (its default values are "
                        "not shown anywhere astro can check them)",
                        macro.path,
                    )

    def _check_plan(self, text: str, rules: Rules) -> None:
        plan = self._bind(text)
        if self._shadows and self._bind(text, builtins_first=True) != plan:
            raise GuardError(  # whether or not it binds: what would run, or fail, is not DuckDB's
                "refused: the database defines something under the name of a DuckDB built-in, "
                "and this statement would run it in the built-in's place"
            )
        try:
            tree = json.loads(plan)
        except RecursionError:
            raise too_deep() from None
        if tree.get("error"):
            raise _plan_error(tree, rules)
        for node in walk(tree.get("plans", [])):
            self._judge_step(node)

    def _bind(self, text: str, *, builtins_first: bool = False) -> str:
        cursor = self._trusted() if builtins_first else self._cursor()
        try:
            row = cursor.execute(_PLAN, [text]).fetchone()
        finally:
            cursor.close()
        return str(row[0]) if row else "{}"

    def _judge_step(self, node: dict[str, Any]) -> None:
        step = node.get("type")
        if isinstance(step, str) and step.startswith("LOGICAL_") and step not in _READ_ONLY_STEPS:
            shown = step.removeprefix("LOGICAL_").replace("_", " ").lower()
            raise GuardError(f"refused: DuckDB would run this as a {shown} step, not a read-only query")
        qname = node.get("qname")
        if not isinstance(qname, dict):
            return
        path = [str(p) for p in qname.get("path") or []]
        name = ascii_lower(path[-1]) if path else ""
        builtin = len(path) == 3 and ascii_lower(path[0]) == "system"
        shown = ".".join(path) or "?"
        if step == "LOGICAL_GET":
            if path == ["seq_scan"] and isinstance(node.get("function_data"), dict):
                return  # a table of the database
            if builtin and name in SAFE_TABLE_FUNCTIONS:
                return
            raise GuardError(f"refused: this statement resolves to {shown}(), a table function astro refuses")
        if len(path) > 1 and not builtin:
            raise GuardError(f"refused: this statement resolves to {shown}(), a function astro does not know")
        if refused_function(name):
            raise GuardError(
                f"refused: this statement resolves to {shown}(), which reads files, runs SQL named in "
                "text, changes state or shows the machine"
            )


class DefinitionRefused(GuardError):
    """A refusal that names one definition of the file (`path`: database, schema, name)."""

    def __init__(self, message: str, path: tuple[str, str, str]) -> None:
        super().__init__(message)
        self.path = path


class Unbound(GuardError):
    """A refusal standing for a name DuckDB could not bind (a file, a system view, a table
    function): under a scope, the scope's one line for a missing or hidden name replaces it."""


def rows_of(cursor: Callable[[], duckdb.DuckDBPyConnection], sql: str) -> list[tuple[Any, ...]]:
    """All rows of `sql` on a cursor of its own, closed after."""
    made = cursor()
    try:
        return made.execute(sql).fetchall()
    finally:
        made.close()


def _plan_error(tree: dict[str, Any], rules: Rules) -> Exception:
    """Binding failed: DuckDB's own error (the statement would fail alike), unless DuckDB cannot
    show its plan at all, or a name only binding could settle was not settled: then the
    refusal that name stands for (a file, a system view, a table function)."""
    kind = str(tree.get("error_type", "")).strip()
    message = str(tree.get("error_message", "")).strip()
    if "serializ" in message.lower() or kind in ("not implemented", "internal"):
        reason = one_line(Exception(message))
        return GuardError(f"refused: DuckDB cannot show how it would run this statement ({reason})")
    if rules.unsettled:
        return Unbound(rules.unsettled[0])
    title = " ".join(word.capitalize() for word in kind.split()) or "Query"
    return QueryError(engine_message(Exception(f"{title} Error: {message}")))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def view_query(sql: str | None) -> str | None:
    """The query of a `CREATE VIEW name [(columns)] AS query;`, found with DuckDB's tokenizer."""
    if not sql:
        return None
    data = sql.encode("utf-8", "surrogatepass")
    try:
        found = duckdb.tokenize(sql)
    except duckdb.Error:
        return None
    depth = 0
    seen_view = False
    for index, (start, kind) in enumerate(found):  # offsets in bytes of UTF-8
        end = found[index + 1][0] if index + 1 < len(found) else len(data)
        word = data[start:end].decode("utf-8", "replace").strip()
        if word == "(":
            depth += 1
        elif word == ")":
            depth -= 1
        elif kind == duckdb.token_type.keyword and word.lower() == "view":
            seen_view = True
        elif seen_view and depth == 0 and kind == duckdb.token_type.keyword and word.lower() == "as":
            query = data[end:].decode("utf-8", "surrogatepass")
            return query.strip().rstrip(";").strip() or None
    return None

"""The scope on PostgreSQL: which schemas, tables and columns a statement reads, by PostgreSQL's own rules.

Run after the read-only guard (`guard.py`, `resolve.py`) passed the statement. The text is
parsed by pglast (libpg_query, the server's grammar); every name is resolved as the server's
parser would, default deny:

- every table name (RangeVar) through the server's catalog with the session's search path
  (`to_regclass`, as the parser does it), minus the CTEs in scope; a hidden schema or table,
  one that does not exist, and a table any of whose inheritance ancestors or descendants
  (partitions) is hidden get the same refusal; relations of `pg_catalog`, `information_schema`
  and the other system schemas are refused (they list what is hidden, and `pg_stats` holds
  column values);
- a view or materialized view is judged by its definition (`pg_get_viewdef`, parsed and
  judged like the statement, recursively); one that reads something hidden is hidden too, in
  statements and in the catalog;
- every column reference against the FROM items in scope, level by level as PostgreSQL's
  `colNameToVar` walks them: joins with and without aliases, USING and NATURAL (refused when
  they would compare a hidden column), LATERAL and function items (which see the items before
  them), subqueries, CTEs (recursive ones too), alias column lists, outer references from
  subqueries anywhere; a reference to a hidden column, a generated column computed from one,
  or a name that resolves to nothing are one refusal (the server never sees them, so its
  "Perhaps you meant" never names a hidden column). A name that may match a column of a
  function's or subquery's output is left to the server: those outputs hold nothing hidden;
- whole rows (`t`, `t.*` outside a select list, `row_to_json(t)`, `t::text`, `ROW(t.*)`,
  `(t).salary`) of a table with a hidden column are refused; `*` and `t.*` in a select list
  are refused there too, naming the visible columns (the choice DuckDB makes as well);
- positional `ORDER BY 3`/`GROUP BY 3` name a select-list entry, judged already; a bare name
  there is judged as an input column even where PostgreSQL would take the output alias;
- functions: only PostgreSQL's built-ins (pg_catalog, OID below 16384) run, minus those that
  read the catalog (`pg_*` but a few, `has_*_privilege`, `col_description`, `to_regclass`,
  those whose every form takes or returns an OID or a reg* type, …); a function defined in
  the database may read what is hidden, and one that does not exist gets the same refusal
  (`resolve.py` refuses those written in SQL wherever else they are reached: operators,
  casts, domains, aggregates, field notation);
- every part of a SELECT this module does not know, and every FROM item of a kind it does
  not know, is refused (a later grammar's additions are not read past);
- types: casts to a table's row type (`NULL::hr.people`, which lists its columns) or to a
  reg* type (`'hr.reviews'::regclass` probes names) are refused;
- EXPLAIN is refused (VERBOSE prints columns, any plan prints index names); SHOW search_path
  and `current_schema` too (the path may name a hidden schema).

Tables with row-level security and foreign tables are refused: a policy may read what is
hidden and filter rows by it. The names of one statement (or view) are resolved in one
prepared catalog query. The catalog side (`hidden_in_catalog`) uses the same readings:
views reading hidden things, tables hidden through their inheritance tree, and generated
columns computed from hidden ones, are dropped with what the patterns hide.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import parser as pg_parser

from astro_tui.data.engines.postgres.scoped_catalog import INVOLVED, call
from astro_tui.data.errors import GuardError
from astro_tui.data.input_limits import too_deep
from astro_tui.data.scope import Scope

Rows = Callable[[str], list[tuple[Any, ...]]]
Name = tuple[str | None, str]

HIDDEN = (
    "refused: this statement reads or names a schema, table or column that does not exist or that "
    "the scope hides (while a scope is in force, such names are not detailed)"
)
NAME_NOT_FOUND_STATES = frozenset({"42703", "42P01", "42704", "3F000"})
"""The server's "column/relation/object/schema … does not exist": under a scope they get the
judge's one line, since a name the judge left to the server (one that may be a function's
output column, a text search configuration named in a string) would otherwise answer a
missing name differently from a hidden one."""
_NAME_KEYS = frozenset({"sval", "name", "aliasname", "colname", "relname", "resname", "ctename"})
_CATALOG = (
    "refused: while a scope is in force, the system catalogs (pg_catalog, information_schema) are "
    "refused: they list what the scope hides"
)
_QUALIFIED = (
    "refused: while a scope is in force, operators and collations are taken from pg_catalog only "
    "(the server's error for another schema would tell a hidden schema from a missing one)"
)
_QUALIFIED_PARTS = {
    "A_Expr": "name",
    "SubLink": "operName",
    "SortBy": "useOp",
    "CollateClause": "collname",
    "ColumnDef": "collClause",
}
"""Where a statement names an operator or a collation, possibly with its schema."""
_SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})
_SYSTEM_COLUMNS = frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"})
_RELATION_KINDS = frozenset({"r", "p", "v", "m"})
_MAX_VIEW_DEPTH = 16
_MAX_VIEW_CHARS = 1_000_000
_SELECT_PARTS = frozenset(
    {
        "targetList",
        "fromClause",
        "whereClause",
        "groupClause",
        "groupDistinct",
        "havingClause",
        "windowClause",
        "valuesLists",
        "sortClause",
        "limitOffset",
        "limitCount",
        "limitOption",
        "withClause",
        "op",
        "all",
        "larg",
        "rarg",
        "distinctClause",
    }
)
"""The parts of a SelectStmt this module judges; any other is refused (a new grammar's part)."""

_CATALOG_TYPES = frozenset(
    {
        "oid",
        "regclass",
        "regtype",
        "regproc",
        "regprocedure",
        "regoper",
        "regoperator",
        "regnamespace",
        "regrole",
        "regcollation",
        "pg_node_tree",
        "aclitem",
        "_aclitem",
        "_oid",
        "_regclass",
        "_regtype",
        "oidvector",
    }
)
"""Types that name catalog objects: a function all of whose forms take or return one reads the
catalog, and a cast to one resolves a name (`'hr.reviews'::regclass` probes it)."""
_PG_FUNCTIONS_ALLOWED = frozenset(
    {
        "pg_typeof",
        "pg_column_size",
        "pg_size_pretty",
        "pg_size_bytes",
        "pg_sleep",
        "pg_sleep_for",
        "pg_sleep_until",
        "pg_client_encoding",
        "pg_is_in_recovery",
        "pg_jit_available",
        "pg_backend_pid",
        "pg_postmaster_start_time",
        "pg_input_is_valid",
    }
)
"""The few `pg_*` built-ins that look at their argument or the clock, never at the catalog."""
_CATALOG_READERS = frozenset(
    {
        "col_description",
        "obj_description",
        "shobj_description",
        "current_schema",
        "current_schemas",
        "row_security_active",
        "format_type",
        "current_query",
        "xmlschema",
        "ts_debug",
        "txid_current_snapshot",
        "acldefault",
        "aclexplode",
        "makeaclitem",
        "currtid",
        "currtid2",
    }
)
_CATALOG_PREFIXES = ("has_", "to_reg", "table_to_", "schema_to_", "database_to_", "query_to_", "cursor_to_")


@dataclass(slots=True)
class Relation:
    """One table or view as the catalog has it, with what decides whether the scope hides it."""

    schema: str
    name: str
    kind: str
    row_security: bool
    columns: list[str]
    derived: list[tuple[str, str]]
    """(generated column, column it is computed from)."""
    tree: list[tuple[str, str]]
    """Inheritance ancestors and descendants (partitions), itself included."""
    definition: str | None

    def hidden(self, scope: Scope) -> bool:
        return any(scope.hides_schema(s) or scope.hides_table(s, t) for s, t in self.tree)

    def hidden_columns(self, scope: Scope) -> set[str]:
        found = {c for c in self.columns if any(scope.hides_column(s, t, c) for s, t in self.tree)}
        grew = True
        while grew:
            more = {g for g, source in self.derived if source in found} - found
            found |= more
            grew = bool(more)
        return found


@dataclass(slots=True)
class Source:
    """What a FROM item yields: its columns (None: a name not known here) and which are hidden."""

    columns: list[str | None]
    hidden: set[str] = field(default_factory=set)
    table: str = ""
    """The table's name, for the `*` refusal that names the visible columns."""
    system: bool = False
    """A table: its system columns (ctid, xmin, …) may be read."""
    shown: tuple[str, ...] = ()
    """The visible columns of `table` (a join's source holds those of its first such table)."""

    def match(self, name: str) -> str | None:
        """'hidden', 'visible', 'maybe' (a column of unknown name), or None."""
        if name in self.hidden:
            return "hidden"
        if name in self.columns or (self.system and name in _SYSTEM_COLUMNS):
            return "visible"
        return "maybe" if None in self.columns else None

    def whole(self) -> None:
        """A reference to the whole row (or its `*`): every column, hidden ones included."""
        if self.hidden:
            raise GuardError(HIDDEN)

    def star(self) -> None:
        if self.hidden:
            visible = ", ".join(self.shown or (c for c in self.columns if c and c not in self.hidden))
            raise GuardError(
                f"refused: `*` here would read a column the scope hides; name the columns of "
                f"{self.table or 'the table'} you need: {visible}"
            )


@dataclass(slots=True)
class Item:
    """One entry of a query level's namespace (PostgreSQL's ParseNamespaceItem)."""

    source: Source
    refname: str | None
    schema: str | None = None
    """The relation's schema, when it has no alias (so `s.t.col` may name it)."""
    rel_visible: bool = True
    cols_visible: bool = True
    lateral_only: bool = False


@dataclass(slots=True)
class Level:
    """One query level: its namespace, its CTEs, and the level it is nested in."""

    parent: Level | None
    items: list[Item] = field(default_factory=list)
    ctes: dict[str, Source | None] = field(default_factory=dict)
    lateral_active: bool = False

    def chain(self) -> Iterator[Level]:
        level: Level | None = self
        while level is not None:
            yield level
            level = level.parent

    def visible(self) -> Iterator[Item]:
        for item in self.items:
            if not item.lateral_only or self.lateral_active:
                yield item


class ScopeJudge:
    """The scope's judge for one PostgreSQL server; `rows` runs a catalog query of ours."""

    def __init__(self, scope: Scope, rows: Rows) -> None:
        self.scope = scope
        self._rows = rows

    def judge(self, statement: str) -> None:
        """Raise GuardError unless the statement (already passed by the read-only guard) reads
        nothing the scope hides."""
        tree = _parse(statement)
        ((kind, node),) = tree["stmts"][0]["stmt"].items()
        if kind == "ExplainStmt":
            raise GuardError(
                "refused: EXPLAIN is refused while a scope is in force (plans name columns and indexes)"
            )
        if kind == "VariableShowStmt":
            if str(node.get("name", "")).lower() == "search_path":
                raise GuardError("refused: SHOW search_path is refused while a scope is in force")
            return
        if kind != "SelectStmt":
            raise GuardError("refused: while a scope is in force, only queries run")
        judgement = _Judgement(self, 0)
        try:
            judgement.select(node, None)
        except RecursionError:
            raise too_deep() from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):  # a tree shape not foreseen
            raise GuardError("refused: the scope cannot judge this statement's shape") from None
        finally:
            self._written(tree, judgement.relations.values())

    def _written(self, tree: dict[str, Any], read: Iterable[Relation]) -> None:
        """A name the statement writes (as the parser decoded it) that the scope would hide as a
        column of a table it names is refused whether or not the table has that column: the
        same name beside `(SELECT 1 AS name)` is ambiguous, and refused, only where it has."""
        words = set(_texts(tree))
        for relation in read:
            for schema, table in relation.tree:
                if any(self.scope.hides_column(schema, table, w) for w in words):
                    raise GuardError(HIDDEN)

    def hidden_in_catalog(self, names: Iterable[tuple[str, str]]) -> tuple[list[list[str]], list[list[str]]]:
        """Of these relations: the views that read something hidden (or cannot be judged), the
        tables hidden through their inheritance tree, and the columns hidden beyond the patterns
        (computed from a hidden column, or hidden in an inheritance parent or partition), as
        `Scope.filter_catalog` takes them; foreign tables and tables with row security too, which
        statements may not read under a scope. Only those (`scoped_catalog.INVOLVED`) are looked at: the
        patterns alone decide for the rest."""
        involved = {(str(s), str(n)) for s, n in self._rows(INVOLVED)}
        wanted = [(s, n) for s, n in names if (s, n) in involved]
        found = self.lookup(sorted(set(wanted), key=str)).relations
        views: list[list[str]] = []
        columns: list[list[str]] = []
        for schema, name in wanted:
            relation = found.get((schema, name))
            if relation is None:
                continue
            refused = relation.kind not in _RELATION_KINDS or relation.row_security
            if (
                refused
                or relation.hidden(self.scope)
                or (relation.definition is not None and not self._view_passes(relation))
            ):
                views.append(["", schema, name])
            columns += [["", schema, name, c] for c in sorted(relation.hidden_columns(self.scope))]
        return views, columns

    def _view_passes(self, relation: Relation) -> bool:
        try:
            _Judgement(self, 1).view(relation)
        except (GuardError, RecursionError, KeyError, IndexError, TypeError, ValueError, AttributeError):
            return False
        return True

    def lookup(self, relations: list[Name], functions: list[Name] = [], types: list[Name] = []) -> Found:  # noqa: B006
        """In one catalog round trip: each relation name resolved as the server's parser would
        (search path and all; absent if none), every function each function name may call
        (schema, name, built in, argument and result types), and every type each type name
        may be (schema, name, whether it is a relation's row type)."""
        found = Found({}, {n: [] for n in functions}, {n: [] for n in types})
        if not (relations or functions or types):
            return found
        for kind, payload in self._rows(call(relations, functions, types)):
            row = json.loads(str(payload))
            if kind == "r":
                (
                    index,
                    _oid,
                    schema,
                    name,
                    relkind,
                    security,
                    columns,
                    generated,
                    sources,
                    tree_s,
                    tree_n,
                    view,
                ) = row
                found.relations[relations[int(index)]] = Relation(
                    schema=str(schema),
                    name=str(name),
                    kind=str(relkind),
                    row_security=bool(security),
                    columns=[str(c) for c in columns or []],
                    derived=list(zip(map(str, generated or []), map(str, sources or []), strict=True)),
                    tree=list(zip(map(str, tree_s or []), map(str, tree_n or []), strict=True)),
                    definition=None if view is None else str(view),
                )
            elif kind == "f":
                index, schema, name, built_in, arg_types = row
                entry = (str(schema), str(name), bool(built_in), [str(t) for t in arg_types or []])
                found.functions[functions[int(index)]].append(entry)
            else:
                index, schema, name, row_type = row
                found.types[types[int(index)]].append((str(schema), str(name), bool(row_type)))
        return found


@dataclass(slots=True)
class Found:
    """What `ScopeJudge.lookup` found for each name."""

    relations: dict[Name, Relation]
    functions: dict[Name, list[tuple[str, str, bool, list[str]]]]
    types: dict[Name, list[tuple[str, str, bool]]]


class _Judgement:
    """One statement (or view definition) judged: names collected first, resolved in a few
    catalog queries, then the tree walked level by level."""

    def __init__(self, judge: ScopeJudge, depth: int) -> None:
        self.judge = judge
        self.scope = judge.scope
        self.depth = depth
        self.relations: dict[Name, Relation] = {}

    def view(self, relation: Relation) -> None:
        if self.depth > _MAX_VIEW_DEPTH or len(relation.definition or "") > _MAX_VIEW_CHARS:
            raise GuardError("refused: a view too deep or too long for the scope to judge")
        tree = _parse(relation.definition or "")
        statements = tree.get("stmts", [])
        if len(statements) != 1 or "SelectStmt" not in statements[0]["stmt"]:
            raise GuardError(HIDDEN)
        self.select(statements[0]["stmt"]["SelectStmt"], None)

    def select(self, node: dict[str, Any], parent: Level | None) -> None:
        self._prefetch(node)
        self._select(node, parent)

    def _prefetch(self, root: dict[str, Any]) -> None:
        """Resolve every relation, function and type the tree names, in three catalog queries."""
        relations: set[Name] = set()
        functions: set[Name] = set()
        types: set[Name] = set()
        for key, node in _nodes(root):
            if key == "RangeVar":
                schema = node.get("schemaname")
                if node.get("catalogname"):
                    raise GuardError("refused: a database name before a table's is refused under a scope")
                relations.add((None if schema is None else str(schema), str(node.get("relname", ""))))
            elif key == "FuncCall":
                name = _qualified(_strings(node.get("funcname")))
                functions.add(name)
                if (
                    name[1].lower() == "current_setting"
                    and "search_path" in json.dumps(node.get("args")).lower()
                ):
                    raise GuardError("refused: the search path is not shown while a scope is in force")
            elif key in ("typeName", "TypeName"):
                types.add(_qualified(_strings(node.get("names"))))
            elif key == "SQLValueFunction" and node.get("op") == "SVFOP_CURRENT_SCHEMA":
                raise GuardError("refused: current_schema is refused while a scope is in force")
            elif key in _QUALIFIED_PARTS:
                part = node.get(_QUALIFIED_PARTS[key])
                names = _strings(part.get("collname") if isinstance(part, dict) else part)
                if len(names) > 1 and names[-2].lower() != "pg_catalog":
                    raise GuardError(_QUALIFIED)
        for schema, _name in relations:
            if schema is not None and schema.lower() in _SYSTEM_SCHEMAS:
                raise GuardError(_CATALOG)
            if schema is not None and self.scope.hides_schema(schema):
                raise GuardError(HIDDEN)
        found = self.judge.lookup(
            sorted(relations, key=str), sorted(functions, key=str), sorted(types, key=str)
        )
        self.relations = found.relations
        for name, candidates in found.functions.items():
            _judge_function(name, candidates)
        for name, types_found in found.types.items():
            _judge_type(name, types_found)

    # -- query levels ---------------------------------------------------------------------------

    def _select(self, node: dict[str, Any], parent: Level | None) -> list[str | None]:
        """Judge one SELECT (or set operation, or VALUES); its output column names."""
        unknown = set(node) - _SELECT_PARTS
        if unknown:
            raise GuardError(
                f"refused: a query part ({min(unknown)}) cannot be judged while a scope is in force"
            )
        level = Level(parent)
        with_clause = node.get("withClause")
        if with_clause:
            self._with(with_clause, level)
        if node.get("op", "SETOP_NONE") != "SETOP_NONE":
            outer = Level(parent, ctes=level.ctes)
            names = self._select(node["larg"], outer)
            self._select(node["rarg"], outer)
            result = Level(parent, [Item(Source(list(names)), None, rel_visible=False)], level.ctes)
            for sort in node.get("sortClause") or []:
                self._expr(sort, result)
            self._expr([node.get("limitCount"), node.get("limitOffset")], result)
            return names
        if node.get("valuesLists"):
            values = Level(parent, ctes=level.ctes)
            self._expr(node["valuesLists"], values)
            first = node["valuesLists"][0].get("List", {}).get("items", [])
            names = [f"column{i + 1}" for i in range(len(first))]
            result = Level(parent, [Item(Source(list(names)), None, rel_visible=False)], level.ctes)
            self._expr([node.get("sortClause"), node.get("limitCount"), node.get("limitOffset")], result)
            return names
        for item in node.get("fromClause") or []:
            made = self._from(item, level)
            for entry in made:
                entry.lateral_only = True
            level.items += made
        for entry in level.items:
            entry.lateral_only = False
        names: list[str | None] = []
        for target in node.get("targetList") or []:
            names += self._target(target.get("ResTarget", {}), level)
        self._expr([node.get("whereClause"), node.get("havingClause"), node.get("windowClause")], level)
        self._expr([node.get("limitCount"), node.get("limitOffset")], level)
        outputs = {n for n in names if n is not None}
        for entry in node.get("groupClause") or []:
            self._ordering(entry, level, outputs)
        for entry in node.get("distinctClause") or []:
            if entry:
                self._ordering(entry, level, outputs)
        for sort in node.get("sortClause") or []:
            self._ordering(sort.get("SortBy", {}).get("node"), level, outputs)
            self._expr({k: v for k, v in sort.get("SortBy", {}).items() if k != "node"}, level)
        return names

    def _with(self, clause: dict[str, Any], level: Level) -> None:
        """CTEs: each sees the ones before it (all of them under RECURSIVE) and outer levels."""
        recursive = bool(clause.get("recursive"))
        ctes = [c.get("CommonTableExpr", {}) for c in clause.get("ctes", [])]
        if recursive:
            for cte in ctes:
                level.ctes[str(cte.get("ctename"))] = None
        for cte in ctes:
            query = cte.get("ctequery", {})
            if "SelectStmt" not in query:
                raise GuardError("refused: while a scope is in force, only queries run")
            names = self._select(query["SelectStmt"], Level(level.parent, ctes=dict(level.ctes)))
            aliases = _strings(cte.get("aliascolnames"))
            columns: list[str | None] = [*aliases, *names[len(aliases) :]]
            for extra in ("search_clause", "cycle_clause"):
                if cte.get(extra):
                    columns.append(None)
                    self._expr(cte[extra], Level(None))
            level.ctes[str(cte.get("ctename"))] = Source(columns)

    def _target(self, target: dict[str, Any], level: Level) -> list[str | None]:
        value = target.get("val", {})
        fields = _fields(value["ColumnRef"]) if isinstance(value, dict) and "ColumnRef" in value else None
        if fields and fields[-1] is None:
            sources = self._star(fields, level)
            for source in sources:
                source.star()
            return [c for s in sources for c in s.columns] if sources else [None]
        self._expr(value, level)
        return [str(target["name"]) if target.get("name") else _figure_name(value)]

    def _ordering(self, node: Any, level: Level, outputs: set[str]) -> None:
        """GROUP BY, ORDER BY and DISTINCT ON: a bare name may be an output alias; it is judged
        as an input column first, which is what PostgreSQL's GROUP BY takes."""
        fields = node.get("ColumnRef", {}).get("fields") if isinstance(node, dict) else None
        if fields and len(fields) == 1 and "String" in fields[0]:
            name = str(fields[0]["String"]["sval"])
            if self._column(name, level, allow_missing=name in outputs):
                return
        self._expr(node, level)

    # -- FROM -------------------------------------------------------------------------------------

    def _from(self, node: dict[str, Any], level: Level) -> list[Item]:
        """One FROM item: the namespace entries it adds (the level already holds those before it)."""
        ((kind, body),) = node.items()
        if kind == "RangeVar":
            return [self._range_var(body, level)]
        if kind == "RangeTableSample":
            made = self._from(body["relation"], level)
            self._expr(body.get("args"), level)
            self._expr(body.get("repeatable"), level)
            return made
        if kind == "RangeSubselect":
            lateral = bool(body.get("lateral"))
            saved, level.lateral_active = level.lateral_active, lateral
            try:
                names = self._select(body["subquery"]["SelectStmt"], level)
            finally:
                level.lateral_active = saved
            return [self._aliased(Source(names), body.get("alias"), None)]
        if kind == "RangeFunction":
            saved, level.lateral_active = level.lateral_active, True
            try:
                self._expr(body.get("functions"), level)
                self._expr(body.get("coldeflist"), level)
            finally:
                level.lateral_active = saved
            return [self._aliased(Source([None]), body.get("alias"), None)]
        if kind == "RangeTableFunc":
            saved, level.lateral_active = level.lateral_active, True
            try:
                self._expr([body.get("docexpr"), body.get("rowexpr"), body.get("namespaces")], level)
                for column in body.get("columns") or []:
                    self._expr(column, level)
            finally:
                level.lateral_active = saved
            names = [str(c.get("RangeTableFuncCol", {}).get("colname")) for c in body.get("columns") or []]
            return [self._aliased(Source(list(names)), body.get("alias"), None)]
        if kind == "JoinExpr":
            return self._join(body, level)
        raise GuardError(f"refused: a FROM item of kind {kind} cannot be judged while a scope is in force")

    def _range_var(self, node: dict[str, Any], level: Level) -> Item:
        schema = node.get("schemaname")
        name = str(node.get("relname", ""))
        if schema is None:
            for outer in level.chain():
                if name in outer.ctes:
                    found = outer.ctes[name]
                    return self._aliased(found or Source([None]), node.get("alias"), None, default=name)
        relation = self.relations.get((None if schema is None else str(schema), name))
        if relation is None:
            raise GuardError(HIDDEN)
        if relation.schema.lower() in _SYSTEM_SCHEMAS or relation.schema.lower().startswith("pg_"):
            raise GuardError(_CATALOG)
        if relation.kind not in _RELATION_KINDS or relation.hidden(self.scope):
            raise GuardError(HIDDEN)
        if relation.row_security:
            raise GuardError(f"refused: {name} has row-level security, whose policies the scope cannot judge")
        if relation.definition is not None:
            try:
                _Judgement(self.judge, self.depth + 1).view(relation)
            except GuardError:
                raise GuardError(HIDDEN) from None  # the reason would quote the view's definition
        hidden = relation.hidden_columns(self.scope)
        shown = tuple(c for c in relation.columns if c not in hidden)
        source = Source(list(relation.columns), hidden, relation.name, relation.kind != "v", shown)
        alias = node.get("alias")
        return self._aliased(source, alias, None if alias else relation.schema, default=relation.name)

    def _aliased(
        self, source: Source, alias: dict[str, Any] | None, schema: str | None, default: str | None = None
    ) -> Item:
        """`AS a(x, y)`: the item's name, and its first columns renamed; a list reaching a hidden
        column (or past the last) is refused, so the answer never tells where hidden ones are."""
        if not alias:
            return Item(source, default, schema)
        renamed = _strings(alias.get("colnames"))
        if source.hidden and None not in source.columns:
            reached = source.columns[: len(renamed)]
            if len(renamed) > len(source.columns) or any(c in source.hidden for c in reached):
                raise GuardError(HIDDEN)  # the server's "has 5 columns available" counts hidden ones
        if renamed:
            hidden = {renamed[i] for i, c in enumerate(source.columns[: len(renamed)]) if c in source.hidden}
            rest = source.columns[len(renamed) :]
            hidden |= {c for c in rest if c in source.hidden}
            unknown = [None] if None in source.columns[: len(renamed)] else []
            source = Source([*renamed, *rest, *unknown], hidden, source.table, source.system)
        return Item(source, str(alias.get("aliasname")), None)

    def _join(self, node: dict[str, Any], level: Level) -> list[Item]:
        """A join as PostgreSQL scopes it: the right side sees the left (LATERAL), ON sees both
        sides only; without an alias its sides stay visible as table names, not as columns."""
        left = self._from(node["larg"], level)
        for entry in left:
            entry.lateral_only = True
        level.items += left
        try:
            right = self._from(node["rarg"], level)
        finally:
            del level.items[len(level.items) - len(left) :]
        left_columns, right_columns = _columns_of(left), _columns_of(right)
        using = _strings(node.get("usingClause"))
        if node.get("isNatural"):
            known_left = {c for c, _ in left_columns if c is not None}
            known_right = {c for c, _ in right_columns if c is not None}
            unknown = any(c is None for c, _ in left_columns + right_columns)
            if unknown and any(h for _, h in left_columns + right_columns):
                raise GuardError(HIDDEN)
            using = [c for c, _ in left_columns if c is not None and c in known_right and c in known_left]
        for name in using:
            for columns in (left_columns, right_columns):
                if any(c == name and h for c, h in columns):
                    raise GuardError(HIDDEN)
                if not any(c == name for c, _ in columns) and not any(c is None for c, _ in columns):
                    raise GuardError(HIDDEN)
        merged = [(c, False) for c in using] + [
            (c, h) for c, h in left_columns + right_columns if c is None or c not in using
        ]
        first = _first_table(left + right)
        hidden = {c for c, h in merged if h and c is not None}
        source = Source([c for c, _ in merged], hidden, first.table, shown=first.shown)
        if node.get("quals"):
            for entry in left + right:
                entry.lateral_only = False
            saved, level.items = level.items, left + right
            try:
                self._expr(node["quals"], level)
            finally:
                level.items = saved
        join_alias = node.get("alias")
        joined = (
            self._aliased(source, join_alias, None) if join_alias else Item(source, None, rel_visible=False)
        )
        made = [] if join_alias else left + right
        for entry in made:
            entry.cols_visible = False
        if node.get("join_using_alias"):
            only = Source(list(using))
            made.append(Item(only, str(node["join_using_alias"].get("aliasname")), cols_visible=False))
        return [*made, joined]

    # -- expressions ----------------------------------------------------------------------------

    def _expr(self, value: Any, level: Level) -> None:
        """Every column reference, whole row and subquery inside an expression."""
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
                continue
            if not isinstance(item, dict):
                continue
            for key, child in item.items():
                if key == "ColumnRef":
                    self._column_ref(_fields(child), level)
                elif key == "SubLink":
                    stack.append(child.get("testexpr"))
                    self._select(child["subselect"]["SelectStmt"], level)
                elif key == "SelectStmt":
                    self._select(child, level)
                elif key in ("RangeVar", "JoinExpr", "RangeSubselect", "RangeFunction"):
                    raise GuardError("refused: a table where an expression stands cannot be judged")
                elif isinstance(child, (dict, list)):
                    stack.append(child)

    def _column_ref(self, fields: list[str | None], level: Level) -> None:
        """`col`, `t.col`, `s.t.col`, `db.s.t.col`, `t`, `t.*`, `t.col.field` (None is `*`)."""
        if fields and fields[-1] is None:
            for source in self._star(fields, level):
                source.star()
            return
        names = [str(f) for f in fields]
        if len(names) == 1:
            if not self._column(names[0], level, allow_missing=False, whole=True):
                raise GuardError(HIDDEN)
            return
        item = self._relation(names[:-1], level) if len(names) <= 4 else None
        if item is not None:
            found = item.source.match(names[-1])
            if found in (None, "hidden"):
                raise GuardError(HIDDEN)
            return
        item = self._relation(names[:1], level)
        if item is not None:
            found = item.source.match(names[1])
            if found in (None, "hidden"):
                raise GuardError(HIDDEN)
            return
        if not self._column(names[0], level, allow_missing=False):  # a composite column's field
            raise GuardError(HIDDEN)

    def _column(self, name: str, level: Level, *, allow_missing: bool, whole: bool = False) -> bool:
        """An unqualified column, searched level by level as `colNameToVar` does; when none has it,
        a table of that name as a whole row (`SELECT t FROM t`). False when nothing matches."""
        maybe = False
        for outer in level.chain():
            found = [item.source.match(name) for item in outer.visible() if item.cols_visible]
            if "hidden" in found:
                raise GuardError(HIDDEN)
            if "visible" in found:
                return True
            maybe = maybe or "maybe" in found
        if whole:
            item = self._relation([name], level)
            if item is not None:
                item.source.whole()
                return True
        return maybe or allow_missing

    def _relation(self, names: list[str], level: Level) -> Item | None:
        """The namespace entry `t`, `s.t` or `db.s.t` names, innermost level first."""
        schema = names[-2] if len(names) >= 2 else None
        for outer in level.chain():
            for item in outer.visible():
                if not item.rel_visible or item.refname != names[-1]:
                    continue
                if schema is None or item.schema == schema:
                    return item
        return None

    def _star(self, fields: list[str | None], level: Level) -> list[Source]:
        """What `*` or `t.*` covers."""
        if len(fields) == 1:
            return [item.source for item in level.visible() if item.cols_visible] or [Source([])]
        item = self._relation([str(f) for f in fields[:-1]], level)
        if item is None:
            raise GuardError(HIDDEN)
        return [item.source]


def _judge_function(name: Name, candidates: list[tuple[str, str, bool, list[str]]]) -> None:
    written = f"{name[0]}.{name[1]}" if name[0] else name[1]
    if not candidates or any(schema != "pg_catalog" or not built_in for schema, _, built_in, _ in candidates):
        raise GuardError(
            f"refused: {written}() is not one of PostgreSQL's built-in functions, the only ones a query "
            "may call while a scope is in force (others may read what it hides)"
        )
    lowered = name[1].lower()
    catalog = (
        (lowered.startswith("pg_") and lowered not in _PG_FUNCTIONS_ALLOWED)
        or lowered in _CATALOG_READERS
        or lowered.startswith(_CATALOG_PREFIXES)
        or all(any(t in _CATALOG_TYPES for t in types) for _, _, _, types in candidates)
    )
    if catalog and lowered not in _PG_FUNCTIONS_ALLOWED:
        raise GuardError(
            f"refused: {written}() reads the server's catalog, which would show what the scope hides"
        )


def _judge_type(name: Name, found: list[tuple[str, str, bool]]) -> None:
    written = f"{name[0]}.{name[1]}" if name[0] else name[1]
    foreign = name[0] is not None and name[0] != "pg_catalog"
    if foreign or not found or any(row or n.lstrip("_") in _CATALOG_TYPES for _, n, row in found):
        raise GuardError(
            f"refused: the type {written} does not exist, is a table's row type, names catalog objects or "
            "is named with a schema other than pg_catalog: refused while a scope is in force"
        )


def _entries(root: Any) -> Iterator[tuple[str, Any]]:
    """Every key and value of every object in a parse tree (pglast's JSON), depth first."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                yield key, value
                if isinstance(value, (dict, list)):
                    stack.append(value)


def _texts(root: Any) -> Iterator[str]:
    """Every name of a parse tree as the parser decoded it (`U&"…"` too), and string
    constants (an over-approximation); not the tree's own enum values (`SETOP_NONE`)."""
    return (value for key, value in _entries(root) if isinstance(value, str) and key in _NAME_KEYS)


def _parse(sql: str) -> dict[str, Any]:
    try:
        return dict(json.loads(pg_parser.parse_sql_json(sql)))
    except RecursionError:
        raise too_deep() from None
    except (pg_parser.ParseError, UnicodeError, ValueError):
        raise GuardError(HIDDEN) from None


def _nodes(root: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of a parse tree (a key naming a node type, or `typeName`) and its body."""
    return (
        (key, child)
        for key, child in _entries(root)
        if isinstance(child, dict) and (key[:1].isupper() or key == "typeName")
    )


def _strings(items: list[Any] | None) -> list[str]:
    return [str(i["String"]["sval"]) for i in items or () if isinstance(i, dict) and "String" in i]


def _fields(node: dict[str, Any]) -> list[str | None]:
    return [
        str(f["String"]["sval"]) if "String" in f else None
        for f in node.get("fields") or []
        if isinstance(f, dict)
    ]


def _qualified(parts: list[str]) -> Name:
    return (parts[-2] if len(parts) >= 2 else None, parts[-1] if parts else "")


def _columns_of(items: list[Item]) -> list[tuple[str | None, bool]]:
    """The columns a join side yields: those of its entries visible as columns."""
    return [
        (c, c is not None and c in item.source.hidden)
        for item in items
        if item.cols_visible
        for c in item.source.columns
    ]


def _first_table(items: list[Item]) -> Source:
    return next((i.source for i in items if i.source.hidden), Source([]))


def _figure_name(node: Any) -> str | None:
    """The output name PostgreSQL gives an expression (FigureColname), None where it is not plain
    to see (a None column matches no name for sure, so outer levels are still searched). A name
    PostgreSQL does not give would let `salary` stop at the subquery here and reach an outer
    hidden column on the server."""
    name, strength = _figure(node)
    if strength < 0:
        return None
    return name if strength else "?column?"


def _figure(node: Any) -> tuple[str | None, int]:
    """FigureColnameInternal (parse_target.c) over the raw tree: (name, strength); -1 unknown."""
    if node is None:
        return None, 0
    if not isinstance(node, dict) or len(node) != 1:
        return None, -1
    ((kind, body),) = node.items()
    if kind in ("ColumnRef", "A_Indirection"):
        parts = body.get("fields" if kind == "ColumnRef" else "indirection") or []
        names = [str(f["String"]["sval"]) for f in parts if isinstance(f, dict) and "String" in f]
        if names:
            return names[-1], 2
        return _figure(body.get("arg")) if kind == "A_Indirection" else (None, 0)
    if kind == "FuncCall":
        return _strings(body.get("funcname"))[-1], 2
    if kind == "A_Expr":
        return ("nullif", 2) if body.get("kind") == "AEXPR_NULLIF" else (None, 0)
    if kind in ("TypeCast", "CaseExpr"):
        name, strength = _figure(body.get("arg" if kind == "TypeCast" else "defresult"))
        if strength < 0 or strength == 2:
            return name, strength
        if kind == "CaseExpr":
            return "case", 1
        return _strings(body["typeName"].get("names"))[-1], 1
    if kind == "CollateClause":
        return _figure(body.get("arg"))
    if kind == "SubLink":
        fixed_link = {"EXISTS_SUBLINK": "exists", "ARRAY_SUBLINK": "array"}.get(str(body.get("subLinkType")))
        return (fixed_link, 2) if fixed_link else (None, -1)
    fixed = {
        "A_ArrayExpr": "array",
        "RowExpr": "row",
        "CoalesceExpr": "coalesce",
        "GroupingFunc": "grouping",
        "XmlSerialize": "xmlserialize",
    }
    if kind in fixed:
        return fixed[kind], 2
    if kind in ("A_Const", "BoolExpr", "NullTest", "BooleanTest"):
        return None, 0
    return None, -1

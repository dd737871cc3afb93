"""The parser half of PostgreSQL's read-only guarantee: what the text says, before the server is asked.

SQL is parsed by PostgreSQL's own parser (pglast wraps libpg_query, the server's
grammar compiled as a library), so the guard and the server agree on where a
string, a comment or a dollar-quoted body ends. Exactly one statement of a
read-only kind passes: a query (SELECT, VALUES, TABLE, WITH … SELECT), EXPLAIN
of one, or SHOW of a setting on the allowlist (`policy.py`). The whole tree is
walked: SELECT INTO, FOR UPDATE/SHARE and data-modifying CTEs are refused, and
every name that can make the server call something is collected for
`resolve.py`, which judges what those names resolve to in the server's catalog:

- function calls, whatever the notation: `f(x)`, `s.f(x)`, and field selection,
  which is a call when the field is not a column (`(x).f` and `t.f` call `f(x)`,
  `f(t)`); every name after the first of a column reference counts;
- operators, explicit (`a + b`, `OPERATOR(s.+)`, `ORDER BY … USING`, `= ANY`)
  and the ones the grammar implies (`=` of IN, CASE, USING joins; `<=`/`>=` of
  BETWEEN);
- types named by a cast or a column definition (a cast calls a cast function, a
  domain runs its CHECK constraints), and by a call: `d(x)`, when no function `d`
  matches, converts to type `d` (without a cast function, but with d's CHECKs);
- relations (a view runs its query, a table with row security its policies),
  minus references to a CTE in scope, so `WITH pg_settings AS (…)` is the CTE;
- TABLESAMPLE methods (functions, too).

Before any of it: input over 100,000 characters, 20,000 words and symbols, or
nested deeper than 200 brackets is refused, which bounds the parse before the
time and memory limits of the statement apply (BENCHMARKS.md has its cost at the cap). A name known to
have side effects is refused here already, without asking the server.

The engine keeps `standard_conforming_strings` on, the only setting under which
libpg_query's reading of backslashes in literals is the server's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import parser as pg_parser

from astro_tui.data.engines.postgres import policy
from astro_tui.data.errors import GuardError, syntax_message
from astro_tui.data.input_limits import check_input, too_deep

MAX_SQL_CHARS = 100_000
"""PostgreSQL's own cap, below the shared one: pglast's JSON tree costs ≈45 bytes per character."""
MAX_TOKENS = 20_000
"""The parse's cost follows the tree's nodes, about one per token: counted (over, never under:
every punctuation mark is one) before pglast sees the text."""
_TOKEN = re.compile(r"\w+|[^\w\s]")

_READ_ONLY_KINDS = {"SelectStmt", "ExplainStmt", "VariableShowStmt"}
_WRITING_NODES = {
    "InsertStmt": "INSERT",
    "UpdateStmt": "UPDATE",
    "DeleteStmt": "DELETE",
    "MergeStmt": "MERGE",
}
IMPLIED_OPERATORS = frozenset({"=", "<>", "<", ">", "<=", ">="})
"""What IN, CASE, NULLIF, BETWEEN, USING and NATURAL joins compare with, found by name."""

_KIND_NAMES = {
    "InsertStmt": "INSERT",
    "UpdateStmt": "UPDATE",
    "DeleteStmt": "DELETE",
    "MergeStmt": "MERGE",
    "CopyStmt": "COPY",
    "DoStmt": "DO",
    "CallStmt": "CALL",
    "LockStmt": "LOCK",
    "PrepareStmt": "PREPARE",
    "ExecuteStmt": "EXECUTE",
    "DeallocateStmt": "DEALLOCATE",
    "TransactionStmt": "transaction control",
    "VariableSetStmt": "SET/RESET",
    "VacuumStmt": "VACUUM/ANALYZE",
    "ClusterStmt": "CLUSTER",
    "ReindexStmt": "REINDEX",
    "RefreshMatViewStmt": "REFRESH MATERIALIZED VIEW",
    "ListenStmt": "LISTEN",
    "UnlistenStmt": "UNLISTEN",
    "NotifyStmt": "NOTIFY",
    "TruncateStmt": "TRUNCATE",
    "DeclareCursorStmt": "DECLARE CURSOR",
    "FetchStmt": "FETCH/MOVE",
    "ClosePortalStmt": "CLOSE",
    "CheckPointStmt": "CHECKPOINT",
    "DiscardStmt": "DISCARD",
    "LoadStmt": "LOAD",
    "GrantStmt": "GRANT/REVOKE",
    "GrantRoleStmt": "GRANT/REVOKE",
    "CreateTableAsStmt": "CREATE TABLE AS",
    "CommentStmt": "COMMENT",
    "SecLabelStmt": "SECURITY LABEL",
}

Name = tuple[str | None, str]
"""(schema or None for a search-path lookup, name), as the parser spelled them."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A statement the text allows, and every name in it the server's catalog must vouch for."""

    statement: str
    query: bool
    """A plain query (SELECT/VALUES/TABLE/WITH), which can be wrapped in the row cap's LIMIT."""
    functions: frozenset[Name] = field(default_factory=frozenset)
    operators: frozenset[Name] = field(default_factory=frozenset)
    types: frozenset[Name] = field(default_factory=frozenset)
    coercions: frozenset[Name] = field(default_factory=frozenset)
    """Type names a call may stand for (`d(x)` is `x::d` when no function d fits), minus casts."""
    relations: frozenset[Name] = field(default_factory=frozenset)


def check(sql: str) -> str:
    """The single statement to run if the text allows it, else GuardError naming what was refused."""
    return inspect(sql).statement


def inspect(sql: str) -> Checked:
    """Parse, refuse what the text alone shows is not read-only, and collect the names to resolve."""
    tree = _parse(sql)
    statements = tree.get("stmts", [])
    if not statements:
        raise GuardError("refused: empty SQL")
    if len(statements) != 1:
        raise GuardError(f"refused: exactly one statement is allowed, got {len(statements)}")
    ((kind, node),) = statements[0]["stmt"].items()
    if kind not in _READ_ONLY_KINDS:
        raise GuardError(f"refused: {_kind_name(kind)} is not a read-only statement")
    if kind == "ExplainStmt":
        ((inner, _),) = node["query"].items()
        if inner != "SelectStmt":
            raise GuardError(f"refused: EXPLAIN of {_kind_name(inner)} is not a read-only statement")
    if kind == "VariableShowStmt":
        policy.check_setting(str(node.get("name", "")), how="SHOW")
    names = _Names()
    names.collect({kind: node})
    return Checked(
        statement=_statement_text(sql, statements[0]),
        query=kind == "SelectStmt",
        functions=frozenset(names.functions),
        operators=frozenset(names.operators | {(None, op) for op in IMPLIED_OPERATORS}),
        types=frozenset(names.types),
        coercions=frozenset(names.coercions),
        relations=frozenset(names.relations),
    )


def is_query(statement: str) -> bool:
    """Whether a statement is a plain query (SELECT/VALUES/TABLE/WITH), which can be wrapped in a LIMIT.

    False for EXPLAIN, SHOW and anything that does not parse as exactly one query.
    """
    try:
        tree = _parse(statement)
    except GuardError:
        return False
    statements = tree.get("stmts", [])
    return len(statements) == 1 and "SelectStmt" in statements[0]["stmt"]


def _parse(sql: str) -> dict[str, Any]:
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    if "\x00" in sql:
        raise GuardError("refused: the SQL holds a NUL character")
    if len(sql) > MAX_SQL_CHARS:
        raise GuardError(f"refused: the SQL is longer than {MAX_SQL_CHARS:,} characters")
    check_input(sql)
    for count, _ in enumerate(_TOKEN.finditer(sql), start=1):
        if count > MAX_TOKENS:
            raise GuardError(f"refused: the SQL has more than {MAX_TOKENS:,} words and symbols")
    try:
        return dict(json.loads(pg_parser.parse_sql_json(sql)))
    except RecursionError:
        raise too_deep() from None
    except pg_parser.ParseError as exc:
        raise GuardError(syntax_message(str(exc.args[0] if exc.args else exc))) from None
    except (UnicodeError, ValueError):
        raise GuardError("refused: the SQL is not valid Unicode text") from None


def _kind_name(kind: str) -> str:
    if kind in _KIND_NAMES:
        return _KIND_NAMES[kind]
    name = kind.removesuffix("Stmt")
    for prefix in ("Create", "Alter", "Drop", "Rename"):
        if name.startswith(prefix):
            return f"{prefix.upper()} ({name[len(prefix) :] or 'object'})"
    return name or kind


def _strings(items: list[Any] | None) -> list[str]:
    """The names of a qualified-name list (`[{"String": {"sval": "s"}}, …]`); A_Star and the like dropped."""
    return [str(i["String"]["sval"]) for i in items or () if isinstance(i, dict) and "String" in i]


def _qualified(parts: list[str]) -> Name:
    """`[db, schema, name]` or `[schema, name]` or `[name]`; a database part is the server's to refuse."""
    return (parts[-2] if len(parts) >= 2 else None, parts[-1])


class _Names:
    """One pass over the tree: refusals the text alone decides, names for the catalog to resolve."""

    def __init__(self) -> None:
        self.functions: set[Name] = set()
        self.operators: set[Name] = set()
        self.types: set[Name] = set()
        self.coercions: set[Name] = set()
        self.relations: set[Name] = set()

    def collect(self, root: dict[str, Any]) -> None:
        for key, node, ctes in _walk(root):
            self._visit(key, node, ctes)

    def _visit(self, key: str, node: dict[str, Any], ctes: frozenset[str]) -> None:
        if key in _WRITING_NODES:
            raise GuardError(f"refused: {_WRITING_NODES[key]} inside a query is not read-only")
        if key == "SelectStmt":
            if node.get("intoClause"):
                raise GuardError("refused: SELECT INTO creates a table, not a read-only query")
            if node.get("lockingClause"):
                raise GuardError("refused: FOR UPDATE/SHARE locks rows, not a read-only query")
        elif key == "FuncCall":
            name = _qualified(_strings(node.get("funcname")))
            policy.check_function_name(name[1], node.get("args"))
            self.functions.add(name)
            self.coercions.add(name)  # `d(x)` with no function d converts to type d, checks and all
        elif key == "ColumnRef":
            for field_name in _strings(node.get("fields"))[1:]:
                self._field(field_name)
        elif key == "A_Indirection":
            for field_name in _strings(node.get("indirection")):
                self._field(field_name)
        elif key == "A_Expr":
            parts = _strings(node.get("name"))
            if parts and node.get("kind") not in ("AEXPR_BETWEEN", "AEXPR_NOT_BETWEEN", "AEXPR_BETWEEN_SYM"):
                self.operators.add(_qualified(parts))
            elif parts:
                self.operators.update({(None, "<="), (None, ">=")})
        elif key == "SortBy" and node.get("useOp"):
            self.operators.add(_qualified(_strings(node["useOp"])))
        elif key == "SubLink" and node.get("operName"):
            self.operators.add(_qualified(_strings(node["operName"])))
        elif key in ("TypeName", "typeName"):
            self.types.add(_qualified(_strings(node.get("names"))))
        elif key == "RangeTableSample":
            self.functions.add(_qualified(_strings(node.get("method"))))
        elif key == "RangeVar":
            relation = str(node.get("relname", ""))
            schema = node.get("schemaname")
            if schema is None and relation in ctes:
                return
            self.relations.add((str(schema) if schema is not None else None, relation))

    def _field(self, name: str) -> None:
        """A field name may be a call in disguise: `(x).f` is `f(x)` when `f` is not a field of x."""
        policy.check_function_name(name, None, field_notation=True)
        self.functions.add((None, name))


def _walk(root: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], frozenset[str]]]:
    """Every (node type, node, CTE names in scope) of libpg_query's JSON tree, iteratively.

    A WITH's names are visible in its own statement; in a non-recursive WITH a
    CTE sees only the ones before it, in WITH RECURSIVE all of them. Type names
    arrive under the `typeName` key, not a `TypeName` node, and are reported as such.
    """
    stack: list[tuple[Any, frozenset[str]]] = [(root, frozenset())]
    while stack:
        item, ctes = stack.pop()
        if isinstance(item, list):
            stack.extend((child, ctes) for child in item)
            continue
        if not isinstance(item, dict):
            continue
        for key, child in item.items():
            if isinstance(child, list):
                stack.extend((c, ctes) for c in child)
                continue
            if not isinstance(child, dict):
                continue
            if key == "typeName":
                yield key, child, ctes
            elif key[:1].isupper():
                yield key, child, ctes
                if key == "SelectStmt" and child.get("withClause"):
                    stack.extend(_scoped_select(child, ctes))
                    continue
            stack.append((child, ctes))


def _scoped_select(select: dict[str, Any], outer: frozenset[str]) -> list[tuple[Any, frozenset[str]]]:
    """A SELECT with a WITH clause: its CTEs' queries and the rest, each with the names it can see."""
    with_clause = select["withClause"]
    ctes = [c.get("CommonTableExpr", {}) for c in with_clause.get("ctes", [])]
    names = [str(c.get("ctename", "")) for c in ctes]
    every = outer | frozenset(names)
    pending: list[tuple[Any, frozenset[str]]] = []
    for index, cte in enumerate(ctes):
        visible = every if with_clause.get("recursive") else outer | frozenset(names[:index])
        pending.append((cte, visible))
    rest = {k: v for k, v in select.items() if k != "withClause"}
    pending.append((rest, every))
    return pending


def _statement_text(sql: str, statement: dict[str, Any]) -> str:
    """The statement as the server will see it: the user's text, outer whitespace and `;` removed.

    libpg_query reports byte offsets, so the slice is taken on the UTF-8 bytes.
    """
    raw = sql.encode("utf-8")
    start = int(statement.get("stmt_location", 0))
    length = statement.get("stmt_len")
    end = start + int(length) if length else len(raw)
    return raw[start:end].decode("utf-8").strip().rstrip(";").strip()

"""The parser half of PostgreSQL's read-only guarantee; the READ ONLY transaction in `engine.py` is the other.

SQL is parsed by PostgreSQL's own parser (pglast wraps libpg_query, the server's
grammar compiled as a library), so the guard and the server agree on where a
string, a comment or a dollar-quoted body ends. Exactly one statement of a
read-only kind passes: a query (SELECT, VALUES, TABLE, WITH … SELECT), EXPLAIN
of one, or SHOW. The whole tree is then walked: SELECT INTO, FOR UPDATE/SHARE,
data-modifying CTEs and functions with side effects are refused.

The engine keeps `standard_conforming_strings` on, the only setting under which
libpg_query's reading of backslashes in literals is the server's.

Functions refused, and why (a READ ONLY transaction already stops many writes,
but not these):
- they change state outside the transaction or survive its rollback: sequences,
  advisory locks, NOTIFY, transaction ids, set_config, stats resets, WAL and
  replication control, backends (cancel/terminate), index maintenance (BRIN/GIN);
- they reach the server's files or other servers: pg_read_file and friends,
  large objects (lo_*), adminpack's pg_file_*, dblink;
- they run SQL given as text, which this guard never sees: query_to_xml and
  the other *_to_xml functions, ts_stat, ts_rewrite, dblink, pg_background;
- common extensions that reach the network from the server (pgsql-http, pg_net).
pg_sleep stays allowed: the time limit and cancel stop it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pglast import parser as pg_parser

from astro_tui.data.errors import GuardError, syntax_message
from astro_tui.data.input_limits import check_input, too_deep

_READ_ONLY_KINDS = {"SelectStmt", "ExplainStmt", "VariableShowStmt"}
_WRITING_NODES = {
    "InsertStmt": "INSERT",
    "UpdateStmt": "UPDATE",
    "DeleteStmt": "DELETE",
    "MergeStmt": "MERGE",
}

_SIDE_EFFECT_FUNCTIONS = frozenset(
    {
        "nextval",
        "setval",
        "set_config",
        "txid_current",
        "pg_current_xact_id",
        "pg_notify",
        "pg_cancel_backend",
        "pg_terminate_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_switch_wal",
        "pg_promote",
        "pg_log_backend_memory_contexts",
        "pg_log_standby_snapshot",
        "pg_import_system_collations",
        "pg_nextoid",
        "pg_extension_config_dump",
        "pg_read_file",
        "pg_read_binary_file",
        "pg_stat_file",
        "pg_start_backup",
        "pg_stop_backup",
        "pg_prewarm",
        "brin_summarize_new_values",
        "brin_summarize_range",
        "brin_desummarize_range",
        "gin_clean_pending_list",
        "loread",
        "lowrite",
        "ts_stat",
        "ts_rewrite",
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "table_to_xml",
        "table_to_xmlschema",
        "table_to_xml_and_xmlschema",
        "schema_to_xml",
        "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema",
        "database_to_xml",
        "database_to_xmlschema",
        "database_to_xml_and_xmlschema",
        "http",
    }
)
_SIDE_EFFECT_PREFIXES = (
    "lo_",
    "pg_advisory",
    "pg_try_advisory",
    "pg_ls_",
    "pg_file_",
    "dblink",
    "pg_stat_reset",
    "pg_backup_",
    "pg_wal_replay_",
    "pg_create_",
    "pg_drop_",
    "pg_copy_",
    "pg_replication_",
    "pg_logical_",
    "binary_upgrade_",
    "pg_stat_statements_reset",
    "pg_logdir_ls",
    "pg_background",  # extension: runs SQL text in a background worker, in its own transaction
    "http_",  # extensions pgsql-http and pg_net (net.http_get): requests from the server
)

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


def check(sql: str) -> str:
    """Return the single statement to run, or raise GuardError naming what was refused."""
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    if "\x00" in sql:
        raise GuardError("refused: the SQL holds a NUL character")
    check_input(sql)
    try:
        tree = json.loads(pg_parser.parse_sql_json(sql))
    except RecursionError:
        raise too_deep() from None
    except pg_parser.ParseError as exc:
        raise GuardError(syntax_message(str(exc.args[0] if exc.args else exc))) from None
    except (UnicodeError, ValueError):
        raise GuardError("refused: the SQL is not valid Unicode text") from None
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
    _check_tree({kind: node})
    return _statement_text(sql, statements[0])


def is_query(statement: str) -> bool:
    """Whether a statement is a plain query (SELECT/VALUES/TABLE/WITH), which can be wrapped in a LIMIT.

    False for EXPLAIN, SHOW and anything that does not parse as exactly one query.
    """
    try:
        tree = json.loads(pg_parser.parse_sql_json(statement))
    except (pg_parser.ParseError, UnicodeError, ValueError, RecursionError):
        return False
    statements = tree.get("stmts", [])
    return len(statements) == 1 and "SelectStmt" in statements[0]["stmt"]


def _kind_name(kind: str) -> str:
    if kind in _KIND_NAMES:
        return _KIND_NAMES[kind]
    name = kind.removesuffix("Stmt")
    for prefix in ("Create", "Alter", "Drop", "Rename"):
        if name.startswith(prefix):
            return f"{prefix.upper()} ({name[len(prefix) :] or 'object'})"
    return name or kind


def _check_tree(root: dict[str, Any]) -> None:
    for key, node in _walk(root):
        if key in _WRITING_NODES:
            raise GuardError(f"refused: {_WRITING_NODES[key]} inside a query is not read-only")
        if key == "SelectStmt":
            if node.get("intoClause"):
                raise GuardError("refused: SELECT INTO creates a table, not a read-only query")
            if node.get("lockingClause"):
                raise GuardError("refused: FOR UPDATE/SHARE locks rows, not a read-only query")
        elif key == "FuncCall":
            name = _function_name(node)
            if _refused_function(name):
                raise GuardError(
                    f"refused: {name}() has side effects, reaches files or runs SQL unseen; "
                    "not a read-only query"
                )


def _function_name(node: dict[str, Any]) -> str:
    parts = node.get("funcname") or []
    last = parts[-1] if parts else {}
    return str(last.get("String", {}).get("sval", "")).lower()


def _refused_function(name: str) -> bool:
    return name in _SIDE_EFFECT_FUNCTIONS or name.startswith(_SIDE_EFFECT_PREFIXES)


def _walk(value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (node type, node) pair in libpg_query's JSON tree, iteratively (deep trees are fine)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(child, dict):
                    if key[:1].isupper():
                        yield key, child
                    stack.append(child)
                elif isinstance(child, list):
                    stack.extend(child)
        elif isinstance(item, list):
            stack.extend(item)


def _statement_text(sql: str, statement: dict[str, Any]) -> str:
    """The statement as the server will see it: the user's text, outer whitespace and `;` removed.

    libpg_query reports byte offsets, so the slice is taken on the UTF-8 bytes.
    """
    raw = sql.encode("utf-8")
    start = int(statement.get("stmt_location", 0))
    length = statement.get("stmt_len")
    end = start + int(length) if length else len(raw)
    return raw[start:end].decode("utf-8").strip().rstrip(";").strip()

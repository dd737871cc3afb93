"""The parser half of the read-only guarantee; the engine lock in `database.py` is the other.

Statements are split and typed by DuckDB's own parser, then SELECTs are walked
through DuckDB's JSON AST so that data-modifying CTEs, file readers and path
scans are refused with a reason before anything runs.
"""

from __future__ import annotations

import atexit
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import duckdb

from astro_tui.data.errors import GuardError, one_line, syntax_message

_READ_ONLY_TYPES = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}

_REFUSED_FUNCTIONS = {
    "glob",
    "getenv",
    "query",
    "sqlite_scan",
    "sqlite_attach",
    "postgres_scan",
    "postgres_attach",
    "mysql_scan",
    "http_get",
    "http_post",
    "load_extension",
    "duckdb_secrets",
    "which_secret",
}
_REFUSED_PREFIXES = ("read_", "parquet_", "sniff_", "iceberg_", "delta_", "st_read", "write_")
# Callable from a SELECT, yet they write (sequences, checkpoints, the log), or run or resolve
# SQL and names the parser never saw (`query_table('x.csv')` is a file scan).
_STATEFUL_FUNCTIONS = {
    "checkpoint",
    "force_checkpoint",
    "nextval",
    "setval",
    "truncate_duckdb_logs",
    "enable_logging",
    "disable_logging",
    "json_execute_serialized_sql",
    "query_table",
}
# `FROM data.csv` (unquoted) is a replacement scan of the file data.csv, not schema "data".
_FILE_SUFFIXES = (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson", ".txt", ".gz", ".zst", ".xlsx")
_TRIGGERS = (
    *_REFUSED_FUNCTIONS,
    *_STATEFUL_FUNCTIONS,
    *_REFUSED_PREFIXES,
    *_FILE_SUFFIXES,
    ".db",
    "insert",
    "update",
    "delete",
    "merge",
)
_MODIFYING_NODES = re.compile(r"(INSERT|UPDATE|DELETE|MERGE)")
_PATH_LIKE = re.compile(r"[/\\]|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|xlsx|db|duckdb)$", re.I)
_EXPLAIN = re.compile(r"^\s*explain\s+(analyze\s+)?", re.I)
_SURROGATE = re.compile(r"[\ud800-\udfff]")

_KIND_NAMES = {
    "INSERT": "INSERT",
    "UPDATE": "UPDATE",
    "DELETE": "DELETE",
    "CREATE": "CREATE",
    "DROP": "DROP",
    "ALTER": "ALTER",
    "COPY": "COPY",
    "COPY_DATABASE": "COPY DATABASE",
    "ATTACH": "ATTACH",
    "DETACH": "DETACH",
    "LOAD": "INSTALL/LOAD",
    "EXTENSION": "extension statement",
    "SET": "SET/RESET/USE",
    "VARIABLE_SET": "SET VARIABLE",
    "PRAGMA": "PRAGMA",
    "EXPORT": "EXPORT/IMPORT DATABASE",
    "VACUUM": "VACUUM",
    "TRANSACTION": "transaction control",
    "CALL": "CALL/CHECKPOINT",
    "PREPARE": "PREPARE",
    "EXECUTE": "EXECUTE",
    "ANALYZE": "ANALYZE",
    "CREATE_FUNC": "CREATE FUNCTION/MACRO",
    "MERGE_INTO": "MERGE INTO",
    "MULTI": "multi-part statement (PIVOT that creates types)",
}

_ast_lock = threading.Lock()
_ast_con: duckdb.DuckDBPyConnection | None = None


def _serialize(text: str) -> str:
    """DuckDB's AST as JSON, from a private empty connection that holds no data."""
    global _ast_con
    with _ast_lock:
        if _ast_con is None:
            _ast_con = duckdb.connect(":memory:", config={"enable_external_access": False})
            atexit.register(_close_ast_connection)
        row = _ast_con.execute("SELECT json_serialize_sql(?)", [text]).fetchone()
    return str(row[0]) if row else "{}"


def _close_ast_connection() -> None:
    """Closed before interpreter teardown, so the binding reports no leaked objects."""
    global _ast_con
    with _ast_lock:
        if _ast_con is not None:
            _ast_con.close()
            _ast_con = None


def check(sql: str) -> str:
    """Return the single statement to run, or raise GuardError naming what was refused."""
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    if _SURROGATE.search(sql):  # DuckDB's binding raises TypeError on these
        raise GuardError("refused: the SQL is not valid Unicode text (it holds a lone surrogate)")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise GuardError(syntax_message(one_line(exc))) from None
    if not statements:
        raise GuardError("refused: empty SQL")
    if len(statements) != 1:
        raise GuardError(f"refused: exactly one statement is allowed, got {len(statements)}")
    statement = statements[0]
    if re.match(r"^\s*(import|export)\s+database", statement.query, re.I):
        raise GuardError("refused: EXPORT/IMPORT DATABASE is not a read-only statement")
    try:
        kind = statement.type
    except ValueError:
        raise GuardError("refused: not a read-only statement") from None
    if kind not in _READ_ONLY_TYPES:
        name = _KIND_NAMES.get(kind.name, kind.name)
        raise GuardError(f"refused: {name} is not a read-only statement")
    text = statement.query.strip().rstrip(";").strip()
    if kind == duckdb.StatementType.EXPLAIN or _may_hide_something(text):
        _check_ast(_EXPLAIN.sub("", text, count=1))
    return text


def _may_hide_something(text: str) -> bool:
    """Whether the AST walk could refuse this text; when not, its ~1 ms is skipped.

    Conservative by construction: every construct the walk refuses needs a quote
    (paths, URLs, quoted names) or one of the trigger words in the text.
    """
    if any(ch in text for ch in "'\"$\\"):
        return True
    lowered = text.lower()
    return any(word in lowered for word in _TRIGGERS)


def _check_ast(text: str) -> None:
    tree = json.loads(_serialize(text))
    if tree.get("error"):
        message = str(tree.get("error_message", "cannot be parsed"))
        if "Only SELECT" in message:
            raise GuardError("refused: only a read-only query can be explained")
        raise GuardError(f"refused: {one_line(Exception(message))}")
    for node in _walk(tree.get("statements", [])):
        node_type = node.get("type")
        if isinstance(node_type, str) and node_type.endswith("_QUERY_NODE"):
            match = _MODIFYING_NODES.search(node_type)
            if match:
                raise GuardError(f"refused: {match.group(1)} inside a query is not read-only")
        name = node.get("function_name")
        if isinstance(name, str) and _refused_function(name):
            raise GuardError(f"refused: {name}() reads files, the network or the environment")
        if isinstance(name, str) and name.lower() in _STATEFUL_FUNCTIONS:
            raise GuardError(f"refused: {name}() changes state or runs SQL unseen, not a read-only query")
        if node_type == "BASE_TABLE":
            parts = [node.get(k) for k in ("catalog_name", "schema_name", "table_name")]
            table = ".".join(p for p in parts if isinstance(p, str) and p)
            if _PATH_LIKE.search(table):
                raise GuardError(f"refused: '{table}' is a file or URL, not a table of the database")


def _refused_function(name: str) -> bool:
    lowered = name.lower()
    return lowered in _REFUSED_FUNCTIONS or lowered.startswith(_REFUSED_PREFIXES)


def _walk(value: Any) -> Iterator[dict[str, Any]]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)

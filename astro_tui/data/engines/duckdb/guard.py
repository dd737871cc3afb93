"""The parser half of the read-only guarantee; the engine lock in `engine.py` is the other.

Statements are split and typed by DuckDB's own parser, then every SELECT is
walked through DuckDB's JSON AST so that data-modifying CTEs, file readers,
path scans and functions that run SQL named in a string are refused with a
reason before anything runs. Table functions are default-deny: only those in
`SAFE_TABLE_FUNCTIONS` run, and `tests/security/test_guard_classes.py` fails when a
DuckDB upgrade brings one nobody classified. Read-only PRAGMAs and CALLs are
run as the SELECT they stand for, so the same walk checks them.

A name in the text is not the function that runs: a macro, a view or a
generated column in the database file may stand behind it, even behind a
built-in's name. So in the worker, where the database is open, `check` is given
the file's `Definitions` (`resolved.py`): every definition the statement can
reach is vetted by these same rules, and DuckDB binds the statement so that the
calls it resolved to are judged too. A user macro never borrows a built-in's
trust: a refused name is refused whoever defines it.
"""

from __future__ import annotations

import atexit
import json
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import duckdb

from astro_tui.data.errors import GuardError, one_line, syntax_message
from astro_tui.data.input_limits import check_input, too_deep

_READ_ONLY_TYPES = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}

SAFE_TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "generate_series",
        "unnest",
        "repeat",
        "repeat_row",
        "json_each",
        "json_tree",
        "icu_calendar_names",
        "pg_timezone_names",
        "duckdb_schemas",
        "duckdb_tables",
        "duckdb_views",
        "duckdb_columns",
        "duckdb_constraints",
        "duckdb_indexes",
        "duckdb_sequences",
        "duckdb_dependencies",
        "duckdb_functions",
        "duckdb_types",
        "duckdb_keywords",
        "pragma_table_info",
        "pragma_show",
        "pragma_version",
        "pragma_platform",
        "pragma_collations",
        "pragma_storage_info",
        "pragma_user_agent",
    }
)
"""What the model may call in FROM: generators, JSON unnesting and the catalog's own listings."""

REFUSED_TABLE_FUNCTIONS = frozenset(
    {
        # files, globs and other databases
        "read_blob",
        "read_csv",
        "read_csv_auto",
        "read_duckdb",
        "read_json",
        "read_json_auto",
        "read_json_objects",
        "read_json_objects_auto",
        "read_ndjson",
        "read_ndjson_auto",
        "read_ndjson_objects",
        "read_parquet",
        "read_single_csv_file",
        "read_single_json_file",
        "read_single_parquet_file",
        "read_text",
        "parquet_scan",
        "parquet_bloom_probe",
        "parquet_file_metadata",
        "parquet_full_metadata",
        "parquet_kv_metadata",
        "parquet_metadata",
        "parquet_schema",
        "sniff_csv",
        "glob",
        # SQL, tables or functions named in a string
        "query",
        "query_table",
        "histogram",
        "histogram_values",
        "json_execute_serialized_sql",
        "summary",
        "seq_scan",
        "duckdb_table_sample",
        # state: checkpoints, logging, profiling, external resources
        "checkpoint",
        "force_checkpoint",
        "enable_logging",
        "disable_logging",
        "truncate_duckdb_logs",
        "enable_profiling",
        "disable_profiling",
        "create_external_resource",
        "deregister_external_resource",
        "destroy_external_resource",
        "register_external_resource",
        "register_external_resource_type",
        # the machine: settings and paths, secrets, memory, logs, sessions, extensions
        "duckdb_settings",
        "duckdb_secrets",
        "which_secret",
        "duckdb_secret_types",
        "duckdb_secret_type_parameters",
        "duckdb_extensions",
        "duckdb_extension_repositories",
        "duckdb_databases",
        "duckdb_temporary_files",
        "duckdb_memory",
        "duckdb_eviction_queues",
        "duckdb_external_file_cache",
        "duckdb_external_resources",
        "duckdb_external_resource_types",
        "duckdb_logs",
        "duckdb_logs_parsed",
        "duckdb_log_contexts",
        "duckdb_variables",
        "duckdb_prepared_statements",
        "duckdb_connection_count",
        "duckdb_approx_database_count",
        "duckdb_optimizers",
        "duckdb_profiling_settings",
        "duckdb_available_metrics",
        "duckdb_coordinate_systems",
        "duckdb_dialects",
        "duckdb_grammar_extensions",
        "duckdb_triggers",
        "pragma_database_size",
        "pragma_metadata_info",
        # scans of the host process's Python objects, and test fixtures
        "arrow_scan",
        "arrow_scan_dumb",
        "pandas_scan",
        "python_arrow_scan",
        "python_map_function",
        "test_all_types",
        "test_vector_types",
    }
)
"""Refused, each for a reason above; kept so an upgrade's new table functions stand out."""

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
    "current_setting",
    "json_serialize_plan",
    "write_log",
    "index_key",  # a table and index named in text
    "get_block_size",  # a built-in macro over pragma_database_size()
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
# `FROM data.csv` (unquoted) is a replacement scan of the file data.csv when no such table exists.
_FILE_SUFFIXES = (
    "csv",
    "tsv",
    "tbl",
    "dat",
    "parquet",
    "json",
    "jsonl",
    "ndjson",
    "txt",
    "gz",
    "zst",
    "xlsx",
    "db",
    "duckdb",
    "ddb",
    "sqlite",
    "sqlite3",
    "arrow",
    "feather",
    "ipc",
    "avro",
    "xml",
)
_READ_ONLY_PRAGMAS = {
    "table_info": "SELECT * FROM pragma_table_info({args})",
    "show": "SELECT * FROM pragma_show({args})",
    "version": "SELECT * FROM pragma_version()",
    "platform": "SELECT * FROM pragma_platform()",
    "collations": "SELECT * FROM pragma_collations()",
    "storage_info": "SELECT * FROM pragma_storage_info({args})",
    "user_agent": "SELECT * FROM pragma_user_agent()",
    "show_tables": "SHOW TABLES",
    "show_tables_expanded": "SHOW ALL TABLES",
}
"""Read-only PRAGMAs as the SELECT each stands for; every other PRAGMA sets or changes something."""
_PRAGMA = re.compile(r"^\s*pragma\s+(\w+)\s*(?:\((.*)\))?\s*$", re.I | re.S)
_CALL = re.compile(r"^\s*call\s+(.+)$", re.I | re.S)
_PIVOT = re.compile(r"^\s*(?:pivot|unpivot|pivot_wider|pivot_longer)\b", re.I)
_REFUSED_VIEWS = frozenset({
    "duckdb_databases", "pragma_database_list", "duckdb_logs", "pg_settings", "pg_database",
    "pg_prepared_statements",
})  # fmt: skip
"""System views over refused functions: the databases' paths, the logs, the settings, the
prepared statements (`tests/security/test_guard_classes.py` derives the list from DuckDB's own views)."""
_MODIFYING_WORDS = frozenset({"insert", "update", "delete", "merge"})
_MODIFYING_NODES = re.compile(r"(INSERT|UPDATE|DELETE|MERGE)")
_PATH_LIKE = re.compile(r"[/\\~]|://|\.(" + "|".join(_FILE_SUFFIXES) + r")$", re.I)
_EXPLAIN = re.compile(
    r"^\s*explain\s+(?:analy[sz]e\s+)?"
    r"(?:\(\s*(?:(?:analy[sz]e(?:\s+(?:true|false|on|off))?|format\s+'?[a-z]+'?)\s*(?:,\s*|(?=\))))+\)\s*)?",
    re.I,
)
"""`EXPLAIN [ANALYZE] [(FORMAT json, ANALYZE)]`: only these options are stripped, so any other
stays in front of the query and the AST walk refuses it."""
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


def _ast_connection() -> duckdb.DuckDBPyConnection:
    """A private empty connection that holds no data; call with `_ast_lock` held."""
    global _ast_con
    if _ast_con is None:
        _ast_con = duckdb.connect(":memory:", config={"enable_external_access": False})
        atexit.register(_close_ast_connection)
    return _ast_con


def serialize(text: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """DuckDB's AST as JSON, parsed on `con` (see `Definitions.parser`) or the private one."""
    if con is not None:
        row = con.execute("SELECT system.main.json_serialize_sql(?)", [text]).fetchone()
        return str(row[0]) if row else "{}"
    with _ast_lock:
        row = _ast_connection().execute("SELECT json_serialize_sql(?)", [text]).fetchone()
    return str(row[0]) if row else "{}"


def _close_ast_connection() -> None:
    """Closed before interpreter teardown, so the binding reports no leaked objects."""
    global _ast_con
    with _ast_lock:
        if _ast_con is not None:
            _ast_con.close()
            _ast_con = None


class Definitions(Protocol):
    """What the database file defines, as the guard needs it (`resolved.py`, in the worker)."""

    def parser(self) -> duckdb.DuckDBPyConnection | None:
        """A new cursor of the open database for the guard's parse, or None (the guard's private
        connection). Parsing needs no data, and DuckDB's own functions are named in full, so
        nothing the file defines can stand in for them; a process that holds the database
        open starts no second DuckDB for the guard (~30 ms and its memory)."""
        ...

    def mentioned(self, text: str) -> bool:
        """Whether the text may reach something the file defines (then the AST is walked)."""
        ...

    def judge(self, text: str, rules: Rules) -> None:
        """Vet what the statement reaches and judge the calls DuckDB resolves; raise GuardError."""
        ...


class _Later:
    """The database is asked later (in the worker): what only it can settle passes for now."""

    def parser(self) -> duckdb.DuckDBPyConnection | None:
        return None

    def mentioned(self, text: str) -> bool:
        return False

    def judge(self, text: str, rules: Rules) -> None:
        return None


LATER: Definitions = _Later()
"""For a quick first pass where the file is not open: refuses only what no file can excuse."""


def check(sql: str, *, database: Definitions | None = None) -> str:
    """Return the single statement to run, or raise GuardError naming what was refused.

    Without `database` (no file to ask) a name only the database could settle is refused:
    a file-like table name (`"data.csv"`), a system view that shows the machine, a table
    function astro does not know. With it, the database settles them (`resolved.py`).
    """
    con = database.parser() if database is not None else None
    try:
        text, subject, kind = statement_of(sql, con)
        rules = Rules(resolving=database is not None)
        walk = kind != duckdb.StatementType.SELECT or _needs_walk(subject, con)
        if walk or (database is not None and database.mentioned(subject)):
            check_ast(subject, rules, con)
    finally:
        if con is not None:
            con.close()
    if database is not None:
        database.judge(subject, rules)
    return text


def statement_of(
    sql: str, con: duckdb.DuckDBPyConnection | None = None
) -> tuple[str, str, duckdb.StatementType]:
    """The one statement to run (a read-only PRAGMA or CALL as its SELECT), the query the
    guard judges of it (an EXPLAIN's query, a PIVOT's stand-in), and its kind; or GuardError.
    Split by DuckDB's parser: `con`'s, or the default connection's."""
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    check_input(sql)
    if _SURROGATE.search(sql):  # DuckDB's binding raises TypeError on these
        raise GuardError("refused: the SQL is not valid Unicode text (it holds a lone surrogate)")
    try:
        statements = (duckdb if con is None else con).extract_statements(sql)
    except duckdb.Error as exc:
        raise GuardError(syntax_message(one_line(exc))) from None
    except RecursionError:
        raise too_deep() from None
    if not statements:
        raise GuardError("refused: empty SQL")
    if len(statements) != 1:
        raise GuardError(f"refused: exactly one statement is allowed, got {len(statements)}")
    statement = statements[0]
    text = statement.query.strip().rstrip(";").strip()
    if re.match(r"^\s*(import|export)\s+database", text, re.I):
        raise GuardError("refused: EXPORT/IMPORT DATABASE is not a read-only statement")
    try:
        kind = statement.type
    except ValueError:
        raise GuardError("refused: not a read-only statement") from None
    if kind == duckdb.StatementType.PRAGMA:
        text = _pragma_as_select(text)
        return text, text, kind
    if kind == duckdb.StatementType.CALL:
        text = _call_as_select(text)
        return text, text, kind
    if kind == duckdb.StatementType.MULTI and _PIVOT.match(text):
        return text, _pivot_stand_in(text, con), kind
    if kind in _READ_ONLY_TYPES:
        return text, _EXPLAIN.sub("", text, count=1), kind
    name = _KIND_NAMES.get(kind.name, kind.name)
    raise GuardError(f"refused: {name} is not a read-only statement")


def _needs_walk(text: str, con: duckdb.DuckDBPyConnection | None = None) -> bool:
    """Whether the AST walk could refuse this text; when not, its ~0.3 ms is skipped.

    Sound by construction, read from DuckDB's own tokenizer: everything the walk refuses
    needs a quote or `$` (paths, URLs, quoted names), a call of a function that is not a
    plain scalar or aggregate of this DuckDB (every table function and every refused name
    is outside that set), a modifying keyword, or a name that is a file suffix or a refused
    system view. `tests/security/test_guard_classes.py` checks it against the whole hostile corpus.
    What the database file defines is the `Definitions`' business (`mentioned`).
    """
    if any(ch in text for ch in "'\"$\\"):
        return True
    plain = _plain_functions(con)
    for word, calls in tokens(text):
        word = word.strip().lower()
        if word in _MODIFYING_WORDS or word in _FILE_SUFFIXES or word in _REFUSED_VIEWS or word == "show":
            return True
        if calls and word not in plain and word not in _SYNTAX_BEFORE_BRACKET:
            return True
    return False


_EXPANDING = frozenset({"case", "cube", "rollup", "grouping", "pivot", "unpivot"})


def cheap_to_parse(text: str) -> bool:
    """Whether DuckDB's parse of `text` costs about its length: one statement, and none of the
    forms its transformer multiplies. It copies a CASE's operand into every WHEN (nested, that
    is exponential: 742 characters took 51 s and 1.6 GB) and expands grouping sets (one
    `CUBE` of 15 columns is 32,768 sets); a PIVOT copies its source. Read with the tokenizer,
    which costs the length."""
    if _SURROGATE.search(text):
        return True  # refused before any parse
    try:
        found = list(tokens(text))
    except duckdb.Error:
        return False
    ended = False
    for word, _calls in found:
        word = word.strip().lower()
        if ended and word != ";" and not word.startswith(("--", "/*")):
            return False
        ended = ended or word == ";"
        if word in _EXPANDING:
            return False
    return True


def tokens(text: str) -> Iterator[tuple[str, bool]]:
    """DuckDB's tokens of `text`, each with whether a bracket follows it at once. The tokenizer
    counts in bytes of UTF-8, not characters: read as character offsets, one `é` before a
    `checkpoint()` shifted every later token and the call went unseen."""
    data = text.encode("utf-8", "surrogatepass")
    found = duckdb.tokenize(text)
    for index, (start, _kind) in enumerate(found):
        end = found[index + 1][0] if index + 1 < len(found) else len(data)
        yield data[start:end].decode("utf-8", "replace"), data[end : end + 1] == b"("


_SYNTAX_BEFORE_BRACKET = frozenset({
    "in", "values", "exists", "over", "as", "any", "all", "some", "filter", "within", "using", "on",
    "and", "or", "not", "from", "join", "where", "select", "when", "then", "else", "by", "lateral",
    "tablesample", "rollup", "cube", "sets", "with", "recursive", "pivot", "unpivot", "union",
    "except", "intersect", "having", "qualify",
})  # fmt: skip
"""Keywords that open a bracket without calling anything (`IN (`, `OVER (`, `FROM (`)."""


_plain: frozenset[str] | None = None
_BUILTIN_FUNCTIONS = (
    "SELECT DISTINCT system.main.lower(function_name), function_type FROM system.main.duckdb_functions() "
    "WHERE internal AND database_name = 'system'"
)


def _plain_functions(con: duckdb.DuckDBPyConnection | None = None) -> frozenset[str]:
    """Built-in scalar and aggregate functions of this DuckDB that no rule of the walk names:
    a call of one of these cannot be what the walk refuses. Read once, on `con` or the
    private connection: DuckDB's own, in its `system` catalog, never what a file defines
    (a file named system.duckdb is opened as `system_db`)."""
    if _plain is None:
        if con is not None:
            rows = con.execute(_BUILTIN_FUNCTIONS).fetchall()
        else:
            with _ast_lock:
                rows = _ast_connection().execute(_BUILTIN_FUNCTIONS).fetchall()
        learn_builtins(rows)
    assert _plain is not None
    return _plain


def learn_builtins(rows: Iterable[tuple[str, str]]) -> None:
    """The built-in functions' lowercase names and kinds, read by whoever reads DuckDB's function
    list first (`resolved.py` reads it for the file's macros anyway): read once per process."""
    global _plain
    if _plain is not None:
        return
    rows = list(rows)
    tables = {name for name, kind in rows if kind in ("table", "table_macro")}
    _plain = frozenset(
        name
        for name, kind in rows
        if kind in ("scalar", "aggregate", "macro")
        and name not in tables
        and not _refused_function(name)
        and name not in _STATEFUL_FUNCTIONS
    )


def _pragma_as_select(text: str) -> str:
    match = _PRAGMA.match(text)
    name = match.group(1).lower() if match else ""
    if match is None or name not in _READ_ONLY_PRAGMAS:
        shown = f"PRAGMA {name}" if name else "this PRAGMA"
        allowed = ", ".join(sorted(_READ_ONLY_PRAGMAS))
        raise GuardError(f"refused: {shown} is not one of the read-only pragmas ({allowed})")
    return _READ_ONLY_PRAGMAS[name].format(args=match.group(2) or "")


def _call_as_select(text: str) -> str:
    """`CALL f(args)` is `SELECT * FROM f(args)`: the table-function rules decide."""
    match = _CALL.match(text)
    if match is None:
        raise GuardError("refused: CALL needs a table function")
    return f"SELECT * FROM {match.group(1)}"


class Rules:
    """What one walk decides by itself, and what it leaves to the database file (`resolving`):
    the names only the catalog can settle, and every call with its number of arguments (a
    macro of the file called with fewer than it declares would run defaults no one can see)."""

    def __init__(self, *, resolving: bool) -> None:
        self.resolving = resolving
        self.unsettled: list[str] = []
        """Names DuckDB must resolve before anything can be said (a file-like name may be a
        table, a system view's name a table of the file's, an unknown table function a macro
        of the file), each as the refusal that stands if DuckDB cannot bind them."""
        self.calls: list[tuple[str, int]] = []

    def check_table_function(self, name: str) -> None:
        lowered = name.lower()
        if _refused_function(lowered) or lowered in REFUSED_TABLE_FUNCTIONS or lowered in _STATEFUL_FUNCTIONS:
            raise GuardError(f"refused: {name}() reads files, runs SQL named in text, or shows the machine")
        if lowered in SAFE_TABLE_FUNCTIONS:
            return
        self._unsettled(f"refused: {name}() is not a table function astro allows")

    def check_table(self, parts: list[str]) -> None:
        table = ".".join(p for p in parts if p)
        if parts[2].lower() in _REFUSED_VIEWS:
            self._unsettled(f"refused: {table} shows the machine (paths, settings or logs)")
        elif _PATH_LIKE.search(table):
            self._unsettled(f"refused: '{table}' is a file or URL, not a table of the database")

    def check_show(self, name: str) -> None:
        """`SHOW name` describes the table of that name, or else shows the setting (`SHOW
        temp_directory` is astro's private directory); no listing names every setting DuckDB
        would show (`extension_directory` is in none), so the bare form is refused and
        DESCRIBE, which only ever describes, is offered."""
        shown = f"SHOW {name} may show a setting of the machine"
        raise GuardError(f"refused: {shown}; to describe a table, use DESCRIBE {name}")

    def _unsettled(self, refusal: str) -> None:
        if not self.resolving:
            raise GuardError(refusal)
        self.unsettled.append(refusal)


def check_ast(text: str, rules: Rules, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Walk DuckDB's AST of one SELECT (a statement, or a definition the file holds), parsed on
    `con` (see `Definitions.parser`) or the private connection."""
    try:
        tree = json.loads(serialize(text, con))
    except RecursionError:
        raise too_deep() from None
    if tree.get("error"):
        message = str(tree.get("error_message", "cannot be parsed"))
        if "Only SELECT" in message:
            raise GuardError("refused: only a read-only query can be explained")
        raise GuardError(f"refused: {one_line(Exception(message))}")
    for node, ctes in _scoped(tree.get("statements", [])):
        node_type = node.get("type")
        if isinstance(node_type, str) and node_type.endswith("_QUERY_NODE"):
            match = _MODIFYING_NODES.search(node_type)
            if match:
                raise GuardError(f"refused: {match.group(1)} inside a query is not read-only")
        if node_type == "SHOW_REF" and node.get("show_type") == "SHOW" and node.get("query") is None:
            rules.check_show(str(node.get("table_name", "")))
        if node_type == "TABLE_FUNCTION":
            function = node.get("function") or {}
            rules.check_table_function(str(function.get("function_name", "")))
        name = node.get("function_name")
        if isinstance(name, str) and _refused_function(name):
            raise GuardError(f"refused: {name}() reads files, the network or the environment")
        if isinstance(name, str) and name.lower() in _STATEFUL_FUNCTIONS:
            raise GuardError(f"refused: {name}() changes state or runs SQL unseen, not a read-only query")
        if isinstance(name, str) and node.get("class") == "FUNCTION":
            arguments = node.get("arguments")
            rules.calls.append((name, len(arguments) if isinstance(arguments, list) else 0))
        if node_type == "BASE_TABLE":
            parts = [node.get(k) for k in ("catalog_name", "schema_name", "table_name")]
            catalog, schema, table = (p if isinstance(p, str) else "" for p in parts)
            if not catalog and not schema and ascii_lower(table) in ctes:
                continue  # the CTE of that name, not a table or a file
            rules.check_table([catalog, schema, table])


def ascii_lower(name: str) -> str:
    """How DuckDB compares names: ASCII letters fold, nothing else does."""
    return name.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def _scoped(value: Any) -> Iterator[tuple[dict[str, Any], frozenset[str]]]:
    """Every node of the AST with the CTE names in scope where it stands, as DuckDB scopes
    them: a CTE's body sees the CTEs before it (and itself, when recursive), the rest of its
    query sees them all, and a qualified name is never a CTE. Anything else is a table, or a
    file when no table has that name."""
    stack: list[tuple[Any, frozenset[str]]] = [(value, frozenset())]
    while stack:
        item, scope = stack.pop()
        if isinstance(item, list):
            stack.extend((v, scope) for v in item)
            continue
        if not isinstance(item, dict):
            continue
        yield item, scope
        cte_map = item.get("cte_map")
        entries = cte_map.get("map") if isinstance(cte_map, dict) else None
        if not isinstance(entries, list) or not entries:
            stack.extend((v, scope) for v in item.values())
            continue
        names = [ascii_lower(str(e.get("key", ""))) if isinstance(e, dict) else "" for e in entries]
        stack.extend((v, scope | set(names)) for k, v in item.items() if k != "cte_map")
        for index, entry in enumerate(entries):
            body = entry.get("value") if isinstance(entry, dict) else None
            query = body.get("query_node") if isinstance(body, dict) else None
            recursive = isinstance(query, dict) and query.get("type") == "RECURSIVE_CTE_NODE"
            stack.append((body, scope | set(names[: index + 1 if recursive else index])))


_PIVOT_ON = re.compile(
    r"\bON\s+(.+?)(?=\s+USING\b|\s+GROUP\s+BY\b|\s+ORDER\s+BY\b|\s+LIMIT\b|\s*$)", re.I | re.S
)


def _pivot_stand_in(text: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """`PIVOT t ON c USING sum(x)` (no IN list) is no SELECT, and DuckDB cannot serialize it.
    With an IN list it is, so that stand-in is what is checked: the IN list's values are
    data, and everything else (source, columns, aggregates) is the statement's own."""
    stand_in = f"SELECT * FROM ({_PIVOT_ON.sub(_on_with_in, text, count=1)})"
    try:
        kinds = [s.type for s in (duckdb if con is None else con).extract_statements(stand_in)]
    except duckdb.Error:
        kinds = []
    if kinds != [duckdb.StatementType.SELECT]:
        raise GuardError("refused: this PIVOT could not be checked; name its values (ON c IN ('a', 'b'))")
    return stand_in


def _on_with_in(match: re.Match[str]) -> str:
    columns = [c.strip() for c in match.group(1).split(",")]
    return "ON " + ", ".join(c if re.search(r"\bIN\s*\(", c, re.I) else f"{c} IN (NULL)" for c in columns)


def refused_function(name: str) -> bool:
    """Whether a scalar or table function of this name is never run, whoever defines it."""
    lowered = name.lower()
    return (
        lowered in _REFUSED_FUNCTIONS
        or lowered.startswith(_REFUSED_PREFIXES)
        or lowered in _STATEFUL_FUNCTIONS
        or lowered in REFUSED_TABLE_FUNCTIONS
    )


def _refused_function(name: str) -> bool:
    lowered = name.lower()
    return lowered in _REFUSED_FUNCTIONS or lowered.startswith(_REFUSED_PREFIXES)


def walk(value: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a JSON tree, depth first, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)

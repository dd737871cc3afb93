"""Spark's read-only guarantee: the ONLY layer, since Spark has no read-only mode to fall back on.

On Spark Connect `spark.sql("DROP …")` runs at once, so every statement is
checked here before anything is sent. SQL is parsed with sqlglot's Spark
dialect, which reads strings, backslash escapes and nested comments as Spark
does. Exactly one statement of these kinds passes: a query (SELECT, WITH …,
VALUES, `TABLE name`), EXPLAIN of a query, DESCRIBE, SHOW. Everything else is
refused, whatever it is: sqlglot's fallback to a raw "command", bare words it
reads as a column (`CLEAR CACHE`, `RESET`, `LIST FILE`), and anything it cannot
parse (default deny).

Inside an allowed statement the whole tree is walked, and refused are:
- writes and state changes nested anywhere (INSERT … DIRECTORY, CACHE, SET …);
- `SELECT TRANSFORM(…) USING 'script'`, which runs a program on the cluster;
- file-path sources (csv.`/path`, parquet.`s3://…`, delta.`…`): any table whose
  namespace is a data source format, or whose name looks like a path or URI;
- table-valued functions other than Spark's generators (range, explode, stack…);
  `IDENTIFIER('…')`, whose text names a table the guard cannot see;
- functions that leave the catalog: JVM reflection (reflect, java_method,
  try_reflect), file and descriptor readers (from_protobuf, xpath*, XML),
  input_file_name (storage paths), secrets and network calls of Databricks
  (secret, http_request, ai_query, read_files, …);
- functions defined in the catalog (`db.fn(…)`, and any the server lists as user
  functions): their code is JVM or Python the guard cannot read.

Input is bounded (size and bracket depth) so hostile text gets one line, never a
RecursionError. A read-only principal remains the right deployment: this guard
is a parser's opinion, the principal is the server's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from astro_tui.data.errors import GuardError

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to a command" notes reach stderr

MAX_SQL_CHARS = 200_000
MAX_DEPTH = 200

_EXPLAIN_MODES = {"EXTENDED", "CODEGEN", "COST", "FORMATTED", "LOGICAL"}

_FORMATS = frozenset(
    {
        "csv",
        "json",
        "parquet",
        "orc",
        "text",
        "avro",
        "binaryfile",
        "delta",
        "xml",
        "image",
        "libsvm",
        "jdbc",
        "hudi",
        "iceberg",
        "kafka",
        "statestore",
        "state-metadata",
        "noop",
        "console",
        "socket",
        "rate",
        "hive",
        "file",
        "cloudfiles",
    }
)

_TABLE_FUNCTIONS = frozenset(
    {
        "range",
        "explode",
        "explode_outer",
        "inline",
        "inline_outer",
        "posexplode",
        "posexplode_outer",
        "stack",
        "json_tuple",
        "variant_explode",
        "variant_explode_outer",
        "sql_keywords",
        "collations",
    }
)

_REFUSED_FUNCTIONS = {
    "reflect": "JVM reflection",
    "java_method": "JVM reflection",
    "try_reflect": "JVM reflection",
    "input_file_name": "storage paths",
    "input_file_block_start": "storage paths",
    "input_file_block_length": "storage paths",
    "from_protobuf": "a descriptor file on the cluster",
    "to_protobuf": "a descriptor file on the cluster",
    "xpath": "XML parsing (external entities)",
    "xpath_boolean": "XML parsing (external entities)",
    "xpath_double": "XML parsing (external entities)",
    "xpath_float": "XML parsing (external entities)",
    "xpath_int": "XML parsing (external entities)",
    "xpath_long": "XML parsing (external entities)",
    "xpath_number": "XML parsing (external entities)",
    "xpath_short": "XML parsing (external entities)",
    "xpath_string": "XML parsing (external entities)",
    "from_xml": "XML parsing (external entities)",
    "schema_of_xml": "XML parsing (external entities)",
    "identifier": "a table named by text",
    "secret": "secrets",
    "try_secret": "secrets",
    "list_secrets": "secrets",
    "http_request": "the network",
    "ai_query": "the network",
    "read_files": "files",
    "read_kafka": "the network",
    "read_kinesis": "the network",
    "read_pubsub": "the network",
    "read_pulsar": "the network",
    "read_statestore": "files",
    "read_state_metadata": "files",
    "cloud_files_state": "files",
    "event_log": "files",
}

_REFUSED_NODES: dict[type[exp.Expression], str] = {
    exp.Insert: "INSERT",
    exp.Update: "UPDATE",
    exp.Delete: "DELETE",
    exp.Merge: "MERGE",
    exp.Create: "CREATE",
    exp.Drop: "DROP",
    exp.Alter: "ALTER",
    exp.Command: "a command",
    exp.Set: "SET",
    exp.Cache: "CACHE",
    exp.Uncache: "UNCACHE",
    exp.LoadData: "LOAD DATA",
    exp.Use: "USE",
    exp.Refresh: "REFRESH",
    exp.Analyze: "ANALYZE",
    exp.TruncateTable: "TRUNCATE",
    exp.Declare: "DECLARE",
    exp.QueryTransform: "TRANSFORM … USING (runs a program on the cluster)",
    exp.Into: "SELECT INTO",
    exp.MultitableInserts: "INSERT",
    exp.Directory: "a directory",
    exp.Transaction: "transaction control",
    exp.Commit: "transaction control",
    exp.Rollback: "transaction control",
    exp.Copy: "COPY",
    exp.Pragma: "PRAGMA",
    exp.Kill: "KILL",
    exp.Grant: "GRANT",
}
_PATHLIKE = re.compile(r"[/\\:]|^\.|^~")


def check(sql: str, user_functions: Iterable[str] = ()) -> str:
    """The statement to send, or GuardError with one line naming what was refused."""
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    if len(sql) > MAX_SQL_CHARS:
        raise GuardError(f"refused: the SQL is longer than {MAX_SQL_CHARS:,} characters")
    if "\x00" in sql:
        raise GuardError("refused: the SQL holds a NUL character")
    try:
        _check(sql, {f.lower() for f in user_functions})
    except RecursionError:
        raise GuardError("refused: the SQL is nested too deeply to check") from None
    return sql.strip().rstrip(";").rstrip()


def is_query(statement: str) -> bool:
    """A plain query, which can be capped with a LIMIT on its plan; not EXPLAIN, SHOW or DESCRIBE."""
    tokens = _tokens(statement)
    return bool(tokens) and tokens[0].text.upper() in {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "("}


def _check(sql: str, user_functions: set[str]) -> None:
    tokens = _tokens(sql)
    if not tokens:
        raise GuardError("refused: empty SQL")
    _check_shape(tokens)
    first = tokens[0].text.upper()
    if first == "SHOW":
        return  # every SHOW reads the catalog; none changes it
    if first == "EXPLAIN":
        # sqlglot reads EXPLAIN as a command whose rest is one opaque token: check the rest as a query
        inner = sql[tokens[0].end + 1 :]
        rest = _tokens(inner)
        if rest and rest[0].text.upper() in _EXPLAIN_MODES:
            inner = inner[rest[0].end + 1 :]
            rest = _tokens(inner)
        if not rest:
            raise GuardError("refused: EXPLAIN of nothing")
        if rest[0].text.upper() in {"EXPLAIN", "SHOW", "DESCRIBE", "DESC"}:
            raise GuardError("refused: EXPLAIN takes a query")
        _check_query(inner, user_functions)
        return
    if first in {"DESCRIBE", "DESC"}:
        tree = _parse(sql)
        if not isinstance(tree, exp.Describe):
            raise GuardError("refused: not a DESCRIBE statement Spark would read the same way")
        _check_tree(tree, user_functions)
        return
    _check_query(sql, user_functions)


def _check_query(sql: str, user_functions: set[str]) -> None:
    tokens = _tokens(sql)
    if not tokens:
        raise GuardError("refused: empty SQL")
    _check_shape(tokens)
    if tokens and tokens[0].text.upper() == "TABLE":
        if len(tokens) > 1 and tokens[-1].token_type == TokenType.SEMICOLON:
            tokens = tokens[:-1]
        # `TABLE name` is `SELECT * FROM name`; sqlglot does not read the short form
        sql = "SELECT * FROM " + sql[tokens[1].start : tokens[-1].end + 1] if len(tokens) > 1 else sql
    tree = _parse(sql)
    if not isinstance(tree, (exp.Query, exp.Values)):
        raise GuardError(f"refused: {_kind(tree)} is not a read-only statement")
    _check_tree(tree, user_functions)


def _parse(sql: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GuardError(f"refused: not understood by the Spark SQL parser ({first[:160]})") from None
    if len(statements) != 1:
        raise GuardError(f"refused: exactly one statement is allowed, got {len(statements)}")
    return statements[0]


def _tokens(sql: str) -> list[Token]:
    try:
        return sqlglot.Dialect.get_or_raise("spark").tokenize(sql)
    except (TokenError, ValueError) as exc:
        said = " ".join(str(exc).split())  # the tokenizer quotes the text it stopped at, newlines and all
        raise GuardError(f"refused: not understood by the Spark SQL parser ({said[:160]})") from None


def _check_shape(tokens: list[Token]) -> None:
    """One statement (a trailing `;` at most), and brackets no deeper than MAX_DEPTH."""
    depth = 0
    for n, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON and n != len(tokens) - 1:
            raise GuardError("refused: exactly one statement is allowed")
        if token.token_type in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE):
            depth += 1
            if depth > MAX_DEPTH:
                raise GuardError(f"refused: brackets nested deeper than {MAX_DEPTH}")
        elif token.token_type in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE):
            depth -= 1


def _check_tree(tree: exp.Expression, user_functions: set[str]) -> None:
    for node in tree.walk():
        for kind, name in _REFUSED_NODES.items():
            if isinstance(node, kind):
                raise GuardError(f"refused: {name} is not a read-only statement")
        if isinstance(node, exp.Table):
            _check_source(node)
        elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            raise GuardError("refused: functions defined in the catalog (db.fn) are not allowed")
        elif isinstance(node, exp.Func):
            _check_function(node, user_functions)


def _check_source(table: exp.Table) -> None:
    this = table.this
    if isinstance(this, exp.Func):
        name = _function_names(this)[0]
        if name not in _TABLE_FUNCTIONS:
            raise GuardError(f"refused: the table function {name}() is not allowed")
        return
    namespace = [p.name for p in table.parts[:-1]]
    name = table.name
    if any(n.lower() in _FORMATS for n in namespace[-1:]):
        raise GuardError(f"refused: reading files directly ({namespace[-1]}.`…`) reaches outside the catalog")
    if any(_PATHLIKE.search(p) for p in [*namespace, name]):
        raise GuardError("refused: a table named by a path reaches outside the catalog")


def _check_function(func: exp.Func, user_functions: set[str]) -> None:
    for name in _function_names(func):
        why = _REFUSED_FUNCTIONS.get(name)
        if why:
            raise GuardError(f"refused: {name}() reaches outside the catalog ({why})")
        if name in user_functions:
            raise GuardError(
                f"refused: {name}() is a user-defined function, its code is out of the guard's sight"
            )


def _function_names(func: exp.Func) -> list[str]:
    if isinstance(func, exp.Anonymous):
        return [str(func.name).lower()]
    return [n.lower() for n in (*func.sql_names(), func.key)]


def _kind(tree: exp.Expression) -> str:
    for kind, name in _REFUSED_NODES.items():
        if isinstance(tree, kind):
            return name
    return tree.key.upper() if isinstance(tree, exp.Expression) else "this"

"""Spark's first gate, in astro's process: sqlglot's reading, before anything is sent.

Spark has no read-only mode, so a statement passes two gates, each meant to be
enough alone: this one, and the server's own reading of the very same text
(`verdict.py`: Spark's parsed and analyzed plans, walked with allowlists), which
decides. This gate refuses early and locally, and records what it read (the
kind of statement, the tables) so the verdict can check that Spark read the
same statement. Text the two parsers could read differently is refused first
(`lexical.py`: a backslash before a line break, `${…}`, invisible characters).

SQL is parsed with sqlglot's Spark dialect, which reads strings, backslash
escapes and nested comments as Spark does. Exactly one statement of these
kinds passes: a query (SELECT, WITH …, VALUES, `TABLE name`), EXPLAIN or
DESCRIBE QUERY of a query, DESCRIBE of a table, column or function, SHOW.
Everything else is refused, whatever it is: sqlglot's fallback to a raw
"command", bare words it reads as a column (`CLEAR CACHE`, `RESET`, `LIST
FILE`), and anything it cannot parse (default deny).

Inside an allowed statement the whole tree is walked, and refused are:
- writes and state changes nested anywhere (INSERT … DIRECTORY, CACHE, SET …);
- `SELECT TRANSFORM(…) USING 'script'`, which runs a program on the cluster;
- file-path sources (csv.`/path`, parquet.`s3://…`, delta.`…`,
  `com.databricks.spark.csv`.`…`): any table whose namespace is a data source
  format or a class name (a dot inside one part), or whose name looks like a
  path or URI; the hidden `_metadata` column (file paths);
- storage locations and owners: DESCRIBE EXTENDED/FORMATTED, DESCRIBE DATABASE,
  SHOW TABLE EXTENDED, SHOW CREATE TABLE;
- table-valued functions other than Spark's generators (range, explode, stack…);
  `IDENTIFIER('…')`, whose text names a table the guard cannot see;
- functions that leave the catalog: JVM reflection (reflect, java_method,
  try_reflect), file and descriptor readers (from_protobuf, xpath*, XML),
  input_file_name (storage paths), secrets and network calls of Databricks
  (secret, http_request, ai_query, read_files, …);
- functions defined in the catalog (`db.fn(…)`, and any the server lists as user
  functions): their code is JVM or Python the guard cannot read.

Input is bounded before sqlglot parses it (characters, tokens and bracket depth),
so the parse costs a bounded time and memory in astro's process, and hostile
text gets one line, never a RecursionError. A read-only principal remains the
right deployment: both gates are readings, the principal is the server's law.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from astro_tui.data.engines.spark import lexical
from astro_tui.data.engines.spark.verdict import (
    DESCRIBE,
    DESCRIBE_QUERY,
    EXPLAIN,
    OUTSIDE,
    QUERY,
    SHOW,
    TABLE_FUNCTIONS,
    Expected,
)
from astro_tui.data.errors import GuardError

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to a command" notes reach stderr

MAX_SQL_CHARS = lexical.MAX_SQL_CHARS
MAX_TOKENS = 5_000
_ROUGH_UNITS = 25_000
_ROUGH = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")
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

_TABLE_FUNCTIONS = TABLE_FUNCTIONS
_REFUSED_FUNCTIONS = OUTSIDE

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
_ACCOUNT_NAMES = frozenset({"USER", "CURRENT_USER", "SESSION_USER"})
"""Names Spark resolves to current_user() when no column has them, quoted or not, in any case
(Java's per-character folding: `uſer` is USER). The value is folded into the verdict's own plan,
so an error there (`CAST(user AS INT)`) prints the account before the plan can be judged."""
_PATHLIKE = re.compile(r"[/\\:]|^\.|^~")


def check(sql: str, user_functions: Iterable[str] = (), *, substitution_off: bool = False) -> str:
    """The statement to send (the text itself, unchanged), or GuardError with one line.

    `substitution_off`: the session proved Spark will not substitute `${…}`.
    """
    inspect(sql, frozenset(f.lower() for f in user_functions), substitution_off)
    return sql


@functools.lru_cache(maxsize=32)
def inspect(
    sql: str, user_functions: frozenset[str] = frozenset(), substitution_off: bool = False
) -> Expected:
    """What this gate read: the kind of statement and the tables a query names (for the verdict)."""
    lexical.check_text(sql, substitution_off=substitution_off)
    try:
        return _check(sql, set(user_functions))
    except RecursionError:
        raise GuardError("refused: the SQL is nested too deeply to check") from None


def is_query(statement: str) -> bool:
    """A plain query, which can be capped with a LIMIT on its plan; not EXPLAIN, SHOW or DESCRIBE."""
    tokens = _tokens(statement)
    return bool(tokens) and tokens[0].text.upper() in {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "("}


_LOCATIONS = {"EXTENDED", "FORMATTED", "DATABASE", "SCHEMA", "NAMESPACE", "CATALOG", "AS"}


def _check(sql: str, user_functions: set[str]) -> Expected:
    tokens = _tokens(sql)
    if not tokens:
        raise GuardError("refused: empty SQL")
    _check_shape(tokens)
    first = tokens[0].text.upper()
    if first == "SHOW":
        # sqlglot reads SHOW as a command whose rest is one opaque token: the rest is read anew
        rest = _tokens(sql[tokens[0].end + 1 :])
        words = [t.text.upper() for t in rest if t.token_type != TokenType.STRING]
        if "CREATE" in words[:2] or "EXTENDED" in words:
            raise GuardError("refused: SHOW CREATE TABLE and SHOW TABLE EXTENDED show storage locations")
        return Expected(SHOW)  # every other SHOW reads the catalog; the verdict lists which
    if first == "EXPLAIN":
        inner = _after(sql, tokens[0].end + 1, _EXPLAIN_MODES)
        return Expected(EXPLAIN, inner=inner, tables=_check_query(inner, user_functions))
    if first in {"DESCRIBE", "DESC"}:
        rest = [t for t in tokens[1:] if t.token_type != TokenType.SEMICOLON]
        if rest and rest[0].text.upper() == "QUERY":
            inner = _after(sql, rest[0].end + 1, set())
            return Expected(DESCRIBE_QUERY, inner=inner, tables=_check_query(inner, user_functions))
        if rest and rest[0].text.upper() == "FUNCTION":
            _check_function_name(rest[1:], user_functions)
            return Expected(DESCRIBE)
        if any(t.text.upper() in _LOCATIONS for t in rest):
            raise GuardError(
                "refused: DESCRIBE EXTENDED and DESCRIBE DATABASE show storage locations and owners"
            )
        if rest and rest[0].text.upper() == "TABLE":
            rest = rest[1:]
        _check_described(sql, rest, user_functions)
        return Expected(DESCRIBE)
    return Expected(QUERY, tables=_check_query(sql, user_functions, tokens))


def _after(sql: str, start: int, modes: set[str]) -> str:
    """The query after EXPLAIN [mode] or DESCRIBE QUERY: the same characters, from its first token
    (sqlglot reads EXPLAIN as a command whose rest is one opaque token, so the rest is read anew)."""
    rest = _tokens(sql[start:])
    if rest and rest[0].text.upper() in modes:
        start += rest[0].end + 1
        rest = _tokens(sql[start:])
    if not rest or rest[0].token_type == TokenType.SEMICOLON:
        raise GuardError("refused: EXPLAIN of nothing")
    if rest[0].text.upper() in {"EXPLAIN", "SHOW", "DESCRIBE", "DESC"}:
        raise GuardError("refused: EXPLAIN takes a query")
    return sql[start + rest[0].start :]


def _dotted(tokens: list[Token]) -> tuple[list[Token], list[Token]]:
    """A leading name `a.b.c` (words or backticked parts joined by dots) and the tokens after it."""
    name: list[Token] = []
    for token in tokens:
        wordlike = token.token_type == TokenType.IDENTIFIER or _WORD.fullmatch(token.text)
        if ((not name or name[-1].token_type == TokenType.DOT) and wordlike) or (
            name and name[-1].token_type != TokenType.DOT and token.token_type == TokenType.DOT
        ):
            name.append(token)
        else:
            break
    if name and name[-1].token_type == TokenType.DOT:
        name.pop()
    return name, tokens[len(name) :]


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_described(sql: str, rest: list[Token], user_functions: set[str]) -> None:
    """DESCRIBE [TABLE] name [column]: the name is checked as the table of a query would be."""
    rest = [t for t in rest if t.token_type != TokenType.SEMICOLON]
    table, after = _dotted(rest)
    _column, after = _dotted(after)
    if not table or after:
        raise GuardError("refused: DESCRIBE takes a table and a column, or a function")
    _check_query("SELECT * FROM " + sql[table[0].start : table[-1].end + 1], user_functions)


def _check_function_name(rest: list[Token], user_functions: set[str]) -> None:
    words = [t for t in rest if t.token_type != TokenType.SEMICOLON]
    if words and words[0].text.upper() == "EXTENDED":
        words = words[1:]
    name, after = _dotted(words)
    if not name or after:
        raise GuardError("refused: DESCRIBE FUNCTION takes a function name")


def _check_query(sql: str, user_functions: set[str], tokens: list[Token] | None = None) -> tuple[str, ...]:
    """`tokens`: the text's, when the caller has them (the text is tokenized once: it is most
    of the gate's time on a long statement)."""
    tokens = _tokens(sql) if tokens is None else tokens
    if not tokens:
        raise GuardError("refused: empty SQL")
    _check_shape(tokens)
    if tokens and tokens[0].text.upper() == "TABLE":
        if len(tokens) > 1 and tokens[-1].token_type == TokenType.SEMICOLON:
            tokens = tokens[:-1]
        # `TABLE name` is `SELECT * FROM name`; sqlglot does not read the short form
        sql = "SELECT * FROM " + sql[tokens[1].start : tokens[-1].end + 1] if len(tokens) > 1 else sql
        tokens = _tokens(sql)
    tree = _parse(sql, tokens)
    if not isinstance(tree, (exp.Query, exp.Values)):
        raise GuardError(f"refused: {_kind(tree)} is not a read-only statement")
    _check_tree(tree, user_functions)
    return tuple(
        ".".join(p.name.lower() for p in t.parts)
        for t in tree.find_all(exp.Table)
        if not isinstance(t.this, exp.Func)
        and not t.find_ancestor(exp.Hint)
        and not _SYNTHETIC.fullmatch(t.name)
    )


_SPARK = sqlglot.Dialect.get_or_raise("spark")
_SYNTHETIC = re.compile(r"__tmp\d+")
"""sqlglot's names for the steps of a pipe query (`FROM t |> WHERE …`), which Spark never sees."""


def _parse(sql: str, tokens: list[Token]) -> exp.Expression:
    try:
        statements = [s for s in _SPARK.parser().parse(tokens, sql) if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GuardError(f"refused: not understood by the Spark SQL parser ({first[:160]})") from None
    if len(statements) != 1:
        raise GuardError(f"refused: exactly one statement is allowed, got {len(statements)}")
    return statements[0]


def _tokens(sql: str) -> list[Token]:
    """sqlglot's tokens; a text of many more words and signs than MAX_TOKENS allows is refused
    before the tokenizer (Python, 20–40 µs a token) is given it."""
    if len(sql) > _ROUGH_UNITS and sum(1 for _ in _ROUGH.finditer(sql)) > _ROUGH_UNITS:
        raise GuardError(f"refused: the SQL has more than {MAX_TOKENS:,} tokens")
    try:
        return _SPARK.tokenize(sql)
    except (TokenError, ValueError) as exc:
        said = " ".join(str(exc).split())  # the tokenizer quotes the text it stopped at, newlines and all
        raise GuardError(f"refused: not understood by the Spark SQL parser ({said[:160]})") from None


def _check_shape(tokens: list[Token]) -> None:
    """One statement (a trailing `;` at most), at most MAX_TOKENS tokens (the bound on the
    parse's time and memory), and brackets no deeper than MAX_DEPTH."""
    if len(tokens) > MAX_TOKENS:
        raise GuardError(f"refused: the SQL has more than {MAX_TOKENS:,} tokens")
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
    refused = tuple(_REFUSED_NODES)
    for node in tree.walk():
        if isinstance(node, refused):
            raise GuardError(f"refused: {_kind(node)} is not a read-only statement")
        if isinstance(node, exp.Table):
            _check_source(node)
        elif isinstance(node, exp.Column | exp.Dot | exp.Identifier) and node.name.lower() == "_metadata":
            raise GuardError("refused: the _metadata column shows storage paths")
        elif isinstance(node, exp.Column) and not node.table and lexical.fold(node.name) in _ACCOUNT_NAMES:
            raise GuardError(
                f"refused: {node.name} alone is current_user() to Spark (the server's account); "
                "name a column of that name with its table (t.user)"
            )
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
    if any(n.lower() in _FORMATS or "." in n for n in namespace[-1:]):
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

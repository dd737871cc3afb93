"""The verdict on Spark's own reading of a statement: its plans, walked with allowlists.

The engine asks the server to explain the statement (an AnalyzePlan request,
which parses and analyzes without executing a command) under a LIMIT of its
own (`WRAPPER`), and hands the text here. The plan is judged, default deny:

- The parsed plan's root, under the LIMIT, is a query, or one of the
  listed SHOW and DESCRIBE commands; EXPLAIN and DESCRIBE QUERY are judged by
  their inner query, which the engine sends on its own. When the guard's sqlglot
  reading is given, the kinds must agree, and so must the tables named (the same
  statement was judged twice, not two statements once each).
- Every node of the analyzed plan (views expanded, subqueries included) is in
  the allowlist of read-only logical operators; a table is one from the catalog
  (`Relation db.t[…]`), never a file read by format (`Relation […] csv`).
- Every function the parser saw is one of Spark's built-ins as the server lists
  them (so a catalog function, whose code the guard cannot read, is refused by
  default), named plainly; none reaches outside the catalog (reflection, file
  and XML readers, input file names, the server's account and time zone), in
  the parsed plan or the analyzed one, where views and `IDENTIFIER(…)` have
  been resolved; no hidden `_metadata` column (storage paths).
- The plan is whole: one Spark cut at astro's length bound is refused.

The plan is text, and names, literals and aliases print in it raw, so a string
literal can hold a line that looks like a plan node. Such lines can only add
names, never hide one: every real node below the root prints behind a tree
marker (`+- `, `:- `) — the statement's root too, under the LIMIT — each such
line must name an allowed node, and the four section headers must each appear
exactly once. The analyzed plan's first lines (its output's names) carry no
marker, so they are never read as nodes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from astro_tui.data.errors import GuardError

WRAPPER = 987654321
"""The LIMIT the statement is explained under: the parsed plan's first two lines are then
ours, and the statement's root is the third, behind a tree marker like every node below it."""

_HEADERS = (
    "== Parsed Logical Plan ==",
    "== Analyzed Logical Plan ==",
    "== Optimized Logical Plan ==",
    "== Physical Plan ==",
)

QUERY = "query"
SHOW = "show"
DESCRIBE = "describe"
EXPLAIN = "explain"
DESCRIBE_QUERY = "describe query"


@dataclass(frozen=True, slots=True)
class Expected:
    """What the guard's own (sqlglot) reading found: the kind, and for a query its tables."""

    kind: str
    tables: tuple[str, ...] | None = None
    inner: str | None = None


_QUERY_ROOTS = frozenset(
    {
        "Project",
        "Aggregate",
        "Filter",
        "Sort",
        "GlobalLimit",
        "LocalLimit",
        "Offset",
        "Tail",
        "Distinct",
        "Deduplicate",
        "Union",
        "Intersect",
        "Except",
        "UnresolvedRelation",
        "CTE",
        "UnresolvedWith",
        "WithCTE",
        "LocalRelation",
        "UnresolvedInlineTable",
        "OneRowRelation",
        "SubqueryAlias",
        "Join",
        "LateralJoin",
        "Window",
        "WithWindowDefinition",
        "Generate",
        "Pivot",
        "Unpivot",
        "UnresolvedHint",
        "UnresolvedHaving",
        "PipeOperator",
        "RepartitionByExpression",
        "Repartition",
        "RebalancePartitions",
        "Sample",
        "UnresolvedTableValuedFunction",
    }
)
_SHOW_ROOTS = frozenset(
    {
        "ShowTables",
        "ShowNamespaces",
        "ShowNamespacesCommand",
        "ShowColumns",
        "ShowFunctions",
        "ShowViews",
        "ShowTableProperties",
        "ShowPartitions",
        "ShowCatalogsCommand",
        "ShowCurrentNamespace",
        "ShowCurrentNamespaceCommand",
    }
)
_DESCRIBE_ROOTS = frozenset({"DescribeRelation", "DescribeColumn", "DescribeFunction"})

_NODES = frozenset(
    {
        # queries
        "Project",
        "Filter",
        "Aggregate",
        "Sort",
        "GlobalLimit",
        "LocalLimit",
        "Offset",
        "Tail",
        "Distinct",
        "Deduplicate",
        "Union",
        "Intersect",
        "Except",
        "Join",
        "LateralJoin",
        "SubqueryAlias",
        "View",
        "Relation",
        "HiveTableRelation",
        "LocalRelation",
        "OneRowRelation",
        "Range",
        "Window",
        "WindowGroupLimit",
        "Generate",
        "Expand",
        "Pivot",
        "Sample",
        "RepartitionByExpression",
        "Repartition",
        "RebalancePartitions",
        "ResolvedHint",
        "WithCTE",
        "CTERelationDef",
        "CTERelationRef",
        "UnionLoop",
        "UnionLoopRef",
        "PipeOperator",
        "InMemoryRelation",
        "ShowTablesCommand",
        # the catalog objects under SHOW and DESCRIBE
        "ResolvedNamespace",
        "ResolvedTable",
        "ResolvedPersistentView",
        "ResolvedFunc",
        "ShowTables",
        "ShowNamespacesCommand",
        "ShowColumnsCommand",
        "ShowFunctionsCommand",
        "ShowViewsCommand",
        "ShowTableProperties",
        "ShowTablePropertiesCommand",
        "ShowPartitionsCommand",
        "ShowPartitions",
        "ShowCatalogsCommand",
        "ShowCurrentNamespaceCommand",
        "DescribeTableCommand",
        "DescribeColumnCommand",
        "DescribeFunctionCommand",
    }
)

TABLE_FUNCTIONS = frozenset(
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

OUTSIDE = {
    "reflect": "JVM reflection",
    "java_method": "JVM reflection",
    "try_reflect": "JVM reflection",
    "input_file_name": "storage paths",
    "input_file_block_start": "storage paths",
    "input_file_block_length": "storage paths",
    "from_protobuf": "a descriptor file on the cluster",
    "to_protobuf": "a descriptor file on the cluster",
    "from_avro": "schema files",
    "to_avro": "schema files",
    "schema_of_avro": "schema files",
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
    "to_xml": "XML parsing (external entities)",
    "identifier": "a name given as text",
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
    "current_user": "the server's account",
    "currentuser": "the server's account",
    "user": "the server's account",
    "session_user": "the server's account",
    "sessionuser": "the server's account",
    "current_timezone": "the server's settings",
    "currenttimezone": "the server's settings",
}

_TREE_LINE = re.compile(r"^(?:   |:  )*(?:\+- |:- )(.*)$")
_NODE_NAME = re.compile(r"^'?!?(?:\*\(\d+\) )?([A-Za-z_][A-Za-z0-9_$]*)")
_PARSED_CALL = re.compile(r"'([^\s'(),\[\]]+)\(")
_ANALYZED_CALL = re.compile(r"(?<![\w$#.`])([A-Za-z_][A-Za-z0-9_]*)\(")
_QUALIFIED_CALL = re.compile(r"(?<![\w$#`.])[A-Za-z_`][\w`]*+\.[\w`.]*+(?<=[\w`])\(")
"""Starts only where a run of name characters starts, and never gives back what it read: a literal
`a.a.a.…` in the plan costs linear time, not the quadratic time of retrying from every `a`."""
_TVF = re.compile(r"'UnresolvedTableValuedFunction \[([^\]]*+)(\]?)")
_RELATION = re.compile(r"'UnresolvedRelation \[([^\]]*+)(?:\](?:(, \[)([^\]]*+)(\]?))?)?")
"""Both match wherever their prefix is and keep what they scanned (a list left open reads to the end of
the text and is not a node), so a literal repeating the prefix costs linear time, not quadratic."""
_METADATA = re.compile(r"(?<![\w$])_metadata#", re.I)
_TRUNCATED = re.compile(r"\.\.\. \d+ more fields")
_CUT = re.compile(r"\.\.\. \d+ more characters\s*\Z")
"""Spark's mark on a plan cut at `spark.sql.maxPlanStringLength`: a cut can fall inside the analyzed
plan, after a literal's line that looks like the next section's header, and hide the nodes below it."""
_EXPR_ID = re.compile(r"(?<=\w)#\d+L?")
"""Expression ids: a new one for every alias at every parse, so two readings of one text differ in them."""


def judge(explain: str, expected: Expected | None, functions: frozenset[str]) -> str:
    """The statement's kind as Spark read it, or GuardError with one line.

    `expected` is the guard's own reading; without it (the server's view alone),
    EXPLAIN and DESCRIBE QUERY are refused, since their inner query cannot be found.
    """
    if _CUT.search(explain[-64:]):
        raise GuardError("refused: Spark's plan for this text is longer than astro reads (memory limit)")
    parsed, analyzed = _sections(explain)
    root = _root(parsed)
    name = _name(root)
    kind = _kind(name, root)
    if expected is not None and expected.kind != kind:
        raise GuardError(
            f"refused: Spark reads this as {kind} while the guard read {expected.kind}; "
            "the two parsers disagree about the text"
        )
    if kind in (EXPLAIN, DESCRIBE_QUERY):
        if expected is None or expected.inner is None:
            raise GuardError(f"refused: {kind.upper()} needs its inner query judged")
        printed = root.split(" ", 1)[-1].strip().rstrip(";")
        if kind == DESCRIBE_QUERY and printed != expected.inner.strip().split("\n", 1)[0].strip().rstrip(";"):
            raise GuardError("refused: Spark's DESCRIBE QUERY reads another query than the guard")
        return kind
    _check_calls(parsed, analyzed, functions)
    _check_nodes(analyzed)
    named = Counter(_relations(parsed))
    judged = expected.tables if expected is not None and kind == QUERY else None
    if judged is not None and named != Counter(judged):
        raise GuardError(
            "refused: Spark reads other tables in this text than the guard "
            f"({', '.join(sorted(named)) or 'none'}); the two parsers disagree about the text"
        )
    return kind


def inner_root(explain: str) -> str:
    """The parsed root line of a query explained on its own, as an EXPLAIN's line would show it."""
    parsed, _ = _sections(explain)
    return _EXPR_ID.sub("#", _root(parsed))


def explained_root(explain: str) -> str:
    """The inner query's root as Spark's EXPLAIN command prints it (`'Project [*]`, …)."""
    parsed, _ = _sections(explain)
    root = _root(parsed)
    body = root.split(" ", 1)[1] if " " in root else ""
    return _EXPR_ID.sub("#", body.rsplit(", ", 1)[0])


def _sections(explain: str) -> tuple[list[str], list[str]]:
    lines = explain.split("\n")
    places = []
    for header in _HEADERS:
        found = [n for n, line in enumerate(lines) if line == header]
        if len(found) != 1:
            raise GuardError("refused: Spark's plan for this text cannot be read unambiguously")
        places.append(found[0])
    if places != sorted(places) or places[0] != 0:
        raise GuardError("refused: Spark's plan for this text cannot be read unambiguously")
    return lines[places[0] + 1 : places[1]], lines[places[1] + 1 : places[2]]


def _root(parsed: list[str]) -> str:
    """The statement's root: the line under the engine's LIMIT."""
    ours = (f"GlobalLimit {WRAPPER}", f"+- LocalLimit {WRAPPER}")
    if len(parsed) < 3 or tuple(line.replace("'", "") for line in parsed[:2]) != ours:
        raise GuardError("refused: Spark's plan for this text cannot be read unambiguously")
    if not parsed[2].startswith("   +- "):
        raise GuardError("refused: Spark's plan for this text cannot be read unambiguously")
    return parsed[2][6:]


def _name(line: str) -> str:
    match = _NODE_NAME.match(line)
    return match.group(1) if match else ""


def _kind(name: str, root: str) -> str:
    if name in _QUERY_ROOTS:
        return QUERY
    if name in _SHOW_ROOTS:
        return SHOW
    if name == "DescribeRelation" and root.startswith("'DescribeRelation false, "):
        return DESCRIBE
    if name == "DescribeColumn" and re.search(r", false, \[[^\]]*\]$", root):
        return DESCRIBE
    if name == "DescribeFunction":
        return DESCRIBE
    if name == "ExplainCommand":
        return EXPLAIN
    if name == "DescribeQueryCommand":
        return DESCRIBE_QUERY
    if name in _DESCRIBE_ROOTS:
        raise GuardError("refused: DESCRIBE EXTENDED shows storage locations and owners")
    raise GuardError(f"refused: Spark reads this as {name or 'something'}, not a read-only statement")


def _check_nodes(analyzed: list[str]) -> None:
    for line in analyzed:
        tree = _TREE_LINE.match(line)
        if not tree:
            continue  # the output's names, the engine's LIMIT, the rest of a value printed over lines
        body = tree.group(1)
        name = _name(body)
        if name not in _NODES:
            raise GuardError(f"refused: Spark would run {name or 'an unknown step'}, not a read-only step")
        if name == "Relation" and not re.match(r"Relation [^\s\[]+\[", body):
            raise GuardError("refused: reading files directly reaches outside the catalog")
    if any(_TRUNCATED.search(line) for line in analyzed):
        raise GuardError("refused: Spark's plan for this text is abbreviated")


def _check_calls(parsed: list[str], analyzed: list[str], functions: frozenset[str]) -> None:
    parsed_text = "\n".join(parsed[2:])
    analyzed_text = "\n".join(analyzed)
    if "expressionwithunresolvedidentifier(" in parsed_text.lower():
        raise GuardError("refused: IDENTIFIER(…) as a function name names a function the guard cannot see")
    for called in _PARSED_CALL.findall(parsed_text):
        name = called.lower()
        why = OUTSIDE.get(name)
        if why:
            raise GuardError(f"refused: {name}() reaches outside the catalog ({why})")
        if "." in name or "`" in name or name not in functions:
            raise GuardError(
                f"refused: {name}() is not one of Spark's built-in functions; "
                "a function from the catalog runs code the guard cannot read"
            )
    for listed, closed in _TVF.findall(parsed_text):
        if not closed:
            continue
        name = listed.strip().lower()
        if name not in TABLE_FUNCTIONS:
            raise GuardError(f"refused: the table function {name}() is not allowed")
    for called in _ANALYZED_CALL.findall(analyzed_text):
        why = OUTSIDE.get(called.lower())
        if why:
            raise GuardError(f"refused: {called.lower()}() reaches outside the catalog ({why})")
    if _QUALIFIED_CALL.search(analyzed_text):
        raise GuardError("refused: a function from the catalog runs code the guard cannot read")
    if _METADATA.search(analyzed_text):
        raise GuardError("refused: the _metadata column shows storage paths")


def _relations(parsed: list[str]) -> list[str]:
    found = []
    for listed, opened, options, closed in _RELATION.findall("\n".join(parsed[2:])):
        if not (opened and closed):
            continue
        if options.strip():
            raise GuardError("refused: read options on a table (WITH (…)) can point it at other files")
        found.append(".".join(part.strip().lower() for part in listed.split(",")))
    return found

"""The scope on Spark: what a statement reads, as Spark's analyzer resolved it.

Two readings, default deny, both after the guard's own (`guard.py`, `verdict.py`):

1. *The text* (`check`, the first gate, in astro's process): only a query runs (SHOW,
   DESCRIBE, EXPLAIN list or print columns); a name in `* EXCEPT (…)` that could be hidden
   is refused (it names a column without reading it), and so is NATURAL JOIN (it joins on
   hidden names too); a line break inside a string or a quoted name is refused, raw or escaped.
2. *The analyzed plan* (`judge`, on the very plan the verdict walked): every line a node
   of the tree, and proved so (`same_tree`: a second reading under 1–3 more LIMITs, chosen
   at random, must print every line that many levels deeper; a value Spark evaluates while
   analyzing, such as a PIVOT value built with char(10), prints raw and could otherwise
   forge lines of the tree); every table the plan reads (`Relation catalog.db.table[…]`, and views by
   their `View (…)` node) resolved to its name, and refused when the scope hides it or would
   hide, as its column, a word the statement writes (whether or not it has it: an ambiguous
   name fails only when it exists); every
   hidden column of it is an attribute with an expression id (`salary#12`), and any mention
   of that id above the table — a select list, WHERE, JOIN, GROUP/ORDER BY, a window, a
   subquery, a CTE, a lateral join, `struct(*)`, `hash(*)`, a view's definition — is a read
   and refused, except a Project that only passes plain attributes on (a join's `USING`
   list, `SELECT *`). A hidden attribute may not reach, passed on unread, the statement's
   output or a step that reads every column it is given (DISTINCT, set operations, a CTE's
   definition). Tables read from other than the catalog's files (Hive tables, cached
   relations) cannot be named with certainty here and are refused.

Reading something hidden, naming it, and naming something that does not exist get one and
the same refusal: an analysis error is that refusal too, so Spark's "Did you mean" never
lists a hidden name. `*` is refused, not expanded: when the statement names the table, the
refusal lists its visible columns.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field

from sqlglot import exp
from sqlglot.tokens import TokenType

from astro_tui.data.engines.spark import guard, verdict
from astro_tui.data.errors import GuardError
from astro_tui.data.scope import Scope

HIDDEN = (
    "refused: this statement reads or names a schema, table or column that does not exist or that "
    "the scope hides (while a scope is in force, Spark's analysis errors are not detailed)"
)
ONLY_QUERIES = (
    "refused: while a scope is in force, only queries run (SELECT, WITH, VALUES, TABLE); SHOW, "
    "DESCRIBE and EXPLAIN would list what it hides"
)
UNREADABLE = "refused: while a scope is in force, a plan astro cannot read with certainty is refused"

_LINE_BREAK_ESCAPE = re.compile(r"\\(?:\\|[nr]|u000[aAdD]|U0000000[aAdD]|01[25])")
_TREE = re.compile(r"^((?:   |:  )*)(\+- |:- )(.*)$")
_NAME = re.compile(r"^([A-Za-z]\w*)")
_PART = r"[A-Za-z0-9_]+"
_RELATION = re.compile(rf"^Relation ({_PART})\.({_PART})\.({_PART})\[([^\[\]]*)\] \w+$")
_VIEW = re.compile(r"^View \(((?:`(?:[^`]|``)+`\.?)+), \[([^\[\]]*)\]\)$")
_ATTR = re.compile(r"^([^,#\[\]]+)#(\d+)L?$")
_PURE_PROJECT = re.compile(r"^Project \[(?:[A-Za-z_]\w*#\d+L?)(?:, [A-Za-z_]\w*#\d+L?)*\]$")
_STAR = re.compile(r"\*(?=[\]),])")
_IDS = re.compile(r"-?\d+")
"""Numbers a new analysis draws anew (expression ids, CTE ids, the seeds of rand() and TABLESAMPLE):
the two readings are compared without them; the lines' indents are what must move."""
SHIFT = verdict.WRAPPER + 1
"""The outer LIMIT of the second reading (`same_tree`)."""
_HINTS = re.compile(r"\s*(Did you mean|Candidate).*", re.S | re.I)
_PASSING = frozenset(
    (
        "Filter", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail", "SubqueryAlias", "Join",
        "LateralJoin", "Window", "WindowGroupLimit", "Generate", "Sample", "RepartitionByExpression",
        "Repartition", "RebalancePartitions", "ResolvedHint", "PipeOperator", "Deduplicate", "WithCTE",
    )
)  # fmt: skip
"""Steps whose output is their children's, passed on: a hidden attribute below goes on up."""
_PROJECTING = frozenset({"Project", "Aggregate", "Expand"})
"""Steps whose output is what they list: an attribute not listed stops there."""
_SOURCES = frozenset({"LocalRelation", "OneRowRelation", "Range", "CTERelationRef", "UnionLoopRef"})
"""Leaves that read no table of the catalog (their attributes are judged where they are read)."""


@dataclass(slots=True)
class _Node:
    depth: int
    name: str
    text: str
    parent: int | None
    children: list[int] = field(default_factory=list)
    inner: bool = False
    """The root of a subquery's plan: its output is read by its parent's expressions."""


def check(sql: str, expected: verdict.Expected, scope: Scope) -> None:
    """The first gate's part: GuardError unless the text can be judged under the scope."""
    if expected.kind != verdict.QUERY:
        raise GuardError(ONLY_QUERIES)
    tokens = guard._tokens(sql)
    for token in tokens:
        raw = sql[token.start : token.end + 1]
        if "\n" in raw or "\r" in raw or (token.token_type == TokenType.STRING and _escaped_break(raw)):
            raise GuardError(
                "refused: while a scope is in force, a line break inside a string or a quoted name is "
                "refused (write it as char(10))"
            )
    if tokens and tokens[0].text.upper() == "TABLE":
        return
    parsed = guard._parse(sql, tokens)
    if any(join.method == "NATURAL" for join in parsed.find_all(exp.Join)):
        raise GuardError(
            "refused: while a scope is in force, NATURAL JOIN is refused (it joins on every name the "
            "two sides share, hidden ones too); write JOIN … USING (…)"
        )
    for star in parsed.find_all(exp.Star):
        for named in star.args.get("except_") or []:
            if isinstance(named, exp.Expression) and scope.names_hidden(named.name):
                raise GuardError(HIDDEN)


def _written_names(written: str) -> set[str]:
    """Every word the text could make Spark resolve as a name: identifiers and keywords (the
    guard refuses IDENTIFIER('…'), so a string names nothing)."""
    skip = (TokenType.STRING, TokenType.NUMBER)
    return {t.text for t in guard._tokens(written) if t.token_type not in skip} if written else set()


def _escaped_break(raw: str) -> bool:
    """Whether Spark's unescaping of a '…' literal makes a line break (`\\n`, `\\u000a`, `\\012`)."""
    return any(m.group() != "\\\\" for m in _LINE_BREAK_ESCAPE.finditer(raw))


def judge(explain: str, scope: Scope, written: str) -> None:
    """GuardError unless the analyzed plan in `explain` reads nothing the scope hides."""
    parsed, analyzed = verdict._sections(explain)
    nodes = _tree(analyzed)
    names = _written_names(written)
    stars = bool(_STAR.search("\n".join(parsed[2:]))) or written.lstrip().upper().startswith("TABLE")
    for index, node in enumerate(nodes):
        if node.name == "Relation":
            found = _RELATION.match(node.text)
            if found is None:
                raise GuardError(UNREADABLE)
            schema, table = found.group(2), found.group(3)
            attrs = _attrs(found.group(4))
            _judge_source(nodes, index, scope, schema, table, attrs, stars, written, names)
        elif node.name == "View":
            found = _VIEW.match(node.text)
            if found is None:
                raise GuardError(UNREADABLE)
            path = [p.replace("``", "`") for p in re.findall(r"`((?:[^`]|``)+)`", found.group(1))]
            if len(path) >= 2:
                attrs = _attrs(found.group(2))
                _judge_source(nodes, index, scope, path[-2], path[-1], attrs, stars, written, names)
        elif node.name.endswith("Relation") and node.name not in _SOURCES:
            raise GuardError(
                f"refused: while a scope is in force, a {node.name} (not a table of the catalog's "
                "files) cannot be checked"
            )


def shift() -> int:
    """How many LIMITs the second reading adds above the verdict's (`same_tree`): chosen at random,
    so that a value that changes between the two readings (it may read the clock) cannot be made
    to move with the tree by guessing."""
    return 1 + secrets.randbelow(3)


def same_tree(explain: str, deeper: str, levels: int) -> None:
    """GuardError unless `deeper` (the statement explained under `levels` more LIMITs) prints every
    line of `explain`'s analyzed plan 2 × `levels` levels deeper. A value Spark evaluates while it
    analyzes (a PIVOT value, a from_json schema) prints raw and can hold a line break, and a line
    after it may look like a node; such a line is text, and does not move with the tree."""
    first, second = verdict._sections(explain)[1], verdict._sections(deeper)[1]
    first, second = [line for line in first if line.strip()], [line for line in second if line.strip()]
    expected = []
    for n, limit in enumerate([*(SHIFT + n for n in reversed(range(levels))), verdict.WRAPPER]):
        under = "   " * (2 * n - 1) + "+- " if n else ""
        expected += [f"{under}GlobalLimit {limit}", f"{'   ' * 2 * n}+- LocalLimit {limit}"]
    top = 1 + 2 * (levels + 1)
    if len(first) < 3 or len(second) != len(first) + 2 * levels or second[1:top] != expected:
        raise GuardError(UNREADABLE)
    indent = "      " * levels
    moved = [_IDS.sub("#", line) for line in second[top:]]
    if moved != [_IDS.sub("#", indent + line) for line in first[3:]] or first[0] != second[0]:
        raise GuardError(UNREADABLE)


def scrub(message: str, scope: Scope, written: str) -> str:
    """An engine error without Spark's suggestions, and none at all if it still names
    something hidden the statement does not (a runtime error may quote a view's text)."""
    said = _HINTS.sub("", message).strip()
    return HIDDEN if not said or scope.mentions_hidden(said, written) else said


def _tree(analyzed: list[str]) -> list[_Node]:
    """The analyzed plan's nodes from the engine's LIMIT down; any other line is refused."""
    lines = [line for line in analyzed if line.strip()]
    ours = f"GlobalLimit {verdict.WRAPPER}"
    if ours not in lines or lines.index(ours) != 1:
        raise GuardError(UNREADABLE)
    nodes = [_Node(0, "GlobalLimit", ours, None)]
    stack, virtual = [0], [False]
    for line in lines[2:]:
        found = _TREE.match(line)
        if found is None:
            raise GuardError(UNREADABLE)
        depth = len(found.group(1)) // 3 + 1
        if depth == len(stack) + 1:  # a subquery's plan: two levels under the step that holds it
            stack.append(stack[-1])
            virtual.append(True)
        if depth > len(stack):
            raise GuardError(UNREADABLE)
        del stack[depth:], virtual[depth:]
        text = found.group(3)
        name = _NAME.match(text)
        nodes.append(_Node(depth, name.group(1) if name else "", text, stack[-1], inner=virtual[-1]))
        nodes[stack[-1]].children.append(len(nodes) - 1)
        stack.append(len(nodes) - 1)
        virtual.append(False)
    return nodes


def _attrs(listed: str) -> dict[str, str]:
    """`id#1,full_name#2` (a relation) or `id#1, full_name#2` (a view): id → name."""
    found: dict[str, str] = {}
    for item in listed.split(","):
        match = _ATTR.match(item.strip())
        if match is None:
            raise GuardError(UNREADABLE)
        found[match.group(2)] = match.group(1)
    return found


def _subtree(nodes: list[_Node], index: int) -> set[int]:
    found, stack = set(), [index]
    while stack:
        at = stack.pop()
        found.add(at)
        stack.extend(nodes[at].children)
    return found


def _judge_source(
    nodes: list[_Node],
    index: int,
    scope: Scope,
    schema: str,
    table: str,
    attrs: dict[str, str],
    stars: bool,
    written: str,
    names: set[str],
) -> None:
    """One table or view: not hidden, no name written that the scope would hide in it (whether
    or not it has that column: an ambiguous name, `salary` beside `(SELECT 1 AS salary)`, fails
    only when it has), and none of its hidden columns read or passed to the output."""
    if scope.hides_table(schema, table) or any(scope.hides_column(schema, table, n) for n in names):
        raise GuardError(HIDDEN)
    hidden = {i for i, name in attrs.items() if scope.hides_column(schema, table, name)}
    if not hidden:
        return
    ids = [re.compile(rf"#{i}(?!\d)") for i in hidden]
    inside = _subtree(nodes, index)
    at = nodes[index].parent
    while stars and at is not None:  # read by a view: naming the table's columns would tell what it reads
        stars, at = nodes[at].name != "View", nodes[at].parent
    for at, node in enumerate(nodes):
        if at in inside or not any(p.search(node.text) for p in ids):
            continue
        if not _PURE_PROJECT.match(node.text):
            _refuse(attrs, hidden, schema, table, stars, written)
    flowing = set(hidden)
    at, below = nodes[index].parent, nodes[index]
    while flowing and at is not None:
        node = nodes[at]
        if below.inner:
            _refuse(attrs, hidden, schema, table, stars, written)
        if node.name in _PROJECTING:
            flowing = {i for i in flowing if re.search(rf"#{i}(?!\d)", node.text)}
        elif node.name not in _PASSING:
            _refuse(attrs, hidden, schema, table, stars, written)
        at, below = node.parent, node
    if flowing:
        _refuse(attrs, hidden, schema, table, stars, written)


def _refuse(
    attrs: dict[str, str], hidden: set[str], schema: str, table: str, stars: bool, written: str
) -> None:
    if stars and re.search(rf"(?<![\w$`]){re.escape(table)}(?![\w$`])", written, re.I):
        visible = ", ".join(n for i, n in attrs.items() if i not in hidden)
        raise GuardError(
            f"refused: `*` here would read a column the scope hides; name the columns of {table} "
            f"you need: {visible}"
        )
    raise GuardError(HIDDEN)

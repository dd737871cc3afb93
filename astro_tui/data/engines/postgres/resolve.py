"""What a statement's names resolve to on this server, and everything those objects run in turn.

The text names `f`, `=`, `v`, `::d`; the server decides which function,
operator, relation or type that is, through the search path and the argument
types. astro does not redo overload resolution: every candidate the server
could pick is judged (every function of that name in every schema of the
search path, or in the named schema), so a function the database defines
beside a built-in of the same name (`public.length(varchar)`, which would win
over `pg_catalog.length(text)`) is refused with it rather than hidden behind it.

The first query finds the candidates. When any of them is the database's own
and can run something (a view, a table with row security, an operator, a
type, a function), a second, recursive query follows what runs. It reads the
expressions the server stored when the objects were created, already resolved
to OIDs (the `pg_node_tree` of a view's rule, a policy, a domain's CHECK, a
`BEGIN ATOMIC` body, a function's argument defaults), and takes every function,
operator, relation and type OID they name (`:funcid 1234`, `:opno 96`,
`:relid 16390`…) — not `pg_depend`, which leaves out built-in objects, so a
view calling `pg_advisory_lock` records no dependency at all:

- a view runs its query; a table with row security runs its policies, and one
  with virtual generated columns (PostgreSQL 18) their expressions;
- an operator runs its function (and its estimators, at planning);
- a domain runs its CHECK constraints; a cast to a type, its cast function;
- an aggregate runs its support functions; a `BEGIN ATOMIC` SQL function, its body;
  a function's argument defaults are expressions inserted into the call;
- a composite or array type reaches its fields' and elements' types.

A stored tree is the server's own serialisation: a name in it has its spaces
escaped (an alias `:funcid 2` is written `:funcid\\ 2`) and a constant is
written as bytes, so data never reads as a field; a false match could only add
a candidate, never hide one.

Implicit and assignment casts whose function is not built-in are judged for
every statement: such a cast needs no syntax to run.

Built-in objects (OID below 16384, made by initdb) are not opened up: their
bodies are the server's own. The queries run on a pooled session with the same
search path as the statement; a function created between this check and the
statement (milliseconds) is not seen, a race left to the deployment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from astro_tui.data.engines.base import Dialect
from astro_tui.data.engines.postgres import policy
from astro_tui.data.engines.postgres.guard import Checked, Name
from astro_tui.data.errors import GuardError

Rows = Callable[[str], list[tuple[Any, ...]]]

FIRST_NORMAL_OID = 16384
"""PostgreSQL's FirstNormalObjectId: every OID below it was assigned by initdb."""

_PROC = "'pg_catalog.pg_proc'::pg_catalog.regclass::pg_catalog.oid"
_OPERATOR = "'pg_catalog.pg_operator'::pg_catalog.regclass::pg_catalog.oid"
_CLASS = "'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid"
_TYPE = "'pg_catalog.pg_type'::pg_catalog.regclass::pg_catalog.oid"
_REWRITE = "'pg_catalog.pg_rewrite'::pg_catalog.regclass::pg_catalog.oid"
_POLICY = "'pg_catalog.pg_policy'::pg_catalog.regclass::pg_catalog.oid"
_CONSTRAINT = "'pg_catalog.pg_constraint'::pg_catalog.regclass::pg_catalog.oid"
_PLAIN = Dialect()
_CLASS_IDS = {"f": _PROC, "o": _OPERATOR, "r": _CLASS, "t": _TYPE}

_FUNCTION_COLUMNS = f"""'f', n.nspname::text, p.proname::text, p.provolatile::text, p.prokind::text,
  l.lanname::text, p.oid < {FIRST_NORMAL_OID}, coalesce(o.rolsuper, false), {{atomic}}, p.oid::int8,
  p.oid >= {FIRST_NORMAL_OID}"""
_FUNCTION_JOINS = """JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_language l ON l.oid = p.prolang
  LEFT JOIN pg_catalog.pg_roles o ON o.oid = p.proowner"""
_RELATION_COLUMNS = f"""'r', n.nspname::text, c.relname::text, c.relkind::text, NULL, NULL,
  c.oid < {FIRST_NORMAL_OID}, NULL, NULL, c.oid::int8,
  c.oid >= {FIRST_NORMAL_OID} AND (c.relkind = 'v' OR c.relrowsecurity OR EXISTS (
    SELECT 1 FROM pg_catalog.pg_attribute g WHERE g.attrelid = c.oid AND g.attgenerated = 'v'))"""

_CANDIDATES = f"""
WITH wanted(kind, nsp, name) AS (VALUES {{wanted}}),
named AS (
  SELECT w.kind, w.name::pg_catalog.name AS name, n.oid AS nsp
  FROM wanted w JOIN pg_catalog.pg_namespace n
    ON CASE WHEN w.nsp IS NULL THEN n.nspname = ANY (pg_catalog.current_schemas(true))
            ELSE n.nspname = w.nsp::pg_catalog.name END
),
functions AS (
  SELECT p.oid FROM named w JOIN pg_catalog.pg_proc p
    ON w.kind = 'f' AND p.proname = w.name AND p.pronamespace = w.nsp
  UNION SELECT k.castfunc FROM named w
    JOIN pg_catalog.pg_type t ON w.kind = 't' AND t.typname = w.name AND t.typnamespace = w.nsp
    JOIN pg_catalog.pg_cast k ON k.casttarget = t.oid AND k.castfunc <> 0
  UNION SELECT k.castfunc FROM pg_catalog.pg_cast k
    WHERE k.castcontext IN ('i', 'a') AND k.castfunc >= {FIRST_NORMAL_OID}
)
SELECT {_FUNCTION_COLUMNS} FROM functions f JOIN pg_catalog.pg_proc p ON p.oid = f.oid {_FUNCTION_JOINS}
UNION ALL
SELECT {_RELATION_COLUMNS} FROM named w JOIN pg_catalog.pg_class c
  ON w.kind = 'r' AND c.relname = w.name AND c.relnamespace = w.nsp
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
UNION ALL
SELECT 'o', NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, o.oid::int8, true FROM named w
  JOIN pg_catalog.pg_operator o ON w.kind = 'o' AND o.oprname = w.name AND o.oprnamespace = w.nsp
  WHERE o.oid >= {FIRST_NORMAL_OID}
UNION ALL
SELECT 't', NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, t.oid::int8, true FROM named w
  JOIN pg_catalog.pg_type t ON w.kind IN ('t', 'c') AND t.typname = w.name AND t.typnamespace = w.nsp
  WHERE t.oid >= {FIRST_NORMAL_OID}
"""

_PROC_FIELDS = "funcid|opfuncid|hashfuncid|negfuncid|aggfnoid|winfnoid|tsmhandler"
_OPERATOR_FIELDS = "opno|eqop|sortop"
_REACHED = f"""
WITH RECURSIVE closure(classid, objid) AS (
  SELECT * FROM (VALUES {{seeds}}) AS s(classid, objid)
  UNION
  SELECT e.classid, e.objid FROM closure c CROSS JOIN LATERAL (
    SELECT found.classid, found.objid FROM (
      SELECT r.ev_action::text AS tree FROM pg_catalog.pg_rewrite r
        WHERE c.classid = {_CLASS} AND c.objid >= {FIRST_NORMAL_OID}
          AND r.ev_class = c.objid AND r.ev_type = '1'
      UNION ALL SELECT coalesce(p.polqual::text, '') || coalesce(p.polwithcheck::text, '')
        FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class t ON t.oid = p.polrelid AND t.relrowsecurity
        WHERE c.classid = {_CLASS} AND p.polrelid = c.objid
      UNION ALL SELECT d.adbin::text FROM pg_catalog.pg_attrdef d
        JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.classid = {_CLASS} AND d.adrelid = c.objid AND a.attgenerated = 'v'
      UNION ALL SELECT k.conbin::text FROM pg_catalog.pg_constraint k
        WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND k.contypid = c.objid
          AND k.conbin IS NOT NULL
      UNION ALL SELECT {{body}} FROM pg_catalog.pg_proc p
        WHERE c.classid = {_PROC} AND c.objid >= {FIRST_NORMAL_OID} AND p.oid = c.objid
    ) AS stored CROSS JOIN LATERAL (
      SELECT CASE WHEN m[1] = 'relid' THEN {_CLASS} WHEN m[1] = 'resulttype' THEN {_TYPE}
                  WHEN m[1] IN ('opno', 'eqop', 'sortop') THEN {_OPERATOR} ELSE {_PROC} END AS classid,
             m[2]::pg_catalog.oid AS objid
      FROM pg_catalog.regexp_matches(
        stored.tree, ':({_PROC_FIELDS}|{_OPERATOR_FIELDS}|relid|resulttype) ([0-9]+)', 'g') AS m
      UNION ALL SELECT {_OPERATOR}, o.o::pg_catalog.oid
      FROM pg_catalog.regexp_matches(stored.tree, ':opnos \\(o([0-9 ]+)\\)', 'g') AS m
      CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.string_to_array(pg_catalog.btrim(m[1]), ' ')) AS o(o)
    ) AS found
    UNION ALL SELECT {_PROC}, f.f FROM pg_catalog.pg_operator o
      CROSS JOIN LATERAL unnest(ARRAY[o.oprcode::pg_catalog.oid, o.oprrest::pg_catalog.oid,
                                      o.oprjoin::pg_catalog.oid]) AS f(f)
      WHERE c.classid = {_OPERATOR} AND c.objid >= {FIRST_NORMAL_OID} AND o.oid = c.objid AND f.f <> 0
    UNION ALL SELECT {_PROC}, f.f FROM pg_catalog.pg_aggregate a
      CROSS JOIN LATERAL unnest(ARRAY[a.aggtransfn::pg_catalog.oid, a.aggfinalfn::pg_catalog.oid,
        a.aggcombinefn::pg_catalog.oid, a.aggserialfn::pg_catalog.oid, a.aggdeserialfn::pg_catalog.oid,
        a.aggmtransfn::pg_catalog.oid, a.aggminvtransfn::pg_catalog.oid,
        a.aggmfinalfn::pg_catalog.oid]) AS f(f)
      WHERE c.classid = {_PROC} AND c.objid >= {FIRST_NORMAL_OID} AND a.aggfnoid = c.objid AND f.f <> 0
    UNION ALL SELECT {_TYPE}, x.x FROM pg_catalog.pg_type t
      CROSS JOIN LATERAL unnest(ARRAY[t.typbasetype, t.typelem]) AS x(x)
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND t.oid = c.objid AND x.x <> 0
    UNION ALL SELECT {_TYPE}, a.atttypid FROM pg_catalog.pg_type t
      JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND t.oid = c.objid
  ) e
)
SELECT {_FUNCTION_COLUMNS} FROM closure r JOIN pg_catalog.pg_proc p ON r.classid = {_PROC} AND p.oid = r.objid
  {_FUNCTION_JOINS}
UNION ALL
SELECT {_RELATION_COLUMNS} FROM closure r
  JOIN pg_catalog.pg_class c ON r.classid = {_CLASS} AND c.oid = r.objid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
"""


def candidates_query(checked: Checked, *, server_version: int) -> str:
    """Every object the statement's names may resolve to, each with whether it runs more inside."""
    wanted = [
        *_values("f", checked.functions),
        *_values("o", checked.operators),
        *_values("r", checked.relations),
        *_values("t", checked.types),
        *_values("c", checked.coercions - checked.types),
    ]
    return _CANDIDATES.format(wanted=", ".join(wanted), atomic=_atomic(server_version))


def reached_query(seeds: Iterable[tuple[str, int]], *, server_version: int) -> str:
    """The functions and relations that the database's own objects run, recursively."""
    values = ", ".join(f"({_CLASS_IDS[kind]}, {int(oid)}::pg_catalog.oid)" for kind, oid in sorted(seeds))
    body = "coalesce(p.proargdefaults::text, '')"  # a default is an expression run at the call
    if server_version >= 140000:
        body += " || coalesce(p.prosqlbody::text, '')"
    return _REACHED.format(seeds=values, atomic=_atomic(server_version), body=body)


def judge(checked: Checked, rows: Rows, *, server_version: int) -> None:
    """Raise GuardError for the first resolved object astro will not let the statement reach."""
    found = rows(candidates_query(checked, server_version=server_version))
    _judge_rows(found, direct=True)
    seeds = {(str(row[0]), int(row[9])) for row in found if row[10]}
    if seeds:
        _judge_rows(rows(reached_query(seeds, server_version=server_version)), direct=False)


def _judge_rows(rows: list[tuple[Any, ...]], *, direct: bool) -> None:
    for what, schema, name, volatility, kind, language, built_in, superuser, atomic, _oid, _more in rows:
        if what == "r":
            reason = policy.judge_relation(schema, name, bool(built_in))
        elif what == "f":
            fn = policy.Function(
                schema=schema,
                name=name,
                volatility=volatility,
                kind=kind,
                language=language,
                built_in=bool(built_in),
                superuser_owned=bool(superuser),
                atomic_body=bool(atomic),
                direct=direct,
            )
            reason = policy.judge_function(fn)
        else:
            continue
        if reason:
            raise GuardError(f"refused: {reason}")


def _atomic(server_version: int) -> str:
    """`BEGIN ATOMIC` bodies (prosqlbody) exist from PostgreSQL 14."""
    return "p.prosqlbody IS NOT NULL" if server_version >= 140000 else "false"


def _values(kind: str, names: Iterable[Name]) -> list[str]:
    return [f"('{kind}', {_literal(schema)}, {_literal(name)})" for schema, name in sorted(names, key=str)]


def _literal(text: str | None) -> str:
    """A text literal under standard_conforming_strings (every session keeps it on); NULL for None."""
    return "NULL::text" if text is None else _PLAIN.literal(text) + "::text"

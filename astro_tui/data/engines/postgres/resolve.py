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
  with virtual generated columns (PostgreSQL 18) their expressions; a parent
  table reads its partitions and inheritance children (a foreign table among
  them runs a query on another server, so foreign tables are refused wherever found);
- an operator runs its function (and its estimators, at planning);
- a domain runs its CHECK constraints; a cast to a type, its cast function;
- an aggregate runs its support functions; a `BEGIN ATOMIC` SQL function, its body;
  a function's argument defaults are expressions inserted into the call;
- a function or operator reaches its argument and result types (an argument
  is converted to a domain at the call, CHECKs and all), a range type its
  subtype and functions;
- a composite or array type reaches its fields' and elements' types, and a
  relation its row type: a value of a domain can be made from text with no
  cast in sight (`json_populate_record(t, '{"v": 77}')` runs the CHECKs of the
  domain of `t.v`), so a relation with a column of the database's own type is
  refused if that type's checks are.

A stored tree is the server's own serialisation: a name in it has its spaces
escaped (an alias `:funcid 2` is written `:funcid\\ 2`) and a constant is
written as bytes, so data never reads as a field; a false match could only add
a candidate, never hide one.

Implicit and assignment casts whose function is not built-in are judged for
every statement: such a cast needs no syntax to run.

Built-in objects (OID below 16384, made by initdb) are not opened up: their
bodies are the server's own. The queries run, prepared once, on a session of their own with the same
search path as the statement's; a function created between this check and the
statement (milliseconds) is not seen, a race left to the deployment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from astro_tui.data.engines.base import Dialect
from astro_tui.data.engines.postgres import policy
from astro_tui.data.engines.postgres.guard import Checked
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
  c.oid >= {FIRST_NORMAL_OID} AND (c.relkind = 'v' OR c.relrowsecurity OR c.relhassubclass OR (
    SELECT count(*) FROM pg_catalog.pg_attribute g
    WHERE g.attrelid = c.oid AND g.attnum > 0 AND NOT g.attisdropped
      AND (g.atttypid >= {FIRST_NORMAL_OID} OR g.attgenerated = 'v')) > 0)"""
# (a count, not EXISTS: the planner would hash all of pg_attribute for an EXISTS, per check)

_CANDIDATES = f"""
WITH wanted(kind, nsp, name) AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])),
named AS MATERIALIZED (
  SELECT w.kind, w.name::pg_catalog.name AS name, n.oid AS nsp
  FROM wanted w JOIN pg_catalog.pg_namespace n
    ON CASE WHEN w.nsp IS NULL THEN n.nspname = ANY (pg_catalog.current_schemas(true))
            ELSE n.nspname = w.nsp::pg_catalog.name END
),
types AS MATERIALIZED (
  SELECT w.kind, t.oid FROM named w CROSS JOIN LATERAL (
    SELECT t.oid FROM pg_catalog.pg_type t WHERE t.typname = w.name AND t.typnamespace = w.nsp OFFSET 0) t
  WHERE w.kind IN ('t', 'c')
),
functions AS (
  SELECT p.oid FROM named w CROSS JOIN LATERAL (
    SELECT p.oid FROM pg_catalog.pg_proc p WHERE p.proname = w.name AND p.pronamespace = w.nsp OFFSET 0) p
  WHERE w.kind = 'f'
  UNION SELECT k.castfunc FROM types t CROSS JOIN LATERAL (
    SELECT k.castfunc FROM pg_catalog.pg_cast k WHERE k.casttarget = t.oid AND k.castfunc <> 0 OFFSET 0) k
  WHERE t.kind = 't'
  UNION SELECT k.castfunc FROM pg_catalog.pg_cast k
    WHERE k.castcontext IN ('i', 'a') AND k.castfunc >= {FIRST_NORMAL_OID}
)
SELECT {_FUNCTION_COLUMNS} FROM functions f CROSS JOIN LATERAL (
  SELECT * FROM pg_catalog.pg_proc x WHERE x.oid = f.oid OFFSET 0) p {_FUNCTION_JOINS}
UNION ALL
SELECT {_RELATION_COLUMNS} FROM named w CROSS JOIN LATERAL (
  SELECT * FROM pg_catalog.pg_class x WHERE x.relname = w.name AND x.relnamespace = w.nsp OFFSET 0) c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE w.kind = 'r'
UNION ALL
SELECT 'o', NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, o.oid::int8, true
  FROM named w CROSS JOIN LATERAL (
  SELECT o.oid FROM pg_catalog.pg_operator o WHERE o.oprname = w.name AND o.oprnamespace = w.nsp OFFSET 0) o
  WHERE w.kind = 'o' AND o.oid >= {FIRST_NORMAL_OID}
UNION ALL
SELECT 't', NULL, NULL, NULL, NULL, NULL, false, NULL, NULL, t.oid::int8, true FROM types t
  WHERE t.oid >= {FIRST_NORMAL_OID}
"""
# Each lookup is an index probe per name (LATERAL … OFFSET 0): planned once for any names (a
# generic plan), a join would otherwise scan every user type or operator of a large database.

_PROC_FIELDS = "funcid|opfuncid|hashfuncid|negfuncid|aggfnoid|winfnoid|tsmhandler"
_OPERATOR_FIELDS = "opno|eqop|sortop"
_REACHED = f"""
WITH RECURSIVE closure(classid, objid) AS (
  SELECT * FROM unnest($1::pg_catalog.oid[], $2::pg_catalog.oid[]) AS s(classid, objid)
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
    UNION ALL SELECT {_CLASS}, i.inhrelid FROM pg_catalog.pg_inherits i
      WHERE c.classid = {_CLASS} AND c.objid >= {FIRST_NORMAL_OID} AND i.inhparent = c.objid
    UNION ALL SELECT {_TYPE}, t.reltype FROM pg_catalog.pg_class t
      WHERE c.classid = {_CLASS} AND c.objid >= {FIRST_NORMAL_OID} AND t.oid = c.objid AND t.reltype <> 0
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
    UNION ALL SELECT {_TYPE}, x.x FROM pg_catalog.pg_proc p
      CROSS JOIN LATERAL unnest(p.proargtypes::pg_catalog.oid[] || p.prorettype) AS x(x)
      WHERE c.classid = {_PROC} AND c.objid >= {FIRST_NORMAL_OID} AND p.oid = c.objid
    UNION ALL SELECT {_TYPE}, x.x FROM pg_catalog.pg_operator o
      CROSS JOIN LATERAL unnest(ARRAY[o.oprleft, o.oprright, o.oprresult]) AS x(x)
      WHERE c.classid = {_OPERATOR} AND c.objid >= {FIRST_NORMAL_OID} AND o.oid = c.objid AND x.x <> 0
    UNION ALL SELECT {_TYPE}, x.x FROM pg_catalog.pg_range r
      CROSS JOIN LATERAL unnest(ARRAY[r.rngsubtype, r.rngtypid]) AS x(x)
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND c.objid IN (r.rngtypid, {{multirange}})
    UNION ALL SELECT {_PROC}, f.f FROM pg_catalog.pg_range r
      CROSS JOIN LATERAL unnest(ARRAY[r.rngcanonical::pg_catalog.oid, r.rngsubdiff::pg_catalog.oid]) AS f(f)
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND r.rngtypid = c.objid AND f.f <> 0
    UNION ALL SELECT {_TYPE}, x.x FROM pg_catalog.pg_type t
      CROSS JOIN LATERAL unnest(ARRAY[t.typbasetype, t.typelem]) AS x(x)
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND t.oid = c.objid AND x.x <> 0
    UNION ALL SELECT {_TYPE}, a.atttypid FROM pg_catalog.pg_type t
      JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE c.classid = {_TYPE} AND c.objid >= {FIRST_NORMAL_OID} AND t.oid = c.objid
  ) e
)
SELECT {_FUNCTION_COLUMNS} FROM closure r
  CROSS JOIN LATERAL (SELECT * FROM pg_catalog.pg_proc x WHERE x.oid = r.objid OFFSET 0) AS p
  {_FUNCTION_JOINS}
  WHERE r.classid = {_PROC}
UNION ALL
SELECT {_RELATION_COLUMNS} FROM closure r
  CROSS JOIN LATERAL (SELECT * FROM pg_catalog.pg_class x WHERE x.oid = r.objid OFFSET 0) AS c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE r.classid = {_CLASS}
"""
# the closure's row estimate is large (a recursive CTE's always is) and its rows are few: the
# lookups are kept to one index probe per row (OFFSET 0), not a hash over the whole catalog


def prepare_sql(server_version: int) -> str:
    """The two queries as prepared statements, for a session that keeps them: planned once, then
    only executed (planning them each time cost more than running them)."""
    body = "coalesce(p.proargdefaults::text, '')"  # a default is an expression run at the call
    if server_version >= 140000:
        body += " || coalesce(p.prosqlbody::text, '')"
    atomic = _atomic(server_version)
    multirange = "r.rngmultitypid" if server_version >= 140000 else "r.rngtypid"
    return (
        f"PREPARE astro_candidates(text[], text[], text[]) AS {_CANDIDATES.format(atomic=atomic)}; "
        f"PREPARE astro_reached(pg_catalog.oid[], pg_catalog.oid[]) AS "
        f"{_REACHED.format(atomic=atomic, body=body, multirange=multirange)}"
    )


def candidates_call(checked: Checked) -> str:
    """Every object the statement's names may resolve to, each with whether it runs more inside."""
    wanted = [
        *(("f", n) for n in checked.functions),
        *(("o", n) for n in checked.operators),
        *(("r", n) for n in checked.relations),
        *(("t", n) for n in checked.types),
        *(("c", n) for n in checked.coercions - checked.types),
    ]
    wanted.sort(key=str)
    kinds = text_array([kind for kind, _ in wanted])
    schemas = text_array([schema for _, (schema, _) in wanted])
    names = text_array([name for _, (_, name) in wanted])
    return f"EXECUTE astro_candidates({kinds}, {schemas}, {names})"


def reached_call(seeds: Iterable[tuple[str, int]]) -> str:
    """The functions and relations that the database's own objects run, recursively."""
    ordered = sorted(seeds)
    classes = ", ".join(_CLASS_IDS[kind] for kind, _ in ordered)
    oids = ", ".join(str(int(oid)) for _, oid in ordered)
    return f"EXECUTE astro_reached(ARRAY[{classes}]::pg_catalog.oid[], ARRAY[{oids}]::pg_catalog.oid[])"


def judge(checked: Checked, rows: Rows, *, scoped: bool = False) -> None:
    """Raise GuardError for the first resolved object astro will not let the statement reach.
    `scoped`: a scope is in force, and a function of the database's own written in SQL (which
    astro lets run, judged inside) is refused wherever it is reached: an operator, a cast, a
    domain's check or an aggregate may run it, and its body may read what the scope hides."""
    found = rows(candidates_call(checked))
    _judge_rows(found, direct=True, scoped=scoped)
    seeds = {(str(row[0]), int(row[9])) for row in found if row[10]}
    if seeds:
        _judge_rows(rows(reached_call(seeds)), direct=False, scoped=scoped)


def _judge_rows(rows: list[tuple[Any, ...]], *, direct: bool, scoped: bool = False) -> None:
    for what, schema, name, volatility, kind, language, built_in, superuser, atomic, _oid, _more in rows:
        if what == "r":
            reason = policy.judge_relation(schema, name, bool(built_in), volatility)  # (its relkind)
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
            if reason is None and scoped and not fn.built_in and language not in ("c", "internal"):
                reason = "written in SQL"
        else:
            continue
        if reason and scoped and not built_in:  # its schema may be one the scope hides: not named
            raise GuardError(
                "refused: this statement reaches a function or table of this database that astro does "
                "not let run while a scope is in force (its name is not shown: the scope may hide it)"
            )
        if reason:
            raise GuardError(f"refused: {reason}")


def _atomic(server_version: int) -> str:
    """`BEGIN ATOMIC` bodies (prosqlbody) exist from PostgreSQL 14."""
    return "p.prosqlbody IS NOT NULL" if server_version >= 140000 else "false"


def text_array(texts: list[str | None]) -> str:
    """A text[] literal under standard_conforming_strings (every session keeps it on)."""
    items = ", ".join("NULL" if t is None else _PLAIN.literal(t) for t in texts)
    return f"ARRAY[{items}]::text[]"

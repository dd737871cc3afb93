"""The scope's catalog queries on PostgreSQL: what `scoped.py` asks the server about the names a
statement uses, in one round trip (as DuckDB's `scoped_definitions.py` reads the file's).

For each name the statement reaches, as the server's parser would resolve it with the session's
search path: a relation's kind, columns, generated columns and their sources, its inheritance
tree and a view's definition; a function's schema, whether it is built in, and its argument and
result types; a type's schema and whether it is a table's row type. `INVOLVED` lists the
relations whose visibility the scope's patterns alone do not decide.
"""

from __future__ import annotations

from astro_tui.data.engines.postgres.guard import Name
from astro_tui.data.engines.postgres.resolve import text_array


def _wanted(first: int) -> str:
    return f"unnest(${first}::text[], ${first + 1}::text[]) WITH ORDINALITY AS w(nsp, name, n)"


def prepare_sql() -> str:
    """The scope's catalog query as a prepared statement on the guard's session (planning it
    cost more than running it): relations, functions and types in one round trip, each row
    tagged with its kind and its values as a JSON array."""
    parts = []
    for kind, sql, width, first in (("r", _RELATIONS, 12, 1), ("f", _FUNCTIONS, 5, 3), ("t", _TYPES, 4, 5)):
        names = ", ".join(f"c{k}" for k in range(width))
        values = ", ".join(f"q.c{k}" for k in range(width))
        parts.append(
            f"SELECT '{kind}'::text, pg_catalog.json_build_array({values})::text "
            f"FROM ({sql.replace('{wanted}', _wanted(first))}) AS q({names})"
        )
    return (
        "PREPARE astro_scope_names(text[], text[], text[], text[], text[], text[]) AS "
        + " UNION ALL ".join(parts)
    )


def call(relations: list[Name], functions: list[Name], types: list[Name]) -> str:
    arrays = ", ".join(
        f"{text_array([s for s, _ in names])}, {text_array([n for _, n in names])}"
        for names in (relations, functions, types)
    )
    return f"EXECUTE astro_scope_names({arrays})"


INVOLVED = """
SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v', 'm', 'f') OR c.relrowsecurity
   OR (c.relkind IN ('r', 'p') AND (c.relhassubclass OR c.relispartition
       OR c.oid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i)
       OR c.oid IN (SELECT a.attrelid FROM pg_catalog.pg_attribute a WHERE a.attgenerated <> '')))
"""
"""The relations whose visibility the patterns alone do not decide: views, foreign tables and
tables with row security (refused under a scope), and tables with generated columns or in an
inheritance tree."""

_RELATIONS = """
WITH w AS MATERIALIZED (SELECT * FROM {wanted}),
found AS MATERIALIZED (
  SELECT w.n - 1 AS i, pg_catalog.to_regclass(CASE WHEN w.nsp IS NULL THEN pg_catalog.quote_ident(w.name)
    ELSE pg_catalog.quote_ident(w.nsp) || '.' || pg_catalog.quote_ident(w.name) END)::pg_catalog.oid AS oid
  FROM w
)
SELECT f.i, c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, c.relrowsecurity,
  ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum),
  dep.generated, dep.sources, tree.nsps, tree.rels,
  CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid) END
FROM found f
JOIN pg_catalog.pg_class c ON c.oid = f.oid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL (
  SELECT pg_catalog.array_agg(g.attname::text ORDER BY g.attnum, s.attnum) AS generated,
         pg_catalog.array_agg(s.attname::text ORDER BY g.attnum, s.attnum) AS sources
  FROM pg_catalog.pg_attrdef ad
  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass
    AND d.objid = ad.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
    AND d.refobjid = c.oid AND d.refobjsubid > 0 AND d.refobjsubid <> ad.adnum
  JOIN pg_catalog.pg_attribute g ON g.attrelid = c.oid AND g.attnum = ad.adnum AND g.attgenerated <> ''
  JOIN pg_catalog.pg_attribute s ON s.attrelid = c.oid AND s.attnum = d.refobjsubid
  WHERE ad.adrelid = c.oid
) dep
CROSS JOIN LATERAL (
  WITH RECURSIVE up(r) AS (
    SELECT c.oid UNION SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN up ON i.inhrelid = up.r),
  down(r) AS (
    SELECT c.oid UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN down ON i.inhparent = down.r)
  SELECT pg_catalog.array_agg(x.nspname::text ORDER BY k.oid) AS nsps,
         pg_catalog.array_agg(k.relname::text ORDER BY k.oid) AS rels
  FROM (SELECT r FROM up UNION SELECT r FROM down) m
  JOIN pg_catalog.pg_class k ON k.oid = m.r JOIN pg_catalog.pg_namespace x ON x.oid = k.relnamespace
) tree
"""


_FUNCTIONS = """
SELECT w.n - 1, n.nspname::text, p.proname::text, p.oid < 16384,
  ARRAY(SELECT t.typname::text FROM pg_catalog.pg_type t
        WHERE t.oid = ANY (p.proargtypes::pg_catalog.oid[] || p.prorettype
                           || coalesce(p.proallargtypes, ARRAY[]::pg_catalog.oid[])))
FROM {wanted}
JOIN pg_catalog.pg_namespace n ON CASE WHEN w.nsp IS NULL
  THEN n.nspname = ANY (pg_catalog.current_schemas(true)) ELSE n.nspname = w.nsp::pg_catalog.name END
JOIN pg_catalog.pg_proc p ON p.pronamespace = n.oid AND p.proname = w.name::pg_catalog.name
"""


_TYPES = """
SELECT w.n - 1, n.nspname::text, t.typname::text,
  EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relkind <> 'c'
          AND c.oid IN (t.typrelid, (SELECT e.typrelid FROM pg_catalog.pg_type e WHERE e.oid = t.typelem),
                        (SELECT b.typrelid FROM pg_catalog.pg_type b WHERE b.oid = t.typbasetype)))
FROM {wanted}
JOIN pg_catalog.pg_namespace n ON CASE WHEN w.nsp IS NULL
  THEN n.nspname = ANY (pg_catalog.current_schemas(true)) ELSE n.nspname = w.nsp::pg_catalog.name END
JOIN pg_catalog.pg_type t ON t.typnamespace = n.oid AND t.typname = w.name::pg_catalog.name
"""

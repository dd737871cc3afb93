-- A hostile database for tests/security/test_security_postgres.py: objects a role that is NOT a
-- superuser (the tables' owner) defined so that innocent-looking SQL runs something else.
-- Loaded as that owner into its own database (`trojans`), so the shop database stays clean.
CREATE SCHEMA trojan;
ALTER DATABASE trojans SET search_path = trojan, public;
CREATE TABLE trojan.items (id int PRIMARY KEY, label text);
INSERT INTO trojan.items SELECT i, 'item ' || i FROM generate_series(1, 20) AS i;
SELECT lo_from_bytea(424242, convert_to('astro-lo-secret-5b1e', 'UTF8'));

-- functions whose label (STABLE, IMMUTABLE) is a claim, not a proof
CREATE FUNCTION trojan.lock(x int) RETURNS int LANGUAGE plpgsql STABLE AS $$
BEGIN PERFORM pg_advisory_lock(x); RETURN x; END $$;
CREATE FUNCTION trojan.lock_sql(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT pg_try_advisory_lock(x)::int';
CREATE FUNCTION trojan.lock_atomic(x int) RETURNS int LANGUAGE sql STABLE
BEGIN ATOMIC SELECT pg_try_advisory_lock(x)::int; END;
CREATE FUNCTION trojan.plus_one(x int) RETURNS int LANGUAGE sql IMMUTABLE
BEGIN ATOMIC SELECT x + 1; END;
CREATE FUNCTION trojan.calls_trojan(x int) RETURNS int LANGUAGE sql STABLE
BEGIN ATOMIC SELECT trojan.lock(x); END;
CREATE FUNCTION trojan.with_default(x int DEFAULT pg_try_advisory_lock(5)::int) RETURNS int
LANGUAGE sql IMMUTABLE BEGIN ATOMIC SELECT x; END;

-- views: a view runs its query with the caller's functions
CREATE VIEW trojan.v_lock AS SELECT id, pg_try_advisory_lock(id) AS l FROM trojan.items;
CREATE VIEW trojan.v_calls AS SELECT id, trojan.lock(id) AS l FROM trojan.items;
CREATE VIEW trojan.v_nested AS SELECT * FROM trojan.v_calls;
CREATE VIEW trojan.v_ok AS SELECT id, trojan.plus_one(id) AS next FROM trojan.items;
CREATE VIEW trojan.v_setting AS SELECT current_setting('data_directory') AS d;
CREATE VIEW trojan.v_settings AS SELECT name, setting FROM pg_settings;

-- an operator, a domain, a cast, a row-security policy and an aggregate, each calling a trojan
CREATE FUNCTION trojan.int_eq_lock(a int, b int) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM pg_advisory_lock(a); RETURN a = b; END $$;
CREATE OPERATOR trojan.=== (LEFTARG = int, RIGHTARG = int, FUNCTION = trojan.int_eq_lock);
CREATE DOMAIN trojan.locked_int AS int CHECK (trojan.lock(VALUE) IS NOT NULL);
CREATE TABLE trojan.boxed (id int, v trojan.locked_int);  -- text becomes a locked_int with no cast in sight
INSERT INTO trojan.boxed VALUES (1, 1);
CREATE TYPE trojan.locked_range AS RANGE (subtype = trojan.locked_int);
CREATE TYPE trojan.pair AS (a int, b int);
CREATE FUNCTION trojan.pair_to_int(p trojan.pair) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM pg_advisory_lock(9); RETURN p.a; END $$;
CREATE CAST (trojan.pair AS int) WITH FUNCTION trojan.pair_to_int(trojan.pair);
CREATE TABLE trojan.guarded (id int, owner_name text);
INSERT INTO trojan.guarded VALUES (1, 'a'), (2, 'b');
ALTER TABLE trojan.guarded ENABLE ROW LEVEL SECURITY;
ALTER TABLE trojan.guarded FORCE ROW LEVEL SECURITY;
CREATE POLICY p ON trojan.guarded USING (trojan.lock(id) > 0);
CREATE FUNCTION trojan.lock_sfunc(s int, x int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_lock(x); RETURN coalesce(s, 0) + x; END $$;
CREATE AGGREGATE trojan.lock_sum(int) (SFUNC = trojan.lock_sfunc, STYPE = int);

-- a trusted extension any role with CREATE may install: its functions are a superuser's, and
-- crosstab() and connectby() are STABLE and run SQL given as text
CREATE EXTENSION tablefunc SCHEMA trojan;

-- a function beside a built-in: length(varchar) here beats pg_catalog.length(text)
CREATE FUNCTION public.length(x varchar) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN PERFORM pg_advisory_lock(7); RETURN 0; END $$;

-- one value of 200 MB that is 2 MB on disk: its size only shows once it is read
CREATE TABLE trojan.wide (id int, body text);
INSERT INTO trojan.wide SELECT 1, repeat('x', 200000000);

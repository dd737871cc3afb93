"""The legitimate DuckDB corpus (tests/data/legit_duckdb.sql) over a TPC-H schema: what the guard must let
through.
"""

from __future__ import annotations

import re

from tests.support import DATA

LEGIT_PATH = DATA / "legit_duckdb.sql"


def legit_queries() -> dict[str, str]:
    text = LEGIT_PATH.read_text(encoding="utf-8")
    parts = re.split(r"^-- name: (\w+)\n", text, flags=re.M)[1:]
    return {name: body.strip() for name, body in zip(parts[::2], parts[1::2], strict=True)}


LEGIT = legit_queries()


TPCH_DDL = """
CREATE TABLE region AS SELECT i AS r_regionkey,
    ['AFRICA', 'AMERICA', 'ASIA', 'EUROPE', 'MIDDLE EAST'][i + 1] AS r_name, 'r' AS r_comment
    FROM range(5) t(i);
CREATE TABLE nation AS SELECT i AS n_nationkey,
    ['FRANCE', 'GERMANY', 'BRAZIL', 'CANADA', 'SAUDI ARABIA', 'CHINA', 'KENYA'][i % 7 + 1] AS n_name,
    i % 5 AS n_regionkey, 'n' AS n_comment FROM range(25) t(i);
CREATE TABLE supplier AS SELECT i AS s_suppkey, 'Supplier#' || i AS s_name, 'addr ' || i AS s_address,
    i % 25 AS s_nationkey, (10 + i % 25) || '-555-' || i AS s_phone,
    (i * 37 % 10000) / 3.0 AS s_acctbal,
    CASE WHEN i % 9 = 0 THEN 'Customer Complaints' ELSE 'fine' END AS s_comment FROM range(50) t(i);
CREATE TABLE customer AS SELECT i AS c_custkey, 'Customer#' || lpad(i::VARCHAR, 4, '0') AS c_name,
    'street ' || i AS c_address, i % 25 AS c_nationkey, (10 + i % 25) || '-444-' || i AS c_phone,
    (i * 53 % 10000) / 7.0 - 100 AS c_acctbal,
    ['BUILDING', 'AUTOMOBILE', 'MACHINERY'][i % 3 + 1] AS c_mktsegment, 'c' AS c_comment
    FROM range(300) t(i);
CREATE TABLE part AS SELECT i AS p_partkey,
    ['forest green', 'green tin', 'red box'][i % 3 + 1] AS p_name,
    'Manufacturer#' || (i % 5) AS p_mfgr, 'Brand#' || (10 + i % 40) AS p_brand,
    ['PROMO BRUSHED BRASS', 'ECONOMY ANODIZED STEEL', 'MEDIUM POLISHED TIN'][i % 3 + 1] AS p_type,
    i % 50 AS p_size, ['SM CASE', 'MED BOX', 'LG PACK'][i % 3 + 1] AS p_container,
    900 + i AS p_retailprice, 'p' AS p_comment FROM range(200) t(i);
CREATE TABLE partsupp AS SELECT p.i AS ps_partkey, (p.i + s.j) % 50 AS ps_suppkey,
    100 + p.i AS ps_availqty, 1 + (p.i * s.j) % 100 AS ps_supplycost, 'ps' AS ps_comment
    FROM range(200) p(i), range(4) s(j);
CREATE TABLE orders AS SELECT i AS o_orderkey, i % 300 AS o_custkey,
    ['F', 'O', 'P'][i % 3 + 1] AS o_orderstatus,
    1000 + i * 3.5 AS o_totalprice, DATE '1993-01-01' + (i * 3 % 2000)::INT AS o_orderdate,
    ['1-URGENT', '2-HIGH', '3-MEDIUM'][i % 3 + 1] AS o_orderpriority, 'Clerk#' || i AS o_clerk,
    0 AS o_shippriority, CASE WHEN i % 11 = 0 THEN 'special requests' ELSE 'o' END AS o_comment
    FROM range(1500) t(i);
CREATE TABLE lineitem AS SELECT o.i AS l_orderkey, (o.i * 7 + n.j) % 200 AS l_partkey,
    (o.i + n.j) % 50 AS l_suppkey, n.j AS l_linenumber, 1 + (o.i * n.j) % 50 AS l_quantity,
    100 + o.i % 900 AS l_extendedprice, (o.i % 10) / 100.0 AS l_discount, 0.02 AS l_tax,
    ['R', 'A', 'N'][o.i % 3 + 1] AS l_returnflag, ['O', 'F'][o.i % 2 + 1] AS l_linestatus,
    DATE '1993-01-05' + (o.i * 3 % 2000)::INT AS l_shipdate,
    DATE '1993-01-10' + (o.i * 3 % 2000)::INT AS l_commitdate,
    DATE '1993-01-08' + (o.i * 3 % 2000 + n.j * 3)::INT AS l_receiptdate,
    ['DELIVER IN PERSON', 'NONE'][n.j % 2 + 1] AS l_shipinstruct,
    ['MAIL', 'SHIP', 'AIR', 'AIR REG'][n.j % 4 + 1] AS l_shipmode, 'l' AS l_comment
    FROM range(1500) o(i), range(1, 5) n(j);
CREATE SCHEMA data;
CREATE TABLE data.csv AS SELECT 1 AS one;
CREATE TABLE "data.csv" AS SELECT 2 AS two;
CREATE TABLE "report.db" AS SELECT 3 AS three;
CREATE MACRO top_orders(n) AS TABLE SELECT * FROM orders ORDER BY o_totalprice DESC LIMIT n;
"""
"""The TPC-H schema with a few hundred generated rows per table, and tables whose names look
like files (also `bench/bench_data.py`'s)."""

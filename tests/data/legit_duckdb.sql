-- Legitimate analyst SQL the DuckDB guard must let through and the engine must run:
-- the 22 TPC-H queries (written for the small TPC-H schema built by
-- tests/security/test_guard_classes.py) and everyday analytics. One statement per "-- name:".

-- name: tpch_q01
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAY
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus;

-- name: tpch_q02
SELECT s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment
FROM part, supplier, partsupp, nation, region
WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND p_size = 15 AND p_type LIKE '%BRASS'
  AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey AND r_name = 'EUROPE'
  AND ps_supplycost = (
      SELECT min(ps_supplycost) FROM partsupp, supplier, nation, region
      WHERE p_partkey = ps_partkey AND s_suppkey = ps_suppkey AND s_nationkey = n_nationkey
        AND n_regionkey = r_regionkey AND r_name = 'EUROPE')
ORDER BY s_acctbal DESC, n_name, s_name, p_partkey
LIMIT 100;

-- name: tpch_q03
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate, o_shippriority
FROM customer, orders, lineitem
WHERE c_mktsegment = 'BUILDING' AND c_custkey = o_custkey AND l_orderkey = o_orderkey
  AND o_orderdate < DATE '1995-03-15' AND l_shipdate > DATE '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate
LIMIT 10;

-- name: tpch_q04
SELECT o_orderpriority, count(*) AS order_count
FROM orders
WHERE o_orderdate >= DATE '1993-07-01' AND o_orderdate < DATE '1993-07-01' + INTERVAL 3 MONTH
  AND EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND l_commitdate < l_receiptdate)
GROUP BY o_orderpriority
ORDER BY o_orderpriority;

-- name: tpch_q05
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem, supplier, nation, region
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey
  AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'
GROUP BY n_name
ORDER BY revenue DESC;

-- name: tpch_q06
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24;

-- name: tpch_q07
SELECT supp_nation, cust_nation, l_year, sum(volume) AS revenue
FROM (
    SELECT n1.n_name AS supp_nation, n2.n_name AS cust_nation, extract(year FROM l_shipdate) AS l_year,
           l_extendedprice * (1 - l_discount) AS volume
    FROM supplier, lineitem, orders, customer, nation n1, nation n2
    WHERE s_suppkey = l_suppkey AND o_orderkey = l_orderkey AND c_custkey = o_custkey
      AND s_nationkey = n1.n_nationkey AND c_nationkey = n2.n_nationkey
      AND ((n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY') OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE'))
      AND l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31'
) AS shipping
GROUP BY supp_nation, cust_nation, l_year
ORDER BY supp_nation, cust_nation, l_year;

-- name: tpch_q08
SELECT o_year, sum(CASE WHEN nation = 'BRAZIL' THEN volume ELSE 0 END) / sum(volume) AS mkt_share
FROM (
    SELECT extract(year FROM o_orderdate) AS o_year, l_extendedprice * (1 - l_discount) AS volume,
           n2.n_name AS nation
    FROM part, supplier, lineitem, orders, customer, nation n1, nation n2, region
    WHERE p_partkey = l_partkey AND s_suppkey = l_suppkey AND l_orderkey = o_orderkey
      AND o_custkey = c_custkey AND c_nationkey = n1.n_nationkey AND n1.n_regionkey = r_regionkey
      AND r_name = 'AMERICA' AND s_nationkey = n2.n_nationkey
      AND o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1996-12-31' AND p_type = 'ECONOMY ANODIZED STEEL'
) AS all_nations
GROUP BY o_year
ORDER BY o_year;

-- name: tpch_q09
SELECT nation, o_year, sum(amount) AS sum_profit
FROM (
    SELECT n_name AS nation, extract(year FROM o_orderdate) AS o_year,
           l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity AS amount
    FROM part, supplier, lineitem, partsupp, orders, nation
    WHERE s_suppkey = l_suppkey AND ps_suppkey = l_suppkey AND ps_partkey = l_partkey
      AND p_partkey = l_partkey AND o_orderkey = l_orderkey AND s_nationkey = n_nationkey
      AND p_name LIKE '%green%'
) AS profit
GROUP BY nation, o_year
ORDER BY nation, o_year DESC;

-- name: tpch_q10
SELECT c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) AS revenue, c_acctbal, n_name,
       c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey AND o_orderdate >= DATE '1993-10-01'
  AND o_orderdate < DATE '1994-01-01' AND l_returnflag = 'R' AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC
LIMIT 20;

-- name: tpch_q11
SELECT ps_partkey, sum(ps_supplycost * ps_availqty) AS value
FROM partsupp, supplier, nation
WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY'
GROUP BY ps_partkey
HAVING sum(ps_supplycost * ps_availqty) > (
    SELECT sum(ps_supplycost * ps_availqty) * 0.0001
    FROM partsupp, supplier, nation
    WHERE ps_suppkey = s_suppkey AND s_nationkey = n_nationkey AND n_name = 'GERMANY')
ORDER BY value DESC;

-- name: tpch_q12
SELECT l_shipmode,
       sum(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END) AS high_line_count,
       sum(CASE WHEN o_orderpriority NOT IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END) AS low_line_count
FROM orders, lineitem
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP') AND l_commitdate < l_receiptdate
  AND l_shipdate < l_commitdate AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1995-01-01'
GROUP BY l_shipmode
ORDER BY l_shipmode;

-- name: tpch_q13
SELECT c_count, count(*) AS custdist
FROM (
    SELECT c_custkey, count(o_orderkey) AS c_count
    FROM customer LEFT OUTER JOIN orders ON c_custkey = o_custkey AND o_comment NOT LIKE '%special%requests%'
    GROUP BY c_custkey
) AS c_orders
GROUP BY c_count
ORDER BY custdist DESC, c_count DESC;

-- name: tpch_q14
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
       / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM lineitem, part
WHERE l_partkey = p_partkey AND l_shipdate >= DATE '1995-09-01' AND l_shipdate < DATE '1995-10-01';

-- name: tpch_q15
WITH revenue AS (
    SELECT l_suppkey AS supplier_no, sum(l_extendedprice * (1 - l_discount)) AS total_revenue
    FROM lineitem
    WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-04-01'
    GROUP BY l_suppkey
)
SELECT s_suppkey, s_name, s_address, s_phone, total_revenue
FROM supplier, revenue
WHERE s_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue)
ORDER BY s_suppkey;

-- name: tpch_q16
SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt
FROM partsupp, part
WHERE p_partkey = ps_partkey AND p_brand <> 'Brand#45' AND p_type NOT LIKE 'MEDIUM POLISHED%'
  AND p_size IN (49, 14, 23, 45, 19, 3, 36, 9)
  AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE s_comment LIKE '%Customer%Complaints%')
GROUP BY p_brand, p_type, p_size
ORDER BY supplier_cnt DESC, p_brand, p_type, p_size;

-- name: tpch_q17
SELECT sum(l_extendedprice) / 7.0 AS avg_yearly
FROM lineitem, part
WHERE p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container = 'MED BOX'
  AND l_quantity < (SELECT 0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey);

-- name: tpch_q18
SELECT c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity)
FROM customer, orders, lineitem
WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey HAVING sum(l_quantity) > 300)
  AND c_custkey = o_custkey AND o_orderkey = l_orderkey
GROUP BY c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
ORDER BY o_totalprice DESC, o_orderdate
LIMIT 100;

-- name: tpch_q19
SELECT sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem, part
WHERE (p_partkey = l_partkey AND p_brand = 'Brand#12' AND p_container IN ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG')
       AND l_quantity BETWEEN 1 AND 11 AND p_size BETWEEN 1 AND 5 AND l_shipmode IN ('AIR', 'AIR REG')
       AND l_shipinstruct = 'DELIVER IN PERSON')
   OR (p_partkey = l_partkey AND p_brand = 'Brand#23' AND p_container IN ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK')
       AND l_quantity BETWEEN 10 AND 20 AND p_size BETWEEN 1 AND 10 AND l_shipmode IN ('AIR', 'AIR REG')
       AND l_shipinstruct = 'DELIVER IN PERSON')
   OR (p_partkey = l_partkey AND p_brand = 'Brand#34' AND p_container IN ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG')
       AND l_quantity BETWEEN 20 AND 30 AND p_size BETWEEN 1 AND 15 AND l_shipmode IN ('AIR', 'AIR REG')
       AND l_shipinstruct = 'DELIVER IN PERSON');

-- name: tpch_q20
SELECT s_name, s_address
FROM supplier, nation
WHERE s_suppkey IN (
    SELECT ps_suppkey FROM partsupp
    WHERE ps_partkey IN (SELECT p_partkey FROM part WHERE p_name LIKE 'forest%')
      AND ps_availqty > (
          SELECT 0.5 * sum(l_quantity) FROM lineitem
          WHERE l_partkey = ps_partkey AND l_suppkey = ps_suppkey
            AND l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'))
  AND s_nationkey = n_nationkey AND n_name = 'CANADA'
ORDER BY s_name;

-- name: tpch_q21
SELECT s_name, count(*) AS numwait
FROM supplier, lineitem l1, orders, nation
WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey AND o_orderstatus = 'F'
  AND l1.l_receiptdate > l1.l_commitdate
  AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey AND l2.l_suppkey <> l1.l_suppkey)
  AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey
                  AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate)
  AND s_nationkey = n_nationkey AND n_name = 'SAUDI ARABIA'
GROUP BY s_name
ORDER BY numwait DESC, s_name
LIMIT 100;

-- name: tpch_q22
SELECT cntrycode, count(*) AS numcust, sum(c_acctbal) AS totacctbal
FROM (
    SELECT substring(c_phone, 1, 2) AS cntrycode, c_acctbal
    FROM customer
    WHERE substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17')
      AND c_acctbal > (SELECT avg(c_acctbal) FROM customer WHERE c_acctbal > 0.00
                       AND substring(c_phone, 1, 2) IN ('13', '31', '23', '29', '30', '18', '17'))
      AND NOT EXISTS (SELECT * FROM orders WHERE o_custkey = c_custkey)
) AS custsale
GROUP BY cntrycode
ORDER BY cntrycode;

-- name: pivot_without_in
PIVOT orders ON o_orderpriority USING sum(o_totalprice) GROUP BY o_orderstatus;

-- name: pivot_with_in
SELECT * FROM orders PIVOT (count(*) FOR o_orderstatus IN ('F', 'O', 'P'));

-- name: unpivot
UNPIVOT (SELECT o_orderkey, o_totalprice, o_shippriority FROM orders LIMIT 5) ON o_totalprice, o_shippriority INTO NAME metric VALUE amount;

-- name: pragma_table_info
PRAGMA table_info('lineitem');

-- name: pragma_show_tables
PRAGMA show_tables;

-- name: pragma_version
PRAGMA version;

-- name: call_pragma_table_info
CALL pragma_table_info('orders');

-- name: call_pragma_version
CALL pragma_version();

-- name: file_like_table_quoted
SELECT * FROM "data.csv";

-- name: file_like_table_db
SELECT * FROM "report.db";

-- name: schema_data_table_csv
SELECT * FROM data.csv;

-- name: schema_data_table_csv_spaced
SELECT * FROM data . csv;

-- name: window_running_total
SELECT o_orderdate, o_totalprice, sum(o_totalprice) OVER (ORDER BY o_orderdate ROWS UNBOUNDED PRECEDING) AS running
FROM orders ORDER BY o_orderdate LIMIT 20;

-- name: window_rank_per_group
SELECT * FROM (
    SELECT c_nationkey, c_name, c_acctbal, rank() OVER (PARTITION BY c_nationkey ORDER BY c_acctbal DESC) AS r
    FROM customer
) WHERE r <= 3;

-- name: qualify
SELECT c_nationkey, c_name, c_acctbal FROM customer
QUALIFY row_number() OVER (PARTITION BY c_nationkey ORDER BY c_acctbal DESC) = 1;

-- name: recursive_cte
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n;

-- name: generate_series_calendar
SELECT d::DATE AS day, count(o_orderkey) AS orders
FROM generate_series(DATE '1995-01-01', DATE '1995-01-31', INTERVAL 1 DAY) t(d)
LEFT JOIN orders ON o_orderdate = d::DATE
GROUP BY 1 ORDER BY 1;

-- name: unnest_list
SELECT unnest([1, 2, 3]) AS x, unnest(['a', 'b', 'c']) AS y;

-- name: json_each
SELECT * FROM json_each('{"a": 1, "b": [2, 3]}');

-- name: grouping_sets
SELECT o_orderstatus, o_orderpriority, count(*) FROM orders
GROUP BY GROUPING SETS ((o_orderstatus), (o_orderpriority), ());

-- name: rollup
SELECT n_regionkey, n_name, count(*) FROM nation GROUP BY ROLLUP (n_regionkey, n_name) ORDER BY ALL;

-- name: percentiles
SELECT quantile_cont(l_extendedprice, [0.25, 0.5, 0.75]) AS quartiles, approx_count_distinct(l_partkey) AS parts
FROM lineitem;

-- name: date_trunc_month
SELECT date_trunc('month', o_orderdate) AS month, sum(o_totalprice) AS revenue FROM orders GROUP BY 1 ORDER BY 1;

-- name: string_functions
SELECT upper(c_name), regexp_extract(c_phone, '^(\d+)-', 1) AS code, length(c_address), c_name ILIKE '%0001%'
FROM customer LIMIT 10;

-- name: struct_and_list
SELECT {'key': o_orderkey, 'price': o_totalprice} AS s, [o_orderkey, o_custkey] AS l FROM orders LIMIT 3;

-- name: summarize
SUMMARIZE orders;

-- name: describe
DESCRIBE lineitem;

-- name: show_tables
SHOW TABLES;

-- name: explain
EXPLAIN SELECT count(*) FROM lineitem WHERE l_quantity > 10;

-- name: catalog_listing
SELECT table_name, estimated_size FROM duckdb_tables() ORDER BY 1;

-- name: information_schema
SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_name = 'orders';

-- name: values_list
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) v(id, name);

-- name: union_all_by_name
SELECT o_orderkey AS k FROM orders UNION ALL BY NAME SELECT c_custkey AS k FROM customer LIMIT 5;

-- name: asof_join
SELECT o.o_orderkey, l.l_shipdate FROM orders o ASOF JOIN lineitem l ON o.o_orderkey = l.l_orderkey AND o.o_orderdate <= l.l_shipdate LIMIT 5;

-- name: user_table_macro
SELECT * FROM top_orders(3);

-- name: string_with_file_name
SELECT 'see data.csv or report.db' AS note, 'https://example.com/x.parquet' AS url;

-- name: comment_with_pragma
-- monthly revenue; do not PRAGMA or CALL anything
SELECT date_trunc('month', o_orderdate), sum(o_totalprice) FROM orders GROUP BY 1;

-- name: cte_named_like_a_file
WITH "report.csv" AS (SELECT o_orderpriority, count(*) AS n FROM orders GROUP BY 1) SELECT * FROM "report.csv" ORDER BY n DESC;

-- name: cte_named_pg_settings
WITH pg_settings AS (SELECT 'threads' AS name, 4 AS setting) SELECT name, setting FROM pg_settings;

-- name: explain_format_json
EXPLAIN (FORMAT json) SELECT count(*) FROM orders WHERE o_totalprice > 1000;

-- name: cte_named_like_a_file_in_a_subquery
WITH "data.parquet" AS (SELECT n_name FROM nation) SELECT count(*) FROM (SELECT * FROM "data.parquet") t;

-- name: recursive_cte_named_like_a_file
WITH RECURSIVE "steps.json" AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM "steps.json" WHERE n < 5) SELECT sum(n) FROM "steps.json";

-- name: cte_named_like_system_views
WITH duckdb_databases AS (SELECT 1 AS x), duckdb_logs AS (SELECT 2 AS x) SELECT * FROM duckdb_databases, duckdb_logs;

-- name: ctes_referring_to_earlier_ones
WITH "a.csv" AS (SELECT r_name FROM region), "b.csv" AS (SELECT * FROM "a.csv" WHERE r_name LIKE 'A%') SELECT * FROM "b.csv" ORDER BY 1;

-- name: materialized_cte_named_like_a_file
WITH "x.json" AS MATERIALIZED (SELECT c_mktsegment FROM customer) SELECT c_mktsegment, count(*) FROM "x.json" GROUP BY ALL;

-- name: cte_in_a_scalar_subquery
SELECT (WITH "t.csv" AS (SELECT max(o_totalprice) AS m FROM orders) SELECT m FROM "t.csv") AS top;

-- name: unicode_names_and_values
SELECT n_name AS "país", 'añoé 日本' AS "étiquette" FROM nation ORDER BY 1 LIMIT 3;

-- Legitimate analyst SQL the PostgreSQL guard must let through and the server must run, over the
-- test server's shop database (tests/pg_server.py). One statement per "-- name:".

-- name: revenue_by_status
SELECT status, count(*) AS orders, sum(amount) AS revenue FROM sales.orders GROUP BY status ORDER BY status;

-- name: revenue_by_country_join
SELECT c.country, sum(o.amount) AS revenue
FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
GROUP BY c.country ORDER BY revenue DESC;

-- name: explain_json
EXPLAIN (FORMAT json) SELECT * FROM sales.orders WHERE status = 'pending';

-- name: explain_analyze
EXPLAIN (ANALYZE, BUFFERS, FORMAT text) SELECT count(*) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id;

-- name: cte_named_like_a_file
WITH "report.csv" AS (SELECT status, count(*) AS n FROM sales.orders GROUP BY status)
SELECT * FROM "report.csv" ORDER BY n DESC;

-- name: cte_named_like_a_system_view
WITH pg_settings AS (SELECT 'TimeZone' AS name, 'UTC' AS setting) SELECT name, setting FROM pg_settings;

-- name: monthly_trend
SELECT date_trunc('month', placed_on)::date AS month, count(*) AS orders, round(avg(amount), 2) AS avg_amount
FROM sales.orders GROUP BY 1 ORDER BY 1;

-- name: window_running_total
SELECT placed_on, amount, sum(amount) OVER (ORDER BY placed_on, id ROWS UNBOUNDED PRECEDING) AS running
FROM sales.orders ORDER BY placed_on, id LIMIT 20;

-- name: window_rank_per_country
SELECT * FROM (
  SELECT c.country, c.name, sum(o.amount) AS spent,
         rank() OVER (PARTITION BY c.country ORDER BY sum(o.amount) DESC) AS r
  FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
  GROUP BY c.country, c.name) ranked
WHERE r <= 3 ORDER BY country, r;

-- name: lag_lead
SELECT id, amount, lag(amount) OVER w AS previous, lead(amount) OVER w AS next
FROM sales.orders WINDOW w AS (ORDER BY id) ORDER BY id LIMIT 10;

-- name: ntile_percentiles
SELECT ntile(4) OVER (ORDER BY amount) AS quartile, amount FROM sales.orders ORDER BY amount LIMIT 10;

-- name: lateral_top_orders
SELECT c.name, top.id, top.amount
FROM sales.customers c
CROSS JOIN LATERAL (SELECT o.id, o.amount FROM sales.orders o WHERE o.customer_id = c.id
                    ORDER BY o.amount DESC LIMIT 2) AS top
WHERE c.id <= 5 ORDER BY c.name, top.amount DESC;

-- name: grouping_sets
SELECT c.country, o.status, count(*) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
GROUP BY GROUPING SETS ((c.country), (o.status), ()) ORDER BY 1, 2;

-- name: rollup_cube
SELECT c.tier, o.status, sum(o.amount) FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
GROUP BY CUBE (c.tier, o.status) ORDER BY 1, 2;

-- name: filter_clause
SELECT count(*) FILTER (WHERE status = 'refunded') AS refunded,
       count(*) FILTER (WHERE status = 'shipped') AS shipped
FROM sales.orders;

-- name: distinct_on
SELECT DISTINCT ON (customer_id) customer_id, id, amount FROM sales.orders ORDER BY customer_id, amount DESC LIMIT 10;

-- name: percentiles
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY amount) AS p90,
       mode() WITHIN GROUP (ORDER BY status) AS most_common
FROM sales.orders;

-- name: string_agg_array_agg
SELECT country, string_agg(name, ', ' ORDER BY name) AS names, array_agg(id ORDER BY id) AS ids
FROM sales.customers WHERE id <= 12 GROUP BY country ORDER BY country;

-- name: recursive_cte
WITH RECURSIVE days(d) AS (SELECT DATE '2024-01-01' UNION ALL SELECT d + 1 FROM days WHERE d < DATE '2024-01-10')
SELECT d, (SELECT count(*) FROM sales.orders o WHERE o.placed_on = days.d) AS orders FROM days ORDER BY d;

-- name: generate_series_calendar
SELECT g::date AS day FROM generate_series(DATE '2024-01-01', DATE '2024-01-07', INTERVAL '1 day') AS g;

-- name: values_and_join
SELECT v.code, v.label, count(o.id) FROM (VALUES ('pending', 'waiting'), ('shipped', 'sent')) AS v(code, label)
LEFT JOIN sales.orders o ON o.status = v.code GROUP BY v.code, v.label ORDER BY v.code;

-- name: table_statement
TABLE sales.revenue_by_country;

-- name: view_and_matview
SELECT (SELECT count(*) FROM sales.big_orders) AS big, (SELECT count(*) FROM sales.revenue_by_country) AS countries;

-- name: partitioned_table
SELECT kind, date_trunc('month', happened) AS month, count(*) FROM public.events GROUP BY 1, 2 ORDER BY 1, 2;

-- name: mixed_case_identifiers
SELECT count("Weird Col") FROM public."Mixed Case";

-- name: exists_and_any
SELECT count(*) FROM sales.customers c
WHERE EXISTS (SELECT 1 FROM sales.orders o WHERE o.customer_id = c.id AND o.amount > 90)
  AND c.tier = ANY (ARRAY['gold', 'silver', 'platinum']);

-- name: set_operations
SELECT customer_id FROM sales.orders WHERE status = 'refunded'
INTERSECT SELECT id FROM sales.customers WHERE tier = 'silver'
EXCEPT SELECT customer_id FROM sales.orders WHERE amount > 95 ORDER BY 1 LIMIT 10;

-- name: case_coalesce_nullif
SELECT id, CASE WHEN amount > 50 THEN 'big' WHEN amount > 10 THEN 'medium' ELSE 'small' END AS size,
       coalesce(nullif(status, 'pending'), 'open') AS state
FROM sales.orders ORDER BY id LIMIT 10;

-- name: text_functions
SELECT upper(left(name, 3)), split_part(name, ' ', 2), regexp_replace(name, '[0-9]+', '#'), md5(name),
       format('%s lives in %s', name, country), position('er' IN name), length(name)
FROM sales.customers WHERE name ILIKE 'customer 1%' ORDER BY name LIMIT 5;

-- name: like_similar_regex
SELECT count(*) FILTER (WHERE name LIKE 'Customer 1%'), count(*) FILTER (WHERE name SIMILAR TO 'Customer [0-9]{2}'),
       count(*) FILTER (WHERE name ~ '^Customer 2')
FROM sales.customers;

-- name: dates_and_intervals
SELECT extract(year FROM placed_on) AS y, to_char(placed_on, 'YYYY-MM') AS ym,
       placed_on + INTERVAL '30 days' AS due, age(DATE '2025-01-01', placed_on) AS age,
       date_part('dow', placed_on) AS dow
FROM sales.orders ORDER BY id LIMIT 5;

-- name: numeric_casts_and_ratios
SELECT status, round(100.0 * count(*) / sum(count(*)) OVER (), 2) AS pct, sum(amount)::numeric(12, 2),
       width_bucket(avg(amount), 0, 100, 10) AS bucket
FROM sales.orders GROUP BY status ORDER BY status;

-- name: statistics
SELECT corr(amount, id), regr_slope(amount, id), stddev_samp(amount), var_pop(amount) FROM sales.orders;

-- name: json_building
SELECT json_agg(json_build_object('id', id, 'amount', amount) ORDER BY id) AS payload
FROM sales.orders WHERE id <= 3;

-- name: jsonb_operators
SELECT j ->> 'name' AS name, (j -> 'n')::int + 1 AS n_plus_one, j ? 'name' AS has_name
FROM (SELECT jsonb_build_object('name', name, 'n', id) AS j FROM sales.customers WHERE id <= 3) AS t ORDER BY 1;

-- name: row_to_json_field_notation
SELECT o.to_json ->> 'status' AS status FROM sales.orders o WHERE o.id = 1;

-- name: unnest_and_arrays
SELECT x, x * 2 AS doubled, array_length(ARRAY[1, 2, 3], 1) FROM unnest(ARRAY[1, 2, 3]) AS x ORDER BY x;

-- name: greatest_least_between
SELECT greatest(amount, 50), least(amount, 50), amount BETWEEN 10 AND 20 FROM sales.orders ORDER BY id LIMIT 5;

-- name: offset_fetch_nulls
SELECT id, tier FROM sales.customers ORDER BY tier NULLS LAST, id OFFSET 5 FETCH FIRST 5 ROWS ONLY;

-- name: tablesample
SELECT count(*) >= 0 AS sampled FROM sales.orders TABLESAMPLE BERNOULLI (50) REPEATABLE (7);

-- name: random_and_clock
SELECT random() BETWEEN 0 AND 1 AS ok, clock_timestamp() >= now() AS later, gen_random_uuid() IS NOT NULL AS u;

-- name: show_timezone
SHOW TimeZone;

-- name: current_setting_of_an_allowed_setting
SELECT current_setting('TimeZone') AS tz, current_setting('server_version_num')::int >= 120000 AS modern;

-- name: version
SELECT version() LIKE 'PostgreSQL%' AS pg;

-- name: information_schema
SELECT table_schema, table_name FROM information_schema.tables
WHERE table_schema IN ('sales', 'public') ORDER BY 1, 2;

-- name: information_schema_columns
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = 'sales' AND table_name = 'orders' ORDER BY ordinal_position;

-- name: pg_catalog_sizes
SELECT c.relname, pg_total_relation_size(c.oid) > 0 AS has_size, pg_size_pretty(pg_relation_size(c.oid))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'sales' AND c.relkind = 'r' ORDER BY 1;

-- name: pg_stats_view
SELECT attname, n_distinct FROM pg_stats WHERE schemaname = 'sales' AND tablename = 'customers' ORDER BY attname;

-- name: comments
SELECT obj_description('sales.orders'::regclass, 'pg_class') AS table_comment,
       col_description('sales.orders'::regclass, 4) AS status_comment;

-- name: regclass_and_typeof
SELECT 'sales.orders'::regclass::text, pg_typeof(amount) FROM sales.orders LIMIT 1;

-- name: sleep_briefly
SELECT pg_sleep(0.01) IS NULL AS slept;

-- name: subquery_in_select_and_having
SELECT customer_id, count(*) FROM sales.orders GROUP BY customer_id
HAVING count(*) > (SELECT avg(n) FROM (SELECT count(*) AS n FROM sales.orders GROUP BY customer_id) s)
ORDER BY 2 DESC, 1 LIMIT 5;

-- name: current_setting_of_a_cast_literal
SELECT current_setting('TimeZone'::text) IS NOT NULL AS has_zone;

-- name: one_partition_of_a_partitioned_table
SELECT count(*) FROM public.events_2024_01;

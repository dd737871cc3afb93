-- 03_platform.sql — the data platform's orchestrator metadata (Airflow-like):
-- DAGs, their tasks, every DAG run and every task instance.

CREATE TEMP TABLE p_dags AS
SELECT * FROM (VALUES
    ('sales_orders_ingest', 'data-eng', '@hourly', 60, 5,
     'Loads new and changed orders and order lines from the shop databases and marketplace feeds into sales.orders and sales.order_items.',
     TIMESTAMP '2023-06-01 00:00:00', NULL::TIMESTAMP, 0.010, ['sales', 'ingest']),
    ('web_sessions_ingest', 'data-eng', '@hourly', 60, 7,
     'Sessionizes clickstream events from the web and app trackers into marketing.sessions.',
     TIMESTAMP '2023-06-01 00:00:00', NULL, 0.014, ['marketing', 'ingest']),
    ('refunds_ingest', 'data-eng', '0 */6 * * *', 360, 10,
     'Pulls refunds from the payment providers into sales.refunds.',
     TIMESTAMP '2023-06-01 00:00:00', NULL, 0.008, ['sales', 'ingest']),
    ('inventory_snapshot', 'supply-chain', '0 */6 * * *', 360, 15,
     'Snapshots warehouse stock levels from the WMS for the supply-chain team.',
     TIMESTAMP '2023-08-01 00:00:00', NULL, 0.012, ['supply-chain']),
    ('data_quality_checks', 'analytics-eng', '30 */6 * * *', 360, 30,
     'Row-count, null, foreign-key and freshness checks over the sales and marketing schemas; fails when a check fails.',
     TIMESTAMP '2023-06-01 00:30:00', NULL, 0.045, ['quality']),
    ('marketing_ad_spend_sync', 'growth-eng', '@daily', 1440, 45,
     'Fetches the previous day''s spend, impressions and clicks from the Google, Meta and TikTok ads APIs into marketing.ad_spend.',
     TIMESTAMP '2023-11-01 00:00:00', NULL, 0.200, ['marketing', 'ingest', 'external-api']),
    ('dbt_sales_models', 'analytics-eng', '@daily', 1440, 130,
     'Runs and tests the dbt models behind the sales reporting views.',
     TIMESTAMP '2023-06-01 00:00:00', NULL, 0.020, ['dbt', 'sales']),
    ('dbt_marketing_models', 'analytics-eng', '@daily', 1440, 165,
     'Runs and tests the dbt models for marketing attribution and campaign reporting.',
     TIMESTAMP '2023-06-01 00:00:00', NULL, 0.025, ['dbt', 'marketing']),
    ('customer_dedup', 'data-eng', '@daily', 1440, 60,
     'Finds and merges duplicate customer records (same email or phone) in sales.customers.',
     TIMESTAMP '2023-09-01 00:00:00', NULL, 0.010, ['sales', 'pii']),
    ('daily_revenue_report', 'finance', '0 6 * * *', 1440, 360,
     'Computes yesterday''s net revenue per region from sales.daily_revenue and emails the finance report.',
     TIMESTAMP '2023-06-01 06:00:00', NULL, 0.010, ['finance', 'reporting']),
    ('finance_ledger_export', 'finance', '@daily', 1440, 240,
     'Exports daily order and refund totals to the ERP general ledger.',
     TIMESTAMP '2024-09-15 00:00:00', NULL, 0.030, ['finance', 'export']),
    ('ml_churn_features', 'data-science', '@weekly', 10080, 240,
     'Builds weekly churn-model features and scores; paused since 2025-07-01 while the model is rebuilt.',
     TIMESTAMP '2023-06-05 00:00:00', TIMESTAMP '2025-07-01 00:00:00', 0.050, ['ml'])
) t(dag_id, owner, schedule, interval_minutes, start_delay_minutes, description, created_at, paused_at,
    fail_rate, tags);

CREATE TEMP TABLE p_tasks AS
SELECT * FROM (VALUES
    ('sales_orders_ingest', 1, 'extract_orders', 'PythonOperator', 3, 240),
    ('sales_orders_ingest', 2, 'load_orders', 'SQLExecuteQueryOperator', 2, 180),
    ('sales_orders_ingest', 3, 'publish_freshness', 'PythonOperator', 1, 10),
    ('web_sessions_ingest', 1, 'sessionize_events', 'SparkSubmitOperator', 2, 600),
    ('web_sessions_ingest', 2, 'load_sessions', 'SQLExecuteQueryOperator', 2, 60),
    ('refunds_ingest', 1, 'extract_refunds', 'PythonOperator', 3, 60),
    ('refunds_ingest', 2, 'load_refunds', 'SQLExecuteQueryOperator', 2, 30),
    ('inventory_snapshot', 1, 'extract_inventory', 'PythonOperator', 2, 300),
    ('inventory_snapshot', 2, 'load_snapshot', 'SQLExecuteQueryOperator', 2, 120),
    ('data_quality_checks', 1, 'check_row_counts', 'SQLCheckOperator', 0, 40),
    ('data_quality_checks', 2, 'check_nulls', 'SQLCheckOperator', 0, 60),
    ('data_quality_checks', 3, 'check_foreign_keys', 'SQLCheckOperator', 0, 90),
    ('data_quality_checks', 4, 'check_freshness', 'SQLCheckOperator', 0, 20),
    ('marketing_ad_spend_sync', 1, 'fetch_google_ads', 'PythonOperator', 3, 300),
    ('marketing_ad_spend_sync', 2, 'fetch_meta_ads', 'PythonOperator', 3, 420),
    ('marketing_ad_spend_sync', 3, 'fetch_tiktok_ads', 'PythonOperator', 3, 240),
    ('marketing_ad_spend_sync', 4, 'merge_spend', 'SQLExecuteQueryOperator', 1, 60),
    ('marketing_ad_spend_sync', 5, 'load_ad_spend', 'SQLExecuteQueryOperator', 1, 45),
    ('dbt_sales_models', 1, 'dbt_deps', 'BashOperator', 1, 25),
    ('dbt_sales_models', 2, 'dbt_run_sales', 'BashOperator', 1, 900),
    ('dbt_sales_models', 3, 'dbt_test_sales', 'BashOperator', 1, 300),
    ('dbt_marketing_models', 1, 'dbt_deps', 'BashOperator', 1, 25),
    ('dbt_marketing_models', 2, 'dbt_run_marketing', 'BashOperator', 1, 1200),
    ('dbt_marketing_models', 3, 'dbt_test_marketing', 'BashOperator', 1, 360),
    ('customer_dedup', 1, 'extract_customers', 'SQLExecuteQueryOperator', 2, 180),
    ('customer_dedup', 2, 'match_duplicates', 'PythonOperator', 1, 600),
    ('customer_dedup', 3, 'merge_customers', 'SQLExecuteQueryOperator', 1, 120),
    ('daily_revenue_report', 1, 'compute_revenue', 'SQLExecuteQueryOperator', 2, 120),
    ('daily_revenue_report', 2, 'render_report', 'PythonOperator', 1, 45),
    ('daily_revenue_report', 3, 'email_report', 'EmailOperator', 3, 5),
    ('finance_ledger_export', 1, 'extract_ledger', 'SQLExecuteQueryOperator', 2, 200),
    ('finance_ledger_export', 2, 'export_to_erp', 'HttpOperator', 3, 150),
    ('ml_churn_features', 1, 'build_features', 'SparkSubmitOperator', 1, 1800),
    ('ml_churn_features', 2, 'train_model', 'PythonOperator', 1, 2400),
    ('ml_churn_features', 3, 'publish_scores', 'SQLExecuteQueryOperator', 1, 300)
) t(dag_id, position, task_id, operator, retries, typical_seconds);

CREATE TABLE platform.dags (
    dag_id           VARCHAR PRIMARY KEY,
    owner            VARCHAR NOT NULL,
    schedule         VARCHAR NOT NULL,
    description      VARCHAR NOT NULL,
    tags             VARCHAR[] NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    is_paused        BOOLEAN NOT NULL,
    paused_at        TIMESTAMP
);

INSERT INTO platform.dags
SELECT dag_id, owner, schedule, description, tags, created_at, paused_at IS NOT NULL, paused_at
FROM p_dags ORDER BY dag_id;

CREATE TABLE platform.tasks (
    dag_id      VARCHAR NOT NULL REFERENCES platform.dags (dag_id),
    task_id     VARCHAR NOT NULL,
    position    INTEGER NOT NULL,
    operator    VARCHAR NOT NULL,
    retries     INTEGER NOT NULL,
    PRIMARY KEY (dag_id, task_id)
);

INSERT INTO platform.tasks
SELECT dag_id, task_id, position, operator, retries FROM p_tasks ORDER BY dag_id, position;

------------------------------------------------------------------------------
-- runs: one scheduled run per interval, plus manual reruns of failed daily runs
------------------------------------------------------------------------------
CREATE TEMP TABLE t_runs AS
WITH sched AS (
    SELECT d.dag_id, d.interval_minutes, d.start_delay_minutes, d.fail_rate, d.paused_at,
           (SELECT count(*) FROM p_tasks t WHERE t.dag_id = d.dag_id) AS n_tasks,
           u.logical_date
    FROM p_dags d,
         unnest(generate_series(
             CASE WHEN d.created_at > TIMESTAMP '2024-01-01' THEN d.created_at
                  ELSE TIMESTAMP '2024-01-01' + to_minutes(CAST(minute(d.created_at) + 60 * hour(d.created_at) AS BIGINT)) END,
             coalesce(d.paused_at - INTERVAL 1 SECOND, TIMESTAMP '2025-12-31 23:59:59'),
             to_minutes(CAST(d.interval_minutes AS BIGINT)))) u(logical_date)
), attempts AS (
    SELECT s.*, 'scheduled' AS run_type,
           s.logical_date + to_minutes(CAST(s.interval_minutes + s.start_delay_minutes AS BIGINT))
               + to_seconds(CAST(5 + 90 * u01x(s.dag_id, s.logical_date, 'start') AS BIGINT)) AS start_ts,
           u01x(s.dag_id, s.logical_date, 'fail') < s.fail_rate
               -- the ad APIs throttle hardest in the Nov-Dec peak
               * CASE WHEN s.dag_id = 'marketing_ad_spend_sync' AND month(s.logical_date) >= 11 THEN 1.7 ELSE 1.0 END
               AS failed
    FROM sched s
    UNION ALL
    SELECT s.*, 'manual' AS run_type,
           s.logical_date + to_minutes(CAST(s.interval_minutes + s.start_delay_minutes AS BIGINT))
               + to_seconds(CAST(3600 * (3 + 5 * u01x(s.dag_id, s.logical_date, 'rerun-at')) AS BIGINT)),
           u01x(s.dag_id, s.logical_date, 'rerun-fail') < 0.12
    FROM sched s
    WHERE s.interval_minutes >= 1440
      AND u01x(s.dag_id, s.logical_date, 'fail') < s.fail_rate
          * CASE WHEN s.dag_id = 'marketing_ad_spend_sync' AND month(s.logical_date) >= 11 THEN 1.7 ELSE 1.0 END
      AND u01x(s.dag_id, s.logical_date, 'rerun') < 0.6
)
SELECT row_number() OVER (ORDER BY start_ts, dag_id, run_type) AS run_id,
       a.*,
       hash(a.dag_id, a.logical_date, a.run_type) AS rk,
       CASE WHEN NOT a.failed THEN NULL
            WHEN a.dag_id = 'marketing_ad_spend_sync'
                THEN [2, 2, 2, 1, 3][1 + pick(hash(a.dag_id, a.logical_date, a.run_type), 'fail-task', 5)]
            ELSE 1 + pick(hash(a.dag_id, a.logical_date, a.run_type), 'fail-task', a.n_tasks)
       END AS fail_position
FROM attempts a
WHERE a.start_ts <= snapshot_at() AND (a.paused_at IS NULL OR a.start_ts < a.paused_at);

CREATE TEMP TABLE t_task_runs AS
WITH ti AS (
    SELECT r.run_id, r.dag_id, r.start_ts AS run_start, r.fail_position, t.task_id, t.position, t.retries,
           CASE
               WHEN r.fail_position IS NULL OR t.position < r.fail_position THEN 'success'
               WHEN t.position = r.fail_position THEN 'failed'
               ELSE 'upstream_failed'
           END AS planned_state,
           -- whole milliseconds, so sums are exact whatever the thread count
           CAST(1000 * t.typical_seconds * (0.6 + 0.9 * u01x(r.rk, t.position, 'duration'))
                * CASE WHEN r.fail_position = t.position THEN 1.5 ELSE 1.0 END AS BIGINT) AS duration_ms,
           u01x(r.rk, t.position, 'retry') AS u_retry
    FROM t_runs r
    JOIN p_tasks t USING (dag_id)
), timed AS (
    SELECT ti.*,
           ti.run_start + to_milliseconds(CAST(
               coalesce(sum(CASE WHEN planned_state = 'upstream_failed' THEN 0 ELSE duration_ms + 4000 END)
                        OVER (PARTITION BY run_id ORDER BY position
                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) + 2000 AS BIGINT)) AS task_start
    FROM ti
)
SELECT timed.*,
       task_start + to_milliseconds(duration_ms) AS task_end,
       CASE
           WHEN planned_state = 'upstream_failed' THEN 'upstream_failed'
           WHEN task_start > snapshot_at() THEN 'queued'
           WHEN task_start + to_milliseconds(duration_ms) > snapshot_at() THEN 'running'
           ELSE planned_state
       END AS state
FROM timed;

CREATE TABLE platform.dag_runs (
    run_id       BIGINT NOT NULL,
    dag_id       VARCHAR NOT NULL REFERENCES platform.dags (dag_id),
    run_type     VARCHAR NOT NULL,
    logical_date TIMESTAMP NOT NULL,
    start_date   TIMESTAMP NOT NULL,
    end_date     TIMESTAMP,
    state        VARCHAR NOT NULL
);

INSERT INTO platform.dag_runs
WITH agg AS (
    SELECT run_id,
           max(task_end) FILTER (WHERE state NOT IN ('upstream_failed', 'queued', 'running')) AS last_end,
           bool_or(state IN ('queued', 'running')) AS in_progress,
           bool_or(state = 'failed') AS any_failed
    FROM t_task_runs GROUP BY run_id
)
SELECT r.run_id, r.dag_id, r.run_type, r.logical_date, r.start_ts,
       CASE WHEN a.in_progress THEN NULL ELSE a.last_end + INTERVAL 3 SECOND END,
       CASE WHEN a.in_progress THEN 'running' WHEN a.any_failed THEN 'failed' ELSE 'success' END
FROM t_runs r JOIN agg a USING (run_id)
ORDER BY r.run_id;

ALTER TABLE platform.dag_runs ADD PRIMARY KEY (run_id);

CREATE TABLE platform.task_instances (
    run_id           BIGINT NOT NULL,
    dag_id           VARCHAR NOT NULL,
    task_id          VARCHAR NOT NULL,
    state            VARCHAR NOT NULL,
    try_number       INTEGER NOT NULL,
    start_date       TIMESTAMP,
    end_date         TIMESTAMP,
    duration_seconds DECIMAL(10, 3),
    hostname         VARCHAR
);

INSERT INTO platform.task_instances
SELECT run_id, dag_id, task_id, state,
       CASE
           WHEN state IN ('upstream_failed', 'queued') THEN 0
           WHEN state = 'failed' THEN retries + 1
           WHEN retries > 0 AND u_retry < 0.04 THEN 2
           ELSE 1
       END,
       CASE WHEN state IN ('upstream_failed', 'queued') THEN NULL ELSE task_start END,
       CASE WHEN state IN ('success', 'failed') THEN task_end END,
       CASE WHEN state IN ('success', 'failed') THEN CAST(duration_ms / 1000.0 AS DECIMAL(10, 3)) END,
       CASE WHEN state IN ('upstream_failed', 'queued') THEN NULL
            ELSE 'airflow-worker-' || (1 + pick(hash(run_id, task_id), 'host', 4)) END
FROM t_task_runs
ORDER BY run_id, position;

ALTER TABLE platform.task_instances ADD PRIMARY KEY (run_id, task_id);

------------------------------------------------------------------------------
-- documentation
------------------------------------------------------------------------------
COMMENT ON TABLE platform.dags IS 'Airflow DAGs (pipelines) of the data platform that load and transform this warehouse, one row each. marketing_ad_spend_sync is the known flaky one.';
COMMENT ON COLUMN platform.dags.dag_id IS 'DAG name (primary key), e.g. sales_orders_ingest.';
COMMENT ON COLUMN platform.dags.owner IS 'Team that owns the DAG and is paged when it fails, e.g. data-eng, growth-eng, finance.';
COMMENT ON COLUMN platform.dags.schedule IS 'Schedule as an Airflow preset (@hourly, @daily, @weekly) or cron expression.';
COMMENT ON COLUMN platform.dags.description IS 'What the DAG does and which tables it feeds.';
COMMENT ON COLUMN platform.dags.tags IS 'Free-form labels, e.g. [marketing, ingest].';
COMMENT ON COLUMN platform.dags.created_at IS 'When the DAG was first deployed (UTC).';
COMMENT ON COLUMN platform.dags.is_paused IS 'True when the scheduler no longer creates runs (ml_churn_features since 2025-07-01).';
COMMENT ON COLUMN platform.dags.paused_at IS 'When the DAG was paused (UTC); NULL for active DAGs.';

COMMENT ON TABLE platform.tasks IS 'Tasks of each DAG in execution order; a DAG run runs them one after another.';
COMMENT ON COLUMN platform.tasks.dag_id IS 'DAG the task belongs to; references platform.dags.';
COMMENT ON COLUMN platform.tasks.task_id IS 'Task name, unique within its DAG, e.g. fetch_meta_ads.';
COMMENT ON COLUMN platform.tasks.position IS 'Execution order within the DAG, 1 runs first.';
COMMENT ON COLUMN platform.tasks.operator IS 'Airflow operator class, e.g. PythonOperator, SQLExecuteQueryOperator, BashOperator.';
COMMENT ON COLUMN platform.tasks.retries IS 'Automatic retries before the task is marked failed.';

COMMENT ON TABLE platform.dag_runs IS 'Every DAG run since 2024-01-01: scheduled runs plus manual reruns after failures. Failure rate = failed runs / finished runs; marketing_ad_spend_sync fails far more often than any other DAG (about 1 run in 5, worse in November and December).';
COMMENT ON COLUMN platform.dag_runs.run_id IS 'Run id (primary key); increases with start time.';
COMMENT ON COLUMN platform.dag_runs.dag_id IS 'DAG that ran; references platform.dags.';
COMMENT ON COLUMN platform.dag_runs.run_type IS 'scheduled (created by the scheduler) or manual (a rerun of a failed daily run started by the on-call engineer a few hours later).';
COMMENT ON COLUMN platform.dag_runs.logical_date IS 'Start of the data interval the run processes (Airflow logical date, UTC); the run itself starts after that interval ends.';
COMMENT ON COLUMN platform.dag_runs.start_date IS 'When the run started (UTC).';
COMMENT ON COLUMN platform.dag_runs.end_date IS 'When the run finished (UTC); NULL while it is still running.';
COMMENT ON COLUMN platform.dag_runs.state IS 'Run outcome: success, failed, or running (still in progress at the warehouse snapshot).';

COMMENT ON TABLE platform.task_instances IS 'One row per task per DAG run, describing its final try. Join to platform.dag_runs on run_id and to platform.tasks on (dag_id, task_id); those keys are not declared as foreign keys.';
COMMENT ON COLUMN platform.task_instances.run_id IS 'DAG run the task belongs to (platform.dag_runs.run_id).';
COMMENT ON COLUMN platform.task_instances.dag_id IS 'DAG of the task (platform.dags.dag_id).';
COMMENT ON COLUMN platform.task_instances.task_id IS 'Task name (platform.tasks.task_id within the DAG).';
COMMENT ON COLUMN platform.task_instances.state IS 'Final task state: success, failed, upstream_failed (never ran because an earlier task failed), running or queued.';
COMMENT ON COLUMN platform.task_instances.try_number IS 'Attempt number of the final try: 1 on first-time success, higher after retries, 0 when the task never started.';
COMMENT ON COLUMN platform.task_instances.start_date IS 'When the final try started (UTC); NULL when the task never started.';
COMMENT ON COLUMN platform.task_instances.end_date IS 'When the final try ended (UTC); NULL when the task never started or is still running.';
COMMENT ON COLUMN platform.task_instances.duration_seconds IS 'Run time of the final try in seconds; NULL when the task has not finished.';
COMMENT ON COLUMN platform.task_instances.hostname IS 'Airflow worker that ran the task; NULL when the task never started.';

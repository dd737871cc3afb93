-- 05_views.sql — the reporting views that encode the business definitions.

CREATE VIEW sales.daily_revenue AS
WITH order_refunds AS (
    SELECT order_id, sum(amount) AS refunded FROM sales.refunds GROUP BY order_id
)
SELECT o.order_date,
       s.region_id,
       r.region_name,
       count(*) AS orders,
       CAST(sum(o.subtotal) AS DECIMAL(18, 2)) AS gross_revenue,
       CAST(coalesce(sum(orf.refunded), 0) AS DECIMAL(18, 2)) AS refunds,
       CAST(sum(o.subtotal) - coalesce(sum(orf.refunded), 0) AS DECIMAL(18, 2)) AS net_revenue
FROM sales.orders o
JOIN sales.customers c ON c.customer_id = o.customer_id
JOIN sales.stores s ON s.store_id = o.store_id
JOIN sales.regions r ON r.region_id = s.region_id
LEFT JOIN order_refunds orf ON orf.order_id = o.order_id
WHERE o.status IN ('completed', 'shipped') AND NOT c.is_test
GROUP BY o.order_date, s.region_id, r.region_name;

COMMENT ON VIEW sales.daily_revenue IS 'Official net revenue per day and region, the definition finance reports: subtotal of completed and shipped orders, minus their partial refunds, excluding test customers; cancelled, pending and refunded orders and shipping fees are not revenue. Refunds count on the order date. Amounts in USD.';
COMMENT ON COLUMN sales.daily_revenue.order_date IS 'UTC order date the revenue is reported on.';
COMMENT ON COLUMN sales.daily_revenue.region_id IS 'Region of the storefront (sales.regions.region_id).';
COMMENT ON COLUMN sales.daily_revenue.region_name IS 'Region name, e.g. East China.';
COMMENT ON COLUMN sales.daily_revenue.orders IS 'Number of revenue-bearing orders (completed or shipped, non-test).';
COMMENT ON COLUMN sales.daily_revenue.gross_revenue IS 'Gross revenue in USD: sum of order subtotals before partial refunds.';
COMMENT ON COLUMN sales.daily_revenue.refunds IS 'Partial refunds on those orders in USD, attributed to the order date.';
COMMENT ON COLUMN sales.daily_revenue.net_revenue IS 'Net revenue in USD = gross_revenue - refunds. This is "revenue" unless stated otherwise.';

CREATE VIEW marketing.campaign_performance AS
WITH spend AS (
    SELECT campaign_id, sum(spend_usd) AS spend_usd, sum(impressions) AS impressions, sum(clicks) AS clicks
    FROM marketing.ad_spend
    GROUP BY campaign_id
), order_refunds AS (
    SELECT order_id, sum(amount) AS refunded FROM sales.refunds GROUP BY order_id
), visits AS (
    SELECT s.campaign_id,
           sum(s.sample_weight) AS sessions,
           count(s.order_id) AS orders,
           sum(CASE WHEN o.status IN ('completed', 'shipped') AND NOT c.is_test
                    THEN o.subtotal - coalesce(orf.refunded, 0) END) AS net_revenue
    FROM marketing.sessions s
    LEFT JOIN sales.orders o ON o.order_id = s.order_id
    LEFT JOIN sales.customers c ON c.customer_id = o.customer_id
    LEFT JOIN order_refunds orf ON orf.order_id = s.order_id
    WHERE s.campaign_id IS NOT NULL
    GROUP BY s.campaign_id
)
SELECT c.campaign_id,
       c.campaign_name,
       ch.channel_name,
       c.region_id,
       c.start_date,
       c.end_date,
       CAST(coalesce(sp.spend_usd, 0) AS DECIMAL(18, 2)) AS spend_usd,
       coalesce(sp.impressions, 0) AS impressions,
       coalesce(sp.clicks, 0) AS clicks,
       coalesce(v.sessions, 0) AS sessions,
       coalesce(v.orders, 0) AS orders,
       CAST(coalesce(v.net_revenue, 0) AS DECIMAL(18, 2)) AS attributed_revenue,
       round(coalesce(v.net_revenue, 0) / nullif(sp.spend_usd, 0), 2) AS roas
FROM marketing.campaigns c
JOIN marketing.channels ch ON ch.channel_id = c.channel_id
LEFT JOIN spend sp ON sp.campaign_id = c.campaign_id
LEFT JOIN visits v ON v.campaign_id = c.campaign_id;

COMMENT ON VIEW marketing.campaign_performance IS 'Spend, traffic, orders and last-click attributed net revenue per campaign over its whole life. Spend is understated where marketing_ad_spend_sync failed (missing days in marketing.ad_spend).';
COMMENT ON COLUMN marketing.campaign_performance.campaign_id IS 'Campaign id (marketing.campaigns.campaign_id).';
COMMENT ON COLUMN marketing.campaign_performance.campaign_name IS 'Campaign name.';
COMMENT ON COLUMN marketing.campaign_performance.channel_name IS 'Channel the campaign runs on.';
COMMENT ON COLUMN marketing.campaign_performance.region_id IS 'Target region (sales.regions.region_id); NULL for global campaigns.';
COMMENT ON COLUMN marketing.campaign_performance.start_date IS 'First day of the campaign.';
COMMENT ON COLUMN marketing.campaign_performance.end_date IS 'Last day of the campaign; NULL for always-on campaigns.';
COMMENT ON COLUMN marketing.campaign_performance.spend_usd IS 'Total recorded media spend in USD.';
COMMENT ON COLUMN marketing.campaign_performance.impressions IS 'Total ad impressions.';
COMMENT ON COLUMN marketing.campaign_performance.clicks IS 'Total ad clicks.';
COMMENT ON COLUMN marketing.campaign_performance.sessions IS 'Estimated visits tagged with the campaign (sum of sample_weight).';
COMMENT ON COLUMN marketing.campaign_performance.orders IS 'Orders placed in sessions tagged with the campaign (last click), any status.';
COMMENT ON COLUMN marketing.campaign_performance.attributed_revenue IS 'Net revenue in USD of those orders by the official definition (completed or shipped, minus partial refunds, no test customers).';
COMMENT ON COLUMN marketing.campaign_performance.roas IS 'Return on ad spend: attributed_revenue / spend_usd; NULL without spend (email).';

CREATE VIEW platform.dag_health AS
SELECT d.dag_id,
       d.owner,
       d.schedule,
       d.is_paused,
       count(r.run_id) AS runs,
       count(r.run_id) FILTER (WHERE r.state = 'failed') AS failed_runs,
       round(count(r.run_id) FILTER (WHERE r.state = 'failed')
             / nullif(count(r.run_id) FILTER (WHERE r.state IN ('success', 'failed')), 0), 4) AS failure_rate,
       max(r.end_date) FILTER (WHERE r.state = 'success') AS last_success_at,
       round(median(epoch(r.end_date - r.start_date)) / 60, 1) AS median_run_minutes
FROM platform.dags d
LEFT JOIN platform.dag_runs r ON r.dag_id = d.dag_id
GROUP BY d.dag_id, d.owner, d.schedule, d.is_paused;

COMMENT ON VIEW platform.dag_health IS 'Reliability of each DAG since 2024-01-01: runs, failures, failure rate and typical run time. Sort by failure_rate to find flaky pipelines.';
COMMENT ON COLUMN platform.dag_health.dag_id IS 'DAG name (platform.dags.dag_id).';
COMMENT ON COLUMN platform.dag_health.owner IS 'Team that owns the DAG.';
COMMENT ON COLUMN platform.dag_health.schedule IS 'Schedule preset or cron expression.';
COMMENT ON COLUMN platform.dag_health.is_paused IS 'True when the DAG is paused.';
COMMENT ON COLUMN platform.dag_health.runs IS 'All runs, scheduled and manual.';
COMMENT ON COLUMN platform.dag_health.failed_runs IS 'Runs that ended in state failed.';
COMMENT ON COLUMN platform.dag_health.failure_rate IS 'failed_runs / finished runs (success or failed), between 0 and 1.';
COMMENT ON COLUMN platform.dag_health.last_success_at IS 'End of the latest successful run (UTC).';
COMMENT ON COLUMN platform.dag_health.median_run_minutes IS 'Median wall-clock duration of finished runs in minutes.';

-- 04_marketing.sql — acquisition channels, campaigns, daily ad spend and web/app sessions.

CREATE TABLE marketing.channels (
    channel_id   INTEGER PRIMARY KEY,
    channel_name VARCHAR NOT NULL UNIQUE,
    is_paid      BOOLEAN NOT NULL,
    description  VARCHAR NOT NULL
);

INSERT INTO marketing.channels VALUES
    (1, 'organic_search', false, 'Unpaid search engine results (Google, Bing, Baidu).'),
    (2, 'paid_search',    true,  'Search ads bought per click (Google Ads, Baidu Ads).'),
    (3, 'social',         true,  'Paid and organic social media (Instagram, TikTok/Douyin, Weibo, Xiaohongshu).'),
    (4, 'email',          false, 'Newsletters and lifecycle emails to opted-in customers.'),
    (5, 'affiliate',      true,  'Partner and review sites paid a commission per sale.'),
    (6, 'display',        true,  'Banner and retargeting ads on the display networks.'),
    (7, 'direct',         false, 'Typed URL, bookmarks, app opens; no referrer.');

CREATE TABLE marketing.campaigns (
    campaign_id      INTEGER PRIMARY KEY,
    campaign_name    VARCHAR NOT NULL,
    utm_campaign     VARCHAR NOT NULL UNIQUE,
    channel_id       INTEGER NOT NULL REFERENCES marketing.channels (channel_id),
    region_id        INTEGER,
    objective        VARCHAR NOT NULL,
    start_date       DATE NOT NULL,
    end_date         DATE,
    daily_budget_usd DECIMAL(12, 2) NOT NULL
);

INSERT INTO marketing.campaigns
WITH fixed AS (
    SELECT * FROM (VALUES
        (1,  'Always-on Brand Search',    2, NULL::INTEGER, 'acquisition', DATE '2023-01-01', NULL::DATE, 1800.00),
        (2,  'Always-on Retargeting',     6, NULL, 'retention',   DATE '2023-01-01', NULL, 900.00),
        (3,  'Affiliate Partner Program', 5, NULL, 'acquisition', DATE '2023-01-01', NULL, 700.00),
        (4,  'Weekly Newsletter',         4, NULL, 'retention',   DATE '2023-01-01', NULL, 60.00),
        (5,  'East China Launch Push',    3, 5,    'awareness',   DATE '2024-03-01', DATE '2024-06-30', 2500.00),
        (6,  'Spring Sale 2024',          4, NULL, 'retention',   DATE '2024-03-15', DATE '2024-04-15', 120.00),
        (7,  'Back to School 2024',       2, 1,    'acquisition', DATE '2024-08-01', DATE '2024-09-10', 2200.00),
        (8,  'Singles Day 2024',          3, 5,    'acquisition', DATE '2024-10-20', DATE '2024-11-12', 4000.00),
        (9,  'Black Friday 2024',         2, NULL, 'acquisition', DATE '2024-11-15', DATE '2024-12-02', 6000.00),
        (10, 'Holiday Gift Guide 2024',   3, NULL, 'awareness',   DATE '2024-11-25', DATE '2024-12-24', 3500.00),
        (11, 'Spring Sale 2025',          4, NULL, 'retention',   DATE '2025-03-15', DATE '2025-04-15', 150.00),
        (12, 'Douyin Shop Launch',        3, 5,    'awareness',   DATE '2025-03-01', DATE '2025-04-30', 3000.00),
        (13, 'Back to School 2025',       2, 1,    'acquisition', DATE '2025-08-01', DATE '2025-09-10', 2400.00),
        (14, 'Singles Day 2025',          3, 5,    'acquisition', DATE '2025-10-20', DATE '2025-11-12', 9000.00),
        (15, 'Black Friday 2025',         2, NULL, 'acquisition', DATE '2025-11-14', DATE '2025-12-01', 7000.00),
        (16, 'Holiday Gift Guide 2025',   3, NULL, 'awareness',   DATE '2025-11-24', DATE '2025-12-24', 4000.00)
    ) t(campaign_id, campaign_name, channel_id, region_id, objective, start_date, end_date, daily_budget_usd)
), gen AS (
    SELECT CAST(k AS INTEGER) AS campaign_id,
           CASE WHEN u01(k, 'c-global') < 0.2 THEN NULL ELSE CAST(1 + pick(k, 'c-region', 9) AS INTEGER) END AS region_id,
           [2, 3, 5, 6, 4][1 + pick(k, 'c-channel', 5)] AS channel_id,
           ['Outdoor Push', 'Audio Week', 'New Arrivals', 'Loyalty Rewards', 'Work From Home',
            'Summer Sale', 'Gift Ideas', 'Flash Sale', 'App Install', 'Win-back'][1 + pick(k, 'c-theme', 10)] AS theme,
           DATE '2024-01-08' + CAST(pick(k, 'c-start', 690) AS INTEGER) AS start_date,
           CAST(14 + pick(k, 'c-duration', 75) AS INTEGER) AS days,
           CAST(round(150 + 2000 * pow(u01(k, 'c-budget'), 1.5), 0) AS DECIMAL(12, 2)) AS daily_budget_usd
    FROM range(17, 65) t(k)
), all_campaigns AS (
    SELECT * FROM fixed
    UNION ALL
    SELECT g.campaign_id,
           coalesce(r.region_name, 'Global') || ' ' || g.theme || ' ' || strftime(g.start_date, '%b %Y'),
           g.channel_id, g.region_id,
           CASE WHEN g.theme IN ('Loyalty Rewards', 'Win-back') THEN 'retention'
                WHEN g.theme IN ('New Arrivals', 'App Install') THEN 'awareness'
                ELSE 'acquisition' END,
           g.start_date, g.start_date + g.days, g.daily_budget_usd
    FROM gen g LEFT JOIN p_regions r USING (region_id)
)
SELECT campaign_id, campaign_name,
       lower(regexp_replace(campaign_name, '[^A-Za-z0-9]+', '_', 'g')) || '_' || campaign_id,
       channel_id, region_id, objective, start_date, end_date, daily_budget_usd
FROM all_campaigns
ORDER BY campaign_id;

------------------------------------------------------------------------------
-- ad spend: one row per campaign and day, synced by the flaky marketing_ad_spend_sync DAG;
-- a day whose sync never succeeded has no rows at all
------------------------------------------------------------------------------
CREATE TABLE marketing.ad_spend (
    campaign_id INTEGER NOT NULL REFERENCES marketing.campaigns (campaign_id),
    spend_date  DATE NOT NULL,
    impressions BIGINT NOT NULL,
    clicks      BIGINT NOT NULL,
    spend_usd   DECIMAL(12, 2) NOT NULL,
    PRIMARY KEY (campaign_id, spend_date)
);

INSERT INTO marketing.ad_spend
WITH synced AS (
    SELECT DISTINCT CAST(logical_date AS DATE) AS day
    FROM platform.dag_runs
    WHERE dag_id = 'marketing_ad_spend_sync' AND state = 'success'
), s AS (
    SELECT c.campaign_id, d.day, c.channel_id,
           money(c.daily_budget_usd
                 * CASE WHEN month(d.day) IN (11, 12) THEN 1.35 ELSE 1.0 END
                 * (0.75 + 0.5 * u01x(c.campaign_id, d.day, 'spend'))) AS spend_usd
    FROM marketing.campaigns c
    JOIN p_days d ON d.day >= c.start_date AND d.day <= coalesce(c.end_date, DATE '2025-12-31')
    JOIN synced USING (day)
    WHERE c.channel_id <> 4
), imp AS (
    SELECT s.*,
           CAST(round(1000 * spend_usd / CASE channel_id WHEN 2 THEN 12.0 WHEN 3 THEN 7.0 WHEN 5 THEN 5.0 ELSE 3.0 END
                      * (0.8 + 0.4 * u01x(campaign_id, day, 'cpm')), 0) AS BIGINT) AS impressions
    FROM s
)
SELECT campaign_id, day, impressions,
       CAST(round(impressions * CASE channel_id WHEN 2 THEN 0.035 WHEN 3 THEN 0.012 WHEN 5 THEN 0.02 ELSE 0.004 END
                  * (0.7 + 0.6 * u01x(campaign_id, day, 'ctr')), 0) AS BIGINT),
       spend_usd
FROM imp
ORDER BY campaign_id, day;

------------------------------------------------------------------------------
-- sessions: every converting session, plus a 1-in-10 sample of the others
------------------------------------------------------------------------------
CREATE TEMP TABLE p_campaign_day AS
SELECT d.day, r.region_id, c.channel_id, list(c.campaign_id ORDER BY c.campaign_id) AS campaign_ids
FROM p_days d
CROSS JOIN p_regions r
JOIN marketing.campaigns c
  ON c.start_date <= d.day AND (c.end_date IS NULL OR c.end_date >= d.day)
 AND (c.region_id IS NULL OR c.region_id = r.region_id)
GROUP BY d.day, r.region_id, c.channel_id;

CREATE TEMP TABLE t_sessions AS
WITH conv AS (
    SELECT o.day, o.region_id, 1 AS kind, o.order_id AS key, hash(o.ok, 'session') AS sk,
           o.customer_id, o.order_id, o.order_ts AS anchor_ts
    FROM t_orders2 o
    WHERE o.store_channel <> 'marketplace'  -- marketplace checkouts never touch our site
), browse0 AS (
    SELECT rd.day, rd.region_id, 0 AS kind, k AS key, hash(rd.day, rd.region_id, k, 'browse') AS sk
    FROM p_region_day rd,
         unnest(range(CAST(round(rd.n_orders * (3.3 + 0.6 * u01x(rd.day, rd.region_id, 'browse/day'))) AS BIGINT))) u(k)
), browse AS (
    SELECT b.day, b.region_id, b.kind, b.key, b.sk, c.customer_id, NULL::BIGINT AS order_id,
           ts_of(b.day, 3600 * ((h.hour - r.utc_offset_hours + 24) % 24) + floor(3600 * u01(b.sk, 'second'))) AS anchor_ts
    FROM browse0 b
    JOIN p_regions r USING (region_id)
    JOIN p_avail a ON a.region_id = b.region_id AND a.day = b.day
    ASOF JOIN p_hours h ON u01(b.sk, 'hour') >= h.lo
    LEFT JOIN t_customers c
           ON c.region_id = b.region_id
          AND c.idx = CASE WHEN u01(b.sk, 'logged-in') < 0.3 THEN CAST(floor(a.avail * u01(b.sk, 'customer')) AS BIGINT) END
), s AS (
    SELECT *, u01(sk, 'channel') AS u_ch, u01(sk, 'bounce') < 0.45 AND kind = 0 AS bounced
    FROM (SELECT * FROM conv UNION ALL SELECT * FROM browse)
), ch AS (
    SELECT s.*,
           CASE WHEN kind = 1 THEN
               CASE WHEN u_ch < 0.26 THEN 1 WHEN u_ch < 0.50 THEN 7 WHEN u_ch < 0.70 THEN 2 WHEN u_ch < 0.78 THEN 3
                    WHEN u_ch < 0.90 THEN 4 WHEN u_ch < 0.97 THEN 5 ELSE 6 END
           ELSE
               CASE WHEN u_ch < 0.31 THEN 1 WHEN u_ch < 0.49 THEN 7 WHEN u_ch < 0.66 THEN 2 WHEN u_ch < 0.82 THEN 3
                    WHEN u_ch < 0.87 THEN 4 WHEN u_ch < 0.93 THEN 5 ELSE 6 END
           END AS channel_id,
           CASE
               WHEN bounced THEN CAST(floor(40 * u01(sk, 'duration')) AS INTEGER)
               WHEN kind = 0 THEN CAST(30 + floor(870 * pow(u01(sk, 'duration'), 1.6)) AS INTEGER)
               ELSE CAST(180 + floor(2200 * u01(sk, 'duration')) AS INTEGER)
           END AS duration_seconds
    FROM s
)
SELECT ch.*,
       CASE WHEN ch.channel_id IN (2, 3, 4, 5, 6) AND u01(ch.sk, 'utm-lost') >= 0.08
            THEN cd.campaign_ids[1 + pick(ch.sk, 'campaign', len(cd.campaign_ids))] END AS campaign_id,
       CASE WHEN kind = 1 THEN anchor_ts - to_seconds(CAST(duration_seconds AS BIGINT)) ELSE anchor_ts END AS started_at
FROM ch
LEFT JOIN p_campaign_day cd ON cd.day = ch.day AND cd.region_id = ch.region_id AND cd.channel_id = ch.channel_id
-- Stored in this order, so rowid numbers the sessions by start time: cheaper than a
-- row_number() window over half a million wide rows.
ORDER BY started_at, region_id, kind, key;

CREATE TABLE marketing.sessions (
    session_id       BIGINT NOT NULL,
    started_at       TIMESTAMP NOT NULL,
    region_id        INTEGER NOT NULL,
    customer_id      BIGINT,
    channel_id       INTEGER NOT NULL,
    campaign_id      INTEGER,
    referrer         VARCHAR,
    landing_page     VARCHAR NOT NULL,
    device           VARCHAR NOT NULL,
    pageviews        INTEGER NOT NULL,
    duration_seconds INTEGER NOT NULL,
    order_id         BIGINT,
    sample_weight    INTEGER NOT NULL
);

INSERT INTO marketing.sessions
SELECT rowid + 1,
       started_at, region_id, customer_id, channel_id, campaign_id,
       CASE channel_id
           WHEN 1 THEN CASE
               WHEN u01(sk, 'ref-null') < 0.12 THEN NULL
               WHEN region_id = 5 THEN 'https://www.baidu.com/'
               ELSE ['https://www.google.com/', 'https://www.google.com/', 'https://www.google.com/',
                     'https://www.google.com/', 'https://www.google.com/', 'https://www.google.com/',
                     'https://www.bing.com/', 'https://duckduckgo.com/'][1 + pick(sk, 'ref', 8)] END
           WHEN 2 THEN CASE WHEN region_id = 5 THEN 'https://www.baidu.com/' ELSE 'https://www.google.com/' END
           WHEN 3 THEN CASE
               WHEN region_id = 5 THEN ['https://www.douyin.com/', 'https://weibo.com/', 'https://www.xiaohongshu.com/'][1 + pick(sk, 'ref', 3)]
               ELSE ['https://www.instagram.com/', 'https://www.tiktok.com/', 'https://www.facebook.com/',
                     'https://www.youtube.com/', 'https://www.reddit.com/', 'https://t.co/'][1 + pick(sk, 'ref', 6)] END
           WHEN 5 THEN ['https://www.nytimes.com/wirecutter/', 'https://www.techradar.com/', 'https://www.rtings.com/',
                        'https://www.idealo.de/', 'https://kakaku.com/'][1 + pick(sk, 'ref', 5)]
           WHEN 6 THEN CASE WHEN u01(sk, 'ref-null') < 0.6 THEN NULL ELSE 'https://googleads.g.doubleclick.net/' END
       END,
       CASE
           WHEN channel_id = 7 THEN CASE WHEN u01(sk, 'lp') < 0.7 THEN '/' ELSE '/account/orders' END
           WHEN channel_id IN (2, 5, 6) OR (channel_id = 1 AND u01(sk, 'lp') < 0.5)
               OR (channel_id = 3 AND u01(sk, 'lp') < 0.6)
               THEN '/products/' || (1 + pick(sk, 'lp-product', 360))
           WHEN channel_id = 1 AND u01(sk, 'lp') < 0.8
               THEN '/category/' || ['audio', 'wearables', 'home', 'kitchen', 'outdoor', 'accessories', 'computing', 'toys'][1 + pick(sk, 'lp-cat', 8)]
           WHEN channel_id = 1 THEN '/blog/' || ['gift-guide', 'best-earbuds', 'home-office-setup', 'camping-checklist'][1 + pick(sk, 'lp-blog', 4)]
           ELSE '/sale'
       END,
       CASE
           WHEN u01(sk, 'device') < CASE WHEN region_id = 5 THEN 0.80 ELSE 0.55 END THEN 'mobile'
           WHEN u01(sk, 'device') < 0.93 THEN 'desktop'
           ELSE 'tablet'
       END,
       CASE WHEN bounced THEN 1
            WHEN kind = 0 THEN CAST(2 + floor(10 * pow(u01(sk, 'pages'), 2)) AS INTEGER)
            ELSE CAST(4 + floor(20 * pow(u01(sk, 'pages'), 1.5)) AS INTEGER) END,
       duration_seconds, order_id,
       CASE WHEN kind = 1 THEN 1 ELSE 10 END
FROM t_sessions;

ALTER TABLE marketing.sessions ADD PRIMARY KEY (session_id);

------------------------------------------------------------------------------
-- documentation
------------------------------------------------------------------------------
COMMENT ON TABLE marketing.channels IS 'Acquisition channels that classify sessions, campaigns and customers.';
COMMENT ON COLUMN marketing.channels.channel_id IS 'Channel id (primary key).';
COMMENT ON COLUMN marketing.channels.channel_name IS 'Channel name: organic_search, paid_search, social, email, affiliate, display or direct.';
COMMENT ON COLUMN marketing.channels.is_paid IS 'True when traffic from the channel is bought (has media spend in marketing.ad_spend).';
COMMENT ON COLUMN marketing.channels.description IS 'What traffic the channel covers.';

COMMENT ON TABLE marketing.campaigns IS 'Marketing campaigns with their channel, target region and daily budget; always-on campaigns have no end date.';
COMMENT ON COLUMN marketing.campaigns.campaign_id IS 'Campaign id (primary key).';
COMMENT ON COLUMN marketing.campaigns.campaign_name IS 'Human-readable campaign name, e.g. Black Friday 2025, Singles Day 2025.';
COMMENT ON COLUMN marketing.campaigns.utm_campaign IS 'Value of the utm_campaign URL parameter that tags the campaign''s traffic.';
COMMENT ON COLUMN marketing.campaigns.channel_id IS 'Channel the campaign runs on; references marketing.channels.';
COMMENT ON COLUMN marketing.campaigns.region_id IS 'Target region (sales.regions.region_id); NULL for global campaigns.';
COMMENT ON COLUMN marketing.campaigns.objective IS 'Campaign goal: acquisition (new customers), retention (existing customers) or awareness.';
COMMENT ON COLUMN marketing.campaigns.start_date IS 'First day of the campaign.';
COMMENT ON COLUMN marketing.campaigns.end_date IS 'Last day of the campaign; NULL for always-on campaigns. May lie after the warehouse snapshot.';
COMMENT ON COLUMN marketing.campaigns.daily_budget_usd IS 'Planned media spend per day in USD; actual spend is in marketing.ad_spend.';

COMMENT ON TABLE marketing.ad_spend IS 'Daily paid-media spend, impressions and clicks per campaign, loaded by the flaky marketing_ad_spend_sync DAG: days on which that DAG never succeeded have no rows at all. Email campaigns have no media spend.';
COMMENT ON COLUMN marketing.ad_spend.campaign_id IS 'Campaign the spend belongs to; references marketing.campaigns.';
COMMENT ON COLUMN marketing.ad_spend.spend_date IS 'Day of the spend (UTC).';
COMMENT ON COLUMN marketing.ad_spend.impressions IS 'Times the ads were shown that day.';
COMMENT ON COLUMN marketing.ad_spend.clicks IS 'Clicks on the ads that day.';
COMMENT ON COLUMN marketing.ad_spend.spend_usd IS 'Media cost that day in USD (marketing spend, cost per click = spend_usd / clicks).';

COMMENT ON TABLE marketing.sessions IS 'Visits to our own web shops and apps. Every session that ended in an order is kept, other sessions are a 1-in-10 sample: weight by sample_weight when counting traffic. Marketplace orders (Amazon, Tmall...) have no session.';
COMMENT ON COLUMN marketing.sessions.session_id IS 'Session id (primary key); increases with start time.';
COMMENT ON COLUMN marketing.sessions.started_at IS 'When the visit started (UTC).';
COMMENT ON COLUMN marketing.sessions.region_id IS 'Region of the visitor (sales.regions.region_id).';
COMMENT ON COLUMN marketing.sessions.customer_id IS 'Logged-in customer (sales.customers.customer_id); NULL for anonymous visitors.';
COMMENT ON COLUMN marketing.sessions.channel_id IS 'Acquisition channel of the visit (marketing.channels.channel_id).';
COMMENT ON COLUMN marketing.sessions.campaign_id IS 'Campaign from the visit''s UTM tags (marketing.campaigns.campaign_id); NULL when no campaign brought the visit (organic search, direct, organic social) and for about 8% of campaign visits whose tags were lost.';
COMMENT ON COLUMN marketing.sessions.referrer IS 'Referring URL; NULL for direct and email traffic and whenever the browser withheld it.';
COMMENT ON COLUMN marketing.sessions.landing_page IS 'Path of the first page viewed, e.g. /, /sale, /products/42.';
COMMENT ON COLUMN marketing.sessions.device IS 'Device type: mobile, desktop or tablet.';
COMMENT ON COLUMN marketing.sessions.pageviews IS 'Pages viewed during the visit; 1 means the visitor bounced.';
COMMENT ON COLUMN marketing.sessions.duration_seconds IS 'Length of the visit in seconds.';
COMMENT ON COLUMN marketing.sessions.order_id IS 'Order placed during the visit (sales.orders.order_id); NULL when the visit did not convert.';
COMMENT ON COLUMN marketing.sessions.sample_weight IS 'Real sessions this row stands for: 1 for converting sessions, 10 for sampled non-converting ones. Conversion rate = count(order_id) / sum(sample_weight).';

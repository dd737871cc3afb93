-- 02_sales.sql — the online shop: regions, storefronts, customers, products,
-- orders, order lines and refunds, plus the calendar with the fiscal year.

------------------------------------------------------------------------------
-- calendar
------------------------------------------------------------------------------
CREATE TABLE sales.calendar (
    date_day       DATE PRIMARY KEY,
    year           INTEGER NOT NULL,
    quarter        INTEGER NOT NULL,
    month          INTEGER NOT NULL,
    month_name     VARCHAR NOT NULL,
    iso_week       INTEGER NOT NULL,
    day_of_week    INTEGER NOT NULL,
    day_name       VARCHAR NOT NULL,
    is_weekend     BOOLEAN NOT NULL,
    fiscal_year    INTEGER NOT NULL,
    fiscal_quarter INTEGER NOT NULL,
    fiscal_month   INTEGER NOT NULL,
    holiday_name   VARCHAR
);

INSERT INTO sales.calendar
WITH d AS (
    SELECT CAST(t.d AS DATE) AS d
    FROM range(DATE '2023-01-01', DATE '2027-01-01', INTERVAL 1 DAY) t(d)
), f AS (
    SELECT d, ((month(d) + 10) % 12) + 1 AS fiscal_month FROM d
)
SELECT d, year(d), quarter(d), month(d), monthname(d), weekofyear(d), isodow(d), dayname(d),
       isodow(d) >= 6,
       CASE WHEN month(d) >= 2 THEN year(d) ELSE year(d) - 1 END,
       (fiscal_month - 1) // 3 + 1,
       fiscal_month,
       CASE
           WHEN month(d) = 1 AND day(d) = 1 THEN 'New Year''s Day'
           WHEN d IN (DATE '2023-01-22', DATE '2024-02-10', DATE '2025-01-29', DATE '2026-02-17')
               THEN 'Lunar New Year'
           WHEN month(d) = 11 AND day(d) = 11 THEN 'Singles'' Day'
           WHEN month(d) = 11 AND isodow(d) = 5 AND day(d) BETWEEN 23 AND 29 THEN 'Black Friday'
           WHEN isodow(d) = 1 AND month(d - 3) = 11 AND day(d - 3) BETWEEN 23 AND 29
               THEN 'Cyber Monday'
           WHEN month(d) = 12 AND day(d) = 25 THEN 'Christmas Day'
           WHEN month(d) = 12 AND day(d) = 26 THEN 'Boxing Day'
       END
FROM f
ORDER BY d;

------------------------------------------------------------------------------
-- regions and storefronts
------------------------------------------------------------------------------
CREATE TABLE sales.regions (
    region_id        INTEGER PRIMARY KEY,
    region_name      VARCHAR NOT NULL UNIQUE,
    macro_region     VARCHAR NOT NULL,
    hq_country       VARCHAR NOT NULL,
    currency_code    VARCHAR NOT NULL,
    utc_offset_hours INTEGER NOT NULL,
    launched_on      DATE NOT NULL
);

INSERT INTO sales.regions
SELECT region_id, region_name, macro_region, hq_country, currency_code, utc_offset_hours, launched_on
FROM p_regions ORDER BY region_id;

CREATE TEMP TABLE p_stores AS
SELECT * FROM (VALUES
    (1,  1, 'Astro US Web',          'web',         'own_site',      DATE '2019-03-01', NULL::DATE, 50),
    (2,  1, 'Astro US App',          'app',         'own_app',       DATE '2020-05-01', NULL, 30),
    (3,  1, 'Amazon US',             'marketplace', 'amazon',        DATE '2021-02-01', NULL, 20),
    (4,  2, 'Astro DE Web',          'web',         'own_site',      DATE '2019-09-01', NULL, 35),
    (5,  2, 'Astro FR Web',          'web',         'own_site',      DATE '2020-04-01', NULL, 25),
    (6,  2, 'Astro EU App',          'app',         'own_app',       DATE '2021-01-15', NULL, 20),
    (7,  2, 'Zalando',               'marketplace', 'zalando',       DATE '2022-03-01', NULL, 20),
    (8,  3, 'Astro UK Web',          'web',         'own_site',      DATE '2019-06-01', NULL, 60),
    (9,  3, 'Astro UK App',          'app',         'own_app',       DATE '2021-01-15', NULL, 25),
    (10, 3, 'Amazon UK',             'marketplace', 'amazon',        DATE '2021-06-01', NULL, 15),
    (11, 4, 'Astro Nordics Web',     'web',         'own_site',      DATE '2021-04-01', NULL, 70),
    (12, 4, 'Astro Nordics App',     'app',         'own_app',       DATE '2022-02-01', DATE '2025-06-30', 30),
    (13, 5, 'Astro CN Mini Program', 'app',         'wechat_mini_program', DATE '2023-09-01', NULL, 35),
    (14, 5, 'Tmall Flagship Store',  'marketplace', 'tmall',         DATE '2023-09-01', NULL, 45),
    (15, 5, 'JD.com Store',          'marketplace', 'jd',            DATE '2024-06-01', NULL, 30),
    (16, 5, 'Douyin Shop',           'marketplace', 'douyin',        DATE '2025-03-01', NULL, 25),
    (17, 6, 'Astro JP Web',          'web',         'own_site',      DATE '2020-10-01', NULL, 40),
    (18, 6, 'Rakuten Ichiba',        'marketplace', 'rakuten',       DATE '2021-09-01', NULL, 35),
    (19, 6, 'Astro KR Web',          'web',         'own_site',      DATE '2022-08-01', NULL, 25),
    (20, 7, 'Astro SG Web',          'web',         'own_site',      DATE '2021-11-01', NULL, 40),
    (21, 7, 'Shopee',                'marketplace', 'shopee',        DATE '2022-05-01', NULL, 40),
    (22, 7, 'Lazada',                'marketplace', 'lazada',        DATE '2023-02-01', NULL, 20),
    (23, 8, 'Astro BR Web',          'web',         'own_site',      DATE '2022-01-10', NULL, 45),
    (24, 8, 'Mercado Libre',         'marketplace', 'mercado_libre', DATE '2022-06-01', NULL, 55),
    (25, 9, 'Astro AU Web',          'web',         'own_site',      DATE '2020-02-01', NULL, 75),
    (26, 9, 'Amazon AU',             'marketplace', 'amazon',        DATE '2022-11-01', NULL, 25)
) t(store_id, region_id, store_name, channel, platform, opened_on, closed_on, weight);

CREATE TABLE sales.stores (
    store_id   INTEGER PRIMARY KEY,
    region_id  INTEGER NOT NULL REFERENCES sales.regions (region_id),
    store_name VARCHAR NOT NULL,
    channel    VARCHAR NOT NULL,
    platform   VARCHAR NOT NULL,
    opened_on  DATE NOT NULL,
    closed_on  DATE
);

INSERT INTO sales.stores
SELECT store_id, region_id, store_name, channel, platform, opened_on, closed_on
FROM p_stores ORDER BY store_id;

------------------------------------------------------------------------------
-- how many orders each region takes each day
------------------------------------------------------------------------------
CREATE TEMP TABLE p_region_day AS
SELECT d.day, r.region_id,
       CAST(round(
           r.base_orders * pow(r.growth, d.years)
           * [0.97, 0.95, 0.96, 0.98, 1.00, 1.07, 1.12][isodow(d.day)]
           * [0.86, 0.80, 0.92, 0.95, 0.98, 0.96, 0.93, 0.95, 0.99, 1.04, 1.38, 1.55][month(d.day)]
           * CASE
                 WHEN c.holiday_name = 'Singles'' Day' THEN
                     CASE r.region_id WHEN 5 THEN 4.5 WHEN 7 THEN 2.2 ELSE 1.1 END
                 WHEN c.holiday_name = 'Black Friday' THEN CASE WHEN r.region_id = 5 THEN 1.2 ELSE 3.0 END
                 WHEN c.holiday_name = 'Cyber Monday' THEN CASE WHEN r.region_id = 5 THEN 1.1 ELSE 2.1 END
                 WHEN c.holiday_name = 'Christmas Day' THEN CASE WHEN r.culture = 'western' THEN 0.45 ELSE 0.9 END
                 WHEN c.holiday_name = 'Lunar New Year' THEN CASE WHEN r.region_id = 5 THEN 0.5 ELSE 0.95 END
                 WHEN month(d.day) = 12 AND day(d.day) >= 27 THEN 0.8
                 ELSE 1.0
             END
           * (0.85 + 0.30 * u01x(d.day, r.region_id, 'orders/day'))
       ) AS INTEGER) AS n_orders
FROM p_days d
CROSS JOIN p_regions r
JOIN sales.calendar c ON c.date_day = d.day;

-- The customer base grows with the cumulative order volume: on each day only the
-- first `avail` customers of a region exist, so nobody orders before signing up.
CREATE TEMP TABLE p_region_pool AS
SELECT r.region_id, t.total,
       CAST(ceil(t.total / 3.2) AS BIGINT) AS pool,
       CAST(floor(ceil(t.total / 3.2) * r.initial_share) AS BIGINT) AS initial
FROM p_regions r
JOIN (SELECT region_id, sum(n_orders) AS total FROM p_region_day GROUP BY region_id) t USING (region_id);

CREATE TEMP TABLE p_avail AS
WITH cum AS (
    SELECT rd.region_id, rd.day,
           sum(rd.n_orders) OVER (PARTITION BY rd.region_id ORDER BY rd.day) AS cum_orders
    FROM p_region_day rd
)
SELECT c.region_id, c.day,
       greatest(1, p.initial + CAST(floor((p.pool - p.initial) * c.cum_orders / p.total) AS BIGINT)) AS avail
FROM cum c JOIN p_region_pool p USING (region_id);

------------------------------------------------------------------------------
-- customers
------------------------------------------------------------------------------
CREATE TEMP TABLE t_customers AS
WITH c AS (
    SELECT p.region_id, i.idx
    FROM p_region_pool p, unnest(range(p.pool)) i(idx)
), first_day AS (
    SELECT region_id, avail, min(day) AS day FROM p_avail GROUP BY region_id, avail
), dated AS (
    SELECT c.region_id, c.idx,
           CASE
               WHEN c.idx < p.initial THEN
                   r.launched_on + CAST(floor(u01x(c.region_id, c.idx, 'signup/old')
                                       * (DATE '2024-01-01' - r.launched_on)) AS INTEGER)
               ELSE f.day - 1
           END AS signup_day
    FROM c
    JOIN p_region_pool p USING (region_id)
    JOIN p_regions r USING (region_id)
    ASOF LEFT JOIN first_day f ON c.region_id = f.region_id AND c.idx < f.avail
)
SELECT row_number() OVER (ORDER BY signup_at, region_id, idx) AS customer_id, *
FROM (
    SELECT region_id, idx, signup_day,
           ts_of(signup_day, floor(86400 * u01x(region_id, idx, 'signup/time'))) AS signup_at
    FROM dated
);

CREATE TABLE sales.customers (
    customer_id         BIGINT NOT NULL,
    region_id           INTEGER NOT NULL REFERENCES sales.regions (region_id),
    first_name          VARCHAR NOT NULL,
    last_name           VARCHAR NOT NULL,
    email               VARCHAR,
    phone               VARCHAR,
    signup_at           TIMESTAMP NOT NULL,
    acquisition_channel VARCHAR NOT NULL,
    segment             VARCHAR NOT NULL,
    birth_year          INTEGER,
    marketing_opt_in    BOOLEAN NOT NULL,
    is_test             BOOLEAN NOT NULL
);

INSERT INTO sales.customers
WITH base AS (
    SELECT c.customer_id, c.region_id, c.signup_at, r.phone_prefix, r.culture,
           u01(c.customer_id, 'test') < 0.002 AS is_test,
           pick(c.customer_id, 'first', n.n_first) AS fi,
           pick(c.customer_id, 'last', n.n_last) AS li,
           pick(c.customer_id, 'domain', n.n_domain) AS di
    FROM t_customers c
    JOIN p_regions r USING (region_id)
    JOIN p_name_counts n USING (culture)
), named AS (
    SELECT b.*, f.name AS first_name, f.slug AS first_slug, l.name AS last_name, l.slug AS last_slug,
           d.name AS domain
    FROM base b
    JOIN p_name_parts f ON f.culture = b.culture AND f.part = 'first' AND f.i = b.fi
    JOIN p_name_parts l ON l.culture = b.culture AND l.part = 'last' AND l.i = b.li
    JOIN p_name_parts d ON d.culture = b.culture AND d.part = 'domain' AND d.i = b.di
)
SELECT customer_id, region_id,
       CASE WHEN is_test THEN 'Test' ELSE first_name END,
       CASE WHEN is_test THEN 'Account' ELSE last_name END,
       CASE
           WHEN is_test THEN 'qa+' || customer_id || '@astro-test.internal'
           -- most East China shoppers sign up with a phone number only
           WHEN region_id = 5 AND u01(customer_id, 'email') < 0.45 THEN NULL
           ELSE first_slug || '.' || last_slug || (customer_id % 997) || '@' || domain
       END,
       CASE
           WHEN region_id <> 5 AND u01(customer_id, 'phone') < 0.40 THEN NULL
           ELSE phone_prefix || ' ' || lpad(CAST(h(customer_id, 'phone#') % 1000000000 AS VARCHAR), 9, '0')
       END,
       signup_at,
       CASE
           WHEN u01(customer_id, 'acq') < 0.30 THEN 'organic_search'
           WHEN u01(customer_id, 'acq') < 0.48 THEN 'paid_search'
           WHEN u01(customer_id, 'acq') < 0.63 THEN 'social'
           WHEN u01(customer_id, 'acq') < 0.70 THEN 'affiliate'
           WHEN u01(customer_id, 'acq') < 0.75 THEN 'email'
           WHEN u01(customer_id, 'acq') < 0.80 THEN 'display'
           ELSE 'direct'
       END,
       CASE WHEN u01(customer_id, 'segment') < 0.08 THEN 'business' ELSE 'consumer' END,
       CASE
           WHEN u01(customer_id, 'birth') < 0.55 THEN NULL
           ELSE 1950 + CAST(floor(55 * pow(u01(customer_id, 'birth#'), 0.8)) AS INTEGER)
       END,
       u01(customer_id, 'optin') < 0.62,
       is_test
FROM named
ORDER BY customer_id;

ALTER TABLE sales.customers ADD PRIMARY KEY (customer_id);

------------------------------------------------------------------------------
-- products
------------------------------------------------------------------------------
CREATE TEMP TABLE p_categories AS
SELECT * FROM (VALUES
    ('Audio',       'AUD', 19, 399, 0.42, ['Wireless Earbuds', 'Headphones', 'Bluetooth Speaker', 'Soundbar', 'Turntable', 'Studio Monitor']),
    ('Wearables',   'WRB', 39, 499, 0.45, ['Smartwatch', 'Fitness Band', 'Smart Ring', 'Sleep Tracker', 'Sport Watch']),
    ('Home',        'HOM', 15, 299, 0.38, ['Desk Lamp', 'Air Purifier', 'Smart Plug', 'Throw Blanket', 'Wall Clock', 'Aroma Diffuser']),
    ('Kitchen',     'KIT', 12, 249, 0.40, ['Pour-Over Kettle', 'Chef Knife', 'Blender', 'Coffee Grinder', 'Cast Iron Pan', 'Espresso Cups']),
    ('Outdoor',     'OUT', 19, 349, 0.44, ['Daypack', 'Camping Lantern', 'Water Bottle', 'Trekking Poles', 'Hammock', 'Rain Shell']),
    ('Accessories', 'ACC',  9,  89, 0.30, ['Phone Case', 'USB-C Cable', 'Laptop Sleeve', 'Card Wallet', 'Charging Stand', 'Screen Protector']),
    ('Computing',   'CMP', 29, 899, 0.55, ['Mechanical Keyboard', 'Wireless Mouse', 'Monitor Arm', 'USB-C Hub', 'Portable SSD', 'Webcam']),
    ('Toys',        'TOY',  9, 129, 0.35, ['Building Set', 'Jigsaw Puzzle', 'Plush Rocket', 'Stunt Kite', 'Board Game', 'Science Kit'])
) t(category, code, min_price, max_price, cost_ratio, nouns);

CREATE TABLE sales.products (
    product_id      INTEGER PRIMARY KEY,
    sku             VARCHAR NOT NULL UNIQUE,
    product_name    VARCHAR NOT NULL,
    category        VARCHAR NOT NULL,
    list_price      DECIMAL(12, 2) NOT NULL,
    unit_cost       DECIMAL(12, 2) NOT NULL,
    weight_kg       DECIMAL(8, 3),
    launched_on     DATE NOT NULL,
    discontinued_on DATE
);

INSERT INTO sales.products
WITH p AS (
    SELECT i AS product_id,
           (SELECT list(category ORDER BY category) FROM p_categories)[1 + pick(i, 'category', 8)] AS category
    FROM range(1, 361) t(i)
)
SELECT p.product_id,
       c.code || '-' || lpad(CAST(p.product_id AS VARCHAR), 5, '0'),
       ['Nova', 'Aero', 'Pulse', 'Terra', 'Lumen', 'Orbit', 'Zenith', 'Vega', 'Flux', 'Echo',
        'Comet', 'Halo', 'Nimbus', 'Atlas', 'Solis', 'Ion'][1 + pick(p.product_id, 'line', 16)]
           || ' ' || c.nouns[1 + pick(p.product_id, 'noun', len(c.nouns))]
           || ['', '', '', ' Mini', ' Pro', ' Max', ' Lite', ' Plus', ' II', ' SE'][1 + pick(p.product_id, 'variant', 10)],
       p.category,
       CAST(round(c.min_price + (c.max_price - c.min_price) * pow(u01(p.product_id, 'price'), 3), 0) - 0.01
            AS DECIMAL(12, 2)) AS list_price,
       money((round(c.min_price + (c.max_price - c.min_price) * pow(u01(p.product_id, 'price'), 3), 0) - 0.01)
             * c.cost_ratio * (0.85 + 0.3 * u01(p.product_id, 'cost'))),
       CASE WHEN u01(p.product_id, 'weight') < 0.06 THEN NULL
            ELSE CAST(round(0.05 + 8 * pow(u01(p.product_id, 'weight#'), 2.5), 3) AS DECIMAL(8, 3)) END,
       CASE WHEN p.product_id <= 300
            THEN DATE '2019-06-01' + CAST(floor(1600 * u01(p.product_id, 'launch')) AS INTEGER)
            ELSE DATE '2024-01-15' + CAST((p.product_id - 301) * 11 AS INTEGER) END,
       CASE WHEN p.product_id BETWEEN 201 AND 300 AND u01(p.product_id, 'disc') < 0.25
            THEN DATE '2024-02-01' + CAST(floor(650 * u01(p.product_id, 'disc#')) AS INTEGER) END
FROM p JOIN p_categories c USING (category)
ORDER BY p.product_id;

------------------------------------------------------------------------------
-- orders (attributes that do not depend on the lines)
------------------------------------------------------------------------------
CREATE TEMP TABLE p_store_day AS
SELECT d.day, s.region_id, s.store_id, s.channel,
       coalesce(sum(s.weight) OVER w_before, 0) / sum(s.weight) OVER w_all AS lo
FROM p_days d
JOIN p_stores s ON s.opened_on <= d.day AND (s.closed_on IS NULL OR s.closed_on >= d.day)
WINDOW w_before AS (PARTITION BY d.day, s.region_id ORDER BY s.store_id
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
       w_all AS (PARTITION BY d.day, s.region_id);

CREATE TEMP TABLE t_orders_by_time AS
WITH o AS (
    SELECT rd.day, rd.region_id, k, hash(rd.day, rd.region_id, k) AS ok
    FROM p_region_day rd, unnest(range(rd.n_orders)) u(k)
), timed AS (
    SELECT o.*, r.utc_offset_hours,
           u01(ok, 'store') AS u_store, u01(ok, 'hour') AS u_hour
    FROM o JOIN p_regions r USING (region_id)
), placed AS (
    SELECT t.day, t.region_id, t.k, t.ok, s.store_id, s.channel AS store_channel,
           ts_of(t.day, 3600 * ((h.hour - t.utc_offset_hours + 24) % 24)
                        + floor(3600 * u01(t.ok, 'second'))) AS order_ts
    FROM timed t
    ASOF JOIN p_store_day s ON s.day = t.day AND s.region_id = t.region_id AND t.u_store >= s.lo
    ASOF JOIN p_hours h ON t.u_hour >= h.lo
), cust AS (
    SELECT p.*, c.customer_id
    FROM placed p
    JOIN p_avail a ON a.region_id = p.region_id AND a.day = p.day
    JOIN t_customers c ON c.region_id = p.region_id
                      AND c.idx = CAST(floor(a.avail * u01(p.ok, 'customer')) AS BIGINT)
), lagged AS (
    SELECT cust.*,
           order_ts + to_seconds(CAST(
               CASE WHEN store_channel = 'marketplace' AND u01(ok, 'late') < 0.15
                    THEN 86400 + 172800 * u01(ok, 'late#')  -- marketplace feeds arrive 1-3 days late
                    ELSE 1200 + 4200 * u01(ok, 'load') END AS BIGINT)) AS loaded_at,
           order_ts + to_seconds(CAST(3600 * CASE WHEN region_id = 5
                                                 THEN 2 + 22 * u01(ok, 'ship')
                                                 ELSE 6 + 60 * pow(u01(ok, 'ship'), 1.5) END AS BIGINT)) AS ship_ts,
           u01(ok, 'status') AS u_status,
           u01(ok, 'coupon') AS u_coupon
    FROM cust
)
SELECT lagged.*,
       ship_ts + to_seconds(CAST(3600 * (24 + 120 * u01(ok, 'deliver')) AS BIGINT)) AS deliver_ts,
       cal.holiday_name
FROM lagged
JOIN sales.calendar cal ON cal.date_day = lagged.day
WHERE loaded_at <= snapshot_at()
ORDER BY order_ts, region_id, k;

-- Stored by time, so rowid numbers the orders chronologically (cheaper than a window).
CREATE TEMP TABLE t_orders AS
SELECT rowid + 1 AS order_id, * FROM t_orders_by_time;

CREATE TEMP TABLE t_orders2 AS
SELECT o.*,
       CASE
           WHEN o.u_status < 0.045 THEN 'cancelled'
           WHEN o.u_status < 0.048 THEN 'pending'  -- abandoned payment, never cleaned up
           WHEN o.ship_ts > snapshot_at() THEN 'pending'
           WHEN o.deliver_ts > snapshot_at() THEN 'shipped'
           WHEN o.u_status < 0.085
                AND o.deliver_ts + to_seconds(CAST(86400 * 20 AS BIGINT)) <= snapshot_at() THEN 'refunded'
           ELSE 'completed'
       END AS status,
       CASE
           WHEN o.holiday_name IN ('Black Friday', 'Cyber Monday') AND o.u_coupon < 0.45
               THEN 'BF' || year(o.day)
           WHEN o.holiday_name = 'Singles'' Day' AND o.region_id IN (5, 7) AND o.u_coupon < 0.55
               THEN 'SINGLES11'
           WHEN o.u_coupon < 0.04 THEN 'WELCOME10'
           WHEN o.u_coupon < 0.07 THEN 'FREESHIP'
           WHEN o.u_coupon < 0.09 THEN 'VIP20'
           WHEN o.u_coupon < 0.12 AND month(o.day) IN (3, 4, 5) THEN 'SPRING15'
       END AS coupon_code,
       CASE
           WHEN o.region_id = 5 THEN CASE WHEN u01(o.ok, 'pay') < 0.56 THEN 'alipay'
                                          WHEN u01(o.ok, 'pay') < 0.95 THEN 'wechat_pay'
                                          ELSE 'card' END
           WHEN u01(o.ok, 'pay') < 0.62 THEN 'card'
           WHEN u01(o.ok, 'pay') < 0.84 THEN 'paypal'
           WHEN u01(o.ok, 'pay') < 0.94 THEN 'apple_pay'
           ELSE CASE WHEN o.region_id IN (2, 4) THEN 'klarna' ELSE 'bank_transfer' END
       END AS payment_method
FROM t_orders o;

------------------------------------------------------------------------------
-- order lines
------------------------------------------------------------------------------
CREATE TEMP TABLE t_items AS
WITH n AS (
    SELECT order_id, ok, day, coupon_code,
           CASE
               WHEN u01(ok, 'lines') < 0.30 THEN 1
               WHEN u01(ok, 'lines') < 0.58 THEN 2
               WHEN u01(ok, 'lines') < 0.76 THEN 3
               WHEN u01(ok, 'lines') < 0.88 THEN 4
               WHEN u01(ok, 'lines') < 0.95 THEN 5
               ELSE 6
           END AS n_lines
    FROM t_orders2
), l AS (
    SELECT n.order_id, n.day, n.coupon_code, CAST(line AS INTEGER) AS line_number,
           hash(n.ok, line) AS lk
    FROM n, unnest(range(1, n.n_lines + 1)) u(line)
), chosen AS (
    SELECT l.*,
           CASE WHEN p.launched_on <= l.day AND (p.discontinued_on IS NULL OR p.discontinued_on > l.day)
                THEN p.product_id
                ELSE 1 + pick(l.lk, 'fallback', 200) END AS product_id
    FROM l
    JOIN sales.products p ON p.product_id = 1 + CAST(floor(360 * pow(u01(l.lk, 'product'), 1.9)) AS INTEGER)
)
SELECT c.order_id, c.line_number, c.product_id,
       CAST(CASE
           WHEN u01(c.lk, 'qty') < 0.82 THEN 1
           WHEN u01(c.lk, 'qty') < 0.94 THEN 2
           WHEN u01(c.lk, 'qty') < 0.98 THEN 3
           ELSE 4 + pick(c.lk, 'qty#', 3)
       END AS INTEGER) AS quantity,
       -- list prices went up about 4% on 2025-03-01; earlier lines carry the old price
       CASE WHEN c.day < DATE '2025-03-01'
            THEN CAST(floor(p.list_price / 1.04) + 0.99 AS DECIMAL(12, 2))
            ELSE p.list_price END AS unit_price,
       CASE c.coupon_code
           WHEN 'WELCOME10' THEN 0.10 WHEN 'VIP20' THEN 0.20 WHEN 'SPRING15' THEN 0.15
           WHEN 'SINGLES11' THEN 0.15 WHEN 'BF2024' THEN 0.20 WHEN 'BF2025' THEN 0.20
           ELSE 0.0
       END AS discount_rate
FROM chosen c
JOIN sales.products p USING (product_id);

CREATE TEMP TABLE t_subtotals AS
SELECT order_id, sum(line_amount) AS subtotal
FROM (
    SELECT order_id,
           quantity * unit_price - money(quantity * unit_price * discount_rate) AS line_amount
    FROM t_items
)
GROUP BY order_id;

CREATE TABLE sales.orders (
    order_id       BIGINT NOT NULL,
    customer_id    BIGINT NOT NULL REFERENCES sales.customers (customer_id),
    store_id       INTEGER NOT NULL REFERENCES sales.stores (store_id),
    order_ts       TIMESTAMP NOT NULL,
    order_date     DATE NOT NULL,
    status         VARCHAR NOT NULL,
    payment_method VARCHAR NOT NULL,
    coupon_code    VARCHAR,
    subtotal       DECIMAL(12, 2) NOT NULL,
    shipping_fee   DECIMAL(12, 2) NOT NULL,
    total_amount   DECIMAL(12, 2) NOT NULL,
    shipped_at     TIMESTAMP,
    delivered_at   TIMESTAMP,
    loaded_at      TIMESTAMP NOT NULL
);

INSERT INTO sales.orders
WITH fee AS (
    SELECT o.*, s.subtotal,
           CAST(CASE
               WHEN o.region_id = 5 OR s.subtotal >= 50 OR o.coupon_code = 'FREESHIP' THEN 0
               WHEN o.region_id IN (6, 9) THEN 6.99
               ELSE 4.99
           END AS DECIMAL(12, 2)) AS shipping_fee
    FROM t_orders2 o JOIN t_subtotals s USING (order_id)
)
SELECT order_id, customer_id, store_id, order_ts, CAST(order_ts AS DATE), status, payment_method,
       coupon_code, subtotal, shipping_fee, subtotal + shipping_fee,
       CASE WHEN status IN ('shipped', 'completed', 'refunded') THEN ship_ts END,
       CASE WHEN status = 'refunded' THEN deliver_ts
            -- the carrier never confirmed delivery for a few parcels
            WHEN status = 'completed' AND u01(ok, 'no-pod') >= 0.03 THEN deliver_ts END,
       loaded_at
FROM fee
ORDER BY order_id;

-- Keys are added after the bulk load: building the index once is cheaper than row by row.
ALTER TABLE sales.orders ADD PRIMARY KEY (order_id);

CREATE TABLE sales.order_items (
    order_id        BIGINT NOT NULL REFERENCES sales.orders (order_id),
    line_number     INTEGER NOT NULL,
    product_id      INTEGER NOT NULL REFERENCES sales.products (product_id),
    quantity        INTEGER NOT NULL,
    unit_price      DECIMAL(12, 2) NOT NULL,
    discount_amount DECIMAL(12, 2) NOT NULL,
    line_amount     DECIMAL(12, 2) NOT NULL
);

INSERT INTO sales.order_items
SELECT order_id, line_number, product_id, quantity, unit_price,
       money(quantity * unit_price * discount_rate),
       quantity * unit_price - money(quantity * unit_price * discount_rate)
FROM t_items
ORDER BY order_id, line_number;

ALTER TABLE sales.order_items ADD PRIMARY KEY (order_id, line_number);

------------------------------------------------------------------------------
-- refunds: full refunds of 'refunded' orders plus partial refunds of completed ones
------------------------------------------------------------------------------
CREATE TABLE sales.refunds (
    refund_id   BIGINT PRIMARY KEY,
    order_id    BIGINT NOT NULL REFERENCES sales.orders (order_id),
    refunded_at TIMESTAMP NOT NULL,
    amount      DECIMAL(12, 2) NOT NULL,
    is_partial  BOOLEAN NOT NULL,
    reason      VARCHAR NOT NULL
);

INSERT INTO sales.refunds
WITH r AS (
    SELECT o.order_id, o.status = 'completed' AS is_partial,
           t.deliver_ts + to_seconds(CAST(86400 * (1 + 19 * u01(t.ok, 'refund-lag')) AS BIGINT)) AS refunded_at,
           CASE WHEN o.status = 'refunded' THEN o.subtotal
                ELSE money(o.subtotal * (0.1 + 0.4 * u01(t.ok, 'refund-share'))) END AS amount,
           CASE WHEN o.status = 'refunded'
                THEN ['changed_mind', 'defective', 'wrong_item', 'late_delivery', 'not_as_described']
                     [1 + pick(t.ok, 'reason', 5)]
                ELSE ['damaged', 'missing_item', 'price_adjustment', 'late_delivery'][1 + pick(t.ok, 'reason', 4)]
           END AS reason
    FROM sales.orders o
    JOIN t_orders2 t USING (order_id)
    WHERE o.status = 'refunded' OR (o.status = 'completed' AND u01(t.ok, 'partial') < 0.025)
)
SELECT row_number() OVER (ORDER BY refunded_at, order_id), order_id, refunded_at, amount, is_partial, reason
FROM r
WHERE refunded_at <= snapshot_at()
ORDER BY 1;

------------------------------------------------------------------------------
-- documentation
------------------------------------------------------------------------------
COMMENT ON TABLE sales.calendar IS 'Date dimension, one row per day from 2023-01-01 to 2026-12-31, with the fiscal calendar (fiscal year starts 1 February) and the retail holidays that move sales. Join on sales.orders.order_date = date_day.';
COMMENT ON COLUMN sales.calendar.date_day IS 'The calendar date (primary key).';
COMMENT ON COLUMN sales.calendar.year IS 'Calendar year.';
COMMENT ON COLUMN sales.calendar.quarter IS 'Calendar quarter, 1-4.';
COMMENT ON COLUMN sales.calendar.month IS 'Calendar month, 1-12.';
COMMENT ON COLUMN sales.calendar.month_name IS 'English month name, e.g. November.';
COMMENT ON COLUMN sales.calendar.iso_week IS 'ISO-8601 week number (weeks start on Monday).';
COMMENT ON COLUMN sales.calendar.day_of_week IS 'ISO day of week: 1 = Monday ... 7 = Sunday.';
COMMENT ON COLUMN sales.calendar.day_name IS 'English day name, e.g. Friday.';
COMMENT ON COLUMN sales.calendar.is_weekend IS 'True on Saturdays and Sundays.';
COMMENT ON COLUMN sales.calendar.fiscal_year IS 'Fiscal year, named after the calendar year in which it starts: FY2025 runs from 2025-02-01 to 2026-01-31, so January belongs to the previous fiscal year.';
COMMENT ON COLUMN sales.calendar.fiscal_quarter IS 'Fiscal quarter 1-4; Q1 is February-April, Q4 is November-January.';
COMMENT ON COLUMN sales.calendar.fiscal_month IS 'Fiscal month 1-12; 1 is February, 12 is January.';
COMMENT ON COLUMN sales.calendar.holiday_name IS 'Retail event or holiday that moves sales: Black Friday, Cyber Monday, Singles'' Day (11 Nov, huge in East China), Christmas Day, Boxing Day, Lunar New Year, New Year''s Day. NULL on ordinary days.';

COMMENT ON TABLE sales.regions IS 'Sales regions the shop sells to; every storefront and customer belongs to one. East China (launched September 2023) is by far the fastest-growing region.';
COMMENT ON COLUMN sales.regions.region_id IS 'Region id (primary key).';
COMMENT ON COLUMN sales.regions.region_name IS 'Region name, e.g. North America, Western Europe, East China.';
COMMENT ON COLUMN sales.regions.macro_region IS 'Continent-level grouping used in board reporting: Americas, EMEA or APAC.';
COMMENT ON COLUMN sales.regions.hq_country IS 'ISO 3166 country code of the regional office, e.g. US, DE, CN.';
COMMENT ON COLUMN sales.regions.currency_code IS 'Currency customers pay in locally (ISO 4217); every amount in this warehouse is already converted to USD.';
COMMENT ON COLUMN sales.regions.utc_offset_hours IS 'Offset of the region''s main time zone from UTC in hours; all timestamps in the warehouse are UTC.';
COMMENT ON COLUMN sales.regions.launched_on IS 'Date the region started taking orders.';

COMMENT ON TABLE sales.stores IS 'Storefronts that take orders: our own web shops and apps, and our shops on marketplaces such as Amazon, Tmall, JD.com, Rakuten or Mercado Libre. An order''s region is its store''s region.';
COMMENT ON COLUMN sales.stores.store_id IS 'Storefront id (primary key).';
COMMENT ON COLUMN sales.stores.region_id IS 'Region the storefront sells to; references sales.regions.';
COMMENT ON COLUMN sales.stores.store_name IS 'Display name of the storefront, e.g. Astro US Web, Tmall Flagship Store.';
COMMENT ON COLUMN sales.stores.channel IS 'Storefront type: web (our own site), app (our mobile app or WeChat mini program) or marketplace (a third-party marketplace shop).';
COMMENT ON COLUMN sales.stores.platform IS 'Platform the storefront runs on: own_site, own_app, wechat_mini_program, amazon, zalando, tmall, jd, douyin, rakuten, shopee, lazada or mercado_libre.';
COMMENT ON COLUMN sales.stores.opened_on IS 'Date the storefront started taking orders.';
COMMENT ON COLUMN sales.stores.closed_on IS 'Date the storefront stopped taking orders; NULL while it is open (only the Nordics app closed, on 2025-06-30).';

COMMENT ON TABLE sales.customers IS 'Registered customer accounts, one row each, including internal QA test accounts (is_test) that must be excluded from revenue and customer counts. Contains personal data (names, email, phone).';
COMMENT ON COLUMN sales.customers.customer_id IS 'Customer account id (primary key); increases with signup time.';
COMMENT ON COLUMN sales.customers.region_id IS 'Home region of the customer; references sales.regions.';
COMMENT ON COLUMN sales.customers.first_name IS 'Given name (personal data).';
COMMENT ON COLUMN sales.customers.last_name IS 'Family name (personal data).';
COMMENT ON COLUMN sales.customers.email IS 'Email address (personal data); NULL for the East China customers who registered with a phone number only, about 45% of them.';
COMMENT ON COLUMN sales.customers.phone IS 'Phone number with international prefix (personal data); optional outside East China and NULL for about 40% of those customers.';
COMMENT ON COLUMN sales.customers.signup_at IS 'When the account was created (UTC).';
COMMENT ON COLUMN sales.customers.acquisition_channel IS 'Marketing channel that first brought the customer in; values are marketing.channels.channel_name (organic_search, paid_search, social, email, affiliate, display, direct).';
COMMENT ON COLUMN sales.customers.segment IS 'Customer segment: consumer or business (companies buying with an invoice).';
COMMENT ON COLUMN sales.customers.birth_year IS 'Self-reported year of birth; optional at signup, NULL for about 55% of customers.';
COMMENT ON COLUMN sales.customers.marketing_opt_in IS 'True when the customer agreed to receive marketing email.';
COMMENT ON COLUMN sales.customers.is_test IS 'True for internal QA test accounts (emails ending in @astro-test.internal); their orders are not real and are excluded from revenue.';

COMMENT ON TABLE sales.products IS 'Product catalogue: every product ever sold, with its category, current list price and unit cost.';
COMMENT ON COLUMN sales.products.product_id IS 'Product id (primary key).';
COMMENT ON COLUMN sales.products.sku IS 'Stock keeping unit: category code plus product id, e.g. AUD-00042.';
COMMENT ON COLUMN sales.products.product_name IS 'Product name as shown in the shop, e.g. Nova Wireless Earbuds Pro.';
COMMENT ON COLUMN sales.products.category IS 'Product category: Audio, Wearables, Home, Kitchen, Outdoor, Accessories, Computing or Toys.';
COMMENT ON COLUMN sales.products.list_price IS 'Current list price per unit in USD. Prices rose about 4% on 2025-03-01; for what customers actually paid use sales.order_items.unit_price.';
COMMENT ON COLUMN sales.products.unit_cost IS 'Landed cost per unit in USD (cost of goods sold); gross margin = line_amount - quantity * unit_cost.';
COMMENT ON COLUMN sales.products.weight_kg IS 'Shipping weight in kilograms; NULL where the supplier never provided it.';
COMMENT ON COLUMN sales.products.launched_on IS 'Date the product went on sale.';
COMMENT ON COLUMN sales.products.discontinued_on IS 'Date the product stopped being sold; NULL while it is active.';

COMMENT ON TABLE sales.orders IS 'Customer orders across all storefronts, one row per order (header level; lines are in sales.order_items). Revenue is not total_amount: net revenue is the subtotal of completed and shipped orders minus partial refunds, excluding test customers (see the sales.daily_revenue view).';
COMMENT ON COLUMN sales.orders.order_id IS 'Order id (primary key); increases with order time.';
COMMENT ON COLUMN sales.orders.customer_id IS 'Customer who placed the order; references sales.customers.';
COMMENT ON COLUMN sales.orders.store_id IS 'Storefront the order was placed in; references sales.stores. The order''s region is the store''s region.';
COMMENT ON COLUMN sales.orders.order_ts IS 'When the order was placed (UTC timestamp).';
COMMENT ON COLUMN sales.orders.order_date IS 'UTC calendar date of order_ts; the date revenue is reported on.';
COMMENT ON COLUMN sales.orders.status IS 'Order status: pending (placed, not shipped yet; also abandoned payments), shipped (in transit), completed (delivered), cancelled (cancelled before shipping, never revenue) or refunded (fully refunded after delivery, not revenue).';
COMMENT ON COLUMN sales.orders.payment_method IS 'How the customer paid: card, paypal, apple_pay, klarna, bank_transfer, alipay or wechat_pay.';
COMMENT ON COLUMN sales.orders.coupon_code IS 'Coupon applied at checkout (WELCOME10, VIP20, SPRING15, FREESHIP, BF2024, BF2025, SINGLES11); NULL when no coupon was used.';
COMMENT ON COLUMN sales.orders.subtotal IS 'Merchandise value after coupon discounts in USD, excluding shipping: the sum of sales.order_items.line_amount. The order''s gross revenue before refunds.';
COMMENT ON COLUMN sales.orders.shipping_fee IS 'Shipping charged in USD; 0 for orders of $50 or more, East China orders and FREESHIP coupons. Not counted as revenue.';
COMMENT ON COLUMN sales.orders.total_amount IS 'Amount charged to the customer in USD: subtotal + shipping_fee. Not net revenue (includes shipping, ignores refunds and cancellations).';
COMMENT ON COLUMN sales.orders.shipped_at IS 'When the parcel left the warehouse (UTC); NULL for pending and cancelled orders.';
COMMENT ON COLUMN sales.orders.delivered_at IS 'When the carrier confirmed delivery (UTC); NULL for pending, shipped and cancelled orders, and for about 3% of completed orders whose delivery was never confirmed.';
COMMENT ON COLUMN sales.orders.loaded_at IS 'When the row arrived in the warehouse (UTC). Marketplace orders sometimes arrive 1-3 days late, so the last days before the snapshot are incomplete.';

COMMENT ON TABLE sales.order_items IS 'Order lines, one row per product in an order: the largest fact table. Join to sales.orders for date, status and store/region, and to sales.products for category.';
COMMENT ON COLUMN sales.order_items.order_id IS 'Order the line belongs to; references sales.orders.';
COMMENT ON COLUMN sales.order_items.line_number IS 'Position of the line within its order, starting at 1.';
COMMENT ON COLUMN sales.order_items.product_id IS 'Product sold; references sales.products.';
COMMENT ON COLUMN sales.order_items.quantity IS 'Units of the product ordered.';
COMMENT ON COLUMN sales.order_items.unit_price IS 'Price per unit at order time in USD, before discounts.';
COMMENT ON COLUMN sales.order_items.discount_amount IS 'Coupon discount on this line in USD.';
COMMENT ON COLUMN sales.order_items.line_amount IS 'Net line revenue in USD: quantity * unit_price - discount_amount.';

COMMENT ON TABLE sales.refunds IS 'Money returned to customers. An order with status refunded has one full refund; a completed order can also get a partial refund (is_partial) and keeps status completed, so revenue must subtract these.';
COMMENT ON COLUMN sales.refunds.refund_id IS 'Refund id (primary key); increases with refund time.';
COMMENT ON COLUMN sales.refunds.order_id IS 'Order being refunded; references sales.orders.';
COMMENT ON COLUMN sales.refunds.refunded_at IS 'When the refund was issued (UTC). Revenue reporting attributes refunds to the original order date, not to this date.';
COMMENT ON COLUMN sales.refunds.amount IS 'Refunded merchandise value in USD; shipping fees are never refunded.';
COMMENT ON COLUMN sales.refunds.is_partial IS 'True for a partial refund on a completed order; false for the full refund of an order with status refunded.';
COMMENT ON COLUMN sales.refunds.reason IS 'Refund reason code: changed_mind, defective, wrong_item, late_delivery, not_as_described, damaged, missing_item or price_adjustment.';

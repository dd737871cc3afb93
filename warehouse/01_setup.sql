-- 01_setup.sql — schemas, helper macros and generation parameters.
--
-- Helpers and parameter tables live in the temp catalog, so they never reach
-- the warehouse file. Every pseudo-random value is a hash of a stable key and a
-- salt (never random()), which makes the content identical on any thread count.

-- Row estimates after unnest(range(n)) are tiny, which would turn ASOF joins into
-- nested loops over millions of pairs.
SET asof_loop_join_threshold = 0;

-- hash(k, salt) alone is a poor generator: its low bits follow k's, and two salts
-- differ by a constant XOR, so the combined hash is hashed once more.
CREATE TEMP MACRO h(k, salt) AS hash(hash(k, salt));
CREATE TEMP MACRO u01(k, salt) AS (h(k, salt) % 1000000)::DOUBLE / 1e6;
CREATE TEMP MACRO u01x(k1, k2, salt) AS (hash(hash(k1, k2, salt)) % 1000000)::DOUBLE / 1e6;
-- The modulus is cast to UBIGINT: UBIGINT % BIGINT widens to HUGEINT and is ~20x slower.
CREATE TEMP MACRO pick(k, salt, n) AS (h(k, salt) % CAST(n AS UBIGINT))::BIGINT;
CREATE TEMP MACRO ts_of(d, secs) AS CAST(d AS TIMESTAMP) + to_seconds(CAST(secs AS BIGINT));
CREATE TEMP MACRO money(x) AS CAST(round(x, 2) AS DECIMAL(12, 2));
-- The moment the warehouse was last loaded; nothing happens after it.
CREATE TEMP MACRO snapshot_at() AS TIMESTAMP '2026-01-01 03:00:00';

CREATE SCHEMA sales;
CREATE SCHEMA marketing;
CREATE SCHEMA platform;

CREATE TEMP TABLE p_days AS
SELECT CAST(d AS DATE) AS day,
       (CAST(d AS DATE) - DATE '2024-01-01') / 365.25 AS years
FROM range(DATE '2024-01-01', DATE '2026-01-01', INTERVAL 1 DAY) t(d);

-- base_orders: orders per day in January 2024; growth: yearly multiplier;
-- initial_share: share of the eventual customer base that signed up before 2024.
CREATE TEMP TABLE p_regions AS
SELECT * FROM (VALUES
    (1, 'North America',  'Americas', 'US', 'USD', -5, DATE '2019-03-01', 39.0, 1.07, 0.35, 'western', '+1'),
    (2, 'Western Europe', 'EMEA',     'DE', 'EUR',  1, DATE '2019-09-01', 28.5, 1.05, 0.35, 'western', '+49'),
    (3, 'UK & Ireland',   'EMEA',     'GB', 'GBP',  0, DATE '2019-06-01', 15.5, 1.02, 0.35, 'western', '+44'),
    (4, 'Nordics',        'EMEA',     'SE', 'SEK',  1, DATE '2021-04-01', 6.8, 1.04, 0.30, 'western', '+46'),
    (5, 'East China',     'APAC',     'CN', 'CNY',  8, DATE '2023-09-01', 9.0, 2.50, 0.06, 'chinese', '+86'),
    (6, 'Japan & Korea',  'APAC',     'JP', 'JPY',  9, DATE '2020-10-01', 12.3, 1.06, 0.35, 'japanese', '+81'),
    (7, 'Southeast Asia', 'APAC',     'SG', 'SGD',  8, DATE '2021-11-01', 7.8, 1.20, 0.25, 'sea', '+65'),
    (8, 'Latin America',  'Americas', 'BR', 'BRL', -3, DATE '2022-01-10', 8.1, 1.12, 0.25, 'latin', '+55'),
    (9, 'Australia & NZ', 'APAC',     'AU', 'AUD', 10, DATE '2020-02-01', 5.3, 0.97, 0.40, 'western', '+61')
) t(region_id, region_name, macro_region, hq_country, currency_code, utc_offset_hours,
    launched_on, base_orders, growth, initial_share, culture, phone_prefix);

CREATE TEMP TABLE p_names AS
SELECT * FROM (VALUES
    ('western',
     ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David',
      'Elizabeth', 'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas',
      'Sarah', 'Daniel', 'Karen', 'Lukas', 'Emma', 'Noah', 'Olivia', 'Liam', 'Mia', 'Oliver',
      'Sofia', 'Elias', 'Hannah', 'Lars', 'Ingrid', 'Sven', 'Astrid', 'Chloe', 'Ethan', 'Grace',
      'Zoë', 'Renée', 'Jürgen'],
     ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Miller', 'Davis', 'Wilson', 'Taylor',
      'Anderson', 'Thomas', 'Moore', 'Martin', 'Müller', 'Schmidt', 'Schneider', 'Fischer',
      'Weber', 'Dubois', 'Bernard', 'Laurent', 'Murphy', 'Kelly', 'O''Brien', 'Andersson',
      'Johansson', 'Nielsen', 'Hansen', 'Walker', 'Clarke', 'Van der Berg', 'Lefèvre'],
     ['gmail.com', 'gmail.com', 'outlook.com', 'yahoo.com', 'icloud.com', 'proton.me', 'web.de']),
    ('chinese',
     ['Wei', 'Fang', 'Min', 'Jing', 'Li', 'Qiang', 'Lei', 'Jun', 'Yan', 'Ping', 'Hui', 'Xin',
      'Yu', 'Hao', 'Ying', 'Chen', 'Jie', 'Tao', 'Ming', 'Xiu', 'Lan', 'Bo', 'Yang', 'Hong',
      'Rui', 'Zihan', 'Yichen', 'Haoran', 'Xinyi', 'Yutong'],
     ['Wang', 'Li', 'Zhang', 'Liu', 'Chen', 'Yang', 'Huang', 'Zhao', 'Wu', 'Zhou', 'Xu', 'Sun',
      'Ma', 'Zhu', 'Hu', 'Guo', 'He', 'Lin', 'Luo', 'Gao'],
     ['qq.com', 'qq.com', '163.com', '126.com', 'sina.com']),
    ('japanese',
     ['Haruto', 'Yui', 'Sota', 'Hina', 'Yuto', 'Aoi', 'Ren', 'Sakura', 'Minjun', 'Seoyeon',
      'Jiho', 'Haeun', 'Daiki', 'Mei', 'Kenta', 'Yuna'],
     ['Sato', 'Suzuki', 'Takahashi', 'Tanaka', 'Watanabe', 'Ito', 'Yamamoto', 'Nakamura',
      'Kim', 'Lee', 'Park', 'Choi', 'Jung', 'Kang'],
     ['gmail.com', 'yahoo.co.jp', 'docomo.ne.jp', 'naver.com', 'icloud.com']),
    ('sea',
     ['Anh', 'Minh', 'Linh', 'Siti', 'Nur', 'Ahmad', 'Jose', 'Maria', 'Arif', 'Putri', 'Budi',
      'Somchai', 'Ploy', 'Rizal', 'Angel', 'Kai'],
     ['Nguyen', 'Tran', 'Le', 'Tan', 'Lim', 'Lee', 'Ong', 'Santos', 'Reyes', 'Cruz', 'Wijaya',
      'Santoso', 'Rahman', 'Abdullah', 'Chua'],
     ['gmail.com', 'yahoo.com', 'outlook.com', 'icloud.com']),
    ('latin',
     ['Ana', 'João', 'Maria', 'Pedro', 'Lucas', 'Gabriel', 'Juliana', 'Camila', 'Mateus',
      'Rafael', 'Beatriz', 'Larissa', 'Diego', 'Valentina', 'Santiago', 'Sofía'],
     ['Silva', 'Santos', 'Oliveira', 'Souza', 'Rodrigues', 'Ferreira', 'Alves', 'Pereira',
      'Lima', 'Gomes', 'Costa', 'Ribeiro', 'Martínez', 'González', 'López', 'Hernández'],
     ['gmail.com', 'hotmail.com', 'uol.com.br', 'outlook.com'])
) t(culture, first_names, last_names, email_domains);

-- Share of a region's daily orders placed in each local hour (online shopping peaks in the evening).
CREATE TEMP TABLE p_hours AS
WITH w(hour, weight) AS (
    SELECT * FROM (VALUES (0, 14), (1, 8), (2, 5), (3, 3), (4, 3), (5, 4), (6, 8), (7, 14),
        (8, 24), (9, 32), (10, 38), (11, 42), (12, 50), (13, 46), (14, 42), (15, 40), (16, 42),
        (17, 46), (18, 52), (19, 62), (20, 72), (21, 70), (22, 52), (23, 30)) v(hour, weight)
)
SELECT hour,
       coalesce(sum(weight) OVER (ORDER BY hour ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
           / sum(weight) OVER () AS lo
FROM w;

-- One row per name, so customers join scalars instead of indexing lists row by row.
CREATE TEMP TABLE p_name_parts AS
SELECT culture, part, i, name, lower(regexp_replace(strip_accents(name), '[^A-Za-z]', '', 'g')) AS slug
FROM (
    SELECT culture, 'first' AS part, generate_subscripts(first_names, 1) - 1 AS i, unnest(first_names) AS name FROM p_names
    UNION ALL
    SELECT culture, 'last', generate_subscripts(last_names, 1) - 1, unnest(last_names) FROM p_names
    UNION ALL
    SELECT culture, 'domain', generate_subscripts(email_domains, 1) - 1, unnest(email_domains) FROM p_names
);

CREATE TEMP TABLE p_name_counts AS
SELECT culture, len(first_names) AS n_first, len(last_names) AS n_last, len(email_domains) AS n_domain
FROM p_names;

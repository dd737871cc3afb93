"""A small shop catalog built in memory, for the shell, search and path tests."""

from __future__ import annotations

from pathlib import Path

import duckdb

SHOP_SQL = """
CREATE SCHEMA sales;
CREATE SCHEMA marketing;
CREATE SCHEMA "Odd Schema";
CREATE TABLE sales.regions (
    region_id INTEGER PRIMARY KEY,
    name VARCHAR NOT NULL,
    country VARCHAR
);
COMMENT ON TABLE sales.regions IS 'Sales regions used for territory reporting.';
COMMENT ON COLUMN sales.regions.name IS 'Region display name, e.g. East China.';
CREATE TABLE sales.customers (
    customer_id BIGINT PRIMARY KEY,
    full_name VARCHAR,
    email VARCHAR,
    region_id INTEGER REFERENCES sales.regions(region_id),
    signup_date DATE
);
COMMENT ON TABLE sales.customers IS 'One row per registered customer of the web shop.';
COMMENT ON COLUMN sales.customers.email IS 'Contact e-mail address.';
CREATE TABLE sales.orders (
    order_id BIGINT PRIMARY KEY,
    customer_id BIGINT NOT NULL REFERENCES sales.customers(customer_id),
    order_date DATE,
    total_amount DECIMAL(12, 2),
    status VARCHAR
);
COMMENT ON TABLE sales.orders IS 'One row per customer order placed on the web shop.';
COMMENT ON COLUMN sales.orders.total_amount IS 'Order total in CNY, including tax.';
COMMENT ON COLUMN sales.orders.status IS 'placed, shipped, delivered or cancelled.';
CREATE TABLE sales.order_items (
    order_id BIGINT REFERENCES sales.orders(order_id),
    line_no INTEGER,
    product_name VARCHAR,
    quantity INTEGER,
    PRIMARY KEY (order_id, line_no)
);
COMMENT ON TABLE sales.order_items IS 'Lines of each order: product and quantity.';
CREATE VIEW sales.revenue_by_region AS
    SELECT r.name AS region, sum(o.total_amount) AS revenue
    FROM sales.orders o JOIN sales.customers c USING (customer_id) JOIN sales.regions r USING (region_id)
    GROUP BY r.name;
COMMENT ON VIEW sales.revenue_by_region IS 'Revenue per region over all time.';
CREATE TABLE marketing.campaigns (
    campaign_id INTEGER PRIMARY KEY,
    campaign_name VARCHAR,
    channel VARCHAR,
    budget DECIMAL(12, 2)
);
COMMENT ON TABLE marketing.campaigns IS 'Advertising campaigns and their budgets.';
CREATE TABLE marketing.web_sessions (session_id BIGINT, campaign_id INTEGER, started_at TIMESTAMP);
COMMENT ON TABLE marketing.web_sessions IS 'Visits to the web shop, attributed to campaigns.';
CREATE TABLE "Odd Schema"."My Table" ("Order Date" DATE, "select" INTEGER, "CamelCase" VARCHAR);
COMMENT ON TABLE "Odd Schema"."My Table" IS 'A table whose name has a space.';
CREATE TABLE "Odd Schema"."weird.name" (x INTEGER);
CREATE TABLE "Odd Schema"."it's" (y INTEGER);
CREATE TABLE "Odd Schema"."UPPER" (z INTEGER);
CREATE TABLE "Odd Schema"."a/b" (w INTEGER);
INSERT INTO sales.regions VALUES (1, 'East China', 'CN'), (2, 'North China', 'CN'), (3, 'Bavaria', 'DE');
INSERT INTO sales.customers VALUES
    (10, 'Li Wei', 'li@example.com', 1, DATE '2024-01-02'),
    (11, 'Anna Maier', 'anna@example.de', 3, DATE '2024-02-03');
INSERT INTO sales.orders VALUES
    (100, 10, DATE '2024-03-01', 120.50, 'shipped'),
    (101, 11, DATE '2024-03-02', 80.00, 'placed'),
    (102, 10, DATE '2024-03-05', 15.25, 'cancelled');
INSERT INTO marketing.campaigns VALUES (1, 'Spring 50% off_sale', 'email', 1000);
"""


def make_shop(path: Path) -> Path:
    con = duckdb.connect(str(path))
    try:
        con.execute(SHOP_SQL)
    finally:
        con.close()
    return path

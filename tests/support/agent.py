"""The agent's tools over a small shop database, called as the model would."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

import duckdb

from astro_tui.agent.registry import ToolOutcome, ToolRegistry

_BUILT: list[Path] = []


def build_shop(path: Path) -> Path:
    """A copy of a small warehouse (two schemas, keys, comments, long text, an escape sequence).

    Each test gets its own file: DuckDB shares one instance per path in a process,
    and the data layer locks that instance's configuration.
    """
    if not _BUILT:
        folder = Path(tempfile.mkdtemp(prefix="astro-shop-"))
        atexit.register(shutil.rmtree, folder, True)
        _BUILT.append(_create_shop(folder / "shop.duckdb"))
    shutil.copyfile(_BUILT[0], path)
    return path


def _create_shop(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute(
        """
        CREATE SCHEMA sales;
        CREATE SCHEMA marketing;
        CREATE TABLE sales.customers(id INTEGER PRIMARY KEY, name VARCHAR, city VARCHAR);
        COMMENT ON TABLE sales.customers IS 'People who bought something';
        INSERT INTO sales.customers
            VALUES (1, 'Ada', 'Berlin'), (2, 'Grace', 'Paris'), (3, 'Linus', 'Berlin');
        CREATE TABLE sales.orders(
            id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES sales.customers(id),
            region VARCHAR, amount DECIMAL(10,2), ordered_at DATE, note VARCHAR);
        COMMENT ON COLUMN sales.orders.amount IS 'Order total in EUR';
        INSERT INTO sales.orders
            SELECT i, i % 3 + 1, ['north','south','east'][i % 3 + 1], i * 1.5,
                   DATE '2025-01-01' + i::INTEGER, repeat('x', 200)
            FROM range(1, 101) t(i);
        CREATE TABLE marketing.orders(id INTEGER, channel VARCHAR);
        INSERT INTO marketing.orders VALUES (1, e'\\x1b[31mred\\x1b[0m');
        """
    )
    con.close()
    return path


async def call(registry: ToolRegistry, name: str, **arguments: object) -> ToolOutcome:
    return await registry.invoke(registry.parse("c1", name, json.dumps(arguments)))

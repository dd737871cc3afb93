"""A small shop database with the awkward parts real catalogs have, for the catalog tests.

Comments, keys, a view, odd names (spaces, dots, quotes, capitals, a slash) and
a second schema; a few rows so `sample` and value search have something to read.
"""

from __future__ import annotations

import pytest

from astro_tui.catalog.introspect import load_catalog
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import Database
from tests.support.catalog import make_shop


@pytest.fixture(scope="module")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Database:
    path = make_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb")
    db = Database.open([str(path)], Settings())
    yield db
    db.close()


@pytest.fixture(scope="module")
def shop_catalog(shop_db: Database) -> Catalog:
    return load_catalog(shop_db)


def test_shop_catalog_loads_keys_comments_and_odd_names(shop_catalog: Catalog) -> None:
    orders = shop_catalog.find_table("sales.orders")
    assert orders is not None
    assert orders.primary_key == ("order_id",)
    assert orders.foreign_keys[0].ref_table == "customers"
    assert orders.column("total_amount").comment == "Order total in CNY, including tax."
    assert orders.row_count == 3
    view = shop_catalog.find_table("revenue_by_region")
    assert view is not None and view.kind == "view"
    assert [c.name for c in view.columns] == ["region", "revenue"]
    assert shop_catalog.find_table('"Odd Schema"."My Table"') is not None
    assert shop_catalog.find_table("odd schema.my table") is not None

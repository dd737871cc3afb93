"""search_metadata: lexical ranking of tables/columns, and keyword search inside the values."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.search import MetadataIndex, SearchHit, search_metadata
from astro_tui.catalog.vfs import display_name
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
from astro_tui.data.database import CancelToken, Database
from astro_tui.data.errors import QueryCancelled, QueryError, QueryTimeout
from tests.support import ROOT
from tests.support.catalog import make_shop

CONTEXT_NOTES = ROOT / "warehouse" / "context.md"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    with Database.open([str(make_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb"))], Settings()) as db:
        yield db


@pytest.fixture(scope="module")
def shop_index(shop: Database) -> MetadataIndex:
    return MetadataIndex(load_catalog(shop))


def names(hits: list[SearchHit]) -> list[str]:
    return [display_name(h.table) for h in hits]


def _catalog(*tables: Table) -> Catalog:
    schemas: dict[str, list[Table]] = {}
    for table in tables:
        schemas.setdefault(table.schema, []).append(table)
    return Catalog(tuple(Schema(None, s, tuple(ts)) for s, ts in schemas.items()))


def _t(schema: str, name: str, *columns: str, comment: str | None = None) -> Table:
    return Table(None, schema, name, "table", tuple(Column(c, "VARCHAR", True) for c in columns), comment)


# ranking --------------------------------------------------------------------------------------


def test_table_and_best_column(shop_index: MetadataIndex) -> None:
    hits = shop_index.search(["customer email"])
    assert names(hits)[0] == "sales.customers"
    assert hits[0].column == "email"
    assert hits[0].score > 0 and "name: customer" in hits[0].why and "email" in hits[0].why


def test_typos_plurals_and_synonyms(shop_index: MetadataIndex) -> None:
    assert names(shop_index.search(["custmer emial adress"]))[0] == "sales.customers"
    assert names(shop_index.search(["campaign budgets"]))[0] == "marketing.campaigns"
    assert names(shop_index.search(["clients"]))[0] == "sales.customers"
    assert names(shop_index.search(["regions"]))[0] == "sales.regions"


def test_identifier_splitting_and_compounds() -> None:
    index = MetadataIndex(
        _catalog(
            _t("app", "CustomerOrders", "orderID", "shippedAt"),
            _t("app", "order_items", "sku"),
            _t("app", "HTTPRequestLog", "statusCode"),
            _t("app", "misc", "x"),
        )
    )
    assert names(index.search(["customer orders"]))[0] == "app.CustomerOrders"
    assert names(index.search(["orderitems"]))[0] == "app.order_items"
    assert names(index.search(["http request status code"]))[0] == "app.HTTPRequestLog"
    assert index.search(["shipped at"])[0].column == "shippedAt"
    assert index.search(["nothing like it"]) == []


def test_context_notes_attach_to_the_tables_they_name() -> None:
    catalog = _catalog(_t("fin", "fx", "ccy", "mid"), _t("fin", "ledger", "amount"))
    notes = "# Notes\n\n- `fin.fx` holds the daily exchange rates from the central bank.\n- other stuff"
    assert MetadataIndex(catalog).search(["exchange rates central bank"]) == []
    hits = MetadataIndex(catalog, context_notes=notes).search(["exchange rates central bank"])
    assert names(hits)[0] == "fin.fx" and "context notes" in hits[0].why


def test_several_queries_are_combined(shop_index: MetadataIndex) -> None:
    hits = names(shop_index.search(["campaign budget", "customer email"], limit=3))
    assert {"marketing.campaigns", "sales.customers"} <= set(hits)
    assert len(shop_index.search(["order"], limit=2)) == 2


def test_search_metadata_text(shop_index: MetadataIndex, shop: Database) -> None:
    text = search_metadata(shop_index, shop, ["customer email"])
    lines = text.splitlines()
    assert lines[0] == 'tables and columns for "customer email", best first:'
    assert lines[1] == " 1. sales.customers  /sales/customers.table  (table, 2 rows)"
    assert "    best column: email VARCHAR — Contact e-mail address." in lines
    assert "values:" not in text
    assert search_metadata(shop_index, None, []).startswith("nothing to search")
    assert "no table or column matches" in search_metadata(shop_index, None, ["zzzz qqqq"])


# keywords in values ---------------------------------------------------------------------------


def test_keyword_finds_the_column_holding_the_value(shop_index: MetadataIndex, shop: Database) -> None:
    text = search_metadata(shop_index, shop, [], ["East China"])
    assert text.splitlines()[0] == "values:"
    assert "keyword 'East China' found in sales.regions.name (e.g. 'East China')" in text
    assert "scanned " in text


def test_keyword_like_escaping(shop_index: MetadataIndex, shop: Database) -> None:
    text = search_metadata(shop_index, shop, [], ["50% off", "off_s", "0%", "_", "it's", "x\\y"])
    assert "keyword '50% off' found in marketing.campaigns.campaign_name" in text
    assert "keyword 'off_s' found in marketing.campaigns.campaign_name" in text
    assert "keyword '0%' found in marketing.campaigns.campaign_name" in text
    assert "keyword '_' found in marketing.campaigns.campaign_name (e.g. 'Spring 50% off_sale')" in text
    assert "keyword 'it's' not found" in text
    assert "keyword 'x\\y' not found" in text


def test_keyword_typo_suggests_the_closest_value(shop_index: MetadataIndex, shop: Database) -> None:
    text = search_metadata(shop_index, shop, [], ["Bavria"])
    assert "keyword 'Bavria' not found" in text
    assert "closest value: 'Bavaria' in sales.regions.name" in text


def test_keyword_search_needs_a_database_and_respects_its_budget(
    shop_index: MetadataIndex, shop: Database
) -> None:
    assert "not searched for 'East China' (no database connected)" in search_metadata(
        shop_index, None, ["region"], ["East China"]
    )
    started = time.monotonic()
    text = search_metadata(shop_index, shop, [], ["East China"], time_budget_s=0.0)
    assert time.monotonic() - started < 1.0
    assert "value search stopped at its 0 s budget after 0 of " in text


class _FailingDatabase:
    """Batched queries fail after a while; each table alone then runs until its timeout."""

    from astro_tui.data.engines.duckdb.engine import DIALECT as dialect

    def __init__(self, batch_error: Exception, batch_s: float = 0.0) -> None:
        self.batch_error = batch_error
        self.batch_s = batch_s
        self.calls: list[tuple[float, float | None, object]] = []

    def execute(
        self, sql: str, *, row_cap: int | None = None, timeout: float | None = None, cancel: object = None
    ):
        self.calls.append((time.monotonic(), timeout, cancel))
        if " UNION ALL " in sql:
            time.sleep(self.batch_s)
            raise self.batch_error
        time.sleep(timeout or 0.0)
        raise QueryTimeout("timed out")


def test_value_search_retries_stay_within_the_budget(shop_index: MetadataIndex) -> None:
    db = _FailingDatabase(QueryError("one table is unreadable"), batch_s=0.4)
    started = time.monotonic()
    lines = shop_index.values().find(db, ["x"], time_budget_s=0.8)  # type: ignore[arg-type]
    took = time.monotonic() - started
    assert took < 0.8 + 0.25, took
    assert len(db.calls) >= 2 and all(at + t <= started + 0.8 + 0.01 for at, t, _ in db.calls if t)
    assert "value search stopped at its 0.8 s budget" in lines[-1]


def test_value_search_passes_the_cancel_token_and_stops_when_cancelled(shop_index: MetadataIndex) -> None:
    token = CancelToken()
    db = _FailingDatabase(QueryCancelled("query cancelled"))
    with pytest.raises(QueryCancelled):
        search_metadata(shop_index, db, [], ["x"], cancel=token)  # type: ignore[arg-type]
    assert [cancel for _, _, cancel in db.calls] == [token]


def test_queries_and_keywords_together(shop_index: MetadataIndex, shop: Database) -> None:
    text = search_metadata(shop_index, shop, ["region names"], ["North China"])
    head, _, values = text.partition("\n\nvalues:\n")
    assert " 1. sales.regions " in head
    assert "keyword 'North China' found in sales.regions.name" in values


# the sample warehouse: natural questions whose table must be in the top 3 ------------------------

QUESTIONS = [
    ("What was our net revenue by region last year?", "sales.daily_revenue"),
    ("How many orders were cancelled in 2025?", "sales.orders"),
    ("Which products sold the most units?", "sales.order_items"),
    ("Which product categories have the highest gross margin?", "sales.products"),
    ("What are the most common refund reasons?", "sales.refunds"),
    ("How many customers signed up each month?", "sales.customers"),
    ("Which customers have no email address?", "sales.customers"),
    ("How many test accounts are there?", "sales.customers"),
    ("Which storefronts are on marketplaces like Tmall or Amazon?", "sales.stores"),
    ("Revenue by fiscal quarter", "sales.calendar"),
    ("How did sales go on Black Friday and Singles Day?", "sales.calendar"),
    ("Which regions grow fastest?", "sales.regions"),
    ("What is the return on ad spend per campaign?", "marketing.campaign_performance"),
    ("How much did we spend on paid media per day?", "marketing.ad_spend"),
    ("Which acquisition channels are paid?", "marketing.channels"),
    ("What is the conversion rate of web sessions by device?", "marketing.sessions"),
    ("Which landing pages do visitors arrive on?", "marketing.sessions"),
    ("What is the daily budget of each campaign?", "marketing.campaigns"),
    ("Which pipelines fail most often?", "platform.dag_health"),
    ("Which DAG runs failed last week?", "platform.dag_runs"),
    ("Which airflow tasks take the longest to run?", "platform.task_instances"),
    ("Which DAGs are paused and who owns them?", "platform.dags"),
    ("How many retries does each task have?", "platform.tasks"),
    ("What payment methods do customers use?", "sales.orders"),
    ("Which coupon codes were used most?", "sales.orders"),
    ("Shipping fees charged per order", "sales.orders"),
    ("Average discount per order line", "sales.order_items"),
    ("custmer segmnets", "sales.customers"),
    ("Which worker hosts ran the failed tasks?", "platform.task_instances"),
    ("Traffic per campaign utm tag", "marketing.campaigns"),
]


@pytest.fixture(scope="module")
def warehouse_catalog(sample_db: Database) -> Catalog:
    return load_catalog(sample_db)


@pytest.fixture(scope="module", params=["without notes", "with notes"])
def warehouse_index(request: pytest.FixtureRequest, warehouse_catalog: Catalog) -> MetadataIndex:
    notes = CONTEXT_NOTES.read_text(encoding="utf-8") if request.param == "with notes" else ""
    return MetadataIndex(warehouse_catalog, context_notes=notes)


@pytest.mark.parametrize(("question", "table"), QUESTIONS, ids=[q for q, _ in QUESTIONS])
def test_warehouse_question_finds_its_table_in_the_top_3(
    warehouse_index: MetadataIndex, question: str, table: str
) -> None:
    ranked = names(warehouse_index.search([question], limit=3))
    assert table in ranked, f"{question!r}: {ranked}"


def test_warehouse_keyword_east_china_finds_the_region_name(
    warehouse_catalog: Catalog, sample_db: Database
) -> None:
    index = MetadataIndex(warehouse_catalog)
    text = search_metadata(index, sample_db, ["regions"], ["East China"], time_budget_s=10.0)
    values = text.partition("values:\n")[2]
    assert values.startswith("  keyword 'East China' found in sales.regions.region_name (e.g. 'East China')")


def test_optional_embedder_adds_meaning_and_failures_fall_back() -> None:
    catalog = _catalog(_t("fin", "ledger", "amount"), _t("fin", "people", "name"))

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if ("ledger" in t or "wealth" in t) else [0.0, 1.0] for t in texts]

    assert MetadataIndex(catalog).search(["wealth"]) == []
    assert names(MetadataIndex(catalog, embedder=embed).search(["wealth"]))[0] == "fin.ledger"

    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("no embeddings endpoint")

    index = MetadataIndex(catalog, embedder=broken)
    assert names(index.search(["amount"])) == ["fin.ledger"]
    assert index.embedder is None

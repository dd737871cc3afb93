"""The catalog read from a DuckDB file is kept on disk and used while the file is unchanged."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings, cache_dir
from astro_tui.data import catalog_cache
from astro_tui.data.catalog_model import Catalog, Schema, Table
from astro_tui.data.database import Database
from astro_tui.data.errors import TargetError
from tests.support.holders import holding_for_writing


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own: other tests of the session open files with the same names."""
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "catalogs"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute("COMMENT ON COLUMN customers.name IS 'Display name'")
    con.execute(
        "CREATE TABLE orders (id INTEGER, customer_id INTEGER REFERENCES customers(id), total DOUBLE)"
    )
    con.execute("CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100")
    con.close()
    return path


def _catalog(path: Path) -> Catalog:
    with Database.open([str(path)], Settings()) as db:
        return db.load_catalog()


def test_the_second_open_reads_the_same_catalog_from_the_cache(own_cache: Path, shop: Path) -> None:
    first = _catalog(shop)
    assert [p.suffix for p in own_cache.iterdir()] == [".pickle"]
    assert oct(next(own_cache.iterdir()).stat().st_mode & 0o777) == "0o600"
    assert oct(own_cache.stat().st_mode & 0o777) == "0o700"
    with Database.open([str(shop)], Settings()) as db:
        second = db.load_catalog()
        assert db.engine._pool.pids() == []  # type: ignore[attr-defined]  # no process opened the file
    assert second == first and second is not first
    orders = second.find_table("orders")
    assert orders is not None and orders.foreign_keys and orders.column("total") is not None
    customers = second.find_table("main.customers")
    assert customers is not None and customers.column("name").comment == "Display name"  # type: ignore[union-attr]


def test_a_cached_catalog_needs_no_connection_and_the_lock_is_still_reported(
    own_cache: Path, shop: Path
) -> None:
    expected = _catalog(shop)
    with holding_for_writing(shop), Database.open([str(shop)], Settings()) as db:
        assert db.load_catalog() == expected  # from the cache: DuckDB cannot open the file now
        with pytest.raises(TargetError, match="locked by another program"):
            db.ready()
        with pytest.raises(TargetError, match="locked by another program"):
            db.execute("select 1")


def test_a_file_changed_while_astro_has_it_open_is_read_again_on_reload(own_cache: Path, shop: Path) -> None:
    """The retry after a lock: the writer that held it added a table, then let go."""
    _catalog(shop)
    with Database.open([str(shop)], Settings()) as db:
        assert db.load_catalog().find_table("added") is None  # cached, no process holds the file
        con = duckdb.connect(str(shop))
        con.execute("CREATE TABLE added AS SELECT 1 AS a")
        con.close()
        assert db.load_catalog().find_table("added") is not None
        assert db.execute("SELECT a FROM added").rows() == [(1,)]


def test_an_entry_others_can_write_is_not_read(own_cache: Path, shop: Path, tmp_path: Path) -> None:
    expected = _catalog(shop)
    [entry] = own_cache.iterdir()
    planted = Catalog((Schema(None, "main", (expected.tables[0],), "planted words"),))
    entry.write_bytes(catalog_cache.dumps(planted))
    entry.chmod(0o666)
    assert _catalog(shop) == expected


def test_a_changed_file_is_read_again(own_cache: Path, shop: Path) -> None:
    assert _catalog(shop).find_table("refunds") is None
    con = duckdb.connect(str(shop))
    con.execute("CREATE TABLE refunds (id INTEGER, amount DOUBLE)")
    con.close()
    refunds = _catalog(shop).find_table("refunds")
    assert refunds is not None and [c.name for c in refunds.columns] == ["id", "amount"]


class _Planted:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_cache_entry_runs_nothing_and_the_catalog_is_read_again(
    own_cache: Path, shop: Path, tmp_path: Path
) -> None:
    expected = _catalog(shop)
    [entry] = own_cache.iterdir()
    marker = tmp_path / "ran"
    entry.write_bytes(pickle.dumps(_Planted(marker)))
    assert _catalog(shop) == expected
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="not part of the catalog model"):
        catalog_cache.loads(pickle.dumps(_Planted(marker)))


class _WithIndexes:
    """A cache entry naming only the model's classes whose pickled state sets a catalog's lookup
    indexes (in plain tuples and dicts: the indexes' own class is not one an entry may name)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __reduce__(self) -> tuple[object, ...]:
        indexes = ({}, {"orders": [self.table]}, {})
        return (Catalog, ((), (), True), ((), (), True, indexes))


def test_a_cache_entry_cannot_set_a_catalogs_lookup_indexes(own_cache: Path, shop: Path) -> None:
    expected = _catalog(shop)
    planted = Table(None, "main", "orders", "table", ())
    data = pickle.dumps(_WithIndexes(planted))
    with pytest.raises(TypeError, match="made by its constructor"):
        catalog_cache.loads(data)
    with pytest.raises(TypeError):
        Catalog((), _lookup=None)  # type: ignore[call-arg]
    [entry] = own_cache.iterdir()
    entry.write_bytes(data)
    assert _catalog(shop) == expected


def test_an_unwritable_cache_costs_only_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shop: Path
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(blocker))
    assert cache_dir() == blocker
    assert _catalog(shop).find_table("orders") is not None
    assert _catalog(shop).find_table("orders") is not None


def test_file_targets_are_not_cached(own_cache: Path, tmp_path: Path) -> None:
    csv = tmp_path / "rates.csv"
    csv.write_text("code,rate\nEUR,1.1\nUSD,1.0\n")
    assert _catalog(csv).find_table("rates") is not None
    assert not own_cache.exists() or not any(own_cache.iterdir())


def test_the_cache_keeps_the_newest_entries(own_cache: Path) -> None:
    data = catalog_cache.dumps(_empty_catalog())
    for n in range(40):
        catalog_cache.write(f"key {n}", data)
    assert len(list(own_cache.glob("*.pickle"))) == 32
    assert not list(own_cache.glob("*.tmp"))


def _empty_catalog() -> Catalog:
    return Catalog(())

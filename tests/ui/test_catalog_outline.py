"""The catalog in two phases (issue 27): schemas and tables first, the columns after.

A DuckDB file read for the first time gives an outline the tree and `ls` can show; its
columns refuse to be read until they are; everything that needs them waits for them and
gets the whole answer; the cache keeps what was read; a scope filters both phases.
"""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data import catalog_cache
from astro_tui.data.catalog_model import NOT_READ, ColumnsNotRead
from astro_tui.data.database import Database
from astro_tui.data.errors import TargetError
from astro_tui.session import CatalogLoaded, CatalogOutlined, Session, SessionEvent
from astro_tui.ui.panes.catalog import CatalogTree
from tests.support.ui import SIZE, make_app, plain, ready, wait_until
from tests.support.waiting import HANG_GUARD_S, wait_for


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache no other test has filled: every open here is a first open."""
    monkeypatch.setenv("ASTRO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "catalogs"


@pytest.fixture
def crm(tmp_path: Path) -> Path:
    path = tmp_path / "crm.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute("CREATE SCHEMA hr")
    con.execute("CREATE TABLE sales.customers (id INTEGER PRIMARY KEY, email VARCHAR, region VARCHAR)")
    con.execute("COMMENT ON TABLE sales.customers IS 'One row per customer'")
    con.execute("COMMENT ON COLUMN sales.customers.email IS 'Contact address'")
    con.execute(
        "CREATE TABLE sales.orders"
        " (id INTEGER, customer_id INTEGER REFERENCES sales.customers(id), total DOUBLE)"
    )
    con.execute("INSERT INTO sales.customers VALUES (1, 'a@example.com', 'north')")
    con.execute("CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE total > 100")
    con.execute("CREATE TABLE hr.salaries (employee VARCHAR, amount DOUBLE)")
    con.close()
    return path


def _hold_columns(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Every read of the whole catalog waits until the event returned is set."""
    from astro_tui.catalog import introspect

    release = threading.Event()
    read_columns = introspect.load_catalog

    def held(db: Database) -> object:
        assert release.wait(HANG_GUARD_S)
        return read_columns(db)

    monkeypatch.setattr(introspect, "load_catalog", held)
    return release


def _names(catalog) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.sql_name for t in catalog.tables]


def test_a_start_opens_once_and_its_first_listener_hears_it_all(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    """`astro` starts opening before Textual imports: the app's own open waits for that one,
    and the events that came before the app listened reach it, in order, once."""
    with Session([str(crm)], Settings(), state_dir=tmp_path) as session:
        session.start()
        session.open()
        catalog = session.catalog
        first: list[SessionEvent] = []
        session.listen(first.append)
        assert [type(e).__name__ for e in first] == ["Opened", "CatalogOutlined", "CatalogLoaded"]
        assert first[2].catalog is catalog and catalog is not None and catalog.complete  # type: ignore[attr-defined]
        later: list[SessionEvent] = []
        session.listen(later.append)
        session.open()
        assert later == [] and len(first) == 3 and session.catalog is catalog  # nothing read again
        assert session.sql("SELECT count(*) AS n FROM sales.customers").result.rows() == [(1,)]


def test_a_failed_start_is_told_once_and_a_retry_opens_again(tmp_path: Path) -> None:
    gone = tmp_path / "later.duckdb"
    seen: list[SessionEvent] = []
    with Session([str(gone)], Settings(), state_dir=tmp_path) as session:
        session.start()
        with pytest.raises(TargetError) as raised:
            session.open()
        session.listen(seen.append)
        assert [type(e).__name__ for e in seen] == ["OpenFailed"] and seen[0].message == str(raised.value)  # type: ignore[attr-defined]
        with pytest.raises(TargetError):
            session.open()  # the start's failure, not a second attempt
        assert len(seen) == 1
        duckdb.connect(str(gone)).close()
        session.retry_open()
        assert session.catalog is not None and [type(e).__name__ for e in seen][-1] == "CatalogLoaded"


def test_a_shell_started_on_the_outline_lists_without_columns(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    """`astro shell` starts reading the outline before it imports the shell; `ls` takes it, and
    a `cat` after it reads the columns then."""
    with Session([str(crm)], Settings(), state_dir=tmp_path) as session:
        session.start(whole=False)
        assert session.shell("ls /").output.split() == ["hr/", "sales/"]
        assert session.catalog is None
        assert "Contact address" in session.shell("cat /sales/customers.table").output
        assert session.catalog is not None and session.catalog.complete


def test_ls_after_a_start_waits_for_the_outline_not_the_columns(
    own_cache: Path, crm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's start reads the whole catalog; an `ls` made meanwhile answers from the
    outline as soon as it is read, while the columns are still being read (it once waited
    for them: the start told only at its end that the names were in)."""
    release = _hold_columns(monkeypatch)
    with Session([str(crm)], Settings(), state_dir=tmp_path) as session:
        session.start()
        try:
            answers: dict[str, str] = {}
            listing = threading.Thread(target=lambda: answers.update(ls=session.shell("ls /").output))
            listing.start()
            wait_for(lambda: "ls" in answers, what="ls while the columns are held")
            assert answers["ls"].split() == ["hr/", "sales/"]
            assert session.catalog is None
        finally:
            release.set()
        session.open()
        assert session.catalog is not None and session.catalog.complete


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
def test_the_catalog_request_is_answered_before_the_idle_warm_up(own_cache: Path, crm: Path) -> None:
    """The outline request goes with the setup and waits in the worker's pipe while the file
    opens: it is answered first, and the worker has not loaded Arrow for its idle warm-up
    (a request read into a stdin buffer with the setup was invisible to `select`, and the
    warm-up, a second and more under load, ran ahead of it)."""
    with Database.open([str(crm)], Settings()) as db:
        db.load_outline()
        (pid,) = db.engine._pool.pids()  # type: ignore[attr-defined]
        assert "libarrow" not in Path(f"/proc/{pid}/maps").read_text()
        db.load_catalog()
        db.ready()
        db.execute("SELECT 1")
        assert "libarrow" in Path(f"/proc/{pid}/maps").read_text()  # warmed for statements, as ever


def test_an_outline_has_every_table_and_refuses_its_columns(own_cache: Path, crm: Path) -> None:
    with Database.open([str(crm)], Settings()) as db:
        outline = db.load_outline()
        whole = db.load_catalog()
    assert not outline.complete and whole.complete
    assert (
        _names(outline)
        == _names(whole)
        == ["hr.salaries", "sales.big_orders", "sales.customers", "sales.orders"]
    )
    customers = outline.find_table("sales.customers")
    assert customers is not None and customers.comment == "One row per customer" and customers.kind == "table"
    assert customers.row_count == 1
    for use in (len, list, bool, lambda cols: cols[0], lambda cols: "email" in cols):
        with pytest.raises(ColumnsNotRead):
            use(customers.columns)
    with pytest.raises(ColumnsNotRead):
        customers.column("email")
    with pytest.raises(ColumnsNotRead):
        list(customers.primary_key)
    orders = whole.find_table("sales.orders")
    assert orders is not None and [c.name for c in orders.columns] == ["id", "customer_id", "total"]
    assert orders.foreign_keys and whole.find_table("sales.customers").primary_key == ("id",)  # type: ignore[union-attr]
    assert whole.counterpart(customers) is whole.find_table("sales.customers")


def test_the_cache_keeps_both_phases(own_cache: Path, crm: Path) -> None:
    with Database.open([str(crm)], Settings()) as db:
        outline = db.load_outline()  # and the app is closed before the columns come
    entries = list(own_cache.iterdir())
    assert len(entries) == 1 and oct(entries[0].stat().st_mode & 0o777) == "0o600"
    with Database.open([str(crm)], Settings()) as db:
        again = db.load_outline()
        assert db.engine._pool.pids() == []  # type: ignore[attr-defined]  # no process opened the file
        assert not again.complete and again == outline
        assert again.tables[0].columns is NOT_READ  # the one value the unpickler lets stand for it
        whole = db.load_catalog()
    assert len(list(own_cache.iterdir())) == 2
    with Database.open([str(crm)], Settings()) as db:
        cached = db.load_outline()
        assert db.engine._pool.pids() == []  # type: ignore[attr-defined]
    assert cached.complete and cached == whole


def test_an_outline_entry_others_can_write_is_not_read(own_cache: Path, crm: Path, tmp_path: Path) -> None:
    with Database.open([str(crm)], Settings()) as db:
        expected = db.load_outline()
    [entry] = own_cache.iterdir()
    entry.chmod(0o666)
    assert catalog_cache.loads(entry.read_bytes()) == expected
    with Database.open([str(crm)], Settings()) as db:
        assert db.load_outline() == expected
        assert db.engine._pool.pids() != []  # type: ignore[attr-defined]  # others could write it: read again


def test_a_scope_filters_the_outline_and_the_columns(own_cache: Path, crm: Path, tmp_path: Path) -> None:
    settings = Settings(hide=("hr", "sales.customers.email"))
    with Database.open([str(crm)], settings) as db:
        outline = db.load_outline()
        whole = db.load_catalog()
    assert _names(outline) == _names(whole) == ["sales.big_orders", "sales.customers", "sales.orders"]
    customers = whole.find_table("sales.customers")
    assert customers is not None and [c.name for c in customers.columns] == ["id", "region"]
    with Session([str(crm)], settings, state_dir=tmp_path / "state") as session:
        assert session.shell("ls /").output.split() == ["sales/"]
        card = session.shell("cat /sales/customers.table").output
        assert "region" in card and "email" not in card and "Contact address" not in card
        assert session.shell("grep -ril salaries /").exit_code == 1


def test_a_table_whose_every_column_is_hidden_is_never_in_the_outline(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    """Only its columns can tell that every one is hidden, so under a scope that hides columns
    the first open reads them before anything is shown."""
    settings = Settings(hide=("sales.customers.*i*", "sales.customers.email"))
    with Database.open([str(crm)], settings) as db:
        outline = db.load_outline()
    assert outline.complete and _names(outline) == ["hr.salaries", "sales.big_orders", "sales.orders"]
    with Session([str(crm)], settings, state_dir=tmp_path / "state") as session:
        assert "customers" not in session.shell("ls /sales").output


def test_ls_needs_no_columns_and_cat_meanwhile_waits_for_the_whole_card(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    """`astro shell "ls /"` reads the outline only; a `cat` while the columns are read gets
    the card with them, as a session that read everything first prints it."""
    with Session([str(crm)], Settings(), state_dir=tmp_path / "whole") as full:
        full.open()
        expected = full.shell("cat /sales/customers.table").output
        expected_long = full.shell("ls -l /sales").output
    for entry in own_cache.glob("*.pickle"):
        entry.unlink()

    with Session([str(crm)], Settings(), state_dir=tmp_path / "ls") as session:
        assert session.shell("ls /").output.split() == ["hr/", "sales/"]
        assert session.shell("cd /sales && ls").output.split() == [
            "big_orders.view",
            "customers.table",
            "orders.table",
        ]
        assert session.catalog is None  # the columns were never read
    for entry in own_cache.glob("*.pickle"):
        entry.unlink()

    outlined, release = threading.Event(), threading.Event()

    def hold(event: SessionEvent) -> None:
        if isinstance(event, CatalogOutlined):
            outlined.set()
            assert release.wait(HANG_GUARD_S)

    with Session([str(crm)], Settings(), state_dir=tmp_path / "cat") as session:
        session.listen(hold)
        opening = threading.Thread(target=session.open)
        opening.start()
        assert outlined.wait(HANG_GUARD_S)
        assert session.shell("cd /sales && ls").output.split()[0] == "big_orders.view"
        answers: dict[str, str] = {}
        reading = threading.Thread(
            target=lambda: answers.update(
                cat=session.shell("cat /sales/customers.table").output,
                long=session.shell("ls -l /sales").output,
            )
        )
        reading.start()
        reading.join(0.2)
        assert session.catalog is None and not answers  # held: the columns are not read yet
        release.set()
        reading.join(HANG_GUARD_S)
        opening.join(HANG_GUARD_S)
        assert answers == {"cat": expected, "long": expected_long}
        assert "email" in answers["cat"] and "Contact address" in answers["cat"]
        assert session.shell("pwd").output == "/sales"  # the folder `cd` chose is kept


def test_events_outline_then_whole_and_only_whole_when_cached(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    for expected in (["CatalogOutlined", "CatalogLoaded"], ["CatalogLoaded"]):
        seen: list[SessionEvent] = []
        with Session([str(crm)], Settings(), state_dir=tmp_path / "state") as session:
            session.listen(seen.append)
            session.open()
        kinds = [type(e).__name__ for e in seen if isinstance(e, CatalogOutlined | CatalogLoaded)]
        assert kinds == expected
        loaded = [e for e in seen if isinstance(e, CatalogLoaded)]
        assert loaded[0].catalog.complete


async def test_the_tree_shows_before_the_columns_and_fills_in(
    own_cache: Path, crm: Path, tmp_path: Path
) -> None:
    """The columns arrive when `CatalogLoaded` reaches the app: held here (a listener before
    the app's), the tree shows the outline, an opened table says it is reading, and the
    card waits for the columns."""
    app = make_app(crm)
    release = threading.Event()

    def hold(event: SessionEvent) -> None:
        if isinstance(event, CatalogLoaded):
            assert release.wait(HANG_GUARD_S)

    app.session.listen(hold)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(CatalogTree)
        status = app.query_one("#catalog-status")
        await wait_until(pilot, lambda: len(tree.root.children) == 2)
        assert "reading the columns" in plain(status)
        assert [c.label.plain.split()[0] for c in tree.root.children] == ["hr", "sales"]
        sales = tree.root.children[1]
        sales.expand()
        await wait_until(pilot, lambda: len(sales.children) == 3)
        customers = sales.children[1]
        assert customers.label.plain.startswith("customers")
        customers.expand()
        await wait_until(pilot, lambda: bool(customers.children))
        assert [c.label.plain for c in customers.children] == ["reading the columns…"]
        tree.move_cursor(customers)
        card = app.query_one("#table-card-text")
        await wait_until(pilot, lambda: "Contact address" in plain(card))  # the card read them
        release.set()
        await ready(pilot)
        await wait_until(
            pilot, lambda: [c.label.plain.split()[0] for c in customers.children] == ["id", "email", "region"]
        )
        assert not status.display


async def test_a_card_highlighted_after_the_columns_came_shows_them(
    own_cache: Path, crm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shell the pane built over the outline still has it when the columns come: a table
    highlighted then gets its whole card (the card's worker once failed on the outline's
    columns and no card ever came). The column read waits here until that shell is built."""
    from astro_tui.ui.panes.shell import ShellPane

    release = _hold_columns(monkeypatch)
    app = make_app(crm)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(CatalogTree)
        pane = app.query_one(ShellPane)
        await wait_until(pilot, lambda: pane.shell is not None)
        assert not pane.shell.catalog.complete
        release.set()
        await wait_until(pilot, lambda: tree.catalog is not None and tree.catalog.complete)
        assert not pane.shell.catalog.complete
        sales = tree.root.children[1]
        sales.expand()
        await wait_until(pilot, lambda: len(sales.children) == 3)
        tree.move_cursor(sales.children[1])
        card = app.query_one("#table-card-text")
        await wait_until(pilot, lambda: "Contact address" in plain(card))
        assert "One row per customer" in plain(card)


def test_columns_keep_their_order_whatever_order_duckdb_gives_them(crm: Path) -> None:
    """The column query is not sorted (DuckDB would hold every row to sort them): each
    table's columns are put in order here, rows of tables interleaved or reversed alike."""
    from astro_tui.data.engines.duckdb import catalog

    con = duckdb.connect(str(crm), read_only=True)
    rows = con.execute(catalog._COLUMNS_SQL).fetchall()
    ordered = con.execute(
        "SELECT database_oid, table_oid, column_name FROM duckdb_columns()"
        " WHERE NOT internal ORDER BY database_oid, table_oid, column_index"
    ).fetchall()
    con.close()
    expected: dict[tuple[int, int], list[str]] = {}
    for d_oid, t_oid, name in ordered:
        expected.setdefault((d_oid, t_oid), []).append(name)
    assert len(rows) == len(ordered) > 8
    for shuffled in (rows, rows[::-1], rows[1::2] + rows[::2]):
        grouped = catalog._group_columns(shuffled)
        assert {k: [c.name for c in v] for k, v in grouped.items()} == expected


def _pipe_holds(stream) -> int:  # type: ignore[no-untyped-def]
    import array
    import fcntl
    import termios

    count = array.array("i", [0])
    fcntl.ioctl(stream.fileno(), termios.FIONREAD, count)
    return count[0]


def test_an_answer_that_came_with_the_ready_frame_is_seen(own_cache: Path, crm: Path) -> None:
    """A request sent with the setup is answered right after the worker's ready frame: both can be
    in the pipe when astro reads that frame, and an answer read ahead into astro's buffer was
    invisible to the `select` that waits for it (the app's open waited forever)."""
    import select

    from astro_tui.data.engines.duckdb.pool import _Worker
    from astro_tui.data.engines.duckdb.worker import read_frame, write_frame

    with Database.open([str(crm)], Settings()) as db:
        setup = db.engine._pool._setup  # type: ignore[attr-defined]
        worker = _Worker(setup)
        try:
            write_frame(worker.stdin, {"meta": "outline"})
            ready = len(b'{"ready": true}') + 8
            wait_for(lambda: _pipe_holds(worker.stdout) > ready + 8, what="the answer behind the ready frame")
            worker.wait_ready(db.engine._open_error)  # type: ignore[attr-defined]
            assert select.select([worker.stdout], [], [], HANG_GUARD_S)[0], "the answer is seen"
            header = read_frame(worker.stdout)
            assert header is not None and header["ok"] and header["pickled"] > 0
        finally:
            worker.kill()

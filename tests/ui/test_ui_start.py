"""Starting the app: no model configured, layout at any width, keys, help, theme."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.widgets import Tree

from astro_tui.config import Settings, config_path, load_settings
from astro_tui.ui.actions import ACTIONS
from astro_tui.ui.app import AstroApp
from astro_tui.ui.panes.catalog import CatalogTree
from astro_tui.ui.widgets.question import QuestionInput
from tests.support import ROOT
from tests.support.ui import (
    SIZE,
    log_text,
    make_app,
    no_messages_queued,
    plain,
    ready,
    shop_db,
    submit,
    wait_until,
)

__all__ = ["shop_db"]


async def test_starts_without_a_model_and_everything_else_works(shop_db: Path) -> None:
    app = make_app(shop_db, Settings())
    async with app.run_test(size=SIZE) as pilot:
        assert isinstance(app.focused, QuestionInput), "the question box has focus at start"
        await ready(pilot)
        assert "No model is configured" in log_text(app)
        tree = app.query_one(CatalogTree)
        assert [str(n.label.plain).split()[0] for n in tree.root.children] == ["sales"]

        await submit(pilot, "what was revenue?")
        assert "No model is configured, so questions cannot be answered" in log_text(app)
        assert app.conversation.question.text == "what was revenue?", "the question is kept"

        app.conversation.question.clear()
        await submit(pilot, "/sql SELECT 42 AS answer")
        await wait_until(pilot, lambda: app.results.current is not None)
        assert app.results.current.result.rows() == [(42,)]


async def test_question_history_and_new_lines(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        question = app.conversation.question
        for text in ("/sql SELECT 1", "/sql SELECT 2"):
            await submit(pilot, text)
        question.insert("draft")
        await pilot.press("up")
        assert question.text == "/sql SELECT 2"
        await pilot.press("up")
        assert question.text == "/sql SELECT 1"
        await pilot.press("down", "down")
        assert question.text == "draft", "the draft comes back past the newest entry"
        await pilot.press("ctrl+j")
        question.insert("second line")
        assert question.text == "draft\nsecond line"
        await pilot.press("up")
        assert question.text == "draft\nsecond line", "up moves within a multi-line question first"


async def test_escape_cancels_a_running_sql(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT count(*) FROM range(1000000) a, range(1000000) b")
        await wait_until(pilot, lambda: app.session.sql_running)
        status = app.conversation.query_one("#turn-status")
        await wait_until(
            pilot, lambda: "running the query" in plain(status) and "esc cancels" in plain(status)
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: "cancelled" in log_text(app))
        assert app.results.current is None and not app.session.sql_running
        await wait_until(pilot, lambda: plain(status).startswith("query cancelled"))

        await submit(pilot, "/sql SELECT 42 AS answer")
        await wait_until(pilot, lambda: plain(status).startswith("query done"))


async def test_every_action_is_reachable(shop_db: Path) -> None:
    app = make_app(shop_db)
    for action in ACTIONS:
        assert callable(getattr(app, f"action_{action.name}", None)), action.name
    keys = [a.keys for a in ACTIONS if a.keys]
    assert len(keys) == len(set(keys)), "no key is bound twice"


async def test_pane_keys_focus_and_zoom(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f2")
        assert isinstance(app.focused, Tree)
        await pilot.press("f3")
        assert app.focused is not None and app.focused.id == "shell-input"
        await pilot.press("f5")
        assert app.focused is not None and app.results in app.focused.ancestors_with_self
        await pilot.press("f4")
        assert isinstance(app.focused, QuestionInput)
        await pilot.press("f10")
        assert app.screen.maximized is app.conversation
        await pilot.press("escape")
        assert app.screen.maximized is None


async def test_narrow_terminal_collapses_the_side_panes(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(90, 30)) as pilot:
        await ready(pilot)
        assert app.screen.has_class("-narrow")
        assert not app.catalog_pane.display or app.catalog_pane.region.width == 0
        assert app.results.region.width > 0 and app.conversation.region.width > 0
        assert app.results.region.y > app.conversation.region.y, "results sit below the conversation"
        assert "F2 catalog" in plain(app.query_one("#topbar")), "the hidden catalog's key is named"
        await pilot.press("f2")
        await pilot.pause()
        assert app.catalog_pane.region.width > 0 and isinstance(app.focused, Tree)
        assert "F2 catalog" not in plain(app.query_one("#topbar"))
        await pilot.press("f4")
        await pilot.pause()
        assert app.catalog_pane.region.width == 0 and isinstance(app.focused, QuestionInput)
        assert "F2 catalog" in plain(app.query_one("#topbar"))


async def test_medium_width_makes_the_catalog_a_drawer(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        assert app.screen.has_class("-medium")
        assert app.catalog_pane.region.width == 0
        assert app.results.region.x > app.conversation.region.x, "results beside the conversation"
        bar = app.query_one("#topbar")
        assert "F1 help · F2 catalog · ctrl+p" in plain(bar), plain(bar)
        await pilot.press("f6")
        await pilot.pause()
        assert app.catalog_pane.region.width > 0 and isinstance(app.focused, Tree)
        assert app.conversation.region.width > 0, "the conversation stays in view"
        assert "F2 catalog" not in plain(bar)
        await pilot.press("f6")
        await pilot.pause()
        assert app.catalog_pane.region.width == 0
        await pilot.resize_terminal(160, 48)
        await wait_until(pilot, lambda: app.catalog_pane.region.width > 0)
        assert "F2 catalog" not in plain(bar), "wide: the catalog is on screen"


async def test_help_lists_every_action(shop_db: Path) -> None:
    from astro_tui.ui.screens.help import HelpScreen, help_table

    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
    rows = {str(cell) for column in help_table().columns for cell in column._cells}
    for action in ACTIONS:
        assert action.description in rows


async def test_palette_offers_every_action(shop_db: Path) -> None:
    from astro_tui.ui.actions import AstroCommands

    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        provider = AstroCommands(app.screen)
        found = [hit.text async for hit in provider.discover()]
        assert len(found) == len([a for a in ACTIONS if a.palette])
        hits = [hit async for hit in provider.search("copy sql")]
        assert hits and "Copy the verified SQL" in str(hits[0].match_display)


async def test_theme_is_remembered(shop_db: Path) -> None:
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.theme = "nord"
        await wait_until(pilot, lambda: config_path().exists())
    assert load_settings().theme == "nord"
    again = make_app(shop_db, load_settings())
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "nord"


async def test_a_missing_database_is_reported_not_raised(tmp_path: Path) -> None:
    app = make_app(tmp_path / "nope.duckdb")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "nope.duckdb" in log_text(app))
        assert app.is_running


async def test_a_failed_open_says_so_and_ctrl_r_opens_it_once_fixed(tmp_path: Path) -> None:

    data = tmp_path / "orders.csv"
    data.write_text("id,amount\n1,2.5\n2,3.5,extra\n")
    app = make_app(data)
    async with app.run_test(size=SIZE) as pilot:
        status = app.catalog_pane.query_one("#catalog-status")
        await wait_until(pilot, lambda: "✗" in plain(status))
        assert "ctrl+r" in plain(status), "the catalog pane says how to try again"
        assert "opening…" not in plain(app.query_one("#topbar")), "the header does not wait forever"

        data.write_text("id,amount\n1,2.5\n2,3.5\n")
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.session.catalog is not None)
        tree = app.query_one(CatalogTree)
        await wait_until(pilot, lambda: bool(tree.root.children))
        await wait_until(pilot, lambda: not plain(status).strip() or not status.display)
        assert isinstance(app, AstroApp) and app.is_running


async def test_an_app_over_a_started_session_shows_what_it_opened(shop_db: Path, tmp_path: Path) -> None:
    """`astro` starts opening before it imports Textual: the app shows that open (its events
    came before the app listened), and a failed one is retried with ctrl+r as any other."""
    app = make_app(shop_db, started=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        tree = app.query_one(CatalogTree)
        assert [c.label.plain.split()[0] for c in tree.root.children] == ["sales"]
        assert "shop.duckdb" in plain(app.query_one("#topbar"))

    data = tmp_path / "orders.csv"
    data.write_text("id,amount\n1,2.5\n2,3.5,extra\n")
    app = make_app(data, started=True)
    async with app.run_test(size=SIZE) as pilot:
        status = app.catalog_pane.query_one("#catalog-status")
        await wait_until(pilot, lambda: "✗" in plain(status))
        data.write_text("id,amount\n1,2.5\n2,3.5\n")
        await pilot.press("ctrl+r")
        await ready(pilot)
        assert [c.label.plain.split()[0] for c in app.query_one(CatalogTree).root.children] == ["main"]


async def test_a_failing_worker_is_shown_and_the_app_keeps_running(shop_db: Path) -> None:
    import re

    import astro_tui.ui
    from tests.support.ui import notifications

    def boom() -> None:
        raise RuntimeError("the chart library fell over")

    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.run_worker(boom, thread=True, group="chart", exit_on_error=False)
        await wait_until(pilot, lambda: any("fell over" in n for n in notifications(app)))
        assert app.is_running
        await submit(pilot, "/sql SELECT 1 AS one")
        await wait_until(pilot, lambda: app.results.current is not None)

    # Every worker leaves its failures to that one handler instead of quitting the app.
    for source in Path(astro_tui.ui.__file__).parent.rglob("*.py"):
        for decorator in re.findall(r"@work\(([^)]*)\)", source.read_text()):
            assert "exit_on_error=False" in decorator, f"{source.name}: @work({decorator})"


async def test_small_terminals_show_result_rows_and_every_footer_key(shop_db: Path) -> None:
    """At 80×24 the table has rows on screen; at 100×30 F6 opens the catalog in the results'
    place instead of squeezing three panes; the footer and top bar fit on one line."""
    from textual.widgets import Footer

    for size in ((80, 24), (100, 30)):
        app = make_app(shop_db)
        async with app.run_test(size=size) as pilot:
            await ready(pilot)
            await submit(pilot, "/sql SELECT * FROM sales.orders")
            await wait_until(pilot, lambda app=app: app.results.table_widget is not None)
            await pilot.pause()
            table = app.results.table_widget
            assert table.region.height >= 4, f"{size}: {table.region} leaves no rows"
            question = app.query_one(QuestionInput)
            assert len(question.placeholder) < question.content_size.width, f"{size}: hint cut"
            footer = app.query_one(Footer)
            for focus in ("f4", "f5", "g"):  # the question box, then the table's keys, then the chart's
                await pilot.press(focus)
                await pilot.pause()
                keys = [w for w in footer.query("FooterKey") if w.display]
                assert keys and max(k.region.right for k in keys) <= size[0], f"{size} {focus}: keys cut"
            await pilot.press("t")
            if size[0] == 100:
                await pilot.press("f6")
                await pilot.pause()
                assert app.catalog_pane.region.width > 0 and app.results.region.width == 0
                assert app.conversation.region.width >= 60


async def test_keys_typed_right_after_leaving_zoom_reach_the_pane_they_name(shop_db: Path) -> None:
    """Esc (leave zoom) then F4 and typing, all at once: the text lands in the question box,
    not in the shell that was zoomed, at every width."""
    from astro_tui.ui.panes.shell import ShellInput

    for size in ((160, 48), (100, 30), (80, 24)):
        app = make_app(shop_db)
        async with app.run_test(size=size) as pilot:
            await ready(pilot)
            await pilot.press("f3", "f10")
            await wait_until(pilot, lambda app=app: app.screen.maximized is not None)
            app.post_message(events.Key("escape", None))
            app.post_message(events.Key("f4", None))
            for char in "hello":
                app.post_message(events.Key(char, char))
            question = app.query_one(QuestionInput)
            # And every key handled: Esc bubbles back up from the zoomed pane, and if it
            # reaches the app after the test closed it, it meets an empty screen stack.
            await wait_until(
                pilot, lambda app=app, question=question: question.text == "hello" and no_messages_queued(app)
            )
            assert app.query_one(ShellInput).value == "", size
            assert app.screen.maximized is None


async def test_the_footer_is_rebuilt_only_when_its_keys_change(shop_db: Path) -> None:
    """A bindings refresh that leaves the same keys keeps the same footer widgets; a change rebuilds them."""
    from textual.widgets import Footer

    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f4")
        footer = app.query_one(Footer)
        await wait_until(pilot, lambda: bool(footer.query("FooterKey")))
        await pilot.pause()
        before = list(footer.query("FooterKey"))
        for _ in range(3):
            app.refresh_bindings()
            await pilot.pause()
        assert list(footer.query("FooterKey")) == before
        # Esc cancels while it runs: a new key, in the footer once the query has run a moment
        await submit(pilot, "/sql SELECT count(*) FROM range(1000000) a, range(1000000) b")
        await wait_until(pilot, lambda: "escape" in [key.key for key in footer.query("FooterKey")])
        assert list(footer.query("FooterKey")) != before  # (a rebuild passes through no keys at all)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.session.sql_running)


async def test_the_warm_up_waits_for_a_key_a_click_or_a_paste(shop_db: Path) -> None:
    """The imports a first result needs (~90 MB) wait for the person: a catalog on screen
    alone starts nothing; a paste (a query copied from elsewhere) starts them at once."""
    from textual import events

    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert not app.warm_up.started
        app.post_message(events.Paste("SELECT 1"))
        await wait_until(pilot, lambda: app.warm_up.started)


_RESULT_IN_THE_APP = """
    import asyncio, json, sys
    from pathlib import Path
    from textual.worker import WorkerState
    from tests.support.ui import SIZE, make_app, ready, submit, wait_until

    SQL = (
        "/sql SELECT 'r' || range AS ascii, 'é' || range AS accented, chr(7) || 'bell' AS control, "
        "CASE WHEN range % 3 = 0 THEN NULL ELSE range END AS n, range * 0.5 AS half, "
        "range / 7 AS ratio, DATE '2024-01-01' + range::INT AS day, "
        "TIMESTAMP '2024-01-01' + to_seconds(range) AS at, range % 2 = 0 AS even "
        "FROM range(5000)"
    )

    async def main() -> None:
        app = make_app(Path(sys.argv[1]))
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            seen = {"warm before": "textual_fastdatatable" in sys.modules}
            app.warm_up.hold()  # as a /sql typed at once would: the later imports wait
            await pilot.press("x")  # the person is here: the warm-up starts
            warm = lambda: [w for w in app.workers if w.group == "warm"]
            await wait_until(pilot, lambda: "astro_tui.ui.table_backend" in sys.modules)
            await wait_until(pilot, lambda: "astro_tui.ui.column_widths" in sys.modules)
            seen["charts while held"] = "textual_plotext" in sys.modules
            await submit(pilot, SQL)
            strips = lambda: app.screen._compositor.render_strips()
            drawn = lambda: "\\n".join("".join(part.text for part in strip) for strip in strips())
            await wait_until(pilot, lambda: "é1" in drawn() and "r1" in drawn())  # its rows, drawn
            await wait_until(pilot, lambda: not app.warm_up.holding)  # released once its rows are painted
            await wait_until(pilot, lambda: all(w.state is WorkerState.SUCCESS for w in warm()))
            seen["charts after"] = "textual_plotext" in sys.modules
            seen["rows"] = app.results.table_widget.row_count
            seen["pandas"] = "pandas" in sys.modules
        print(json.dumps(seen))

    asyncio.run(main())
"""


def test_a_result_and_the_warm_up_never_import_pandas(shop_db: Path) -> None:
    """pyarrow imports pandas at its first conversion from Python values (a second or more, ~50 MB,
    holding the interpreter a first result needs); nothing the app shows needs it. Every kind
    of column a result may hold, measured and drawn, in an app process of its own (pandas may
    be loaded in this one). The warm-up's charts wait while a statement is on its way."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    root = ROOT
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_RESULT_IN_THE_APP), str(shop_db)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "warm before": False,
        "charts while held": False,
        "charts after": True,
        "rows": 5000,
        "pandas": False,
    }


async def test_a_failed_or_refused_sql_lets_the_warm_up_go_on(shop_db: Path) -> None:
    """A /sql holds the warm-up's later imports until its rows are painted; one that fails, or
    is refused before it runs, lets them go at once."""
    app = make_app(shop_db)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/sql SELECT * FROM no_such_table")
        await wait_until(pilot, lambda: "no_such_table" in log_text(app) and not app.session.sql_running)
        await wait_until(pilot, lambda: "failed" in log_text(app) or "does not exist" in log_text(app))
        await pilot.pause()
        assert not app.warm_up.holding
        await submit(pilot, "/sql DELETE FROM shop.orders")
        await wait_until(pilot, lambda: "DELETE" in log_text(app) and not app.session.sql_running)
        await pilot.pause()
        assert not app.warm_up.holding

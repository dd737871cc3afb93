"""Shared pieces of the UI tests: a small DuckDB, an app factory, and waiting helpers.

Tests drive the real app with Textual's pilot; the model is always the fake
OpenAI-compatible server (never a mock of the agent).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from textual.pilot import Pilot

from astro_tui.config import Settings, state_dir
from astro_tui.session import Session
from astro_tui.ui.app import AstroApp
from tests.support.waiting import HANG_GUARD_S, wait_for_async

SIZE = (160, 48)

_SHOP_SQL = """
CREATE SCHEMA sales;
CREATE TABLE sales.customers (customer_id INTEGER PRIMARY KEY, name VARCHAR, email VARCHAR);
INSERT INTO sales.customers SELECT i, 'Customer ' || i, 'c' || i || '@example.com' FROM range(50) t(i);
CREATE TABLE sales.orders AS
    SELECT i AS order_id, i % 50 AS customer_id, 'region_' || (i % 5) AS region,
           (i * 7 % 1000) / 10.0 AS amount, DATE '2025-01-01' + (i % 365)::INT AS order_date
    FROM range(2000) t(i);
COMMENT ON TABLE sales.orders IS 'One row per order';
COMMENT ON COLUMN sales.orders.amount IS 'Order total in EUR';
CREATE VIEW sales.revenue_by_region AS
    SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY region;
"""

REVENUE_SQL = "SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY region ORDER BY region"


def make_shop(path: Path) -> Path:
    con = duckdb.connect(str(path))
    try:
        con.execute(_SHOP_SQL)
    finally:
        con.close()
    return path


@pytest.fixture(scope="session")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small shop database, built once: a schema, two tables and a view."""
    return make_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb")


def make_app(
    db: Path | str, settings: Settings | None = None, *, live_clocks: bool = True, started: bool = False
) -> AstroApp:
    """The app on a session of `db`, its state where the test's environment says; `started`:
    the session began opening before the app was made, as `astro` does (`Session.start`)."""
    session = Session([str(db)], settings or Settings(), state_dir=state_dir())
    if started:
        session.start()
    return AstroApp(session, live_clocks=live_clocks)


async def wait_until(pilot: Pilot[Any], predicate: Callable[[], Any], timeout: float = HANG_GUARD_S) -> None:
    """Let the app run until `predicate()` holds; fail with a clear message otherwise."""
    await wait_for_async(predicate, timeout, pause=lambda: pilot.pause(0.02))


def no_messages_queued(app: AstroApp) -> bool:
    """Nothing waits in the app's, a screen's or a widget's queue (an event may bubble)."""
    pumps = [app, *app.screen_stack, *app.screen.walk_children(with_self=False)]
    return all(pump._message_queue.empty() for pump in pumps)


def _screen_text(app: AstroApp) -> list[str]:
    return ["".join(segment.text for segment in strip) for strip in app.screen._compositor.render_strips()]


async def settled(pilot: Pilot[Any]) -> None:
    """Wait until the app has nothing left to do and draws the same screen twice running:
    what a snapshot waits for instead of a fixed pause (the screen could still be filling)."""
    from textual.worker import WorkerState

    app = pilot.app
    busy = (WorkerState.PENDING, WorkerState.RUNNING)
    await wait_until(pilot, lambda: not any(w.state in busy for w in app.workers) and no_messages_queued(app))
    await pilot.wait_for_scheduled_animations()
    previous: list[str] | None = None

    def same_as_last_look() -> bool:
        nonlocal previous
        now = _screen_text(app)
        unchanged, previous = now == previous, now
        return unchanged

    await wait_until(pilot, same_as_last_look)


async def ready(pilot: Pilot[Any]) -> AstroApp:
    """Wait for the catalog and the metadata shell, and for the agent when a model is configured."""
    from astro_tui.ui.panes.catalog import CatalogTree
    from astro_tui.ui.panes.shell import ShellPane

    app = pilot.app
    assert isinstance(app, AstroApp)
    await wait_until(pilot, lambda: app.session.catalog is not None)
    tree = app.query_one(CatalogTree)
    await wait_until(pilot, lambda: tree.catalog is not None and tree.catalog.complete)
    await wait_until(pilot, lambda: app.query_one(ShellPane).shell is not None)
    if app.settings.model_configured:
        await wait_until(pilot, lambda: app.session.agent is not None or app.session.agent_error is not None)
    await pilot.pause()
    return app


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type into the focused widget (pilot.press takes key names; text goes through `insert`)."""
    focused = pilot.app.focused
    if hasattr(focused, "insert"):
        focused.insert(text)  # type: ignore[union-attr]
    else:
        focused.value = text  # type: ignore[union-attr]
    await pilot.pause()


async def submit(pilot: Pilot[Any], text: str) -> None:
    """Put `text` in the question box and press enter, as a person would."""
    app = pilot.app
    assert isinstance(app, AstroApp)
    question = app.conversation.question
    question.focus()
    question.clear()
    question.insert(text)
    await pilot.press("enter")
    await pilot.pause()


def notifications(app: AstroApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


def log_text(app: AstroApp) -> str:
    """Everything the conversation log shows, as plain text (Markdown sources included)."""
    from textual.widgets import Markdown, Static

    from astro_tui.ui.widgets.markdown_text import MarkdownText

    parts: list[str] = []
    for widget in app.conversation.log_view.query("*"):
        if isinstance(widget, (Markdown, MarkdownText)):
            parts.append(widget.source)
        elif isinstance(widget, Static) and not isinstance(widget.parent, Markdown):
            parts.append(plain(widget))
    return "\n".join(parts)


def plain(widget: Any) -> str:
    """The text a Static shows, whatever it was given (str, Text, Content, Syntax…)."""
    content = widget.content
    for attr in ("plain", "code"):
        if hasattr(content, attr):
            return str(getattr(content, attr))
    if hasattr(content, "renderables"):
        return "\n".join(str(getattr(r, "plain", getattr(r, "code", r))) for r in content.renderables)
    return str(content)

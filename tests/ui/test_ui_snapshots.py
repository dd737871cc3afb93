"""Snapshots of the main screens at 160×48 and 100×30; clocks and spinners are frozen.

Paths shown on screen are made fixed (a relative database path, a fixed config
directory) so the pictures do not depend on where the test runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from astro_tui.config import Settings
from astro_tui.ui.app import AstroApp
from tests.support.fake_openai import FakeOpenAI, tool_call_reply
from tests.support.ui import REVENUE_SQL, make_app, ready, settled, shop_db, submit, wait_until
from tests.support.ui_conversation import answer_script

__all__ = ["shop_db"]

SnapCompare = Callable[..., bool]


@pytest.fixture
def fixed_place(shop_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    shutil.copy(shop_db, tmp_path / "shop.duckdb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ASTRO_CONFIG_DIR", "/home/you/.config/astro")
    return "shop.duckdb"


def app_for(db: str, settings: Settings | None = None) -> AstroApp:
    return make_app(db, settings, live_clocks=False)


async def _ready(pilot: Pilot[Any]) -> None:
    await ready(pilot)
    await settled(pilot)


def test_start_without_model_wide(snap_compare: SnapCompare, fixed_place: str) -> None:
    assert snap_compare(app_for(fixed_place), terminal_size=(160, 48), run_before=_ready)


def test_start_without_model_narrow(snap_compare: SnapCompare, fixed_place: str) -> None:
    assert snap_compare(app_for(fixed_place), terminal_size=(100, 30), run_before=_ready)


def test_sql_result_and_card(snap_compare: SnapCompare, fixed_place: str) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await submit(pilot, f"/sql {REVENUE_SQL}")
        await wait_until(pilot, lambda: app.results.table_widget is not None)
        await pilot.press("f2", "down", "down")
        await wait_until(pilot, lambda: app.query_one("#table-card").display)
        await settled(pilot)

    assert snap_compare(app_for(fixed_place), terminal_size=(160, 48), run_before=run)


def test_verified_answer(snap_compare: SnapCompare, fixed_place: str, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*answer_script())

    async def run(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await submit(pilot, "what was revenue by region?")
        await wait_until(pilot, lambda: not app.conversation.running and app.results.table_widget is not None)
        await settled(pilot)

    assert snap_compare(app_for(fixed_place, fake_openai.settings()), terminal_size=(160, 48), run_before=run)


def test_chart_answer_narrow(snap_compare: SnapCompare, fixed_place: str, fake_openai: FakeOpenAI) -> None:
    chart = {"sql": REVENUE_SQL, "kind": "bar", "x": "region", "y": "revenue", "title": "Revenue by region"}
    fake_openai.script(tool_call_reply([("render_chart", chart)]))

    async def run(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        await submit(pilot, "chart revenue by region")
        await wait_until(pilot, lambda: not app.conversation.running and app.query("#chart"))
        await settled(pilot)

    assert snap_compare(app_for(fixed_place, fake_openai.settings()), terminal_size=(100, 30), run_before=run)


def test_help_screen(snap_compare: SnapCompare, fixed_place: str) -> None:
    async def run(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("f1")
        await settled(pilot)

    assert snap_compare(app_for(fixed_place), terminal_size=(160, 48), run_before=run)

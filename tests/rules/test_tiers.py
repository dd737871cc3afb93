"""The tiers' markers come from what a test's code reaches (tests/support/tiers.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import pg_server
from tests.support.holders import holding_for_writing
from tests.support.tiers import needs


def _runs_python() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _helper_three_calls_down() -> None:
    _runs_python()


async def _drives(app: Any) -> None:
    async with app.run_test():
        pass


async def _spawns() -> None:
    await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")


def _reaches_pg_server() -> None:
    pg_server.running_server()


def _three_calls_down() -> None:
    _helper_three_calls_down()


def _holds_a_file() -> None:
    holding_for_writing(Path("x.duckdb"))


def _sorts() -> list[int]:
    return sorted([3, 1, 2])


SAMPLES = {
    "runs python": _runs_python,
    "three calls down": _three_calls_down,
    "asyncio": _spawns,
    "a holder": _holds_a_file,
    "drives the app": _drives,
    "starts postgres": _reaches_pg_server,
    "plain": _sorts,
}
"""Looked up by name, so this module's own tests reach none of them (and get no marker)."""


def test_a_program_started_through_helpers_is_found() -> None:
    for name in ("runs python", "three calls down", "asyncio", "a holder"):
        assert needs(SAMPLES[name]) == {"subprocess"}, name


def test_the_app_and_the_servers_are_found() -> None:
    assert needs(SAMPLES["drives the app"]) == {"ui"}
    assert needs(SAMPLES["starts postgres"]) == {"postgres"}


def test_plain_code_needs_nothing() -> None:
    assert needs(SAMPLES["plain"]) == set()

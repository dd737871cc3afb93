"""The tiers' markers come from what a test's code reaches (tests/support/tiers.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
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


def test_a_program_started_through_helpers_is_found() -> None:
    assert needs(_runs_python) == {"subprocess"}
    assert needs(lambda: _helper_three_calls_down()) == {"subprocess"}
    assert needs(_spawns) == {"subprocess"}
    assert needs(lambda path: holding_for_writing(path)) == {"subprocess"}


def test_the_app_and_the_servers_are_found() -> None:
    assert needs(_drives) == {"ui"}
    assert needs(lambda: pg_server.running_server()) == {"postgres"}


def test_plain_code_needs_nothing() -> None:
    assert needs(lambda: sorted([3, 1, 2])) == set()

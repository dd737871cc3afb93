"""Waiting for a condition, the one way a test lets time pass.

A test never sleeps a fixed time: on a loaded machine any fixed time is too short,
and on an idle one it is wasted. It polls a condition instead, and the time bound
only guards against a hang, so it is generous (a passing test never comes near it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

HANG_GUARD_S = 60.0
"""How long a wait may last before the test fails: far above any loaded-machine time."""

_POLL_S = 0.02


def _describe(condition: Callable[[], Any], what: str | None) -> str:
    return what or getattr(condition, "__name__", None) or repr(condition)


def wait_for(condition: Callable[[], Any], timeout: float = HANG_GUARD_S, *, what: str | None = None) -> None:
    """Block until `condition()` is true; fail the test, naming the condition, after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {_describe(condition, what)}")
        time.sleep(_POLL_S)


async def wait_for_async(
    condition: Callable[[], Any],
    timeout: float = HANG_GUARD_S,
    *,
    what: str | None = None,
    pause: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    """The same on an event loop, which keeps running while we wait; `pause` lets a Textual
    pilot process the app's messages between checks (`pilot.pause`)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {_describe(condition, what)}")
        if pause is None:
            await asyncio.sleep(_POLL_S)
        else:
            await pause()

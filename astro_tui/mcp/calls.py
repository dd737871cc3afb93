"""Tool calls off the event loop: a bounded number at a time, each stoppable like Esc in the app.

Clients send several calls at once; each runs in a worker thread of its own
(its statement in the engine's own worker: a DuckDB process, a PostgreSQL
connection, a Spark operation), at most `MAX_RUNNING` at a time, the rest
waiting their turn. When the client cancels a call, its `CancelToken` fires —
the engine stops the statement on the server — and the slot is given back only
once the worker has returned, so a cancelled runaway never runs beside the
next `MAX_RUNNING` statements.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio

from astro_tui.agent.tools.context import TURN_CANCEL
from astro_tui.data.cancel import CancelToken

T = TypeVar("T")

MAX_RUNNING = 4
"""Statements running at once; each has the time and memory limits of one."""


class Calls:
    def __init__(self, max_running: int = MAX_RUNNING) -> None:
        self._slots = anyio.Semaphore(max_running)
        self._pool = ThreadPoolExecutor(max_workers=max_running, thread_name_prefix="astro-mcp-call")
        self.running = 0
        """Calls whose work is in a worker now (not those waiting for a slot)."""
        self.peak = 0

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` in a worker, with the agent tools' cancel token set to one this call owns."""
        token = CancelToken()
        context = contextvars.copy_context()
        context.run(TURN_CANCEL.set, token)
        async with self._slots:
            self.running += 1
            self.peak = max(self.peak, self.running)
            future = asyncio.get_running_loop().run_in_executor(self._pool, context.run, work)
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                token.cancel()
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await future
                raise
            finally:
                self.running -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

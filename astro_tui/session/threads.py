"""The session's two threads of its own: an open begun early (`Start`), and an event loop for
its blocking methods (`Runner`, for a script or a notebook that calls `ask`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Start:
    """An open begun by `Session.start`: its thread, and its failure for whoever waits for it.

    `work` opens the database and reads the catalog; `named` is set when the schemas and
    tables are known (by `work`, or here when it ends, however it ends)."""

    def __init__(self, work: Callable[[], None], named: threading.Event) -> None:
        self._work = work
        self._named = named
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="astro-open", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._work()
        except BaseException as exc:  # reported as OpenFailed or CatalogFailed; raised to waiters
            self._failure = exc
        finally:
            self._named.set()

    def wait(self) -> None:
        """Until it ends; its failure raised."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure

    def wait_named(self) -> None:
        """Until the schemas and tables are read, or it ends; its failure raised."""
        self._named.wait()
        if self._failure is not None:
            raise self._failure


class Runner:
    """An event loop of the session's own, in a daemon thread, for its blocking methods."""

    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="astro-session", daemon=True)
        self._thread.start()

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        import asyncio

        future = asyncio.run_coroutine_threadsafe(work, self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:  # Ctrl+C in a script or a notebook stops the turn too
            future.cancel()
            raise

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

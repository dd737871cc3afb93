"""One shared thread that fires query time limits.

A `threading.Timer` per statement costs a thread start (~0.5 ms under load) on
every query; a single sleeper over a heap of deadlines costs a lock and a push.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


def _nothing() -> None:
    return None


class Deadline:
    """A scheduled callback; `cancel()` before it fires and it never runs."""

    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        """Also drops the callback: a cancelled entry may wait in the heap, and must not
        keep its query's cursor alive until then."""
        self.cancelled = True
        self.callback = _nothing


class Watchdog:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._counter = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, seconds: float, callback: Callable[[], None]) -> Deadline:
        deadline = Deadline(callback)
        with self._wake:
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._counter), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="astro-watchdog", daemon=True)
                self._thread.start()
            self._wake.notify()
        return deadline

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._wake.wait()
                    continue
                due, _, deadline = self._heap[0]
                delay = due - time.monotonic()
                if delay > 0:
                    self._wake.wait(delay)
                    continue
                heapq.heappop(self._heap)
            if not deadline.cancelled:
                try:
                    deadline.callback()
                except Exception:  # one failed callback must not stop every later limit
                    continue


WATCHDOG = Watchdog()

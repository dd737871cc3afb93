"""Worker processes that check and run DuckDB statements under limits the operating system holds.

`worker.py` says why. The workers are the only processes that hold the database
open, so they also answer the engine's metadata requests (`meta`). The first
starts when something needs it (`warm`, `ready`, a request); one per statement
running at a time, and one kept idle after; a worker that is killed (time limit
+ 0.75 s, cancel + 0.75 s, memory) is replaced by a new one started at once, so
the next statement rarely waits for Python and DuckDB to load. Memory is read
from /proc (Linux), with the worker's result files in /dev/shm counted as its
own; where there is no /proc, only the time limit is enforced by killing. A
worker's memory is measured above what it held idle before any outside SQL
reached it, and that baseline is never taken again: what an earlier statement
left behind counts against the next.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from astro_tui.data.cancel import CancelToken
from astro_tui.data.engines.duckdb import scratch
from astro_tui.data.engines.duckdb.worker import read_exactly, read_frame, write_frame
from astro_tui.data.errors import DataError, GuardError, QueryCancelled, QueryError, QueryTimeout, TargetError
from astro_tui.data.memory_limit import memory_bytes

if TYPE_CHECKING:
    import pyarrow as pa

FIRST_ROWS = 1000
"""How many of a long result's first rows are handed over while the rest is read (a few screens)."""
GRACE_S = 0.75
"""After an interrupt, how long a statement has to end before its process is killed."""
_POLL_S = 0.01
_ALLOWANCE = 128 * 2**20
_START_S = 120.0


def rss(pid: int) -> int | None:
    """A process's resident memory (Linux /proc), or None where it cannot be read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) * 1024 if match else None


def _results_bytes(folder: Path, pid: int) -> int:
    """What a worker's result files hold: tmpfs pages are memory, though not in its RSS."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith(f"{pid}-"):
                with contextlib.suppress(OSError):
                    total += entry.stat().st_size
    return total


def memory_allowance(memory_limit: str) -> int | None:
    """What a statement's process may grow by: DuckDB's limit covers its buffer pool; the
    process also holds Python, Arrow and the result, so a small limit gets a fixed allowance
    as well as the 10%."""
    limit = memory_bytes(memory_limit)
    return max(int(limit * 1.1), limit + _ALLOWANCE) if limit else None


def memory_stopped(memory_limit: str) -> QueryError:
    return QueryError(f"query stopped: it needed more than the {memory_limit} memory limit")


def stopped(reason: str, timeout: float | None) -> QueryError:
    """The error for a statement interrupted by a cancel or its time limit."""
    if reason == "cancel":
        return QueryCancelled("query cancelled")
    return QueryTimeout(f"query interrupted after the {timeout:g} s time limit")


def plain_open_error(message: str, stage: str) -> DataError:
    return TargetError(f"cannot open the database: {message}")


class _Spawner:
    """Starts every worker from one thread that lives as long as astro: a worker's
    parent-death signal fires when the thread that started it ends, so a worker started
    by a short-lived query thread would be told its parent died."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Any, dict[str, Any], threading.Event]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Any) -> Any:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="astro-spawner", daemon=True)
                self._thread.start()
        box: dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((job, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _loop(self) -> None:
        while True:
            job, box, done = self._jobs.get()
            try:
                box["value"] = job()
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()


_SPAWNER = _Spawner()


class _Stop:
    """What a CancelToken calls: the waiting loop sees it and interrupts the worker."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def stop(self) -> None:
        self.requested.set()


class _Worker:
    def __init__(self, setup: dict[str, Any]) -> None:
        self.results = Path(setup["results"])
        reader, self._interrupts = os.pipe()
        # -P: nothing is imported from the directory astro was started in (a `duckdb.py` there)
        argv = [
            sys.executable,
            "-P",
            "-m",
            "astro_tui.data.engines.duckdb.worker",
            str(reader),
            str(os.getpid()),
        ]
        try:
            self.proc = _SPAWNER.run(
                lambda: subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    pass_fds=(reader,),
                    start_new_session=True,  # Ctrl+C in a terminal reaches astro, which interrupts it
                )
            )
        except OSError as exc:
            os.close(self._interrupts)
            raise QueryError(f"cannot start the query process: {exc.strerror or exc}") from None
        finally:
            os.close(reader)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        with contextlib.suppress(OSError):  # a process that died at once: `wait_ready` says so
            write_frame(self.stdin, setup)
        self.ready = False
        self.baseline = 0
        self.pristine = True
        """No outside SQL has reached this worker: only then is its idle memory a baseline."""
        self.warm = False
        """Arrow, the guard and the file's definitions are loaded (`worker._warm`)."""
        self.clean = True
        """False while an answer has not been read whole."""
        self._starting = threading.Lock()
        self._ending = threading.Lock()
        self._killed = False
        self._failure: DataError | None = None

    def wait_ready(self, open_error: Callable[[str, str], DataError]) -> None:
        """Block until the database is open in this process; a worker that cannot open it is
        killed, and the engine words the reason (a lock, not a DuckDB file, a setting)."""
        with self._starting:
            if self.ready:
                return
            if self._failure is not None:
                raise type(self._failure)(str(self._failure))
            if self._killed:
                raise QueryError("the database is closed")
            try:
                if not select.select([self.stdout], [], [], _START_S)[0]:
                    self.kill()
                    raise QueryError("the query process did not start")
                # Past the buffer: a request sent with the setup is answered right after this
                # frame, and an answer read ahead into the buffer is invisible to `select`.
                answer = read_frame(self.stdout.raw)  # type: ignore[attr-defined]
            except (OSError, ValueError):  # closed meanwhile (the database was closed)
                self.kill()
                raise QueryError("the database is closed") from None
            if not answer or not answer.get("ready"):
                self.kill()
                message = answer.get("message") if answer else "the query process ended at once"
                self._failure = open_error(message, answer.get("stage", "open") if answer else "open")
                raise self._failure
            self.ready = True
            self.rebase()

    def rebase(self) -> None:
        """Memory is limited above what the process holds when idle (the open database, and
        what the engine's own catalog read left), measured only while no outside SQL has been
        here: after that, whatever a statement left behind counts against the next."""
        if self.pristine:
            self.baseline = rss(self.proc.pid) or self.baseline

    def warm_up(self) -> None:
        """Load Arrow, the guard and the file's definitions (untimed: no statement's work)."""
        if not self.warm:
            write_frame(self.stdin, {"warm": True})
            answer = read_frame(self.stdout)
            if not answer or not answer.get("ok"):
                raise QueryError(str((answer or {}).get("message", "the query process ended unexpectedly")))
            self.warm = True
            self.rebase()

    def outside_sql(self) -> None:
        """Outside SQL is about to reach this worker: it is warmed first, and the baseline is
        taken now, for good."""
        self.warm_up()
        self.rebase()
        self.pristine = False

    def used(self) -> int | None:
        resident = rss(self.pid)
        return None if resident is None else resident + _results_bytes(self.results, self.pid)

    def interrupt(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._interrupts, b"!")

    def kill(self, *, wait: bool = True) -> None:
        """Once, whoever calls it: closing the interrupt pipe twice could close a descriptor
        that another file has been given since. Without `wait`, the process is reaped (and
        the result file it was writing removed) in the background: a process holding
        gigabytes takes the kernel a while to tear down, and the statement's answer need not
        wait for that."""
        with self._ending:
            if self._killed:
                return
            self._killed = True
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        with contextlib.suppress(OSError):
            os.close(self._interrupts)
        if wait:
            self._reap()
        else:
            threading.Thread(target=self._reap, name="astro-reaper", daemon=True).start()

    def _reap(self) -> None:
        self.proc.wait()
        with contextlib.suppress(OSError), os.scandir(self.results) as entries:
            for entry in entries:  # what it was writing when it was killed
                if entry.name.startswith(f"{self.pid}-"):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)

    @property
    def pid(self) -> int:
        return self.proc.pid


class WorkerPool:
    """Runs statements, and the engine's metadata requests, in worker processes that each
    open the database with the engine's setup (read-only, locked down)."""

    def __init__(
        self,
        setup: dict[str, Any],
        memory_limit: str,
        open_error: Callable[[str, str], DataError] | None = None,
    ) -> None:
        self._results = scratch.make("results", scratch.results_root())
        owned = [*setup.get("scratch", ()), str(self._results)]
        self._setup = {**setup, "results": str(self._results), "scratch": owned}
        self._memory_label = memory_limit
        self._memory = memory_allowance(memory_limit)
        self._open_error = open_error or plain_open_error
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # the first starts when something needs it (`warm`)
        self._busy: set[_Worker] = set()
        self._closed = False
        self.peak_rss = 0
        """The largest worker memory seen above its start, for tests and benchmarks."""

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise QueryError("the database is closed")
            worker = self._idle.pop() if self._idle else _Worker(self._setup)
            self._busy.add(worker)
        return worker

    def _give_back(self, worker: _Worker, *, keep: bool) -> None:
        """One idle worker is kept: each holds the open database, and two statements at once
        are rare. A worker that could not open the database is not replaced: the next
        request starts one then, so a released lock or a fixed file is seen on a retry."""
        keep = keep and worker.ready
        with self._lock:
            self._busy.discard(worker)
            if keep and not self._closed and not self._idle:
                self._idle.append(worker)
                return
            if not keep and worker.ready and not self._closed and not self._idle:
                with contextlib.suppress(QueryError):  # then the next request starts one
                    self._idle.append(_Worker(self._setup))  # the replacement, warm
        worker.kill(wait=False)

    def warm(self) -> None:
        """Start a worker now if none is running, without waiting: a statement or metadata
        request is coming, and the process starts (the file opens) meanwhile. Nothing else
        starts one, so reading a cached catalog (`astro shell`) never opens the file."""
        with self._lock:
            if not self._closed and not self._idle and not self._busy:
                self._starting_worker()

    def ready(self) -> None:
        """Block until the idle worker has the database open; raise its open error if it cannot.

        The worker stays in the pool meanwhile: a statement sent now takes it (and waits for
        the same open) rather than starting another process; with none idle, a busy one
        answers, since it has opened the database or is opening it."""
        with self._lock:
            if self._closed:
                raise QueryError("the database is closed")
            worker = self._idle[-1] if self._idle else next(iter(self._busy), None)
            if worker is None:
                worker = self._starting_worker()
        try:
            worker.wait_ready(self._open_error)
        except DataError:
            with self._lock:
                if worker in self._idle:
                    self._idle.remove(worker)
            raise

    def has_ready_worker(self) -> bool:
        """Whether an idle worker has the database open (a statement need not wait for one)."""
        with self._lock:
            return any(worker.ready for worker in self._idle)

    def _starting_worker(self) -> _Worker:
        """Called with the lock held when no worker is idle: a new one, idle until taken."""
        worker = _Worker(self._setup)
        self._idle.append(worker)
        return worker

    def meta(self, request: dict[str, Any]) -> bytes:
        """A metadata request of the engine's own (`worker.py`), answered as a pickle."""
        worker = self._take()
        try:
            worker.clean = False
            if not worker.ready:  # sent with the setup: answered the moment the file is open
                with contextlib.suppress(OSError):  # it could not open it: `wait_ready` says why
                    write_frame(worker.stdin, request)
                worker.wait_ready(self._open_error)
            else:
                write_frame(worker.stdin, request)
            header = self._header(worker, _Stop(), None, memory=None)
            data = worker.stdout.read(header["pickled"])
            if len(data) != header["pickled"]:
                raise QueryError("the query process ended unexpectedly")
            worker.clean = True
            worker.rebase()  # what the catalog left on a pristine worker's heap is no statement's
            return data
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise QueryError(f"the query process failed: {exc}") from None
        finally:
            self._give_back(worker, keep=worker.clean)

    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        guard: bool = True,
        first: Callable[[pa.Table], None] | None = None,
    ) -> tuple[pa.Table, bool, int | None, str]:
        """The rows, whether they were cut, the full count when cheap, and the statement that
        ran. With `guard`, the worker checks it first (`guard.check` against the open file),
        in the same request: parsing is work a statement makes, under its limits. `first` is
        given a long result's first rows (`FIRST_ROWS`) once, after the guard passed, while
        the rest is read under the same limits."""
        worker = self._take()
        stop = _Stop()
        if cancel is not None:
            cancel.attach(stop)
        try:
            worker.wait_ready(self._open_error)
            worker.outside_sql()
            worker.clean = False
            request = {"sql": statement, "cap": cap, "guard": guard, "first": FIRST_ROWS if first else None}
            write_frame(worker.stdin, request)
            header = self._header(worker, stop, timeout, memory=self._memory, first=first)
            rows = self._rows(worker, header)
            worker.clean = True
            return rows
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise QueryError(f"the query process failed: {exc}") from None
        finally:
            if cancel is not None:
                cancel.detach(stop)
            self._give_back(worker, keep=worker.clean)

    @staticmethod
    def _rows(worker: _Worker, header: dict[str, Any]) -> tuple[pa.Table, bool, int | None, str]:
        import pyarrow as pa  # not at import: opening the database and its catalog need none

        total = header.get("total")
        if "file" in header:
            path = header["file"]
            try:
                table = pa.ipc.open_file(pa.memory_map(path)).read_all()
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)  # the mapping stays valid; the name is gone
        else:
            table = pa.ipc.open_stream(worker.stdout).read_all()
        total = total if isinstance(total, int) else None
        return table, bool(header["truncated"]), total, str(header["statement"])

    def _header(
        self,
        worker: _Worker,
        stop: _Stop,
        timeout: float | None,
        *,
        memory: int | None,
        first: Callable[[pa.Table], None] | None = None,
    ) -> dict[str, Any]:
        """Wait for the answer's header under the limits; an error header is raised here. An
        interim frame of first rows met on the way is handed to `first` (unless the statement
        is being stopped), and the wait goes on, its limits counted from the same start. Frames
        are read past the buffer (`raw`), so that `select` sees the one after."""
        started = time.monotonic()
        interrupted: float | None = None
        reason = ""
        while True:
            while not select.select([worker.stdout], [], [], _POLL_S)[0]:
                now = time.monotonic()
                if interrupted is None and (stop.requested.is_set() or (timeout and now - started > timeout)):
                    reason = "cancel" if stop.requested.is_set() else "timeout"
                    worker.interrupt()
                    interrupted = now
                if interrupted is not None and now - interrupted > GRACE_S:
                    raise stopped(reason, timeout)
                used = worker.used()
                if used is not None:
                    self.peak_rss = max(self.peak_rss, used - worker.baseline)
                    if memory is not None and used - worker.baseline > memory:
                        raise memory_stopped(self._memory_label)
                if worker.proc.poll() is not None:
                    raise QueryError("the query process ended unexpectedly (out of memory?)")
            header = read_frame(worker.stdout.raw)  # type: ignore[attr-defined]
            if header is None or "first" not in header:
                break
            data = read_exactly(worker.stdout.raw, header["first"])  # type: ignore[attr-defined]
            if len(data) != header["first"]:
                raise QueryError("the query process ended unexpectedly (out of memory?)")
            if first is not None and interrupted is None and not stop.requested.is_set():
                import pyarrow as pa

                first(pa.ipc.open_stream(data).read_all())
        if header is None:
            raise QueryError("the query process ended unexpectedly (out of memory?)")
        if not header["ok"]:
            worker.clean = True
            if interrupted is not None:
                raise stopped(reason, timeout)
            if header.get("refused"):
                raise GuardError(header["message"])
            raise QueryError(header["message"])
        return header

    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in (*self._idle, *self._busy)]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()
        shutil.rmtree(self._results, ignore_errors=True)

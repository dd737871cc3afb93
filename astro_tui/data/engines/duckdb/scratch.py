"""Private scratch directories that name their owner, so that a killed astro's are found.

An engine keeps a spill directory, a result directory in /dev/shm and, for data
files, a private database file. They are removed on close; when astro is killed
its workers remove them (`worker.py` sees its parent gone); when both die at
once (SIGKILL of the process group, the OOM killer), the next astro to start
removes every one whose owner — the same user, and the process with the PID and
start time written in the name — no longer runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

_NAME = re.compile(r"^astro-(?:spill|results|files)-(\d+)\.(\d+)-")
SHARED_MEMORY = Path("/dev/shm")


def make(kind: str, where: Path | None = None) -> Path:
    """A new directory (mode 0700) named `astro-<kind>-<pid>.<start time>-<random>`."""
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"astro-{kind}-{pid}.{start_time(pid)}-", dir=where))


def results_root() -> Path | None:
    """/dev/shm where there is one: a result file there is mapped, never copied to disk."""
    return SHARED_MEMORY if SHARED_MEMORY.is_dir() else None


def start_time(pid: int) -> int:
    """When the process started (clock ticks after boot, from /proc), or 0 where unknown: a
    PID alone may name another process by the time anyone looks."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat_line.rpartition(")")[2].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else 0


def _owner_runs(pid: int, started: int) -> bool:
    if started:
        return start_time(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(roots: tuple[Path | None, ...] | None = None) -> list[Path]:
    """Remove the scratch directories of astro processes of this user that no longer run;
    return what was removed. Another user's, a live process's and anything that is not a
    plain directory are left alone."""
    if roots is None:
        roots = (Path(tempfile.gettempdir()), results_root())
    removed = []
    for root in {r for r in roots if r is not None}:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        for entry in entries:
            match = _NAME.match(entry.name)
            if match is None:
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                    continue
                if _owner_runs(int(match.group(1)), int(match.group(2))):
                    continue
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed

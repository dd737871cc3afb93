"""A child process measured from outside: its wall time and its peak memory, as the kernel kept them.

`os.wait4` returns a child's resource usage, whose `ru_maxrss` is the highest resident memory
it reached; nothing inside the measured program reports on itself. A child forked from a large
process inherits that process's memory in its `ru_maxrss` (the kernel counts the parent's pages
it ran on until `exec`), so the command is started by a small launcher of its own. Used by the
limit tests and by `bench/bench_pg_limits.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_LAUNCHER = """
import json, os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
elapsed = time.perf_counter() - started
with open(sys.argv[1], "w") as out:
    json.dump([elapsed, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)], out)
"""


@dataclass(frozen=True, slots=True)
class Measured:
    elapsed_s: float
    peak_bytes: int
    returncode: int
    stdout: str
    stderr: str


def run_measured(argv: list[str], env: dict[str, str]) -> Measured:
    """Run `argv` to its end through the launcher; its output goes to files, read afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        figures, out, err = Path(tmp, "figures.json"), Path(tmp, "stdout"), Path(tmp, "stderr")
        with out.open("wb") as stdout, err.open("wb") as stderr:
            subprocess.run(
                [sys.executable, "-c", _LAUNCHER, str(figures), *argv],
                stdout=stdout,
                stderr=stderr,
                env=env,
                check=True,
            )
        elapsed, peak, code = json.loads(figures.read_text())
        return Measured(
            elapsed,
            peak,
            code,
            out.read_bytes().decode("utf-8", "replace"),
            err.read_bytes().decode("utf-8", "replace"),
        )

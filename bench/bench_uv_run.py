"""`uv run astro --version`: bytecode written by the first launch, against uv's `compile-bytecode`.

Interleaved fresh runs of the same command; the alternative sets `UV_COMPILE_BYTECODE=1`,
which is what `[tool.uv] compile-bytecode = true` did (uv then compiles all of
site-packages on every `uv run`, and says so on stderr). Prints medians and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def once(compile_bytecode: bool) -> tuple[float, str]:
    env = dict(os.environ)
    env.pop("UV_COMPILE_BYTECODE", None)
    if compile_bytecode:
        env["UV_COMPILE_BYTECODE"] = "1"
    started = time.perf_counter()
    done = subprocess.run(
        ["uv", "run", "astro", "--version"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - started, done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    once(False)  # the first launch after an install writes the bytecode
    ours: list[float] = []
    theirs: list[float] = []
    said = ""
    for _ in range(args.runs):
        seconds, stderr = once(False)
        assert not stderr, stderr
        ours.append(seconds)
        seconds, said = once(True)
        theirs.append(seconds)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"uv run astro --version, {args.runs} interleaved runs, medians")
    print(f"  bytecode from the first launch: {a:.2f} s, stderr empty")
    print(f"  UV_COMPILE_BYTECODE=1:          {b:.2f} s, stderr {said.splitlines()[-1] if said else ''!r}")
    print(f"  ratio {a / b:.2f}x")


if __name__ == "__main__":
    main()

"""Another program with a DuckDB file open for writing, as a user's ETL job or notebook would be."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def holding_for_writing(path: Path) -> Iterator[int]:
    """Yields the holder's PID once DuckDB has the file's write lock."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb; c = duckdb.connect({str(path)!r}); print('ok'); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=30)

"""Write a result to CSV, Parquet or JSON: blocking, so it runs in a thread worker.

The file appears atomically (written aside, then renamed) so a failed or
cancelled export never leaves half a file where the user asked for one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa

_JSON_BATCH = 10_000


def resolve_path(path: str) -> Path:
    return Path(os.path.expandvars(path)).expanduser().resolve()


def write_result(table: pa.Table, fmt: str, path: Path) -> Path:
    """Write `table` to `path` in `fmt` (csv | parquet | json) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.astro-tmp")
    try:
        if fmt == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        elif fmt == "json":
            _write_json(table, tmp)
        else:
            raise ValueError(f"unknown export format {fmt!r}")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _write_json(table: pa.Table, path: Path) -> None:
    """A JSON array of row objects, written batch by batch so memory stays flat."""
    from astro_tui.data.text_table import json_safe

    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        first = True
        for batch in table.to_batches(_JSON_BATCH):
            for row in batch.to_pylist():
                fh.write("\n  " if first else ",\n  ")
                first = False
                fh.write(json.dumps({k: json_safe(v) for k, v in row.items()}, ensure_ascii=False))
        fh.write("\n]\n" if not first else "]\n")

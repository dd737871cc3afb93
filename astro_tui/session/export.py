"""Write a result to CSV, Parquet or JSON: blocking, so it runs in a thread worker.

The file appears atomically (written aside, then renamed) so a failed or
cancelled export never leaves half a file where the user asked for one. No
directory is ever created: a mistyped path is an error, not a new folder.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa

from astro_tui.errors import AstroError

_JSON_BATCH = 10_000


class ExportError(AstroError):
    """One line for the user: what is wrong with the path, or why writing failed."""


def resolve_path(path: str) -> Path:
    return Path(os.path.expandvars(path)).expanduser().resolve()


def default_name(result_name: str, fmt: str) -> str:
    """A file name from the result's name: `Monthly revenue` → `monthly_revenue.csv`."""
    stem = re.sub(r"[^0-9A-Za-z]+", "_", result_name).strip("_").lower()[:48] or "astro-result"
    return f"{stem}.{fmt}"


_SUFFIX_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "JSON lines",
    ".ndjson": "JSON lines",
}


def check_format(fmt: str, path: Path) -> None:
    """Raise ExportError when the file's name says another format than the one to be written: a
    `report.csv` holding Parquet would be read as broken CSV by whatever opens it next. A name
    without a data suffix (or another suffix) is written as asked."""
    named = _SUFFIX_FORMATS.get(path.suffix.lower())
    if named is None or named == fmt:
        return
    fix = path.with_suffix(f".{fmt}").name
    choose = f" or choose {named}" if named in ("csv", "parquet", "json") else ""
    raise ExportError(f"{path.name} is named as {named} but the format is {fmt}: name it {fix}{choose}")


def check_target(path: Path) -> bool:
    """Raise ExportError when `path` cannot be written; True when a file is already there."""
    if path.is_dir():
        raise ExportError(f"{path} is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise ExportError(f"no such directory: {parent} (astro does not create directories)")
    if not os.access(parent, os.W_OK):
        raise ExportError(f"cannot write in {parent}: permission denied")
    return path.exists()


def write_result(table: pa.Table, fmt: str, path: Path, *, overwrite: bool = False) -> Path:
    """Write `table` to `path` in `fmt` (csv | parquet | json) and return the path."""
    if fmt in ("csv", "parquet", "json"):
        check_format(fmt, path)
    if check_target(path) and not overwrite:
        raise ExportError(f"{path} exists; not overwritten")
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
            raise ExportError(f"unknown export format {fmt!r}; use csv, parquet or json")
        os.replace(tmp, path)
    except OSError as exc:
        raise ExportError(f"cannot write {path}: {exc.strerror or exc}") from None
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

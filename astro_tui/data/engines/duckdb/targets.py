"""What the user asked to open: DuckDB files, data files or globs, resolved before any connect."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from astro_tui.data.errors import TargetError

TargetKind = Literal["duckdb", "csv", "parquet", "json"]

_DUCKDB_SUFFIXES = {".duckdb", ".db", ".ddb"}
_FILE_KINDS: dict[str, TargetKind] = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
_COMPRESSION = {".gz", ".zst"}
_DUCKDB_MAGIC = b"DUCK"


@dataclass(frozen=True, slots=True)
class Target:
    """One thing to open; `name` is the table (files) or database alias (DuckDB) it becomes."""

    spec: str
    kind: TargetKind
    paths: tuple[Path, ...]
    name: str


def resolve_targets(specs: list[str] | tuple[str, ...]) -> list[Target]:
    """Check every spec exists and has a known kind; raise TargetError on the first that doesn't."""
    targets: list[Target] = []
    taken: set[str] = set()
    for spec in specs:
        target = _resolve(spec)
        name, n = target.name, 2
        while name.lower() in taken:
            name, n = f"{target.name}_{n}", n + 1
        taken.add(name.lower())
        targets.append(Target(target.spec, target.kind, target.paths, name))
    return targets


def _resolve(spec: str) -> Target:
    if glob.has_magic(spec):
        paths = tuple(Path(p).resolve() for p in sorted(glob.glob(spec, recursive=True)))
        paths = tuple(p for p in paths if p.is_file())
        if not paths:
            raise TargetError(f"{spec}: no files match")
        kinds = {_kind_of(p) for p in paths}
        if len(kinds) != 1 or "duckdb" in kinds:
            raise TargetError(f"{spec}: a glob must match data files of one kind (CSV, Parquet or JSON)")
        return Target(spec, kinds.pop(), paths, identifier(_glob_name(spec)))
    path = Path(spec).expanduser()
    if not path.exists():
        raise TargetError(f"{spec}: no such file")
    if path.is_dir():
        raise TargetError(f"{spec}: is a directory (give a .duckdb file, data files or a glob)")
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise TargetError(f"{spec}: cannot read ({exc.strerror or exc})") from None
    kind = _kind_of(path, head)
    name = path.stem if kind == "duckdb" else file_stem(path)
    return Target(spec, kind, (path.resolve(),), identifier(name))


def _glob_name(spec: str) -> str:
    """`sales_*.csv` is "sales"; `csv/*.csv` is "csv", named from the folder."""
    stem = file_stem(Path(re.sub(r"[*?\[\]]+", "", Path(spec).name) or "x")).strip("_-. ")
    if stem and not Path(stem).suffix and f".{stem.lower()}" not in _FILE_KINDS:
        return stem
    folders = [p for p in Path(spec).parent.parts if not glob.has_magic(p) and p not in ("/", ".", "..")]
    return folders[-1] if folders else "files"


def _kind_of(path: Path, head: bytes | None = None) -> TargetKind:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSION:
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if head is not None and head[8:12] == _DUCKDB_MAGIC:
        return "duckdb"
    if suffix in _DUCKDB_SUFFIXES:
        if head is not None:
            raise TargetError(f"{path}: not a DuckDB database file")
        return "duckdb"
    if suffix in _FILE_KINDS:
        return _FILE_KINDS[suffix]
    raise TargetError(f"{path}: unknown file type (expected .duckdb, .csv, .parquet or .json)")


def file_stem(path: Path) -> str:
    name = path.name
    for suffix in reversed(path.suffixes):
        name = name.removesuffix(suffix)
    return name.rstrip("_-. ") or path.name


def identifier(name: str) -> str:
    """A table (or database) name a user can type without quotes; the file's own name stays in
    `spec`. Lower case, each run of other characters one `_`, a leading number moved to the end
    (`2024-sales` → `sales_2024`, `2024` → `t_2024`), and a word DuckDB reserves given a trailing
    `_` (`select` → `select_`), since `FROM select` does not parse."""
    cleaned = re.sub(r"\W+", "_", name).strip("_").lower()
    words = cleaned.split("_")
    lead = 0
    while lead < len(words) and words[lead][:1].isdigit():
        lead += 1
    if 0 < lead < len(words):
        cleaned = "_".join(words[lead:] + words[:lead])
    if not cleaned or cleaned[0].isdigit():
        return f"t_{cleaned}".rstrip("_")
    return f"{cleaned}_" if _refused_as_table(cleaned) else cleaned


# fmt: off
REFUSED_AS_TABLE = frozenset((
    "all", "analyse", "analyze", "and", "anti", "any", "array", "as", "asc", "asof", "asymmetric",
    "at", "authorization", "binary", "both", "by", "case", "cast", "check", "collate", "collation",
    "column", "concurrently", "constraint", "create", "cross", "default", "deferrable", "desc",
    "describe", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign",
    "freeze", "from", "full", "glob", "group", "having", "ilike", "in", "initially", "inner",
    "intersect", "into", "is", "isnull", "join", "lambda", "lateral", "leading", "left", "like",
    "limit", "natural", "not", "notnull", "null", "offset", "on", "only", "or", "order", "outer",
    "overlaps", "pivot", "pivot_longer", "pivot_wider", "placing", "positional", "primary", "qualify",
    "references", "returning", "right", "select", "semi", "show", "similar", "some", "summarize",
    "symmetric", "table", "tablesample", "then", "to", "trailing", "true", "union", "unique", "unpack",
    "unpivot", "using", "variadic", "verbose", "when", "where", "window", "with",
))
# fmt: on
"""The keywords DuckDB's parser refuses as a bare table name (`FROM select`), read off its parser
(tests/engines/test_file_targets.py holds this set equal to what the parser refuses for every
`duckdb_keywords()` entry). Kept as a set so naming a file table loads no DuckDB in the app's
own process; `map` or `data` are keywords the parser still takes."""


def _refused_as_table(name: str) -> bool:
    return name in REFUSED_AS_TABLE


def shown_path(target: Target, path: Path) -> str:
    """One file of a target as the user wrote it: the spec for a single file, and for a glob the
    file relative to the folder it was run in unless the glob was absolute."""
    if target.paths == (path,):
        return target.spec
    if Path(target.spec).expanduser().is_absolute():
        return str(path)
    relative = os.path.relpath(path)
    return str(path) if relative.startswith(os.pardir) else relative

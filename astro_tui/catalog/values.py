"""Which columns hold a keyword as a value: "East China" lives in `sales.regions.region_name`.

The data, not the metadata, is searched, so it is bounded three ways: only text
columns, at most the first `_ROWS_PER_TABLE` rows of each table, and a time
budget after which the scan stops and says what it did not reach. Columns whose
names suggest categories (name, region, status, city, ...) in small tables go
first, since that is where a value someone types usually lives. Every query goes
through the guarded `Database.execute`, one per table for all its text columns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

from astro_tui.catalog.text import identifier_words
from astro_tui.catalog.vfs import display_name
from astro_tui.data.catalog_model import Catalog, Column, Table
from astro_tui.text import one_line

if TYPE_CHECKING:
    from astro_tui.data.database import CancelToken, Database
    from astro_tui.data.engines.base import Dialect

_ROWS_PER_TABLE = 200_000
_COLUMNS_PER_TABLE_PART = 64
_COLUMNS_PER_QUERY = 320
_TABLES_PER_QUERY = 32
_MAX_KEYWORDS = 8
_SHOWN_PER_KEYWORD = 5
_VALUE_CHARS = 60
_LIKELY = 2.0
_FUZZY_DISTINCT = 2_000
_FUZZY_COLUMNS = 40
_TEXT_TYPES = ("VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR", "ENUM")
_CATEGORICAL = frozenset(
    (
        "name", "names", "region", "regions", "status", "state", "city", "cities", "country", "countries",
        "category", "categories", "type", "types", "kind", "label", "title", "segment", "channel", "code",
        "province", "district", "brand", "tier", "tag", "tags", "group", "department", "source", "medium",
        "campaign", "store", "shop", "market", "language", "currency", "class", "level", "stage", "reason",
        "method", "plan", "product", "team", "area", "zone", "platform", "device", "browser", "os",
        "vendor", "supplier", "carrier",
    )
)  # fmt: skip
_UNLIKELY = frozenset(
    (
        "id", "uuid", "guid", "hash", "json", "url", "uri", "email", "token", "password", "sql", "html",
        "xml", "body", "text",
    )
)  # fmt: skip


@dataclass(slots=True)
class _Found:
    column: str
    example: str
    exact: bool
    priority: float


@dataclass(slots=True)
class _Scan:
    found: dict[str, list[_Found]] = field(default_factory=dict)
    scanned_columns: int = 0
    scanned_tables: int = 0
    total_columns: int = 0
    stopped: bool = False
    settled: bool = False
    errors: int = 0


def text_columns(table: Table) -> list[Column]:
    return [c for c in table.columns if c.type.upper().startswith(_TEXT_TYPES)]


@dataclass(slots=True)
class _Candidate:
    table: Table
    column: Column
    priority: float
    words: frozenset[str]


class ValueScanner:
    """The scan order for one catalog, worked out once: likely category columns of small tables first."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._plan: list[list[_Candidate]] | None = None

    def plan(self) -> list[list[_Candidate]]:
        if self._plan is None:
            memo: dict[str, frozenset[str]] = {}
            ranked: list[tuple[float, int, list[_Candidate]]] = []
            for table in self.catalog.tables:
                if table.row_count == 0:
                    continue
                candidates = []
                for column in text_columns(table):
                    words = memo.get(column.name)
                    if words is None:
                        words = memo[column.name] = frozenset(identifier_words(column.name))
                    candidates.append(_Candidate(table, column, _priority(table, words), words))
                if candidates:
                    candidates.sort(key=lambda c: -c.priority)
                    rows = table.row_count if table.row_count is not None else 1 << 62
                    ranked.append((-candidates[0].priority, rows, candidates))
            ranked.sort(key=lambda r: (r[0], r[1]))
            self._plan = [candidates for _, _, candidates in ranked]
        return self._plan

    def find(
        self,
        db: Database | None,
        keywords: list[str],
        *,
        time_budget_s: float = 2.0,
        cancel: CancelToken | None = None,
    ) -> list[str]:
        """Lines saying where each keyword was found as a value, or where the search stopped.

        Raises QueryCancelled when `cancel` is used: a cancelled search reports nothing.
        """
        keywords = list(dict.fromkeys(k.strip() for k in keywords if k.strip()))[:_MAX_KEYWORDS]
        if db is None:
            return [
                f"values: not searched for {', '.join(repr(k) for k in keywords)} (no database connected)"
            ]
        deadline = time.monotonic() + time_budget_s
        plan = self._reorder(self.plan(), keywords)
        scan = _Scan({k: [] for k in keywords}, total_columns=sum(len(c) for c in plan))
        for batch in _batches(plan):
            if batch[0][0].priority < _LIKELY and all(any(f.exact for f in scan.found[k]) for k in keywords):
                scan.settled = True
                break
            _scan_batch(db, batch, keywords, scan, deadline, cancel)
            if scan.stopped:
                break
        close: dict[str, tuple[float, str, str]] = {}
        missing = [k for k in keywords if not scan.found[k]]
        if missing and time.monotonic() < deadline - 0.1:
            close = _close_values(db, plan, missing, deadline, cancel)
        return _report(keywords, scan, time_budget_s, close)

    @staticmethod
    def _reorder(plan: list[list[_Candidate]], keywords: list[str]) -> list[list[_Candidate]]:
        """Tables with a column named after a keyword's word go first (keyword 'gold tier' -> `tier`)."""
        words = {w for k in keywords for w in identifier_words(k)}
        if not words:
            return plan
        first = [cands for cands in plan if any(c.words & words for c in cands)]
        return first + [cands for cands in plan if not any(c.words & words for c in cands)]


def _priority(table: Table, words: frozenset[str]) -> float:
    score = 0.0
    if words & _CATEGORICAL:
        score += 2.0
    if words & _UNLIKELY:
        score -= 1.5
    rows = table.row_count
    if table.kind == "view" or rows is None:
        score -= 1.0
    elif rows <= 10_000:
        score += 1.0
    elif rows > 1_000_000:
        score -= 0.5
    return score


def _like_literal(keyword: str, dialect: Dialect) -> str:
    escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return dialect.literal("%" + escaped + "%")


def _batches(plan: list[list[_Candidate]]) -> Iterator[list[list[_Candidate]]]:
    """Several tables per query (UNION ALL): the per-statement cost, not the rows, dominates small tables."""
    batch: list[list[_Candidate]] = []
    size = 0
    for candidates in plan:
        for start in range(0, len(candidates), _COLUMNS_PER_TABLE_PART):
            chunk = candidates[start : start + _COLUMNS_PER_TABLE_PART]
            if batch and (size + len(chunk) > _COLUMNS_PER_QUERY or len(batch) >= _TABLES_PER_QUERY):
                yield batch
                batch, size = [], 0
            batch.append(chunk)
            size += len(chunk)
    if batch:
        yield batch


def _branch(n: int, candidates: list[_Candidate], dialect: Dialect) -> str:
    """One table's text columns unpivoted to (part, column index, value) rows."""
    table = candidates[0].table
    names = [table.quote(c.column.name) for c in candidates]
    values = [dialect.cast_text(name) for name in names]
    return (
        f"SELECT {n} AS part, {dialect.unpivot(values)} "
        f"FROM (SELECT {', '.join(dict.fromkeys(names))} FROM {table.sql_name} "
        f"LIMIT {_ROWS_PER_TABLE}) AS scanned{n}"
    )


def _batch_sql(batch: list[list[_Candidate]], keywords: list[str], dialect: Dialect) -> str:
    """The shortest example of each keyword per column; the SQL grows with columns, not columns × keywords."""
    union = " UNION ALL ".join(_branch(n, candidates, dialect) for n, candidates in enumerate(batch))
    patterns = ", ".join(f"({j}, {_like_literal(k, dialect)})" for j, k in enumerate(keywords))
    return (
        f"SELECT part, col, kw, {dialect.shortest('v')} AS example FROM ({union}) AS u "
        f"JOIN (VALUES {patterns}) AS k(kw, pattern) ON v ILIKE pattern ESCAPE {dialect.literal(chr(92))} "
        "GROUP BY part, col, kw"
    )


def _scan_batch(
    db: Database,
    batch: list[list[_Candidate]],
    keywords: list[str],
    scan: _Scan,
    deadline: float,
    cancel: CancelToken | None,
) -> None:
    """One query for the batch; if it fails, one per table, each within what is left of the budget."""
    from astro_tui.data.errors import DataError, QueryCancelled, QueryTimeout

    remaining = deadline - time.monotonic()
    if remaining <= 0.05:
        scan.stopped = True
        return
    cap = sum(len(c) for c in batch) * len(keywords)
    try:
        result = db.execute(
            _batch_sql(batch, keywords, db.dialect), row_cap=cap, timeout=remaining, cancel=cancel
        )
    except QueryTimeout:
        scan.stopped = True
        return
    except QueryCancelled:
        raise
    except DataError:
        if len(batch) > 1:
            for candidates in batch:
                _scan_batch(db, [candidates], keywords, scan, deadline, cancel)
                if scan.stopped:
                    return
        else:
            scan.errors += 1
        return
    for part, col, kw, example in result.rows():
        candidate = batch[int(part)][int(col)]
        keyword = keywords[int(kw)]
        exact = str(example).strip().lower() == keyword.lower()
        where = f"{display_name(candidate.table)}.{candidate.column.name}"
        scan.found[keyword].append(_Found(where, str(example), exact, candidate.priority))
    scan.scanned_columns += sum(len(c) for c in batch)
    scan.scanned_tables += len(batch)


def _report(
    keywords: list[str], scan: _Scan, budget: float, close: dict[str, tuple[float, str, str]]
) -> list[str]:
    lines = ["values:"]
    for keyword in keywords:
        found = sorted(scan.found[keyword], key=lambda f: (not f.exact, -f.priority))
        if not found:
            line = f"  keyword '{keyword}' not found in the {scan.scanned_columns:,} text columns scanned"
            if keyword in close:
                score, value, where = close[keyword]
                value = one_line(value, _VALUE_CHARS)
                line += f"; closest value: '{value}' in {where} ({score:.0f}% similar)"
            lines.append(line)
            continue
        shown = [
            f"{f.column} (e.g. '{one_line(f.example, _VALUE_CHARS)}')" for f in found[:_SHOWN_PER_KEYWORD]
        ]
        more = f" and {len(found) - _SHOWN_PER_KEYWORD} more" if len(found) > _SHOWN_PER_KEYWORD else ""
        lines.append(f"  keyword '{keyword}' found in {', '.join(shown)}{more}")
    if scan.stopped:
        lines.append(
            f"  value search stopped at its {budget:g} s budget after {scan.scanned_columns:,} of "
            f"{scan.total_columns:,} text columns ({scan.scanned_tables:,} tables, likeliest first); "
            "to look further, query a table directly with ILIKE"
        )
    elif scan.settled:
        lines.append(
            f"  scanned the {scan.scanned_columns:,} likeliest text columns ({scan.scanned_tables:,} tables) "
            f"of {scan.total_columns:,} and stopped: every keyword was found exactly"
        )
    else:
        lines.append(
            f"  scanned {scan.scanned_columns:,} text columns in {scan.scanned_tables:,} tables "
            f"(the first {_ROWS_PER_TABLE:,} rows of each)"
        )
    if scan.errors:
        lines.append(f"  {scan.errors} table(s) could not be read and were skipped")
    return lines


def _close_values(
    db: Database,
    plan: list[list[_Candidate]],
    missing: list[str],
    deadline: float,
    cancel: CancelToken | None,
) -> dict[str, tuple[float, str, str]]:
    """For keywords with no match, near spellings among the values of likely category columns."""
    from astro_tui.data.errors import DataError, QueryCancelled

    candidates = [c for cands in plan for c in cands if c.priority >= _LIKELY and c.table.kind == "table"]
    best: dict[str, tuple[float, str, str]] = {}
    for candidate in candidates[:_FUZZY_COLUMNS]:
        remaining = deadline - time.monotonic()
        if remaining <= 0.05:
            break
        col = candidate.table.quote(candidate.column.name)
        sql = (
            f"SELECT DISTINCT {db.dialect.cast_text(col)} FROM (SELECT {col} FROM {candidate.table.sql_name} "
            f"LIMIT {_ROWS_PER_TABLE}) AS scanned WHERE {col} IS NOT NULL LIMIT {_FUZZY_DISTINCT}"
        )
        try:
            result = db.execute(sql, row_cap=_FUZZY_DISTINCT, timeout=remaining, cancel=cancel)
        except QueryCancelled:
            raise
        except DataError:
            continue
        values = [str(r[0]) for r in result.rows()]
        for keyword in missing:
            match = process.extractOne(keyword, values, scorer=fuzz.ratio, processor=str.lower)
            if match and match[1] >= 85 and match[1] > best.get(keyword, (0.0, "", ""))[0]:
                where = f"{display_name(candidate.table)}.{candidate.column.name}"
                best[keyword] = (match[1], match[0], where)
    return best

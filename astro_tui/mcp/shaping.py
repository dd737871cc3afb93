"""Tool results as an outside agent gets them: structured, bounded, inert, and honest about cuts.

An agent quotes what it is given, so a result that was cut says so where the
agent looks (`truncated`, `total_rows`, a `notice` sentence), and no result is
larger than `RESULT_BYTES` whatever the query returned: rows are added until
the budget is spent. Cell text goes through the same inert rules as the app's
(control, escape and bidi characters become visible `\\x1b`-style text): a value
is data, never something that drives the client's terminal or reorders text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.types as pat
from pydantic import BaseModel

from astro_tui.agent.events import Answer
from astro_tui.agent.formatting import sql_type
from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import json_safe, table_lines
from astro_tui.display import decimal_text
from astro_tui.text import UNSAFE_RE2, inert

RESULT_BYTES = 40_000
"""The most a tool result may hold, structured part and text together (about 10k tokens)."""
TEXT_ROWS = 20
CELL_CHARS = 2_000
SQL_CHARS = 10_000
_CHUNK = 1024
_NOTICE_ROOM = 400


class Column(BaseModel):
    name: str
    type: str


class SqlResult(BaseModel):  # run_sql's output schema; results are plain dicts of this shape
    sql: str
    columns: list[Column]
    rows: list[Any]
    row_count: int
    truncated: bool
    total_rows: int | None
    elapsed_ms: float
    notice: str | None


class AnswerInput(BaseModel):
    name: str
    result: SqlResult


class VerifiedAnswer(BaseModel):  # submit_result's output schema
    title: str | None
    text: str
    verified: bool
    complete: bool
    unverified_numbers: list[str]
    provenance: list[Any]
    inputs: list[AnswerInput]
    notice: str | None


def size(value: Any) -> int:
    """Bytes of `value` as compact JSON on the wire."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))


def cell(value: Any) -> tuple[Any, bool]:
    """A JSON value with inert text, long text cut; and whether it was cut."""
    value = json_safe(value)
    if isinstance(value, str):
        cut = len(value) > CELL_CHARS
        return inert(value[:CELL_CHARS] + "…" if cut else value), cut
    if isinstance(value, list):
        pairs = [cell(v) for v in value]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    if isinstance(value, dict):
        pairs_by_key = {inert(k, keep_newlines=False): cell(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs_by_key.items()}, any(c for _, c in pairs_by_key.values())
    return value, False


def _column(column: pa.ChunkedArray) -> tuple[list[Any], bool]:
    """A column's values for JSON, and whether a long text was cut. Vectorised checks first: most
    columns are numbers, or text without a control character or a long value, and pass as they are."""
    kind = column.type
    if pat.is_dictionary(kind):
        column = column.cast(kind.value_type)
        kind = kind.value_type
    if pat.is_boolean(kind) or pat.is_integer(kind):
        return column.to_pylist(), False
    if pat.is_floating(kind) and pc.all(pc.is_finite(column)).as_py() is not False:
        return column.to_pylist(), False
    if pat.is_date(kind):  # exact as text, as `json_safe` writes them
        return column.cast(pa.string()).to_pylist(), False
    if pat.is_decimal(kind):  # as `json_safe` writes them: Arrow's text of 4E-7 reads `4.00E-7`
        return [None if v is None else decimal_text(v, grouping=False) for v in column.to_pylist()], False
    if pat.is_string(kind) or pat.is_large_string(kind):
        dirty = pc.any(pc.match_substring_regex(column, UNSAFE_RE2)).as_py()
        longest = pc.max(pc.utf8_length(column)).as_py() or 0
        if not dirty and longest <= CELL_CHARS:
            return column.to_pylist(), False
    pairs = [cell(v) for v in column.to_pylist()]
    return [v for v, _ in pairs], any(c for _, c in pairs)


def sql_result(result: QueryResult, budget: int) -> dict[str, Any]:
    """The result with as many rows as fit in `budget` bytes, and what was left out, said plainly."""
    sql = result.sql if len(result.sql) <= SQL_CHARS else result.sql[:SQL_CHARS] + "…"
    schema = result.table.schema
    payload: dict[str, Any] = {
        "sql": inert(sql),
        "columns": [{"name": inert(f.name, keep_newlines=False), "type": sql_type(f.type)} for f in schema],
        "rows": [],
        "row_count": 0,
        "truncated": False,
        "total_rows": None,
        "elapsed_ms": round(result.elapsed_ms, 1),
        "notice": None,
    }
    room = budget - size(payload) - _NOTICE_ROOM
    rows: list[list[Any]] = []
    cells_cut = False
    for start in range(0, result.row_count, _CHUNK):
        converted = [_column(c) for c in result.table.slice(start, _CHUNK).columns]
        chunk = [list(row) for row in zip(*(values for values, _ in converted), strict=True)]
        cells_cut = cells_cut or any(cut for _, cut in converted)
        cost = size(chunk) - 1  # the chunk's brackets, less the comma that joins it to the rows before
        if cost <= room:
            rows.extend(chunk)
            room -= cost
            continue
        keep = len(chunk) * max(room, 0) // cost  # the chunk that reaches the budget: what fits
        while keep and size(chunk[:keep]) - 1 > room:
            keep = keep * 9 // 10
        rows.extend(chunk[:keep])
        break
    total = result.total_rows if result.truncated else result.row_count
    payload["rows"] = rows
    payload["row_count"] = len(rows)
    payload["total_rows"] = total
    payload["truncated"] = result.truncated or len(rows) < result.row_count
    payload["notice"] = _notice(result, len(rows), total, cells_cut, budget)
    return payload


def _notice(result: QueryResult, shown: int, total: int | None, cells_cut: bool, budget: int) -> str | None:
    reasons = []
    if result.truncated:
        reasons.append(f"the row cap of {result.row_count:,} rows")
    if shown < result.row_count:
        reasons.append(f"the {budget:,}-byte result budget")
    notes = []
    if reasons:
        notes.append(
            f"truncated: {_of(shown, total, result)}, cut by {' and '.join(reasons)}. "
            "Do not count or sum these rows yourself: aggregate or filter in SQL."
        )
    if cells_cut:
        notes.append(f"Text values longer than {CELL_CHARS:,} characters end in '…'.")
    return " ".join(notes) or None


def sql_text(result: QueryResult, payload: Mapping[str, Any]) -> str:
    """The short rendering beside the structured result: the first rows as a table, and the
    reply's one row count — the structured result's, never the row cap's."""
    shown = min(TEXT_ROWS, payload["row_count"])
    lines = list(table_lines(result, max_rows=shown, max_cell=60))
    if len(lines) > 1:
        lines.pop()  # the table's own count line counts the result as read, not as given here
    lines.append(payload["notice"] or _counted(payload["row_count"], "row"))
    if shown < payload["row_count"]:
        lines.append(f"(the table above shows the first {shown:,})")
    return "\n".join(lines)


def reply_count(payload: Mapping[str, Any], result: QueryResult) -> str:
    """The rows a shaped result holds, and of how many when the result has more."""
    if not payload["truncated"]:
        return _counted(payload["row_count"], "row")
    return _of(payload["row_count"], payload["total_rows"], result)


def _of(shown: int, total: int | None, result: QueryResult) -> str:
    whole = f"{total:,}" if total is not None else f"more than {result.row_count:,}"
    return f"{shown:,} of {whole} rows here"


def text_result(text: str, budget: int = RESULT_BYTES) -> str:
    """A text tool's output (shell, cards, search), inert and within the budget."""
    text = inert(text)
    data = text.encode("utf-8", "replace")
    if len(data) <= budget:
        return text
    kept = data[: budget - 100].decode("utf-8", "ignore")
    return kept + f"\n… (cut at {budget:,} bytes)"


def verified_answer(answer: Answer, budget: int = RESULT_BYTES) -> tuple[dict[str, Any], str]:
    """submit_result's answer: the rendered text, where each of its values came from (the same
    records as `astro ask --json`), and per input its SQL as executed and rows, in `budget` bytes:
    the text first (up to half), then the provenance (up to half of what is left), then the inputs.
    A span's offsets are those of the text as rendered: they shift only where the text held a
    control character, which the inert text shows as `\\x1b`-style escapes."""
    text = text_shown = inert(answer.text)
    title = inert(answer.title, keep_newlines=False) if answer.title else None
    notes = []
    if len(text.encode("utf-8", "replace")) > budget // 2:
        text = text.encode("utf-8", "replace")[: budget // 2].decode("utf-8", "ignore") + "…"
        notes.append("The answer's text is cut here; ask for a shorter one.")
    payload: dict[str, Any] = {
        "title": title,
        "text": text,
        "verified": bool(answer.verified),
        "complete": bool(answer.complete),
        "unverified_numbers": [inert(n, keep_newlines=False) for n in answer.unverified_numbers],
        "provenance": [],
        "inputs": [],
        "notice": None,
    }
    room = budget - size(payload) - _NOTICE_ROOM
    spans, room = _within([cell(span.to_json())[0] for span in answer.provenance], room // 2, room)
    payload["provenance"] = spans
    if len(spans) < len(answer.provenance):
        notes.append(
            f"Provenance of {len(answer.provenance) - len(spans):,} more values left out (the budget)."
        )
    if not answer.complete:
        notes.append("Not complete: a value came from a result cut by a limit.")
    share = max(room // max(len(answer.tables), 1), 0)
    for table in answer.tables:
        payload["inputs"].append(
            {"name": inert(table.name, keep_newlines=False), "result": sql_result(table.result, share)}
        )
    payload["notice"] = " ".join(notes) or None
    return payload, _answer_text(title, text_shown, answer, payload["inputs"])


def _within(items: list[Any], limit: int, room: int) -> tuple[list[Any], int]:
    """The first items whose JSON fits in `limit` bytes, and the room left after them."""
    kept: list[Any] = []
    used = 0
    for item in items:
        cost = size(item) + 1
        if used + cost > limit:
            break
        kept.append(item)
        used += cost
    return kept, room - used


def _answer_text(title: str | None, text: str, answer: Answer, inputs: list[dict[str, Any]]) -> str:
    parts = [title, text] if title else [text]
    for table, given in zip(answer.tables, inputs, strict=True):
        one_line = " ".join(table.sql.split())
        if len(one_line) > 300:
            one_line = one_line[:299] + "…"
        count = reply_count(given["result"], table.result)
        parts.append(f"[{given['name']}] {count} · SQL as executed: {inert(one_line)}")
    if answer.unverified_numbers:
        typed = ", ".join(inert(n, keep_newlines=False) for n in answer.unverified_numbers)
        parts.append(f"Not verified: typed into the template or title, not from a query: {typed}")
    return "\n\n".join(p for p in parts if p)


def one_line(message: str) -> str:
    """An error as one line: the engine's hints (`Did you mean …`) kept after a `;`."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return inert("; ".join(lines) or "failed", keep_newlines=False)


def summary(payload: Mapping[str, Any]) -> str:
    """`12 rows × 3 columns (region, revenue, orders)`: how a result is kept in the saved conversation."""
    names = [c["name"] for c in payload["columns"]]
    shown = ", ".join(names[:6]) + (", …" if len(names) > 6 else "")
    total = payload["total_rows"]
    rows = _counted(total, "row") if total is not None else f"more than {payload['row_count']:,} rows"
    cut = " (truncated)" if payload["truncated"] else ""
    return f"{rows} × {_counted(len(names), 'column')} ({shown}){cut} · {payload['elapsed_ms']:,.0f} ms"


def _counted(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")

"""Make untrusted text safe to show: data values, names, comments and model text.

A terminal executes escape sequences it is sent (OSC 52 even writes the
clipboard), so anything that did not come from this program is shown with its
control characters made visible, and never parsed as Rich markup.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.types as pat
from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_RE2 = r"[\x00-\x08\x0b-\x1f\x7f-\x{9f}\x{202a}-\x{202e}\x{2066}-\x{2069}]"


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: object, *, keep_newlines: bool = True) -> str:
    """Control characters as visible `\\x1b`-style text; tabs kept, newlines kept unless asked."""
    value = text if isinstance(text, str) else str(text)
    cleaned = _CONTROL.sub(_show, value)
    return cleaned if keep_newlines else cleaned.replace("\n", " ")


def inert_text(text: object, style: str = "", *, keep_newlines: bool = True) -> Text:
    """A Rich `Text` of untrusted content: never markup, no live control codes."""
    return Text(inert(text, keep_newlines=keep_newlines), style=style)


def one_line(text: object, limit: int = 200) -> str:
    """The first `limit` characters on one line, for titles and summaries."""
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def inert_table(table: pa.Table) -> pa.Table:
    """A display copy whose names and text values hold no live control characters.

    The check is vectorised, so a clean million-row table costs one scan per text
    column; only columns that do hold control characters are rewritten.
    """
    import pyarrow.compute as pc

    names = [inert(n, keep_newlines=False) for n in table.column_names]
    columns = []
    for column in table.columns:
        kind = column.type
        if pat.is_dictionary(kind):
            column = column.cast(kind.value_type)
            kind = kind.value_type
        if (pat.is_string(kind) or pat.is_large_string(kind)) and column.null_count < len(column):
            dirty = pc.any(pc.match_substring_regex(column, _CONTROL_RE2)).as_py()
            if dirty:
                column = pa.array(
                    [None if v is None else inert(v) for v in column.to_pylist()], type=pa.string()
                )
        columns.append(column)
    return pa.Table.from_arrays(columns, names=names) if columns else table

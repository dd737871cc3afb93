"""Errors of the data layer; each message is one line a user can act on."""

from __future__ import annotations

import re
from pathlib import Path

from astro_tui.errors import AstroError


class DataError(AstroError):
    """Base of every data-layer failure; `str()` is the one-line message."""


class TargetError(DataError):
    """A target (file, glob, database) cannot be opened."""


class GuardError(DataError):
    """The guard refused a statement before it reached the engine."""


class QueryError(DataError):
    """The engine rejected or failed a statement."""


class QueryTimeout(QueryError):
    """The statement ran past its time limit and was interrupted."""


class QueryCancelled(QueryError):
    """The caller cancelled the statement."""


def one_line(exc: BaseException) -> str:
    """DuckDB messages carry a caret diagram and context lines; users need the first line."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first.strip()


_HINTS = ("Did you mean", "Candidate bindings", "HINT:")
_INTERNAL = re.compile(r'^Did you mean "(?:pg_|duckdb_|sqlite_|information_schema|pragma_)', re.I)
"""DuckDB suggests its own system views for a mistyped table; only the user's names help."""


def engine_message(exc: BaseException) -> str:
    """The engine's first line, plus its own hints ("Did you mean "flights"?", "Candidate
    bindings: …") on a second line; the caret diagram and context lines are dropped."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    lines = [line.strip() for line in text.splitlines()]
    kept = [lines[0]] + [line for line in lines[1:] if line.startswith(_HINTS) and not _INTERNAL.search(line)]
    return "\n".join(kept)


def syntax_message(text: str) -> str:
    """`syntax error at or near "x"` once, never `syntax error: syntax error at …`."""
    text = text.removeprefix("Parser Error: ").strip()
    return text if text.lower().startswith("syntax error") else f"syntax error: {text}"


_LOCK = re.compile(r"Could not set lock on file .*?(?:Conflicting lock is held in (.*?) )?\(PID (\d+)\)")


def lock_message(spec: str, message: str, proc: Path = Path("/proc")) -> str | None:
    """What holds a database file's lock and what to do, or None when `message` is no lock error."""
    match = _LOCK.search(message)
    if match is None:
        return None
    pid = match.group(2)
    name = _process_name(proc / pid) or (Path(match.group(1)).name if match.group(1) else "")
    holder = f"{name} (PID {pid})" if name else f"PID {pid}"
    return (
        f"{spec}: locked by another program, {holder}, which has it open for writing.\n"
        "Close that program (or let it finish) and try again, or open a copy of the file."
    )


def _process_name(proc_dir: Path) -> str:
    """The holder's command line from /proc when readable (Linux); empty elsewhere."""
    try:
        raw = (proc_dir / "cmdline").read_bytes()
    except OSError:
        return ""
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    if not words:
        return ""
    words[0] = Path(words[0]).name
    text = " ".join(" ".join(words).split())  # `python -c "…"` may hold newlines and tabs
    return text if len(text) <= 60 else text[:59] + "…"

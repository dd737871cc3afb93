"""PostgreSQL and libpq failures as the one line a user can act on.

The ADBC driver prefixes its own status and repeats the query; PostgreSQL's
structured fields (primary message, DETAIL, HINT, SQLSTATE) arrive in
`details`, and are what the line is built from. A password is never part of
libpq's messages, and the query text is dropped.
"""

from __future__ import annotations

import re

_ADBC_PREFIX = re.compile(r"^[A-Z_]+: (?:\[libpq\] )?(?:Failed to connect: )?")
_QUERY_TAIL = re.compile(r"\s*Query was:.*$", re.S)
_CONNECTION_TO = re.compile(
    r'^connection to server (?:at "[^"]*"(?:\s*\([^)]*\))?, port \d+|on socket "[^"]*") failed: '
)
_NO_PASSWORD = "the server wants a password: set PGPASSWORD or add it to ~/.pgpass"
SERVER_GONE_STATES = ("08", "57P01", "57P02", "57P03")


def diag(exc: BaseException) -> dict[str, str]:
    """PostgreSQL's diagnostic fields carried by an ADBC error, by name (`MESSAGE_PRIMARY`, `HINT`…)."""
    fields: dict[str, str] = {}
    for key, value in getattr(exc, "details", None) or []:
        name = key.decode() if isinstance(key, bytes) else str(key)
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        fields[name.removeprefix("PG_DIAG_")] = text
    return fields


def sqlstate(exc: BaseException) -> str:
    return str(getattr(exc, "sqlstate", None) or diag(exc).get("SQLSTATE") or "")


def query_message(exc: BaseException, *, primary_only: bool = False) -> str:
    """`relation "x" does not exist`, with DETAIL and HINT kept when PostgreSQL gives them; under a
    scope without them (a HINT's "Perhaps you meant" may name a hidden column)."""
    fields = diag(exc)
    primary = fields.get("MESSAGE_PRIMARY")
    if not primary:
        return connect_message(exc)
    parts = [primary.strip()]
    if primary_only:
        return _flatten(parts[0])
    if fields.get("MESSAGE_DETAIL"):
        parts.append(f"DETAIL: {fields['MESSAGE_DETAIL'].strip()}")
    if fields.get("MESSAGE_HINT"):
        parts.append(f"HINT: {fields['MESSAGE_HINT'].strip()}")
    return _flatten(" — ".join(parts))


def connect_message(exc: BaseException) -> str:
    """libpq's connection failure, without ADBC's prefix, the server address boilerplate or tabs."""
    text = _QUERY_TAIL.sub("", str(exc)).strip()
    text = _ADBC_PREFIX.sub("", text)
    text = _CONNECTION_TO.sub("", text)
    text = re.sub(r"^(FATAL|ERROR):\s+", "", text)
    text = text.replace("fe_sendauth: no password supplied", _NO_PASSWORD)
    return _flatten(text) or type(exc).__name__


def _flatten(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " — ".join(lines)

"""Spark Connect failures as the one line a user can act on.

Spark's messages carry the error class, the user-facing sentence (with hints
such as "Did you mean one of the following? […]"), then the analyzed plan and a
JVM stack trace; gRPC failures carry a status code and a debug string. The line
kept is Spark's sentence, or what the status means for the connection.
"""

from __future__ import annotations

import contextlib
import re

_SQLSTATE_TAIL = re.compile(r"\s*SQLSTATE: [0-9A-Z]{5}.*$", re.S)
_STATUS = re.compile(r"status = StatusCode\.([A-Z_]+)")
_DETAILS = re.compile(r'details = "([^"]*)"')
_GONE = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "UNKNOWN"}
_AUTH = {"UNAUTHENTICATED", "PERMISSION_DENIED"}


def status(exc: BaseException) -> str:
    """The gRPC status behind a failure ('UNAVAILABLE', 'UNAUTHENTICATED' …), or ''."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            return str(code().name)
        except Exception:
            pass
    match = _STATUS.search(str(exc))
    return match.group(1) if match else ""


def is_connection_error(exc: BaseException) -> bool:
    text = str(exc)
    return status(exc) in _GONE or "failed to connect" in text or "Connection refused" in text


def message(exc: BaseException) -> str:
    """Spark's own first sentence (keeping its hints), or what the gRPC status says."""
    code = status(exc)
    text = str(exc)
    if code in _AUTH or "UNAUTHENTICATED" in text or "PERMISSION_DENIED" in text:
        details = _DETAILS.search(text)
        return "the server refused the credentials" + (f" ({details.group(1)})" if details else "")
    if is_connection_error(exc) and "[" not in text.split("\n", 1)[0]:
        details = _DETAILS.search(text)
        reason = details.group(1) if details else code.lower() or "no answer"
        return f"the server cannot be reached: {_flatten(reason)}"
    get = getattr(exc, "getMessage", None)
    if callable(get):
        with contextlib.suppress(Exception):
            text = str(get())
    first = text.strip().split("\n", 1)[0] if text.strip() else type(exc).__name__
    return _flatten(_SQLSTATE_TAIL.sub("", first).rstrip(" ;.") + ".") if first else type(exc).__name__


def _flatten(text: str) -> str:
    return " ".join(text.split())[:600]

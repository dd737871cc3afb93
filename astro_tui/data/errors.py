"""Errors of the data layer; each message is one line a user can act on."""

from __future__ import annotations


class DataError(Exception):
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

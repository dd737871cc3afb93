"""The root of every error astro reports, and the one way an error is shown in a line.

Each layer names its own failures under `AstroError`: the data layer's
(`data/errors.py`: targets, the guard, queries), the model client's (`LLMError`),
settings (`ConfigError`), tools and templates (`ToolError`, `TemplateError`),
export, conversations, eval, slash commands and the metadata shell's parser. Their
messages are written for the person, so a front end or a worker catches the root
once and shows `error_line(exc)`. Anything else that escapes is a bug: it is still
shown in one line, named by its type, so it reads as what it is.

This module imports nothing of astro's, so `data/` can derive from it too.
"""

from __future__ import annotations


class AstroError(Exception):
    """A failure astro expected and phrased for the person; `str()` is the message."""


def error_line(exc: BaseException, limit: int | None = None) -> str:
    """An astro error's own message (a second line, where there is one, is the engine's
    hint); anything else as `TypeName: message` on one line, its message cut at `limit`."""
    if isinstance(exc, AstroError):
        return str(exc).strip() or type(exc).__name__
    detail = " ".join(str(exc).split())[:limit]
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__

"""What a client does with a script, step by step: the shape every client's reader returns."""

from __future__ import annotations

from dataclasses import dataclass

from astro_tui.errors import AstroError


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the client does: `sql` sends `text` to the engine (without its `;`); `command`
    runs `text` as the client's own command (psql's `\\set`, a dot command, `!`, `source`)."""

    kind: str
    text: str


class Unprovable(AstroError):
    """The client's reading of the file depends on more than the file; the message says on what."""


SQL_SPACE = " \t\n\r\f\v"
"""Whitespace to every client and engine here; other Unicode spaces may be part of a name."""


def sql_step(text: str) -> Step:
    """A statement as sent, compared without its final `;` and the whitespace around it."""
    text = text.strip(SQL_SPACE)
    return Step("sql", text[:-1].rstrip(SQL_SPACE) if text.endswith(";") else text)

"""Every statement a replay writes is judged first, by the guard of the data it will run on.

A saved conversation is hostile (a file edited by hand, a model's SQL): its
queries are not taken as judged. A writer hands each statement it is about to
put in a file (an answer's input, a script's check query) to a `Judge`, which
runs it through the engine's guard exactly as a statement the model sends;
a refusal, or no guard at all, refuses the whole file before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable

from astro_tui.errors import AstroError
from astro_tui.replay.model import ReplayError
from astro_tui.text import one_line

Judge = Callable[[str], object]
"""Runs one statement through the guard (and its limits); raises AstroError when it is refused."""


def judged(judge: Judge | None, sql: str, origin: str) -> str:
    """`sql`, once the guard has judged this very text; ReplayError (nothing written) otherwise."""
    if judge is None:
        raise ReplayError(
            f"{origin}: no guard to judge its query (open its data to replay it); nothing written"
        )
    try:
        judge(sql)
    except Exception as exc:  # default deny: whatever stops the guard refuses the file
        reason = one_line(str(exc) if isinstance(exc, AstroError) else type(exc).__name__, 160)
        raise ReplayError(f"{origin}: the guard refuses its query ({reason}); nothing written") from None
    return sql

"""A SQL script read back as the command-line client that will run it reads it.

astro's guard judges a statement's text; a script hands that text to a client
(`duckdb`, `psql`, `spark-sql`) that has line rules, comment rules, statement
splitting and commands of its own (`.shell`, `\\!`, `!`, `source`). A replay
script is written only when these readers, each a port of its client's own input
loop, find that the client would run exactly the statements astro checked, in
order, and no command of its own but those astro wrote. A reader raises
`Unprovable` where its client's behaviour depends on something the file cannot
fix (a psql variable, a server setting, the platform's encoding): the script is
then not written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Step:
    """One thing the client does: `sql` sends `text` to the engine (without its `;`); `command`
    runs `text` as the client's own command (psql's `\\set`, a dot command, `!`, `source`)."""

    kind: str
    text: str


class Unprovable(ValueError):
    """The client's reading of the file depends on more than the file; the message says on what."""


SQL_SPACE = " \t\n\r\f\v"
"""Whitespace to every client and engine here; other Unicode spaces may be part of a name."""


def sql_step(text: str) -> Step:
    """A statement as sent, compared without its final `;` and the whitespace around it."""
    text = text.strip(SQL_SPACE)
    return Step("sql", text[:-1].rstrip(SQL_SPACE) if text.endswith(";") else text)


def client_steps(client: str, text: str) -> list[Step]:
    """What `client` does with the file `text`, step by step; Unprovable when that is not certain."""
    if "\x00" in text:
        raise Unprovable("a NUL character ends a line early for a C client")
    return _readers()[client](text)


def _readers() -> dict[str, Callable[[str], list[Step]]]:
    from astro_tui.data.client_scripts import duckdb_cli, psql, spark_sql

    return {"duckdb": duckdb_cli.read, "psql": psql.read, "spark-sql": spark_sql.read}

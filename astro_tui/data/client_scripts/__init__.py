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

from astro_tui.data.client_scripts.steps import SQL_SPACE, Step, Unprovable, sql_step

__all__ = ["SQL_SPACE", "Step", "Unprovable", "client_steps", "sql_step"]


def client_steps(client: str, text: str) -> list[Step]:
    """What `client` does with the file `text`, step by step; Unprovable when that is not certain."""
    if "\x00" in text:
        raise Unprovable("a NUL character ends a line early for a C client")
    return _readers()[client](text)


def _readers() -> dict[str, Callable[[str], list[Step]]]:
    from astro_tui.data.client_scripts import duckdb_cli, psql, spark_sql

    return {"duckdb": duckdb_cli.read, "psql": psql.read, "spark-sql": spark_sql.read}

"""A query that returns the one cell a value of an answer came from, for the person to run.

The trace says "row 3 of this SQL"; a row number is only as good as the order the
rows come in. When the statement orders its rows itself (an outermost ORDER BY and
no limit of its own), the cell query puts `LIMIT 1 OFFSET n` inside, after that
ORDER BY: the row is picked by the statement's own order (ties aside). A result of
one row needs no position at all. Otherwise the row is picked by position from the
statement's output, which holds only while the engine returns the rows in the same
order; `CellQuery.how` says which, so the person is told.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from astro_tui.agent.provenance import Source
from astro_tui.data.engines.base import Dialect
from astro_tui.data.sql_shape import takes_a_limit

How = Literal["whole", "ordered", "position"]

_ALIAS = "astro_cell"


@dataclass(frozen=True, slots=True)
class CellQuery:
    sql: str
    how: How
    """`whole`: no row to pick (one row, or the row count); `ordered`: by the statement's ORDER BY;
    `position`: by where the row came in the statement's output."""

    @property
    def guarantee(self) -> str:
        return {
            "whole": "it returns that value",
            "ordered": "it picks the row by the query's own ORDER BY",
            "position": "the query has no ORDER BY of its own, so the row is picked by position "
            "(the same only while the engine returns rows in the same order)",
        }[self.how]


def cell_query(source: Source, dialect: Dialect, *, rows: int | None = None) -> CellQuery:
    """The statement returning `source`'s cell (its row when `column` is None, the row count when
    `row` is None too). `rows` is how many rows the whole, uncut result has, when known."""
    body = source.sql.strip().rstrip(";").rstrip()
    if source.row is None:
        return CellQuery(f"SELECT count(*) AS row_count FROM (\n{body}\n) AS {_ALIAS}", "whole")
    what = "*" if source.column is None else dialect.quote_ident(source.column)
    if rows == 1 and source.row == 0:
        return CellQuery(f"SELECT {what} FROM (\n{body}\n) AS {_ALIAS}", "whole")
    pick = f"LIMIT 1 OFFSET {source.row}"
    if takes_a_limit(body, dialect.name):
        return CellQuery(f"SELECT {what} FROM (\n{body}\n{pick}\n) AS {_ALIAS}", "ordered")
    return CellQuery(f"SELECT {what} FROM (\n{body}\n) AS {_ALIAS}\n{pick}", "position")

"""The catalog tools: the metadata shell, table cards and metadata search.

Together they let the model find its way in a catalog of any size while the
prompt itself only carries schema names and table counts.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import Field

from astro_tui.agent.formatting import value_text
from astro_tui.agent.registry import ToolError, tool
from astro_tui.agent.tools.context import ToolContext
from astro_tui.data.catalog_model import Table
from astro_tui.data.errors import DataError

MAX_TABLES = 10
SAMPLE_ROWS = 3
SAMPLE_CELL_CHARS = 40


def _words(value: Any) -> str:
    """A list argument as the model sent it, in one line: `orders, customers`."""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")


class ExploreTools:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    @tool(summary=lambda a: str(a.get("command") or ""))
    def shell(
        self,
        command: Annotated[str, Field(description="e.g. `ls /`, `ls -l /sales`, `grep -ri email /`")],
    ) -> str:
        """Run a command in the read-only metadata shell: schemas are directories, tables are
        files whose content is the table card. Commands: ls [-l], cd, pwd, cat, head, tree,
        find -name, grep [-i] [-r] [-l] [-n] [-E], wc, and pipes."""
        outcome = self.ctx.shell().run(command, cancel=self.ctx.turn_cancel())
        output = outcome.output.rstrip("\n")
        if outcome.exit_code != 0 and not output:
            return f"(no output, exit status {outcome.exit_code})"
        return output or "(no output)"

    @tool(summary=lambda a: _words(a.get("table_names")))
    def show_table(
        self,
        table_names: Annotated[
            list[str], Field(description="Names like `schema.table` (or `table` if unique).")
        ],
    ) -> str:
        """Show tables' columns, types, comments, keys, row count and a few sample rows."""
        if not table_names:
            raise ToolError("show_table: give at least one table name")
        names = list(dict.fromkeys(table_names))
        cards: list[str] = []
        missing: list[str] = []
        for name in names[:MAX_TABLES]:
            table = self.ctx.catalog.find_table(name)
            if table is None:
                missing.append(self._not_found(name))
                continue
            cards.append(self._card(table))
        if len(names) > MAX_TABLES:
            missing.append(f"only the first {MAX_TABLES} tables are shown; ask for the others separately")
        if not cards:
            raise ToolError("show_table: " + "; ".join(missing))
        return "\n\n".join(cards + missing)

    @tool(summary=lambda a: ", ".join(filter(None, (_words(a.get("queries")), _words(a.get("keywords"))))))
    def search_metadata(
        self,
        queries: Annotated[list[str], Field(description="What you look for, in words: `customer email`.")],
        keywords: Annotated[
            list[str], Field(description="Literal values to find inside the data, e.g. `Berlin`, `refund`.")
        ] = [],  # noqa: B006  (the signature is the tool's contract; pydantic copies defaults)
    ) -> str:
        """Rank tables and columns by how well their names and comments match the queries, and
        find which tables/columns contain the keywords as values."""
        if not queries and not keywords:
            raise ToolError("search_metadata: give at least one query or keyword")
        from astro_tui.catalog.search import search_metadata

        return search_metadata(
            self.ctx.index(), self.ctx.db, queries, keywords, time_budget_s=2.0, cancel=self.ctx.turn_cancel()
        )

    def _card(self, table: Table) -> str:
        from astro_tui.catalog.vfs import render_card

        card = render_card(table).rstrip()
        try:
            from astro_tui.catalog.introspect import sample_values

            sample = sample_values(self.ctx.db, table, limit=SAMPLE_ROWS, cancel=self.ctx.turn_cancel())
        except DataError as exc:
            return f"{card}\nsample rows: unavailable ({exc})"
        if sample.row_count == 0:
            return f"{card}\nsample rows: (table is empty)"
        lines = [f"{card}\nsample rows:", " | ".join(sample.columns)]
        lines += [" | ".join(value_text(v, SAMPLE_CELL_CHARS) for v in row) for row in sample.rows()]
        return "\n".join(lines)

    def _not_found(self, name: str) -> str:
        wanted = name.strip().strip('"').split(".")[-1].lower()
        same = [t.sql_name for t in self.ctx.catalog.tables if t.name.lower() == wanted]
        if len(same) > 1:
            return f"'{name}' is ambiguous: {', '.join(same[:10])}"
        names = [t.sql_name for t in self.ctx.catalog.tables]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if not close:
            short = {t.name: t.sql_name for t in self.ctx.catalog.tables}
            close = [short[n] for n in difflib.get_close_matches(wanted, list(short), n=3, cutoff=0.6)]
        hint = (
            f" (did you mean {', '.join(close)}?)"
            if close
            else " (try `shell` with `ls /` or `find / -name`)"
        )
        return f"no table '{name}'{hint}"

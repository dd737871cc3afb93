"""`run_sql`: the model's way to look at data before it answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from astro_tui.agent.formatting import result_for_model, summary_line
from astro_tui.agent.registry import ToolReturn, tool
from astro_tui.agent.tools.context import ToolContext
from astro_tui.agent.workspace import sql_description


def sql_summary(arguments: Mapping[str, Any]) -> str:
    """`-- revenue by region` when the SQL says what it finds, else the SQL itself."""
    sql = str(arguments.get("sql") or "")
    description = sql_description(sql)
    return f"-- {description}" if description else sql


class SqlTools:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    @tool(summary=sql_summary)
    def run_sql(
        self,
        sql: Annotated[
            str,
            Field(description="One read-only SQL statement, starting with a `-- what it finds` comment."),
        ],
    ) -> ToolReturn:
        """Run one read-only SQL query to explore or check data. The result is kept as df_N; you
        see its columns, shape and first 20 rows. This is for you only: the person sees an answer
        only from an output tool."""
        result = self.ctx.execute(sql)
        entry = self.ctx.workspace.add(result, sql=sql)
        return ToolReturn(
            content=result_for_model(entry.name, entry.result),
            result=entry.result,
            result_name=entry.name,
            summary=summary_line(entry.name, entry.result),
        )

"""The output tools: the only way data reaches the person, and always by executing SQL afresh.

Nothing the model typed is reused as a value: inputs are SQL strings run through
the guarded path now, the template only lays those results out, and the SQL
shown is the statement exactly as it ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from astro_tui.agent.charts import MAX_POINTS, build_chart_spec
from astro_tui.agent.events import Answer, AnswerKind, AnswerTable
from astro_tui.agent.numbers import numbers_in_text
from astro_tui.agent.provenance import cut_note
from astro_tui.agent.registry import ToolError, ToolReturn, tool
from astro_tui.agent.templates import MAX_OUTPUT_CHARS, TemplateError, input_names_error, render
from astro_tui.agent.tools.context import ToolContext
from astro_tui.data.errors import DataError
from astro_tui.data.results import QueryResult

MAX_INPUTS = 10
HISTORY_TEXT_CHARS = 1_500


def _answer_summary(arguments: Mapping[str, Any]) -> str:
    """The answer's title, else the names of its inputs."""
    inputs = arguments.get("inputs") or arguments.get("supporting_queries") or {}
    return str(arguments.get("title") or (", ".join(inputs) if isinstance(inputs, dict) else ""))


class OutputTools:
    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    @tool(output=True, summary=_answer_summary)
    def submit_result(
        self,
        inputs: Annotated[
            dict[str, str], Field(description="Input name -> SQL. Each runs now; its result is that name.")
        ],
        template: Annotated[
            str, Field(description="Jinja text over the inputs, e.g. `{{ rev.value | money }}`.")
        ],
        title: Annotated[str | None, Field(description="A short heading.")] = None,
    ) -> ToolReturn:
        """Answer with values or a table. Every input query is executed and the template renders
        the answer from the results; the main result table is shown below the text."""
        return self._templated("submit_result", "result", inputs, template, title)

    @tool(output=True, summary=_answer_summary)
    def submit_observation(
        self,
        observation: Annotated[str, Field(description="The finding, as a Jinja template over the queries.")],
        supporting_queries: Annotated[
            dict[str, str], Field(description="Name -> SQL backing the observation; shown beside it.")
        ],
    ) -> ToolReturn:
        """Answer with a narrative finding (a trend, an anomaly, a comparison). Values in the text
        come from the supporting queries through the template, like submit_result."""
        return self._templated("submit_observation", "observation", supporting_queries, observation, None)

    @tool(output=True, summary=lambda a: f"{a.get('kind', '')} {a.get('title', '')}")
    def render_chart(
        self,
        sql: Annotated[str, Field(description="The query whose result is drawn.")],
        kind: Literal["bar", "line", "scatter", "hist"],
        x: Annotated[str, Field(description="Column for the x axis (for hist: the numeric column to bin).")],
        y: Annotated[str | list[str], Field(description="Numeric column(s) to draw (ignored for hist).")],
        title: str,
    ) -> ToolReturn:
        """Answer with a chart of one query's result."""
        result = self._run("render_chart", "sql", sql)
        spec = build_chart_spec(result, kind, x, y, title)
        answer = Answer(
            kind="chart",
            text=spec.title,
            title=spec.title,
            tables=(AnswerTable("chart", result.sql, result),),
            chart=spec,
            unverified_numbers=_typed(title),  # the model's words; spec.title adds astro's counts
            complete=not (kind in ("line", "scatter") and result.row_count > MAX_POINTS),
        )
        shown = f"a {kind} chart '{spec.title}' of {result.count_text()}"
        content = f"Shown to the person: {shown}."
        if answer.unverified_numbers:
            content += _typed_note(answer.unverified_numbers)
        return ToolReturn(content=content, value=answer, result=result, shown=shown)

    @tool(output=True, summary=lambda a: str(a.get("message") or ""))
    def send_message(
        self,
        message: Annotated[str, Field(description="Plain text for the person; no data values.")],
    ) -> ToolReturn:
        """Ask the person a clarifying question, or tell them the data cannot answer the question.
        Ends your turn. Never use it to state data values: they would be unverified."""
        text = message.strip()
        if not text:
            raise ToolError("send_message: the message is empty")
        answer = Answer(
            kind="message",
            text=text,
            unverified_numbers=_typed(text[:MAX_OUTPUT_CHARS]),
        )
        return ToolReturn(content="Shown to the person.", value=answer, shown=text)

    def _templated(
        self,
        tool: str,
        kind: AnswerKind,
        inputs: Mapping[str, str],
        template: str,
        title: str | None,
    ) -> ToolReturn:
        if not inputs:
            raise ToolError(
                f"{tool}: give at least one input query (an answer must come from the data); "
                "to talk to the person without data use send_message"
            )
        if len(inputs) > MAX_INPUTS:
            raise ToolError(f"{tool}: at most {MAX_INPUTS} inputs")
        if (problem := input_names_error(inputs)) is not None:
            raise ToolError(f"{tool}: {problem}")
        if not template.strip():
            raise ToolError(f"{tool}: the template is empty")
        results = {name: self._run(tool, name, sql) for name, sql in inputs.items()}
        try:
            rendered = render(template, results)
        except TemplateError as exc:
            raise ToolError(f"{tool}: {exc}") from None
        for ref in rendered.cut:  # its rows were shown: the answer says how many there are
            results[ref.name] = self.ctx.counted(results[ref.name])
        note = cut_note((ref.name, results[ref.name]) for ref in rendered.cut)
        title = (title or "").strip() or None
        typed = tuple(dict.fromkeys([*_typed(title or ""), *rendered.unverified_numbers]))
        answer = Answer(
            kind=kind,
            text=f"{rendered.text}\n\n{note}" if note else rendered.text,
            title=title,
            tables=tuple(AnswerTable(name, result.sql, result) for name, result in results.items()),
            unverified_numbers=typed,
            provenance=rendered.spans,
            complete=rendered.complete,
        )
        shown = answer.text
        if len(shown) > HISTORY_TEXT_CHARS:
            shown = shown[:HISTORY_TEXT_CHARS] + " …"
        content = f"Shown to the person:\n{shown}"
        if note:
            content += (
                "\n(Values came from a result the row cap cut: the person is told the answer "
                "shows only its first rows, and it is marked incomplete.)"
            )
        if typed:
            content += _typed_note(typed)
        main = answer.main_result
        return ToolReturn(content=content, value=answer, result=main, shown=shown)

    def _run(self, tool: str, name: str, sql: str) -> QueryResult:
        if not sql.strip():
            raise ToolError(f"{tool}: input '{name}' has no SQL")
        try:
            return self.ctx.execute(sql, count_cut=False)  # counted only if the answer shows it
        except DataError as exc:
            what = "the query" if tool == "render_chart" else f"input '{name}'"
            raise ToolError(f"{tool}: {what} failed: {exc}") from None


def _typed(text: str) -> tuple[str, ...]:
    """Numbers in the model's own words (a title, a message): none of them was traced to a cell."""
    return tuple(dict.fromkeys(numbers_in_text(text)))


def _typed_note(typed: tuple[str, ...]) -> str:
    return (
        "\n(These numbers were typed in the template or title, not taken from a result, so the "
        f"answer is marked unverified: {', '.join(typed)}. Render every number from an input.)"
    )

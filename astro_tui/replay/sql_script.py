"""A replay as one SQL script for the engine's own client (`duckdb`, `psql`, `spark-sql`).

Each answer: its question, answer and quoted numbers in comments, its queries,
then per quoted number a check query that returns a row (`moved`, `was`, `now`)
only when the number moved, so a run that prints no `moved` row means nothing
moved. Text from the conversation goes into comments one line at a time (no
character any client takes for a line break) and into string literals quoted,
never into the SQL itself. Every query (an answer's input, each check query) goes
in only once the data's guard has judged that very text (`judge.py`: a saved
conversation is hostile), and the script is written only when `client_scripts`
reads it back, as the client will, as exactly the statements meant and the client
commands astro wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from astro_tui.agent.provenance import Source
from astro_tui.data.client_scripts import SQL_SPACE, Step, Unprovable, client_steps
from astro_tui.data.clients import ClientCode
from astro_tui.replay.cells import MAX_CHECKED_SOURCES
from astro_tui.replay.judge import Judge, judged
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, ReplayError
from astro_tui.replay.runtime import as_number
from astro_tui.text import one_line

NOTEBOOKS = "replay it as a notebook instead (--to ipynb or --to marimo)"


@dataclass(slots=True)
class _Script:
    """The script's lines and, beside them, what its client must do with them."""

    code: ClientCode
    judge: Judge | None
    lines: list[str] = field(default_factory=list)
    expected: list[Step] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)

    def comment(self, text: str, *, lines: bool = False) -> None:
        """`text` as comment lines: one, or (`lines`) one per line of it."""
        parts = (text.splitlines() or [""]) if lines else [text]
        self.lines += [f"-- {one_line(part)}".rstrip() for part in parts]

    def command(self, text: str) -> None:
        self.lines.append(text)
        self.expected.append(Step("command", text))
        self.origins.append("the script's setup")

    def statement(self, sql: str, origin: str, *, judge: bool = True) -> None:
        """A statement; unless it is astro's own setup, judged by the guard first."""
        if judge:
            judged(self.judge, sql, origin)
        self.lines.append(sql + ("\n;" if "--" in sql.rsplit("\n", 1)[-1] else ";"))
        self.expected.append(Step("sql", sql))
        self.origins.append(origin)

    def text(self) -> str:
        return "\n".join(self.lines).strip("\n") + "\n"


def script_text(replay: Replay, file_name: str = "FILE", judge: Judge | None = None) -> str:
    """The script; ReplayError when the guard (`judge`, none: refused) refuses a statement of it
    or its client would not run exactly what astro checked."""
    code = replay.code()
    script = _Script(code, judge)
    script.comment(f"Replay of conversation {replay.id} ({replay.label}), by astro replay.")
    script.comment(f"Run: {code.script_run.format(file=file_name)}")
    if code.secret_note:
        script.comment(f"For the connection, {code.secret_note}.")
    script.comment("A check query returns a row (moved, was, now) only when a quoted number moved.")
    for command in code.script_commands:
        script.command(command)
    for setup in code.script_setup:
        script.statement(setup, "the script's setup", judge=False)  # astro's own, from clients.py
    for answer in replay.answers:
        _answer(script, answer)
    # The bytes on disk are what is proved: a lone surrogate is written as its escape (files.py),
    # a backslash the client would read.
    text = script.text().encode("utf-8", "backslashreplace").decode("utf-8")
    _prove(script, text)
    return text


def _prove(script: _Script, text: str) -> None:
    """ReplayError unless the client reads `text` as exactly the steps the script was built from."""
    client = script.code.script_client
    try:
        steps = client_steps(client, text)
    except Unprovable as exc:
        raise ReplayError(f"{client} may not run this script as written ({exc}); {NOTEBOOKS}") from None
    if steps == script.expected:
        return
    same = zip(steps, script.expected, strict=False)
    at = next((i for i, (a, b) in enumerate(same) if a != b), min(len(steps), len(script.expected)))
    origin = script.origins[min(at, len(script.origins) - 1)]
    foreign = next((s for s in steps if s.kind == "command" and s not in script.expected), None)
    if foreign is not None:
        why = f"it would run {one_line(foreign.text, 60)!r} as a command of its own"
    else:
        why = "it would split or change the statements astro checked"
    raise ReplayError(f"{origin}: {client} would not run this script as written ({why}); {NOTEBOOKS}")


def _answer(script: _Script, answer: ReplayAnswer) -> None:
    script.lines.append("")
    script.comment(f"{answer.tag} · {answer.title}")
    script.comment("Question: " + answer.question, lines=True)
    script.comment("Answer: " + answer.text, lines=True)
    for quoted in answer.quoted:
        script.comment(f"quoted: {one_line(quoted.text)} ({_where(quoted.sources[0])})")
    for name, sql in answer.inputs.items():
        script.lines.append("")
        script.comment(name)
        script.statement(_statement(sql), f"{answer.tag} {one_line(name, 40)}")
    for quoted in answer.quoted:
        checks = [s for s in quoted.sources[:MAX_CHECKED_SOURCES] if _checkable(s)]
        for number, source in enumerate(checks, 1):
            label = quoted.label if len(checks) == 1 else f"{quoted.label} (source {number})"
            script.lines.append("")
            script.comment(f"check: {label}")
            check = _check(answer.inputs[source.input], source, label, quoted, script.code)
            script.statement(check, f"{answer.tag} check of {one_line(quoted.text, 20)}")


def _checkable(source: Source) -> bool:
    return as_number(source.value) is not None and (source.row is None) == (source.column is None)


def _check(sql: str, source: Source, label: str, quoted: Quoted, code: ClientCode) -> str:
    if source.row is None:
        value = "count(*)"
        pick = ""
    else:
        value = code.quote + str(source.column).replace(code.quote, code.quote * 2) + code.quote
        pick = f" LIMIT 1 OFFSET {int(source.row)}"
    expected = _number_literal(source.value)
    if isinstance(source.value, float):
        same = f"abs(v - {expected}) <= {abs(source.value) * 1e-12!r}"
    else:
        same = f"v = {expected}"
    return (
        f"WITH q AS (\n{_statement(sql)}\n), c AS (SELECT {value} AS v FROM q{pick})\n"
        f"SELECT {_literal(label, code)} AS moved, {_literal(quoted.text, code)} AS was, "
        f"(SELECT CAST(v AS {code.text_type}) FROM c) AS now\n"
        f"WHERE NOT EXISTS (SELECT 1 FROM c WHERE {same})"
    )


def _number_literal(value: object) -> str:
    number = as_number(value)
    text = repr(value) if isinstance(value, float) else str(number)
    return f"({text})"


def _where(source: Source) -> str:
    if source.row is None:
        return f"{one_line(source.input)}, its row count"
    return f"{one_line(source.input)}, row {source.row}, column {one_line(source.column)}"


def _statement(sql: str) -> str:
    """The query without its trailing semicolons; only whitespace every engine agrees on is cut
    (a Unicode space may be part of a name)."""
    text = sql.strip(SQL_SPACE)
    while text.endswith(";"):
        text = text[:-1].rstrip(SQL_SPACE)
    return text


def _literal(text: str, code: ClientCode) -> str:
    """A label as a string literal no client reads otherwise: one line, no backslash (an escape to
    some), ASCII without `'` or `${` for a client that decodes the file its own way."""
    flat = one_line(text).replace("\\", "/")
    if code.script_ascii:
        flat = "".join(ch if ch.isascii() else "?" for ch in flat).replace("'", '"').replace("${", "$ {")
    return "'" + flat.replace("'", "''") + "'"

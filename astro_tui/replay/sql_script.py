"""A replay as one SQL script for the engine's own client (`duckdb`, `psql`).

Each answer: its question, answer and quoted numbers in comments, its queries,
then per quoted number a check query that returns a row (`moved`, `was`, `now`)
only when the number moved, so a run that prints no `moved` row means nothing
moved. Text from the conversation goes into comments one line at a time and into
string literals quoted, never into the SQL itself.
"""

from __future__ import annotations

import re

from astro_tui.agent.provenance import Source
from astro_tui.data.clients import ClientCode
from astro_tui.replay.cells import MAX_CHECKED_SOURCES
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, ReplayError
from astro_tui.replay.runtime import as_number
from astro_tui.text import one_line


def script_text(replay: Replay, file_name: str = "FILE") -> str:
    """The script; ReplayError when a query holds what the client would run as its own command."""
    code = replay.code()
    commands = re.compile(code.script_commands) if code.script_commands else None
    for answer in replay.answers:
        for name, sql in answer.inputs.items():
            if commands is not None and commands.search(sql):
                raise ReplayError(
                    f"{answer.tag} {name}: its SQL holds what the engine's client would run as a "
                    "command of its own; replay it as a notebook instead"
                )
    head = [
        f"-- Replay of conversation {one_line(replay.id)} ({one_line(replay.label)}), by astro replay.",
        f"-- Run: {one_line(code.script_run.format(file=file_name))}",
        *([f"-- For the connection, {code.secret_note}."] if code.secret_note else []),
        "-- A check query returns a row (moved, was, now) only when a quoted number moved.",
    ]
    body = [line for answer in replay.answers for line in _answer(answer, code)]
    parts = ["\n".join(head), code.script_preamble.rstrip(), "\n".join(body).strip()]
    if commands is not None:  # only comments and quoted labels can hold one now: made inert
        for at in (0, 2):
            parts[at] = commands.sub(lambda m: m.group(0).replace("\\", "∖").replace(".", "․"), parts[at])
    return "\n\n".join(p for p in parts if p) + "\n"


def _answer(answer: ReplayAnswer, code: ClientCode) -> list[str]:
    lines = ["", f"-- {answer.tag} · {answer.title}", *_comment("Question: " + answer.question)]
    lines += _comment("Answer: " + answer.text)
    for quoted in answer.quoted:
        lines.append(f"-- quoted: {quoted.text} ({_where(quoted.sources[0])})")
    for name, sql in answer.inputs.items():
        statement = _statement(sql)
        lines += ["", f"-- {name}", statement + ("\n;" if "--" in statement.rsplit("\n", 1)[-1] else ";")]
    for quoted in answer.quoted:
        checks = [s for s in quoted.sources[:MAX_CHECKED_SOURCES] if _checkable(s)]
        for number, source in enumerate(checks, 1):
            label = quoted.label if len(checks) == 1 else f"{quoted.label} (source {number})"
            lines += [
                "",
                f"-- check: {label}",
                _check(answer.inputs[source.input], source, label, quoted, code),
            ]
    return lines


def _checkable(source: Source) -> bool:
    return as_number(source.value) is not None and (source.row is None) == (source.column is None)


def _check(sql: str, source: Source, label: str, quoted: Quoted, code: ClientCode) -> str:
    if source.row is None:
        value = "count(*)"
        pick = ""
    else:
        value = '"' + str(source.column).replace('"', '""') + '"'
        pick = f" LIMIT 1 OFFSET {int(source.row)}"
    expected = _number_literal(source.value)
    if isinstance(source.value, float):
        same = f"abs(v - {expected}) <= {abs(source.value) * 1e-12!r}"
    else:
        same = f"v = {expected}"
    return (
        f"WITH q AS (\n{_statement(sql)}\n), c AS (SELECT {value} AS v FROM q{pick})\n"
        f"SELECT {_literal(label)} AS moved, {_literal(quoted.text)} AS was, "
        f"(SELECT CAST(v AS {code.text_type}) FROM c) AS now\n"
        f"WHERE NOT EXISTS (SELECT 1 FROM c WHERE {same});"
    )


def _number_literal(value: object) -> str:
    number = as_number(value)
    text = repr(value) if isinstance(value, float) else str(number)
    return f"({text})"


def _where(source: Source) -> str:
    if source.row is None:
        return f"{source.input}, its row count"
    return f"{source.input}, row {source.row}, column {source.column}"


def _statement(sql: str) -> str:
    """The query without its trailing semicolon."""
    return sql.strip().rstrip(";").rstrip()


def _literal(text: str) -> str:
    return "'" + " ".join(text.split()).replace("'", "''") + "'"


def _comment(text: str) -> list[str]:
    return [f"-- {line}".rstrip() for line in text.splitlines() or [""]]

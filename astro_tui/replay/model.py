"""A saved conversation read as what a replay needs: each verified answer, its queries and its numbers.

Only verified answers (`provenance.is_verified`: made from queries, no number
typed) replay, whether the app's agent or an MCP client's `submit_result` gave
them: a message to the person has no data to check. An answer's inputs are the
output call's own, in its order, with the SQL as executed where the saved answer
kept it; every number it quoted becomes a
`Quoted`, named after the answer and the words before it (`A1 Orders · Completed
revenue`) so a moved number can be told apart from its neighbours.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from astro_tui.agent.conversations import (
    ConversationError,
    list_conversations,
    load_conversation,
    load_conversation_file,
)
from astro_tui.agent.history import Turn
from astro_tui.agent.provenance import Source, Span
from astro_tui.data.clients import ClientCode, client_code
from astro_tui.errors import AstroError
from astro_tui.replay.runtime import as_number
from astro_tui.text import one_line

_OUTPUT_TOOLS = ("submit_result", "submit_observation", "render_chart")
TITLE_CHARS = 60


class ReplayError(AstroError):
    """A conversation cannot be replayed; the message is one line."""


@dataclass(frozen=True, slots=True)
class Quoted:
    """One number an answer quoted, and the cells it came from."""

    label: str
    text: str
    value: Any
    derived: bool
    sources: tuple[Source, ...]
    more_sources: int


@dataclass(frozen=True, slots=True)
class ReplayAnswer:
    number: int
    question: str
    title: str
    kind: str
    text: str
    complete: bool
    inputs: dict[str, str]
    template: str | None
    spans: tuple[Span, ...]
    quoted: tuple[Quoted, ...]

    @property
    def tag(self) -> str:
        return f"A{self.number}"


@dataclass(frozen=True, slots=True)
class Replay:
    id: str
    path: Path
    created: str
    label: str
    client: Any
    answers: tuple[ReplayAnswer, ...]

    def code(self) -> ClientCode:
        """How the engine's own client reaches the data; ReplayError when the file does not say."""
        try:
            return client_code(self.client)
        except AstroError as exc:
            older = "" if self.client is not None else " (saved before astro kept it)"
            raise ReplayError(f"conversation {self.id}: {exc}{older}") from None


def load_replay(state_dir: Path, conversation: str | None = None) -> Replay:
    """A conversation by id, by file, or the latest one; ReplayError in one line when there is none
    or it has no verified answer to replay."""
    if conversation is None:
        return _latest(state_dir)
    as_file = Path(conversation)
    try:
        if conversation.endswith(".jsonl") or as_file.is_file():
            if not as_file.is_file():
                raise ReplayError(f"no such file: {conversation}")
            header, turns = load_conversation_file(as_file, as_file.stem)
            path = as_file
        else:
            header, turns = load_conversation(state_dir, conversation)
            path = state_dir / "conversations" / f"{conversation}.jsonl"
    except ConversationError as exc:
        hint = " (`astro replay --list` shows them)" if str(exc).startswith("no conversation") else ""
        raise ReplayError(f"{exc}{hint}") from None
    ident = str(header.get("id") or path.stem)
    answers = _answers(turns)
    if not answers:
        raise ReplayError(f"conversation {ident} has no verified answer to replay")
    return Replay(
        id=ident,
        path=path,
        created=str(header.get("created", "")),
        label=str(header.get("db_label", "")),
        client=header.get("client"),
        answers=tuple(answers),
    )


def _latest(state_dir: Path) -> Replay:
    """The newest conversation with a verified answer (a clarifying question has nothing to replay)."""
    found = list_conversations(state_dir)
    if not found:
        raise ReplayError("no saved conversations yet: ask a question first")
    for info in found:
        try:
            return load_replay(state_dir, info.id)
        except ReplayError:
            continue
    raise ReplayError("no saved conversation has a verified answer to replay")


def _answers(turns: list[Turn]) -> list[ReplayAnswer]:
    answers: list[ReplayAnswer] = []
    for turn in turns:
        saved = turn.answer
        if turn.status != "answer" or saved is None or not saved.verified or saved.kind == "message":
            continue
        tool, args = _output_call(turn)
        inputs, template, title = _call_parts(tool, args)
        for span in saved.provenance:
            for source in span.sources:
                inputs[source.input] = source.sql  # the SQL as executed
        inputs.update(saved.inputs)  # every input as executed (kept since; an MCP call's arguments are cut)
        if not inputs:
            continue
        number = len(answers) + 1
        title = one_line(title or turn.question, TITLE_CHARS)
        answers.append(
            ReplayAnswer(
                number=number,
                question=turn.question,
                title=title,
                kind=saved.kind,
                text=saved.text,
                complete=saved.complete,
                inputs=inputs,
                template=template,
                spans=saved.provenance,
                quoted=_quoted(f"A{number} {title}", saved.text, saved.provenance),
            )
        )
    return answers


def _output_call(turn: Turn) -> tuple[str | None, dict[str, Any]]:
    """The output tool call that ended the turn (the last one made), and its arguments."""
    for entry in reversed(turn.entries):
        for call in reversed(entry.message.get("tool_calls") or ()):
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and function.get("name") in _OUTPUT_TOOLS:
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except (ValueError, TypeError, RecursionError):
                    return None, {}
                return function["name"], args if isinstance(args, dict) else {}
    return None, {}


def _call_parts(tool: str | None, args: dict[str, Any]) -> tuple[dict[str, str], str | None, str | None]:
    """Inputs (name → SQL), template and title of an output call, each only when well formed."""
    if tool == "render_chart":
        sql = args.get("sql")
        inputs: Any = {"chart": sql} if isinstance(sql, str) else {}
        template = None
    else:
        inputs = args.get("supporting_queries" if tool == "submit_observation" else "inputs")
        template = args.get("observation" if tool == "submit_observation" else "template")
    title = args.get("title")
    good = isinstance(inputs, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()
    )
    return (
        dict(inputs) if good else {},
        template if isinstance(template, str) else None,
        title if isinstance(title, str) else None,
    )


def _quoted(prefix: str, text: str, spans: tuple[Span, ...]) -> tuple[Quoted, ...]:
    numbers = [s for s in spans if s.sources and as_number(s.value) is not None]
    found: list[Quoted] = []
    used: set[str] = set()
    for span in numbers:
        label = prefix
        if len(numbers) > 1:
            label += f" · {_what(text, spans, span, used) or span.sources[0].column or span.sources[0].input}"
        found.append(Quoted(label, span.text, span.value, span.derived, span.sources, span.more_sources))
    return tuple(found)


_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_STOP = re.compile(r"[.;!?\n]")


def _what(text: str, spans: tuple[Span, ...], span: Span, used: set[str]) -> str:
    """What a number is, in the answer's words: those before it in its sentence (`pending: 585`,
    values printed there included), else those after it up to the next value (`1,477 open
    loans`), whichever no earlier number of the answer has taken."""
    after_to = min([s.start for s in spans if s.start >= span.end], default=len(text))
    before = _STOP.split(text[: span.start])[-1]
    after = _STOP.split(text[span.end : after_to])[0]
    for words in (_WORD.findall(before)[-4:], _WORD.findall(after)[:4]):
        phrase = one_line(" ".join(words), 40)
        if phrase and phrase not in used:
            used.add(phrase)
            return phrase
    return ""


def frame_name(name: str, taken: set[str]) -> str:
    """A Python variable for an input's DataFrame: its name, unless that is taken or no identifier."""
    base = re.sub(r"\W", "_", name) or "input"
    if not base.isidentifier() or keyword.iskeyword(base):
        base = f"input_{base}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    taken.add(candidate)
    return candidate

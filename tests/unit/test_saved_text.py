"""Every saved text round-trips: a conversation whose every field holds arbitrary Unicode (each line
separator `str.splitlines` knows, controls, bidi marks, astral characters, lone surrogates) is
written, read back equal, and stays JSON lines for any reader; so do the JSON lines astro prints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astro_tui.agent.conversations import (
    conversation_path,
    list_conversations,
    load_conversation,
    save_conversation,
)
from astro_tui.agent.history import Entry, Turn
from astro_tui.agent.provenance import SavedAnswer, Source, Span, answer_from_record
from astro_tui.headless.evaluation import load_questions
from astro_tui.text import json_inert
from tests.support.security_figures import ROUND_TRIP_EXAMPLES

BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
ODD = '\x00\x1b\x7f\x9b\u200e\u202e\u2066\ufeff\U0001f600\U00010000\U0010ffff\ud800\udfff"\\'
"""Conversations written and read back per run (docs/security-evidence.md's figure)."""
_PAIR = re.compile("([\ud800-\udbff])(?=[\udc00-\udfff])")

# A high surrogate followed by a low one is one character to JSON (`"\ud83d\ude00"` reads back as
# 😀): no JSON text keeps the two apart, and no JSON or UTF-8 source can give astro such a pair.
texts = st.text(
    st.one_of(st.characters(exclude_categories=()), st.sampled_from(BREAKS + ODD)), max_size=24
).map(lambda s: _PAIR.sub(r"\1?", s))
steps = st.sampled_from(["answer", "text", "cancelled", "error", "limit"])


@st.composite
def answers(draw: st.DrawFn) -> SavedAnswer:
    text = draw(texts.filter(bool))
    inputs = draw(st.dictionaries(texts, texts, min_size=1, max_size=3))
    names = sorted(inputs)
    spans = []
    for _ in range(draw(st.integers(0, 3))):
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        sources = tuple(
            Source(
                name,
                inputs[name],
                draw(st.none() | st.integers(0, 10**9)),
                draw(st.none() | texts),
                draw(st.none() | texts),
            )
            for name in draw(st.lists(st.sampled_from(names), max_size=3))
        )
        more = draw(st.integers(0, 99))
        spans.append(Span(start, end, text[start:end], draw(texts), draw(st.booleans()), sources, more))
    return SavedAnswer(
        kind=draw(st.sampled_from(["result", "observation", "chart", "message"]) | texts),
        text=text,
        complete=draw(st.booleans()),
        provenance=tuple(spans),
        unverified_numbers=tuple(draw(st.lists(texts, max_size=3))),
        inputs=tuple(inputs.items()),
    )


@st.composite
def entries(draw: st.DrawFn) -> Entry:
    message: dict[str, Any] = {"role": draw(texts), "content": draw(st.none() | texts)}
    if draw(st.booleans()):
        message["tool_calls"] = [
            {
                "id": draw(texts),
                "type": "function",
                "function": {"name": draw(texts), "arguments": draw(texts)},
            }
        ]
    message.update(draw(st.dictionaries(texts.map(lambda k: f"x{k}"), texts, max_size=2)))
    return Entry(message, draw(st.none() | texts), draw(st.none() | texts))


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    turn = Turn(
        question=draw(texts),
        started=draw(texts),
        status=draw(steps),
        workspace_next=draw(st.integers(1, 10**6)),
        answer=draw(st.none() | answers()),
    )
    turn.entries.extend(draw(st.lists(entries(), max_size=3)))
    return turn


@settings(
    max_examples=ROUND_TRIP_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    conversation=st.lists(turns(), max_size=3),
    header=st.fixed_dictionaries(
        {"db_key": texts, "db_label": texts, "model": st.none() | texts, "created": texts}
    ),
    client=st.none() | st.dictionaries(texts, texts | st.lists(texts, max_size=2), max_size=3),
)
def test_a_conversation_of_any_text_reads_back_equal(
    tmp_path: Path, conversation: list[Turn], header: dict[str, Any], client: dict[str, Any] | None
) -> None:
    save_conversation(tmp_path, "any-text", conversation, client=client, **header)
    read, back = load_conversation(tmp_path, "any-text")
    assert back == conversation
    assert {k: read[k] for k in header} == header and read.get("client") == client
    raw = conversation_path(tmp_path, "any-text").read_text(encoding="utf-8")
    lines = raw.splitlines()  # the strictest line reader: every JSON line is still one line
    assert len(lines) == 1 + len(conversation) + sum(len(t.entries) for t in conversation)
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert [c.id for c in list_conversations(tmp_path)] == ["any-text"]


def test_a_file_saved_before_the_escapes_still_reads(tmp_path: Path) -> None:
    """A file written when U+2028 went out raw (the title of a model, an MCP client's SQL) is not
    lost: records end at a newline only."""
    turn = Turn(question="why\u2028this\u2029and\x85that", status="text")
    turn.entries.append(Entry({"role": "user", "content": turn.question}))
    save_conversation(tmp_path, "old", [turn], db_key="k", db_label="k", model=None, created="c")
    path = conversation_path(tmp_path, "old")
    raw = path.read_text(encoding="utf-8")
    assert "\u2028" not in raw and "\\u2028" in raw and "\\u0085" in raw
    path.write_text(raw.replace("\\u2028", "\u2028").replace("\\u2029", "\u2029").replace("\\u0085", "\x85"))
    assert load_conversation(tmp_path, "old")[1] == [turn]


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | texts | st.integers(), lambda inner: st.lists(inner) | st.dictionaries(texts, inner)
    )
)
def test_json_lines_astro_prints_are_one_line_and_read_back_equal(value: Any) -> None:
    line = json_inert(json.dumps(value, ensure_ascii=False))
    assert len((line + "\n").splitlines()) == 1 and json.loads(line) == value


def test_eval_questions_with_a_line_separator_in_a_text(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "a", "question": "one\u2028two", "sql": "SELECT 1\u2029"},
        {"id": "b", "question": "x", "sql": "SELECT 2"},
    ]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    assert [(q.id, q.question, q.line) for q in load_questions(path)] == [
        ("a", "one\u2028two", 1),
        ("b", "x", 2),
    ]


def test_an_answer_saved_as_unverified_stays_unverified() -> None:
    """A file from an older astro, which kept no typed numbers: an answer saved as unverified
    stays unverified."""
    said = answer_from_record({"kind": "result", "text": "All orders.", "verified": False})
    assert said is not None and not said.verified
    plain = answer_from_record({"kind": "result", "text": "All orders.", "verified": True})
    assert plain is not None and plain.verified

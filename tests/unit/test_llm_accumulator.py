"""The accumulator on chunks shaped like real servers send them.

Chunks are built with ``ChatCompletionChunk.construct``, which is what the SDK
does with each SSE event, so missing fields behave as they do in production.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from astro_tui.llm import Completion, DeltaAccumulator, ReasoningDelta, TextDelta
from tests.support.fake_openai import (
    reasoning_reply,
    text_reply,
    tool_call_reply,
)


def build(raw: dict[str, Any]) -> ChatCompletionChunk:
    return ChatCompletionChunk.construct(**raw)


def run(chunks: Any) -> tuple[list[Any], Completion]:
    acc = DeltaAccumulator()
    deltas: list[Any] = []
    for raw in chunks:
        deltas.extend(acc.feed(build(raw)))
    return deltas, acc.finish()


def delta_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


CALLS = [("run_sql", {"sql": "select 1"}), ("shell", {"command": "ls /sales"})]


def test_text_and_usage_only_final_chunk() -> None:
    deltas, done = run(text_reply("Hello world", chunk_size=4).chunks)
    assert [d.text for d in deltas] == ["Hell", "o wo", "rld"]
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert done.text == "Hello world"
    assert done.finish_reason == "stop"
    assert not done.truncated
    assert done.usage is not None and done.usage.total_tokens == done.usage.prompt_tokens + 3


def test_every_tool_call_style_gives_the_same_calls() -> None:
    results = {}
    for style in ("openai", "ollama", "vllm", "no_index", "repeated_ids", "stop_finish"):
        _, done = run(tool_call_reply(CALLS, style=style).chunks)
        results[style] = [(c.id, c.name, json.loads(c.arguments)) for c in done.tool_calls]
        assert done.finish_reason == "tool_calls", style
        assert not done.truncated
    expected = [
        ("call_fake_0", "run_sql", {"sql": "select 1"}),
        ("call_fake_1", "shell", {"command": "ls /sales"}),
    ]
    for style, calls in results.items():
        assert calls == expected, style


def test_calls_without_ids_get_stable_generated_ids() -> None:
    _, done = run(tool_call_reply(CALLS, style="no_id").chunks)
    assert [c.id for c in done.tool_calls] == ["call_0", "call_1"]
    assert [c.name for c in done.tool_calls] == ["run_sql", "shell"]
    _, again = run(tool_call_reply(CALLS, style="no_id").chunks)
    assert again.tool_calls == done.tool_calls


def test_every_call_at_index_zero_is_split_by_id() -> None:
    _, done = run(tool_call_reply(CALLS, style="index_zero").chunks)
    assert [(c.id, json.loads(c.arguments)) for c in done.tool_calls] == [
        ("call_fake_0", {"sql": "select 1"}),
        ("call_fake_1", {"command": "ls /sales"}),
    ]


def test_no_id_no_index_continues_the_last_call() -> None:
    chunks = [
        delta_chunk({"tool_calls": [{"function": {"name": "run_sql", "arguments": '{"sq'}}]}),
        delta_chunk({"tool_calls": [{"function": {"arguments": 'l": "x"}'}}]}),
        delta_chunk({}, finish="tool_calls"),
    ]
    _, done = run(chunks)
    assert len(done.tool_calls) == 1
    assert done.tool_calls[0].arguments == '{"sql": "x"}'
    assert done.tool_calls[0].id == "call_0"


def test_generated_ids_avoid_real_ones() -> None:
    chunks = [
        delta_chunk({"tool_calls": [{"index": 0, "function": {"name": "a", "arguments": "{}"}}]}),
        delta_chunk({"tool_calls": [{"index": 1, "id": "call_0", "function": {"name": "b"}}]}),
        delta_chunk({}, finish="tool_calls"),
    ]
    _, done = run(chunks)
    ids = [c.id for c in done.tool_calls]
    assert len(set(ids)) == 2 and "call_0" in ids


def test_arguments_as_an_object_and_repeated_whole() -> None:
    chunks = [
        delta_chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]}
        ),
        delta_chunk(
            {"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": '{"y": 2}'}}]}
        ),
        delta_chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"arguments": '{"y": 2}'}}]}),
        delta_chunk({}, finish="tool_calls"),
    ]
    _, done = run(chunks)
    assert [json.loads(c.arguments) for c in done.tool_calls] == [{"x": 1}, {"y": 2}]


def test_reasoning_is_never_text() -> None:
    for field in ("reasoning_content", "reasoning"):
        deltas, done = run(reasoning_reply("think hard", "42", field=field).chunks)
        assert "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)) == "think hard"
        assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "42"
        assert done.reasoning == "think hard"
        assert done.text == "42"


def test_both_reasoning_fields_in_one_delta_are_not_doubled() -> None:
    deltas, done = run([delta_chunk({"reasoning_content": "hm", "reasoning": "hm"}, "stop")])
    assert deltas == [ReasoningDelta("hm")]
    assert done.reasoning == "hm"


def test_end_without_finish_reason_is_truncated() -> None:
    chunks = text_reply("partial answer").content_chunks()
    _, done = run(chunks)
    assert done.truncated
    assert done.finish_reason is None
    assert done.text == "partial answer"


def test_length_finish_is_not_truncation() -> None:
    _, done = run(text_reply("abc", finish_reason="length").chunks)
    assert done.finish_reason == "length"
    assert not done.truncated


def test_other_choices_and_empty_chunks_are_ignored() -> None:
    chunks = [
        {"id": "c", "choices": []},
        {"id": "c", "choices": [{"index": 1, "delta": {"content": "alt"}}]},
        delta_chunk({"content": "main"}, "stop"),
    ]
    _, done = run(chunks)
    assert done.text == "main"


def test_finish_is_a_snapshot_and_repeatable() -> None:
    acc = DeltaAccumulator()
    assert not acc.started
    acc.feed(build(delta_chunk({"content": "a"})))
    assert acc.started
    assert acc.finish().text == "a"
    acc.feed(build(delta_chunk({"content": "b"}, "stop")))
    assert acc.finish() == acc.finish()
    assert acc.finish().text == "ab"


def test_assistant_message_round_trip() -> None:
    _, done = run(tool_call_reply(CALLS[:1], text="Let me look.").chunks)
    message = done.assistant_message()
    assert message["role"] == "assistant"
    assert message["content"] == "Let me look."
    assert message["tool_calls"][0]["function"] == {
        "name": "run_sql",
        "arguments": json.dumps({"sql": "select 1"}),
    }


@settings(max_examples=60, deadline=None)
@given(
    args=st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=12), max_size=4),
    cuts=st.lists(st.integers(min_value=1, max_value=40), max_size=12),
)
def test_any_fragmentation_reassembles_exactly(args: dict[str, str], cuts: list[int]) -> None:
    text = json.dumps(args, ensure_ascii=False)
    points = sorted({c for c in cuts if c < len(text)})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    chunks = [delta_chunk({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "f"}}]})]
    chunks += [delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    chunks.append(delta_chunk({}, "tool_calls"))
    _, done = run(chunks)
    assert json.loads(done.tool_calls[0].arguments) == args


THINK_CASES = [
    # (content, reasoning, text)
    ("<think>plan the query</think>\n\nThe answer.", "plan the query", "The answer."),
    ("  \n<think>a < b, not </thin> yet</think>Done", "a < b, not </thin> yet", "Done"),
    ("<think>never closed", "never closed", ""),
    ("<thin>not a tag</thin>", "", "<thin>not a tag</thin>"),
    ("<", "", "<"),
    ("Plain <think> in the middle</think> stays", "", "Plain <think> in the middle</think> stays"),
    ("the template opened it</think>\n\nReply", "the template opened it", "Reply"),
]


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(THINK_CASES), cuts=st.lists(st.integers(min_value=1, max_value=60), max_size=8))
def test_think_tags_split_anywhere_are_reasoning(case: tuple[str, str, str], cuts: list[int]) -> None:
    content, reasoning, text = case
    points = sorted({c for c in cuts if c < len(content)})
    pieces = [content[a:b] for a, b in zip([0, *points], [*points, len(content)], strict=True)]
    deltas, done = run([delta_chunk({"content": piece}) for piece in pieces] + [delta_chunk({}, "stop")])
    assert (done.reasoning, done.text) == (reasoning, text)
    streamed_reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
    if content.lstrip().startswith("<think>"):  # seen while streaming, not only at the end
        assert streamed_reasoning == reasoning
        assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text

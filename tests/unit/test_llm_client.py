"""ChatClient against the fake server through the real AsyncOpenAI client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from typing import Any

import pytest

from astro_tui.llm import ChatClient, Completion, LLMError, ReasoningDelta, TextDelta, ToolCallDelta
from tests.support.fake_openai import (
    FakeOpenAI,
    chat_completion,
    chunk,
    cut,
    error,
    finish_chunk,
    reasoning_reply,
    reply,
    role_chunk,
    stall,
    text_reply,
    tool_call_reply,
)
from tests.support.waiting import HANG_GUARD_S

MESSAGES = [{"role": "user", "content": "revenue by region?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_sql",
            "description": "Run one read-only query.",
            "parameters": {
                "type": "object",
                "properties": {"sql": {"type": "string"}},
                "required": ["sql"],
            },
        },
    }
]
SECRET = "sk-live-TOPSECRET-0123456789abcdef"


async def collect(client: ChatClient, **kwargs: Any) -> tuple[list[Any], Completion]:
    items = [item async for item in client.stream(MESSAGES, TOOLS, **kwargs)]
    final = items[-1]
    assert isinstance(final, Completion)
    assert not any(isinstance(i, Completion) for i in items[:-1])
    return items[:-1], final


async def failure(client: ChatClient, **kwargs: Any) -> LLMError:
    with pytest.raises(LLMError) as info:
        await collect(client, **kwargs)
    return info.value


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- happy paths


async def test_text_stream_and_request_body(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("Hello there", chunk_size=3))
    async with ChatClient(fake_openai.settings()) as client:
        deltas, done = await collect(client)
    assert "".join(d.text for d in deltas) == "Hello there"
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert done.text == "Hello there" and done.finish_reason == "stop"
    assert done.usage is not None and done.usage.prompt_tokens == 12

    body = fake_openai.last_request.body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == TOOLS
    assert body["messages"] == MESSAGES
    assert body["model"] == "fake-model"
    assert "reasoning_effort" not in body
    assert fake_openai.last_request.headers["authorization"] == "Bearer not-needed"


async def test_key_and_reasoning_effort_are_sent_when_configured(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("ok"))
    settings = fake_openai.settings(api_key=SECRET, reasoning_effort="low")
    async with ChatClient(settings) as client:
        await collect(client)
    request = fake_openai.last_request
    assert request.body["reasoning_effort"] == "low"
    assert request.headers["authorization"] == f"Bearer {SECRET}"


async def test_no_tools_means_no_tools_field(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("ok"))
    async with ChatClient(fake_openai.settings()) as client:
        [_ async for _ in client.stream(MESSAGES, [])]
    assert "tools" not in fake_openai.last_request.body


@pytest.mark.parametrize(
    "style",
    ["openai", "ollama", "vllm", "no_index", "repeated_ids", "stop_finish", "no_id", "index_zero"],
)
async def test_tool_call_styles(fake_openai: FakeOpenAI, style: str) -> None:
    calls = [("run_sql", {"sql": "select 1"}), ("run_sql", {"sql": "select 'a,b' as x"})]
    fake_openai.script(tool_call_reply(calls, style=style, text="Checking."))  # type: ignore[arg-type]
    async with ChatClient(fake_openai.settings()) as client:
        deltas, done = await collect(client)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Checking."
    streamed: dict[int, list[ToolCallDelta]] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallDelta):
            streamed.setdefault(delta.position, []).append(delta)
    # Each call streams as it is written: its name first, then its arguments piece by piece.
    assert [
        (parts[0].name, json.loads("".join(p.arguments for p in parts))) for parts in streamed.values()
    ] == [(name, args) for name, args in calls]
    assert all(len(parts) > 1 for parts in streamed.values()) == (style != "ollama")
    assert [c.position for c in done.tool_calls] == list(streamed)
    assert done.finish_reason == "tool_calls"
    assert [(c.name, json.loads(c.arguments)) for c in done.tool_calls] == [
        (name, args) for name, args in calls
    ]
    ids = [c.id for c in done.tool_calls]
    assert len(set(ids)) == 2
    assert ids == (["call_0", "call_1"] if style == "no_id" else ["call_fake_0", "call_fake_1"])


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_stream(fake_openai: FakeOpenAI, field: str) -> None:
    fake_openai.script(reasoning_reply("step one, step two", "Answer.", field=field))  # type: ignore[arg-type]
    async with ChatClient(fake_openai.settings()) as client:
        deltas, done = await collect(client)
    assert "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)) == "step one, step two"
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Answer."
    assert done.text == "Answer." and done.reasoning == "step one, step two"


async def test_missing_done_sentinel_is_fine(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("no sentinel", done=False))
    async with ChatClient(fake_openai.settings()) as client:
        _, done = await collect(client)
    assert done.text == "no sentinel" and not done.truncated


async def test_fast_stream_of_many_chunks(fake_openai: FakeOpenAI) -> None:
    text = "x" * 400
    fake_openai.script(text_reply(text, chunk_size=1, delay_s=0.001))
    async with ChatClient(fake_openai.settings()) as client:
        deltas, done = await collect(client)
    assert len(deltas) == 400 and done.text == text


async def test_server_ignoring_stream_true(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        chat_completion("All at once."),
        chat_completion(tool_calls=[("run_sql", {"sql": "select 1"})]),
    )
    async with ChatClient(fake_openai.settings()) as client:
        deltas, done = await collect(client)
        assert deltas == [TextDelta("All at once.")]
        assert done.text == "All at once." and done.usage is not None and not done.truncated
        _, done = await collect(client)
    assert done.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in done.tool_calls] == [("call_fake_0", "run_sql")]


async def test_list_models(fake_openai: FakeOpenAI) -> None:
    async with ChatClient(fake_openai.settings()) as client:
        assert await client.list_models() == ["fake-model"]


# --------------------------------------------------------------------------- retries


async def test_429_honours_retry_after_then_succeeds(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(429, "Rate limit reached", retry_after=1), text_reply("done"))
    notices: list[str] = []
    async with ChatClient(fake_openai.settings(max_retries=2)) as client:
        start = time.monotonic()
        _, done = await collect(client, on_retry=notices.append)
        elapsed = time.monotonic() - start
    assert done.text == "done"
    assert 0.95 <= elapsed < 3.0
    assert len(notices) == 1 and "429" in notices[0] and "retrying in 1.0 s" in notices[0]
    assert len(fake_openai.chat_requests) == 2


async def test_retry_after_beyond_the_cap_gives_up_at_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(429, "Rate limit reached", retry_after=600))
    async with ChatClient(fake_openai.settings(max_retries=2), retry_after_cap_s=5) as client:
        start = time.monotonic()
        err = await failure(client)
    assert time.monotonic() - start < 1.0
    assert err.kind == "rate_limit" and err.retry_after == 600
    assert "600 s" in err.message
    assert len(fake_openai.chat_requests) == 1


async def test_insufficient_quota_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(429, "You exceeded your quota", code="insufficient_quota"))
    async with ChatClient(fake_openai.settings(max_retries=2)) as client:
        err = await failure(client)
    assert err.kind == "rate_limit" and "quota" in err.message
    assert len(fake_openai.chat_requests) == 1


async def test_500_then_success(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(500, "boom"), error(503, "overloaded"), text_reply("ok"))
    notices: list[str] = []
    settings = fake_openai.settings(max_retries=2)
    async with ChatClient(settings, backoff_base_s=0.01) as client:
        _, done = await collect(client, on_retry=notices.append)
    assert done.text == "ok"
    assert len(notices) == 2 and "(2/2)" in notices[1]


async def test_500_until_retries_run_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(500, "boom"), error(500, "boom again"))
    async with ChatClient(fake_openai.settings(max_retries=1), backoff_base_s=0.01) as client:
        err = await failure(client)
    assert err.kind == "server" and err.status == 500
    assert "boom again" in err.message
    assert fake_openai.remaining == 0


async def test_non_json_error_body(fake_openai: FakeOpenAI) -> None:
    from tests.support.fake_openai import Respond

    fake_openai.script(Respond(502, "<html><body>Bad Gateway</body></html>"))
    async with ChatClient(fake_openai.settings()) as client:
        err = await failure(client)
    assert err.kind == "server" and "502" in err.message and "\n" not in err.message


async def test_connection_dropped_before_first_chunk_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(cut(), text_reply("second time lucky"))
    async with ChatClient(fake_openai.settings(max_retries=1), backoff_base_s=0.01) as client:
        _, done = await collect(client)
    assert done.text == "second time lucky"


async def test_drop_after_a_role_only_chunk_is_still_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(cut([role_chunk()]), text_reply("retried"))
    async with ChatClient(fake_openai.settings(max_retries=1), backoff_base_s=0.01) as client:
        _, done = await collect(client)
    assert done.text == "retried"
    assert len(fake_openai.chat_requests) == 2


async def test_stream_options_rejected_is_retried_without(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        error(400, "Unrecognized request argument supplied: stream_options"),
        text_reply("fine"),
        text_reply("again"),
    )
    async with ChatClient(fake_openai.settings()) as client:
        _, done = await collect(client)
        assert done.text == "fine" and done.usage is None
        _, done = await collect(client)
        assert done.text == "again"
        assert client.dropped_params == {"stream_options"}
    first, second, third = (r.body for r in fake_openai.chat_requests)
    assert "stream_options" in first
    assert "stream_options" not in second and "stream_options" not in third


async def test_an_unrelated_400_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(400, "messages: context length exceeded", code="context_length_exceeded"))
    async with ChatClient(fake_openai.settings(max_retries=2)) as client:
        err = await failure(client)
    assert err.kind == "bad_request" and "context length" in err.message
    assert len(fake_openai.chat_requests) == 1


async def test_script_exhausted_fails_loudly(fake_openai: FakeOpenAI) -> None:
    async with ChatClient(fake_openai.settings(max_retries=2)) as client:
        err = await failure(client)
    assert "script exhausted" in err.message
    assert len(fake_openai.chat_requests) == 1


# --------------------------------------------------------------------------- errors


async def test_401_names_the_problem_without_the_key(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(401, f"Incorrect API key provided: {SECRET}.", code="invalid_api_key"))
    async with ChatClient(fake_openai.settings(api_key=SECRET, max_retries=2)) as client:
        err = await failure(client)
    assert err.kind == "auth" and "401" in err.message and "API key" in err.message
    for text in (err.message, str(err), repr(err)):
        assert SECRET not in text and "TOPSECRET" not in text
    assert len(fake_openai.chat_requests) == 1


async def test_key_echoed_in_other_errors_is_redacted(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        error(400, f"bad header Authorization: Bearer {SECRET}"),
        error(500, f"internal: key={SECRET}"),
    )
    async with ChatClient(fake_openai.settings(api_key=SECRET)) as client:
        for _ in range(2):
            err = await failure(client)
            assert "TOPSECRET" not in err.message and "TOPSECRET" not in repr(err)


async def test_404_unknown_model(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(error(404, "model 'llama9' not found, try pulling it first"))
    async with ChatClient(fake_openai.settings(model="llama9", max_retries=2)) as client:
        err = await failure(client)
    assert err.kind == "not_found"
    assert "model 'llama9' not found" in err.message and "(404)" in err.message
    assert len(fake_openai.chat_requests) == 1


async def test_connection_refused() -> None:
    from astro_tui.config import Settings

    url = f"http://127.0.0.1:{closed_port()}/v1"
    settings = Settings(model="m", base_url=url, max_retries=1, api_key=SECRET)
    notices: list[str] = []
    async with ChatClient(settings, backoff_base_s=0.01) as client:
        start = time.monotonic()
        err = await failure(client, on_retry=notices.append)
    assert time.monotonic() - start < 2.0
    assert err.kind == "connection"
    assert err.message.startswith(f"cannot reach the model server at {url}")
    assert len(notices) == 1
    assert SECRET not in err.message


async def test_stalled_stream_times_out_within_the_read_timeout(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(stall(text_reply("partial words"), seconds=30))
    settings = fake_openai.settings(read_timeout_s=0.3, max_retries=2)
    async with ChatClient(settings) as client:
        start = time.monotonic()
        err = await failure(client)
        elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 2.0
    assert err.kind == "timeout" and "stopped responding for 0.3 s" in err.message
    assert err.partial is not None and err.partial.text == "partial words"
    assert len(fake_openai.chat_requests) == 1
    assert fake_openai.wait_for_disconnect()


async def test_stall_before_any_chunk_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(stall(seconds=30))
    settings = fake_openai.settings(read_timeout_s=0.3, max_retries=2)
    async with ChatClient(settings) as client:
        err = await failure(client)
    assert err.kind == "timeout"
    assert len(fake_openai.chat_requests) == 1


async def test_abrupt_cut_is_reported_as_truncated(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(cut(tool_call_reply([("run_sql", {"sql": "select 42"})])))
    async with ChatClient(fake_openai.settings(max_retries=2)) as client:
        err = await failure(client)
    assert err.kind == "truncated" and "middle of a reply" in err.message
    assert err.partial is not None and err.partial.truncated
    assert err.partial.tool_calls[0].name == "run_sql"
    assert len(fake_openai.chat_requests) == 1


async def test_clean_end_without_finish_reason_is_truncated(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(cut(text_reply("half an ans"), abrupt=False))
    async with ChatClient(fake_openai.settings()) as client:
        _, done = await collect(client)
    assert done.truncated and done.text == "half an ans" and done.finish_reason is None


async def test_error_event_mid_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        reply(
            role_chunk(),
            chunk({"content": "Hel"}),
            {"error": {"message": "upstream model crashed", "type": "server_error"}},
            finish_chunk(),
        )
    )
    async with ChatClient(fake_openai.settings()) as client:
        err = await failure(client)
    assert err.kind == "server" and "upstream model crashed" in err.message
    assert err.partial is not None and err.partial.text == "Hel"


# --------------------------------------------------------------------------- cancellation


async def test_aclose_closes_the_http_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("y" * 200, chunk_size=1, delay_s=0.05))
    async with ChatClient(fake_openai.settings()) as client:
        stream = client.stream(MESSAGES, TOOLS)
        async with contextlib.aclosing(stream):
            seen = 0
            async for _ in stream:
                seen += 1
                if seen == 2:
                    break
        start = time.monotonic()
        assert await asyncio.to_thread(fake_openai.wait_for_disconnect)
        assert time.monotonic() - start < 0.5


async def test_cancelling_the_task_closes_the_http_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(text_reply("z" * 200, chunk_size=1, delay_s=0.05))
    got_one = asyncio.Event()

    async with ChatClient(fake_openai.settings()) as client:

        async def consume() -> None:
            async for _ in client.stream(MESSAGES, TOOLS):
                got_one.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got_one.wait(), HANG_GUARD_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(fake_openai.wait_for_disconnect)


# --------------------------------------------------------------------------- configuration


def test_no_model_is_a_config_error() -> None:
    from astro_tui.config import Settings

    with pytest.raises(LLMError) as info:
        ChatClient(Settings(base_url="http://localhost:11434/v1"))
    assert info.value.kind == "config" and "ASTRO_MODEL" in info.value.message


def test_remote_server_without_key_is_a_config_error() -> None:
    from astro_tui.config import Settings

    with pytest.raises(LLMError) as info:
        ChatClient(Settings(model="gpt-4.1-mini"))
    assert info.value.kind == "config" and "OPENAI_API_KEY" in info.value.message


def test_construction_does_not_import_openai() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from astro_tui.config import Settings\n"
        "from astro_tui.llm import ChatClient\n"
        "ChatClient(Settings(model='m', base_url='http://localhost:1/v1'))\n"
        "assert 'openai' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""Streaming chat completions with tools against any OpenAI-compatible server.

The SDK is imported on first use (``import openai`` costs over a second, which
the TUI must not pay at start-up; ``prepare()`` pays it in a thread). SDK retries
are off: ``stream()`` retries itself, only before anything has streamed, and
reports each retry through ``on_retry`` so the person knows why it is waiting.

Requests go through the SDK's generic ``post`` with ``cast_to=object``: the SDK
still builds the request (auth, headers, timeouts), maps HTTP errors to its
exception classes, parses SSE, stops at ``[DONE]``, raises on error events and
closes the response, but hands us plain dicts instead of constructing a pydantic
``ChatCompletionChunk`` per token, which costs ~300 µs each.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from astro_tui.llm.accumulator import DeltaAccumulator, completion_as_chunk
from astro_tui.llm.errors import LLMError, config_error, missing_key_message, translate
from astro_tui.llm.messages import StreamItem
from astro_tui.llm.retry import BACKOFF_BASE_S, RETRY_AFTER_CAP_S, RetryPolicy, parse_retry_after
from astro_tui.llm.text_protocol import as_text_messages

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from astro_tui.config import Settings

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_API_KEY = "not-needed"
# Parameters some servers reject with a 400; dropped (once, for this client) when they do.
OPTIONAL_PARAMS = ("stream_options", "reasoning_effort")


class ChatClient:
    """One model endpoint. Cheap to construct; the HTTP client is built on first use."""

    def __init__(
        self,
        settings: Settings,
        *,
        retry_after_cap_s: float = RETRY_AFTER_CAP_S,
        backoff_base_s: float = BACKOFF_BASE_S,
    ) -> None:
        if not settings.model:
            raise config_error(
                "no model configured: set ASTRO_MODEL, pass --model, or in Python astro_tui.open(model=…) "
                "(see `astro config`)"
            )
        api_key = settings.api_key or (LOCAL_API_KEY if settings.base_url else None)
        if api_key is None:
            raise config_error(missing_key_message())
        self._settings = settings
        self._model: str = settings.model
        self._base_url = settings.base_url or DEFAULT_BASE_URL
        self._api_key = api_key
        self._policy = RetryPolicy(
            max_retries=max(0, settings.max_retries),
            retry_after_cap_s=retry_after_cap_s,
            backoff_base_s=backoff_base_s,
        )
        self._dropped: set[str] = set()
        self._client: AsyncOpenAI | None = None
        self._stream_cls: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def dropped_params(self) -> frozenset[str]:
        """Optional parameters this server rejected and we stopped sending."""
        return frozenset(self._dropped)

    def _openai(self) -> AsyncOpenAI:
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.AsyncOpenAI(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=openai.Timeout(
                        self._settings.read_timeout_s,
                        connect=self._settings.connect_timeout_s,
                    ),
                    max_retries=0,
                )
                self._stream_cls = openai.AsyncStream[object]
            return self._client

    async def prepare(self) -> None:
        """Import and build the SDK client in a thread, so the first question is not slow."""
        await asyncio.to_thread(self._openai)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _translate(self, exc: BaseException, **kwargs: Any) -> LLMError:
        return translate(
            exc,
            base_url=self._base_url,
            model=self._model,
            read_timeout_s=self._settings.read_timeout_s,
            connect_timeout_s=self._settings.connect_timeout_s,
            api_key=self._api_key,
            **kwargs,
        )

    def _params(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if self._settings.tool_protocol == "text":
            messages, tools = as_text_messages(messages, tools), []
        params: dict[str, Any] = {"model": self._model, "messages": _encodable(messages), "stream": True}
        if tools:
            params["tools"] = tools
        if "stream_options" not in self._dropped:
            params["stream_options"] = {"include_usage": True}
        effort = self._settings.reasoning_effort
        if effort and "reasoning_effort" not in self._dropped:
            params["reasoning_effort"] = effort
        return params

    def _rejected_param(self, exc: BaseException, params: dict[str, Any]) -> str | None:
        if getattr(exc, "status_code", None) not in (400, 422):
            return None
        text = f"{exc} {getattr(exc, 'body', '')}".lower()
        for name in OPTIONAL_PARAMS:
            if name in params and name in text:
                return name
        return None

    def _retry_delay(self, err: LLMError, exc: BaseException, retries_taken: int) -> float | None:
        """Seconds to wait before retrying, or None to give up (then ``err`` is final)."""
        if not err.retryable:
            return None
        headers = getattr(getattr(exc, "response", None), "headers", None)
        after = parse_retry_after(headers)
        err.retry_after = after
        give_up = (
            retries_taken >= self._policy.max_retries
            or (headers is not None and headers.get("x-should-retry") == "false")
            or (after is not None and after > self._policy.retry_after_cap_s)
        )
        if give_up:
            if after is not None and after >= 1:
                err.message = f"{err.message}; the server asks to wait {after:.0f} s, try again later"
                err.args = (err.message,)
            return None
        return self._policy.backoff(retries_taken) if after is None else after

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_retry: Callable[[str], None] | None = None,
    ) -> AsyncIterator[StreamItem]:
        """Yield text and reasoning deltas as they arrive, then exactly one Completion.

        Every failure is raised as LLMError. Closing the generator (``aclose()``)
        or cancelling the consuming task closes the HTTP stream at once; consume it
        under ``contextlib.aclosing`` if you may stop early.
        """
        # Importing and building the SDK client costs ~0.2 s: never on the event loop.
        client = self._client or await asyncio.to_thread(self._openai)
        retries = 0
        while True:
            params = self._params(messages, tools)
            acc = DeltaAccumulator()
            try:
                response = await client.post(
                    "/chat/completions",
                    body=params,
                    cast_to=object,
                    options={"security": {"bearer_auth": True}},
                    stream=True,
                    stream_cls=self._stream_cls,
                )
            except Exception as exc:
                rejected = self._rejected_param(exc, params)
                if rejected is not None:
                    self._dropped.add(rejected)
                    continue
                failure: BaseException = exc
            else:
                try:
                    try:
                        if _is_json(response):
                            for item in acc.feed(await _whole_completion(response)):
                                yield item
                        else:
                            async for chunk in response:
                                for item in acc.feed(chunk):
                                    yield item
                    finally:
                        await response.close()
                except Exception as exc:
                    if acc.started:
                        raise self._translate(exc, mid_stream=True, partial=acc.finish()) from None
                    failure = exc
                else:
                    yield acc.finish()
                    return

            err = self._translate(failure)
            delay = self._retry_delay(err, failure, retries)
            if delay is None:
                raise err from None
            retries += 1
            self._notify(on_retry, err, delay, retries)
            await asyncio.sleep(delay)

    def _notify(self, on_retry: Callable[[str], None] | None, err: LLMError, delay: float, n: int) -> None:
        if on_retry is not None:
            on_retry(f"{err.message}; retrying in {delay:.1f} s ({n}/{self._policy.max_retries})")

    async def list_models(self) -> list[str]:
        """Model ids the server offers; a cheap reachability and key check."""
        try:
            page = await self._openai().models.list()
            return [model.id for model in page.data]
        except Exception as exc:
            raise self._translate(exc) from None


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _encodable(value: Any) -> Any:
    """The messages with lone surrogates replaced by U+FFFD, so the request can be UTF-8 encoded.

    A model's JSON may hold half a character (`"\\ud83d"`); echoed back in the history it
    would make every later request of the conversation fail before it is sent.
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {key: _encodable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def _is_json(stream: Any) -> bool:
    """Whether the server ignored ``stream: true`` and sent one JSON completion."""
    content_type = stream.response.headers.get("content-type", "")
    return content_type.startswith("application/json")


async def _whole_completion(stream: Any) -> dict[str, Any]:
    """Read a non-streamed reply and present it as a single chunk."""
    import openai

    http = stream.response
    body = json.loads(await http.aread())
    if not isinstance(body, dict):
        raise openai.APIError("unreadable reply from the model server", http.request, body=body)
    if body.get("error"):
        error = body["error"]
        message = error.get("message") if isinstance(error, dict) else str(error)
        raise openai.APIError(message or "error", http.request, body=error)
    return completion_as_chunk(body)

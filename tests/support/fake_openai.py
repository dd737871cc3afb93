"""A scripted OpenAI-compatible server for tests: real sockets, real SSE.

The real ``AsyncOpenAI`` client (which uses httpx2, so respx cannot intercept it)
talks to this server over 127.0.0.1. Each POST to ``/v1/chat/completions``
consumes the next scripted item, in order, so tests are deterministic; every
request is recorded for assertions. When the script runs out the server answers
500 with ``x-should-retry: false`` so an under-scripted test fails loudly and fast
instead of hanging.

Typical use::

    def test_x(fake_openai):
        fake_openai.script(text_reply("Hello"), error(429, "slow down", retry_after=1))
        client = ChatClient(fake_openai.settings())
        ...
        assert fake_openai.requests[0].body["stream"] is True

Streams use chunked transfer encoding like real servers, so an ``abrupt`` cut is
an incomplete body (the client sees a transport error) while a non-abrupt cut
ends the body cleanly without a finish reason or ``[DONE]``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Literal

import pytest

from tests.support.waiting import HANG_GUARD_S

if TYPE_CHECKING:
    from astro_tui.config import Settings

MODEL = "fake-model"
COMPLETION_ID = "chatcmpl-fake"
CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")

Chunk = dict[str, Any] | str
ToolStyle = Literal[
    "openai", "ollama", "vllm", "no_index", "repeated_ids", "stop_finish", "no_id", "index_zero"
]


# --------------------------------------------------------------------------- script items


@dataclass(frozen=True)
class Reply:
    """A 200 SSE stream. ``delay_s`` is slept after every chunk (0.001 ≈ 1000 tokens/s).

    A chunk that is a ``str`` is sent verbatim as the ``data:`` payload (for
    malformed-JSON tests). Usage-only chunks are sent only when the request asked
    for them with ``stream_options.include_usage``, as real servers do.
    """

    chunks: tuple[Chunk, ...]
    delay_s: float = 0.0
    done: bool = True
    headers: Mapping[str, str] = field(default_factory=dict)

    def content_chunks(self) -> list[Chunk]:
        """The chunks without finish reasons or usage: what a cut or stall sends first."""
        return [c for c in self.chunks if not _is_final(c)]

    def replace(self, **changes: Any) -> Reply:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Respond:
    """A plain HTTP response: errors, or any JSON body."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stall:
    """Send ``chunks``, then go silent for ``seconds`` (ends early when the client
    disconnects or the server stops), then drop the connection."""

    chunks: tuple[Chunk, ...] = ()
    seconds: float = 30.0


@dataclass(frozen=True)
class Cut:
    """Send ``chunks`` then end without finish reason or ``[DONE]``: ``abrupt`` closes the
    socket mid-body; otherwise the HTTP body ends cleanly."""

    chunks: tuple[Chunk, ...] = ()
    abrupt: bool = True


ScriptItem = Reply | Respond | Stall | Cut | Callable[["RecordedRequest"], Any]


@dataclass
class RecordedRequest:
    """One request as the server saw it; ``disconnected`` is set if the client hung up mid-stream."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    disconnected: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def json(self) -> Any:
        return self.body


# --------------------------------------------------------------------------- chunk builders


def chunk(
    delta: Mapping[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: Mapping[str, Any] | None = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """One ChatCompletionChunk-shaped dict with a single choice."""
    out: dict[str, Any] = {
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish_reason}],
    }
    if usage is not None:
        out["usage"] = dict(usage)
    return out


def usage_chunk(
    prompt_tokens: int = 12, completion_tokens: int = 7, *, cached_tokens: int | None = None
) -> dict[str, Any]:
    """The usage-only final chunk (empty ``choices``) that ``include_usage`` asks for."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": usage,
    }


def role_chunk() -> dict[str, Any]:
    return chunk({"role": "assistant", "content": ""})


def finish_chunk(reason: str = "stop") -> dict[str, Any]:
    return chunk({}, finish_reason=reason)


def split(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def text_chunks(text: str, chunk_size: int = 3) -> list[dict[str, Any]]:
    return [chunk({"content": piece}) for piece in split(text, chunk_size) if piece]


def _usage_for(usage: bool | Mapping[str, Any] | None, n_chunks: int) -> list[dict[str, Any]]:
    if usage is True:
        return [usage_chunk(12, max(1, n_chunks))]
    if isinstance(usage, Mapping):
        return [usage_chunk(**usage)]
    return []


def _is_final(c: Chunk) -> bool:
    if not isinstance(c, dict):
        return False
    choices = c.get("choices")
    if not choices:
        return "usage" in c
    return any(ch.get("finish_reason") for ch in choices)


def text_reply(
    text: str,
    *,
    chunk_size: int = 3,
    finish_reason: str | None = "stop",
    usage: bool | Mapping[str, Any] | None = True,
    delay_s: float = 0.0,
    done: bool = True,
) -> Reply:
    """A plain text answer streamed ``chunk_size`` characters at a time."""
    body = text_chunks(text, chunk_size)
    chunks: list[Chunk] = [role_chunk(), *body]
    if finish_reason:
        chunks.append(finish_chunk(finish_reason))
    chunks += _usage_for(usage, len(body))
    return Reply(tuple(chunks), delay_s=delay_s, done=done)


def reasoning_reply(
    reasoning: str,
    text: str = "",
    *,
    field: Literal["reasoning_content", "reasoning"] = "reasoning_content",
    chunk_size: int = 3,
    usage: bool | Mapping[str, Any] | None = True,
    delay_s: float = 0.0,
) -> Reply:
    """Reasoning in ``reasoning_content`` (DeepSeek, vLLM) or ``reasoning`` (Ollama,
    OpenRouter), then the visible text."""
    thinking = [chunk({field: piece}) for piece in split(reasoning, chunk_size) if piece]
    body = text_chunks(text, chunk_size)
    chunks: list[Chunk] = [role_chunk(), *thinking, *body, finish_chunk("stop")]
    chunks += _usage_for(usage, len(thinking) + len(body))
    return Reply(tuple(chunks), delay_s=delay_s)


def think_reply(reasoning: str, text: str, *, opened: bool = True, chunk_size: int = 3) -> Reply:
    """Reasoning inside ``content`` between think tags (older Ollama, DeepSeek-R1 builds); with
    ``opened=False`` the chat template opened the tag in the prompt, so only ``</think>`` streams."""
    start = "<think>" if opened else ""
    return text_reply(f"{start}{reasoning}</think>\n\n{text}", chunk_size=chunk_size)


TextCallStyle = Literal["hermes", "json", "fenced", "mistral", "list"]


def text_tool_call_reply(
    calls: Sequence[tuple[str, Mapping[str, Any]]], *, style: TextCallStyle = "hermes"
) -> Reply:
    """Tool calls the server did not parse, left in ``content`` as the model wrote them:
    ``<tool_call>`` tags (llama.cpp without --jinja serving Qwen/Hermes), a bare JSON object
    (vLLM without a tool parser), a code fence, Mistral's ``[TOOL_CALLS]``, or a JSON list."""
    objects = [{"name": name, "arguments": dict(args)} for name, args in calls]
    if style == "hermes":
        text = "\n".join(f"<tool_call>\n{json.dumps(o)}\n</tool_call>" for o in objects)
    elif style == "mistral":
        text = "[TOOL_CALLS]" + json.dumps(objects)
    elif style == "list":
        text = json.dumps(objects)
    else:
        assert len(objects) == 1, "one call per reply in this style"
        text = json.dumps({"name": objects[0]["name"], "parameters": objects[0]["arguments"]})
        if style == "fenced":
            text = f"```json\n{text}\n```"
    return text_reply(text, chunk_size=7)


NO_TOOLS_ERRORS: dict[str, tuple[int, str]] = {
    "ollama": (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
    "vllm": (
        400,
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    ),
    "llama.cpp": (500, "tools param requires --jinja flag"),
}


def no_tools_error(server: str) -> Respond:
    """What a server or model without tool calling answers to a request that has tools."""
    status, message = NO_TOOLS_ERRORS[server]
    return error(status, message)


def tool_call_chunks(
    calls: Sequence[tuple[str, Mapping[str, Any] | str]],
    *,
    style: ToolStyle = "openai",
    chunk_size: int = 8,
) -> list[dict[str, Any]]:
    """The tool-call part of a stream, shaped the way a given server family sends it."""
    out: list[dict[str, Any]] = []
    prepared = [
        (i, f"call_fake_{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    ]
    if style == "ollama":
        whole = [
            {
                "id": cid,
                "index": i,
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
            for i, cid, name, args in prepared
        ]
        return [chunk({"role": "assistant", "content": "", "tool_calls": whole})]

    fragment_size = 3 if style == "vllm" else chunk_size
    for i, cid, name, args in prepared:
        index = 0 if style == "index_zero" else i
        head: dict[str, Any] = {"index": index, "type": "function", "function": {"name": name}}
        if style != "no_id":
            head["id"] = cid
        if style == "no_index":
            del head["index"]
        if style != "vllm":
            head["function"]["arguments"] = ""
        out.append(chunk({"tool_calls": [head]}))
        for piece in split(args, fragment_size):
            if not piece:
                continue
            part: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
            if style == "no_index":
                del part["index"]
            if style == "repeated_ids":
                part["id"] = cid
                part["type"] = "function"
                part["function"]["name"] = name
            out.append(chunk({"tool_calls": [part]}))
    return out


def tool_call_reply(
    calls: Sequence[tuple[str, Mapping[str, Any] | str]],
    *,
    style: ToolStyle = "openai",
    text: str = "",
    chunk_size: int = 8,
    usage: bool | Mapping[str, Any] | None = True,
    delay_s: float = 0.0,
    done: bool = True,
) -> Reply:
    """Tool calls (name, arguments as a dict or raw JSON text) in a server's style.

    Styles: ``openai`` (fragments, id on the first chunk), ``ollama`` (each call whole,
    one chunk), ``vllm`` (name first, tiny fragments), ``no_index``, ``repeated_ids``
    (id, type and name on every chunk), ``stop_finish`` (finish_reason "stop"),
    ``no_id`` (index only), ``index_zero`` (every call at index 0, distinct ids).
    """
    body = tool_call_chunks(calls, style=style, chunk_size=chunk_size)
    chunks: list[Chunk] = [role_chunk(), *text_chunks(text), *body]
    chunks.append(finish_chunk("stop" if style == "stop_finish" else "tool_calls"))
    chunks += _usage_for(usage, len(body))
    return Reply(tuple(chunks), delay_s=delay_s, done=done)


def reply(*chunks: Chunk, delay_s: float = 0.0, done: bool = True) -> Reply:
    """A stream of hand-made chunks."""
    return Reply(tuple(chunks), delay_s=delay_s, done=done)


def error(
    status: int,
    message: str,
    *,
    retry_after: float | str | None = None,
    code: str | None = None,
    type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Respond:
    """An OpenAI-style error body: ``{"error": {"message", "type", "code", "param"}}``."""
    all_headers = dict(headers or {})
    if retry_after is not None:
        all_headers["Retry-After"] = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
    body = {
        "error": {
            "message": message,
            "type": type or ("rate_limit_error" if status == 429 else "invalid_request_error"),
            "code": code,
            "param": None,
        }
    }
    return Respond(status, body, all_headers)


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Respond:
    return Respond(status, body, dict(headers or {}))


def chat_completion(
    text: str = "",
    *,
    tool_calls: Sequence[tuple[str, Mapping[str, Any] | str]] = (),
    finish_reason: str | None = None,
    usage: bool = True,
) -> Respond:
    """A whole, non-streamed completion: what a server that ignores ``stream: true`` sends."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_fake_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(tool_calls)
        ]
    body: dict[str, Any] = {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
    }
    if usage:
        body["usage"] = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    return Respond(200, body)


def _chunks_of(after: Reply | Sequence[Chunk]) -> tuple[Chunk, ...]:
    return tuple(after.content_chunks() if isinstance(after, Reply) else after)


def stall(after: Reply | Sequence[Chunk] = (), *, seconds: float = 30.0) -> Stall:
    """Stream ``after`` (a Reply contributes only its content chunks) then go silent."""
    return Stall(_chunks_of(after), seconds)


def cut(after: Reply | Sequence[Chunk] = (), *, abrupt: bool = True) -> Cut:
    """Stream ``after`` (a Reply contributes only its content chunks) then end early."""
    return Cut(_chunks_of(after), abrupt)


# --------------------------------------------------------------------------- the server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeOpenAI:
        return self.server.fake

    # ---- routing

    def do_GET(self) -> None:
        request = self._record(b"")
        if request.path.rstrip("/") in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.fake.models]
            self._respond(Respond(200, {"object": "list", "data": data}))
        else:
            self._respond(error(404, f"fake_openai: no route GET {request.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        request = self._record(raw)
        if request.path.rstrip("/") not in CHAT_PATHS:
            self._respond(error(404, f"fake_openai: no route POST {request.path}"))
            return
        item = self.fake._next_item(request)
        while callable(item) and not isinstance(item, Reply | Respond | Stall | Cut):
            item = item(request)
        if isinstance(item, Respond):
            self._respond(item)
        elif isinstance(item, Reply):
            self._stream(request, item)
        elif isinstance(item, Stall):
            self._stall(request, item)
        elif isinstance(item, Cut):
            self._cut(request, item)
        else:
            self._respond(error(500, f"fake_openai: bad script item {item!r}"))

    def _record(self, raw: bytes) -> RecordedRequest:
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        self.fake._add_request(request)
        return request

    # ---- plain responses

    def _respond(self, item: Respond) -> None:
        if isinstance(item.body, bytes | str):
            payload = item.body.encode() if isinstance(item.body, str) else item.body
            content_type = "text/plain; charset=utf-8"
        else:
            payload = json.dumps(item.body).encode()
            content_type = "application/json"
        try:
            self.send_response(item.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for key, value in item.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True

    # ---- streams

    def _begin_stream(self, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def _write(self, request: RecordedRequest, payload: bytes) -> bool:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
            return True
        except OSError:
            request.disconnected.set()
            self.close_connection = True
            return False

    def _event(self, request: RecordedRequest, data: Chunk) -> bool:
        text = data if isinstance(data, str) else json.dumps(data)
        return self._write(request, f"data: {text}\n\n".encode())

    def _end_body(self, request: RecordedRequest) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            request.disconnected.set()
            self.close_connection = True

    def _send_chunks(self, request: RecordedRequest, chunks: Sequence[Chunk], delay_s: float = 0.0) -> bool:
        wants_usage = bool(((request.body or {}).get("stream_options") or {}).get("include_usage"))
        for c in chunks:
            is_usage_only = isinstance(c, dict) and not c.get("choices") and "usage" in c
            if is_usage_only and not wants_usage and self.fake.usage_requires_stream_options:
                continue
            if not self._event(request, c):
                return False
            if delay_s > 0 and not self._wait(request, delay_s):
                return False
        return True

    def _wait(self, request: RecordedRequest, seconds: float) -> bool:
        """Sleep, watching the socket: False as soon as the client hangs up or the server stops."""
        deadline = time.monotonic() + seconds
        sock = self.connection
        while True:
            if self.fake._stopping.is_set():
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            try:
                readable, _, _ = select.select([sock], [], [], min(remaining, 0.02))
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    raise ConnectionResetError
            except (OSError, ValueError):
                request.disconnected.set()
                self.close_connection = True
                return False

    def _stream(self, request: RecordedRequest, item: Reply) -> None:
        self._begin_stream(item.headers)
        if not self._send_chunks(request, item.chunks, item.delay_s):
            return
        if item.done and not self._event(request, "[DONE]"):
            return
        self._end_body(request)

    def _stall(self, request: RecordedRequest, item: Stall) -> None:
        self._begin_stream()
        if self._send_chunks(request, item.chunks) and self._wait(request, item.seconds):
            self._drop()

    def _cut(self, request: RecordedRequest, item: Cut) -> None:
        self._begin_stream()
        if not self._send_chunks(request, item.chunks):
            return
        if item.abrupt:
            self._drop()
        else:
            self._end_body(request)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


class FakeOpenAI:
    """The server; use as a context manager or through the ``fake_openai`` fixture."""

    def __init__(
        self,
        *,
        models: Sequence[str] = (MODEL,),
        usage_requires_stream_options: bool = True,
    ) -> None:
        self.models = list(models)
        self.usage_requires_stream_options = usage_requires_stream_options
        self.requests: list[RecordedRequest] = []
        self._script: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self._new_request = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> FakeOpenAI:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="fake-openai",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop at once: stalls end, open connections are shut, the thread is joined."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        with httpd.connections_lock:
            connections = list(httpd.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- addresses

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def model(self) -> str:
        return self.models[0] if self.models else MODEL

    def settings(self, **overrides: Any) -> Settings:
        """Settings pointing at this server, no retries and no re-asking a plain-text reply unless
        asked (so a script is one reply per request the test means). The timeouts only guard
        against hangs, so a loaded machine never trips them; tests of timeouts set their own."""
        from astro_tui.config import Settings

        values: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "connect_timeout_s": HANG_GUARD_S / 2,
            "read_timeout_s": HANG_GUARD_S,
            "max_retries": 0,
            "max_reasks": 0,
        }
        values.update(overrides)
        return Settings(**values)

    # ---- script and records

    def script(self, *items: ScriptItem) -> FakeOpenAI:
        """Queue responses, one per chat-completions request, in order."""
        with self._lock:
            self._script.extend(items)
        return self

    def clear_script(self) -> None:
        with self._lock:
            self._script.clear()

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def assert_script_consumed(self) -> None:
        left = self.remaining
        assert left == 0, f"fake_openai: {left} scripted response(s) never requested"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            assert self.requests, "fake_openai: no request received"
            return self.requests[-1]

    def wait_for_requests(self, n: int, timeout: float = HANG_GUARD_S) -> bool:
        with self._new_request:
            return self._new_request.wait_for(lambda: len(self.requests) >= n, timeout)

    def wait_for_disconnect(self, timeout: float = HANG_GUARD_S) -> bool:
        """True once any recorded request saw its client hang up mid-stream."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if any(r.disconnected.is_set() for r in self.requests):
                    return True
            time.sleep(0.005)
        return False

    def _add_request(self, request: RecordedRequest) -> None:
        with self._new_request:
            self.requests.append(request)
            self._new_request.notify_all()

    def _next_item(self, request: RecordedRequest) -> ScriptItem:
        with self._lock:
            if self._script:
                return self._script.popleft()
            number = len(self.requests)
        return error(
            500,
            f"fake_openai: script exhausted: nothing scripted for request #{number} "
            f"({request.method} {request.path})",
            type="fake_openai_script_exhausted",
            headers={"x-should-retry": "false"},
        )


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started FakeOpenAI, stopped (and its threads joined) after the test."""
    with FakeOpenAI() as server:
        yield server

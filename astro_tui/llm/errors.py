"""One error type for everything that can go wrong talking to a model server.

The UI and ``astro ask`` show ``message`` as is, so it is one line, says what to
do, and never carries the API key (servers echo keys back in 401 bodies). The
multi-line "how to configure a model" text lives here too, so the CLI, the TUI's
conversation pane and the error path all say exactly the same thing. The
openai and httpx2 exception classes are looked up lazily: importing openai costs
over a second, and this module is imported at start-up.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from astro_tui.errors import AstroError, error_line
from astro_tui.text import one_line, redact_url

if TYPE_CHECKING:
    from astro_tui.llm.messages import Completion

ErrorKind = Literal[
    "connection",
    "auth",
    "not_found",
    "rate_limit",
    "server",
    "timeout",
    "truncated",
    "bad_request",
    "config",
]

_SERVER_TEXT_LIMIT = 200
_KEYLIKE = re.compile(
    r"\b(?:sk|pk|rk|key|api[_-]?key)[-_][\w*.\-]{6,}"  # sk-proj-…, api_key_…
    r"|\b((?:api[_-]?)?key|(?:access[_-]?)?token)=[^\s&#\"';,]+",  # ?api-key=…, &key=…, token=…
    re.IGNORECASE,
)
_BEARER = re.compile(r"(Bearer\s+)\S+", re.IGNORECASE)


class LLMError(AstroError):
    """A model-server failure, already phrased for the user.

    ``partial`` holds what had streamed before a mid-reply failure, so a caller
    can keep the text it already showed. ``retryable`` tells our retry loop (not
    the caller) whether trying again could help.
    """

    def __init__(
        self,
        message: str,
        kind: ErrorKind,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        partial: Completion | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.partial = partial

    def __repr__(self) -> str:
        return f"LLMError({self.kind!r}, {self.message!r})"


def display_url(url: str | None) -> str:
    """The model server's base URL as every message, `astro config` and `/model` show it:
    redacted like any URL (`redact_url`), OpenAI's when none is set."""
    return redact_url(url) if url else "https://api.openai.com/v1"


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Remove secrets and anything shaped like an API key or bearer token."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    text = _BEARER.sub(r"\1***", text)
    return _KEYLIKE.sub(lambda m: f"{m.group(1)}=***" if m.group(1) else "***", text)


def server_text(exc: Any, secrets: tuple[str | None, ...] = ()) -> str:
    """The server's own explanation from an error body, cleaned for display."""
    body = getattr(exc, "body", None)
    text: Any = None
    if isinstance(body, dict):
        text = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(text, dict):
            text = text.get("message")
    elif isinstance(body, str):
        text = body
    if not isinstance(text, str) or not text.strip():
        return ""
    return one_line(redact(text, secrets), _SERVER_TEXT_LIMIT)


def error_code(exc: Any) -> str:
    """The machine-readable code from an error body (e.g. ``insufficient_quota``)."""
    code = getattr(exc, "code", None)
    if code:
        return str(code)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        for key in ("code", "type"):
            if isinstance(body.get(key), str):
                return body[key]
    return ""


def _cause_text(exc: BaseException) -> str:
    """The transport-level reason (e.g. "connection refused") behind a wrapped error."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    text = ""
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if cause is not exc:
            text = str(cause) or type(cause).__name__
        cause = cause.__cause__ or cause.__context__
    return text


def _with(detail: str) -> str:
    return f": {detail}" if detail else ""


def translate(
    exc: BaseException,
    *,
    base_url: str | None,
    model: str,
    read_timeout_s: float,
    connect_timeout_s: float,
    api_key: str | None = None,
    mid_stream: bool = False,
    partial: Completion | None = None,
) -> LLMError:
    """Map an openai / httpx2 / socket exception to an LLMError for the user."""
    import httpx2
    import openai

    if isinstance(exc, LLMError):
        return exc
    secrets = (api_key,)
    url = display_url(base_url)

    def clean(text: str) -> str:
        return one_line(redact(text, secrets), 300)

    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        transport = exc if isinstance(exc, httpx2.TimeoutException) else exc.__cause__
        if isinstance(transport, httpx2.ConnectTimeout | httpx2.PoolTimeout):
            return LLMError(
                clean(
                    f"timed out after {connect_timeout_s:g} s connecting to the model server "
                    f"at {url}; is it running and reachable?"
                ),
                "timeout",
                retryable=not mid_stream,
                partial=partial,
            )
        return LLMError(
            clean(
                f"the model server stopped responding for {read_timeout_s:g} s"
                + (" in the middle of a reply" if mid_stream else "")
                + f" ({url})"
            ),
            "timeout",
            partial=partial,
        )

    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, url=url, model=model, secrets=secrets, partial=partial)

    bad_url = exc if isinstance(exc, httpx2.InvalidURL | httpx2.UnsupportedProtocol) else None
    if bad_url is None and isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        if isinstance(cause, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
            bad_url = cause
    if bad_url is not None:
        return LLMError(
            clean(f"the model server URL '{url}' is not a valid http(s) URL: {bad_url}"),
            "config",
            partial=partial,
        )

    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError | OSError):
        cause = _cause_text(exc) or str(exc)
        if mid_stream:
            return LLMError(
                clean(
                    f"the model server at {url} closed the connection in the middle of a reply{_with(cause)}"
                ),
                "truncated",
                partial=partial,
            )
        return LLMError(
            clean(
                f"cannot reach the model server at {url}{_with(cause)}; "
                "is it running, and is the base URL right (--base-url / OPENAI_BASE_URL)?"
            ),
            "connection",
            retryable=True,
            partial=partial,
        )

    if isinstance(exc, openai.APIError):
        # An error event inside a 200 stream (e.g. vLLM or OpenRouter failing mid-reply).
        detail = server_text(exc, secrets) or clean(str(exc))
        return LLMError(
            clean(f"the model server reported an error{_with(detail)}"),
            "server",
            partial=partial,
        )

    if isinstance(exc, httpx2.HTTPError):
        return LLMError(
            clean(f"talking to the model server at {url} failed: {exc}"),
            "connection",
            partial=partial,
        )

    if isinstance(exc, openai.OpenAIError):
        return LLMError(clean(f"model client error: {exc}"), "config", partial=partial)

    return LLMError(
        clean(f"unexpected error talking to the model server: {error_line(exc)}"),
        "server",
        partial=partial,
    )


def _status_error(
    exc: Any,
    *,
    url: str,
    model: str,
    secrets: tuple[str | None, ...],
    partial: Completion | None,
) -> LLMError:
    status: int = exc.status_code
    detail = server_text(exc, secrets)
    code = error_code(exc)

    def make(message: str, kind: ErrorKind, *, retryable: bool = False) -> LLMError:
        return LLMError(
            one_line(redact(message, secrets), 400),
            kind,
            status=status,
            retryable=retryable,
            partial=partial,
        )

    if status == 401:
        # The body of a 401 often quotes the key (masked or not); leave it out.
        return make(
            f"the model server rejected the API key (401) at {url}; check OPENAI_API_KEY "
            "or api_key in the config file (local servers need none)",
            "auth",
        )
    if status == 403:
        return make(f"the model server refused access (403) to model '{model}'{_with(detail)}", "auth")
    if status == 404:
        return make(
            f"model '{model}' not found on the server at {url} (404){_with(detail)}; check "
            "--model / ASTRO_MODEL (for Ollama: `ollama pull` it) and that the base URL "
            "ends in /v1",
            "not_found",
        )
    if status == 429:
        if code == "insufficient_quota":
            return make(
                f"the API account has no quota left (429 insufficient_quota){_with(detail)}",
                "rate_limit",
            )
        return make(
            f"the model server is rate limiting requests (429){_with(detail)}", "rate_limit", retryable=True
        )
    no_tools = _no_tools_fix(detail)
    if no_tools is not None:
        return make(
            f"the model server cannot call tools with model '{model}' (HTTP {status}): {no_tools}",
            "config",
        )
    if status >= 500 or status in (408, 409):
        return make(f"the model server failed (HTTP {status}){_with(detail)}", "server", retryable=True)
    return make(f"the model server rejected the request (HTTP {status}){_with(detail)}", "bad_request")


_NO_TOOLS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"enable-auto-tool-choice|auto\W+tool choice requires", re.IGNORECASE),
        "start vLLM with --enable-auto-tool-choice --tool-call-parser PARSER (the parser for "
        "your model's family, e.g. hermes for Qwen, llama3_json for Llama 3)",
    ),
    (
        re.compile(r"--jinja|requires jinja", re.IGNORECASE),
        "start llama-server with --jinja (the model's own chat template is what calls tools)",
    ),
    (
        re.compile(
            r"does not support tools|tools? (?:are |is )?not supported|unsupported.{0,20}tools?"
            r"|tool.{0,20}(?:not supported|unsupported)",
            re.IGNORECASE,
        ),
        "this model has no tool calling; astro answers only through tools, so pick one that has "
        "(for Ollama: `ollama pull qwen2.5` or llama3.1, and set --model)",
    ),
)


def _no_tools_fix(detail: str) -> str | None:
    """The fix for a server or model that refuses the request because it has tools."""
    for pattern, fix in _NO_TOOLS:
        if pattern.search(detail):
            return fix
    return None


def truncation_error(completion: Completion) -> LLMError:
    """The standard report for a reply that ended without a finish reason."""
    return LLMError(
        "the model's reply was cut off before it finished (no finish reason); try again",
        "truncated",
        partial=completion,
    )


def deadline_error(seconds: float) -> LLMError:
    """The standard report for a turn that ran past its overall deadline."""
    return LLMError(
        f"the model took longer than the {seconds:g} s allowed for one turn; "
        "ask again or raise turn_deadline_s",
        "timeout",
    )


def config_error(message: str) -> LLMError:
    return LLMError(message, "config")


def model_not_configured_message() -> str:
    """Multi-line instructions for configuring a model, with working examples."""
    from astro_tui.config import config_path

    return f"""\
No model is configured, so astro cannot answer questions yet (everything else works).

Any OpenAI-compatible server will do. Pick one:

  OpenAI:
    export OPENAI_API_KEY=sk-...
    export ASTRO_MODEL=gpt-4.1-mini
    astro

  Ollama (local, no key needed):
    ollama pull qwen2.5-coder:7b
    astro --model qwen2.5-coder:7b --base-url http://localhost:11434/v1

  vLLM, llama.cpp, LM Studio: the same flags (or OPENAI_BASE_URL and
  ASTRO_MODEL) with the server's /v1 address and the model name it serves.

Or put it in the config file (api_key only for servers that need one)

    {config_path()}

    model = "qwen2.5-coder:7b"
    base_url = "http://localhost:11434/v1"
    # api_key = "sk-..."
"""


def missing_key_message() -> str:
    """One line for a remote server configured without a key."""
    from astro_tui.config import config_path

    return (
        "no API key for the model server: set OPENAI_API_KEY (or api_key in "
        f"{config_path()}), or point --base-url / OPENAI_BASE_URL at a local server"
    )

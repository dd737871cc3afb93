"""Error wording, redaction and Retry-After parsing, without a server."""

from __future__ import annotations

import email.utils

import pytest

from astro_tui.llm import LLMError, model_not_configured_message
from astro_tui.llm.errors import deadline_error, display_url, redact, translate, truncation_error
from astro_tui.llm.messages import Completion
from astro_tui.llm.retry import RetryPolicy, parse_retry_after


def test_retry_after_seconds_millis_and_dates() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(7.0)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 60)}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({"Retry-After": "-4"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


def test_backoff_grows_and_is_bounded() -> None:
    policy = RetryPolicy(max_retries=5, retry_after_cap_s=3.0, backoff_base_s=0.5)
    delays = [policy.backoff(n) for n in range(6)]
    assert 0.375 <= delays[0] <= 0.5
    assert delays[1] > delays[0] * 1.4
    assert max(delays) <= 3.0


def test_redact_removes_keys_and_bearer_tokens() -> None:
    key = "sk-proj-abcdefghijklmnop"
    text = f"Incorrect API key provided: {key}. Header was Authorization: Bearer xyz123456789"
    cleaned = redact(text, (key,))
    assert key not in cleaned and "xyz123456789" not in cleaned
    assert redact("masked sk-proj-****mnop here") == "masked *** here"
    assert redact("no secrets here") == "no secrets here"


def test_display_url_hides_credentials() -> None:
    assert display_url("http://user:pw@host:8000/v1") == "http://host:8000/v1"
    assert display_url(None) == "https://api.openai.com/v1"
    assert display_url("http://localhost:11434/v1") == "http://localhost:11434/v1"


def test_display_url_drops_query_and_fragment() -> None:
    secret = "azure0123456789secret"
    url = f"https://example.openai.azure.com/openai?api-version=2024-06-01&api-key={secret}#k={secret}"
    assert display_url(url) == "https://example.openai.azure.com/openai"
    assert display_url(f"http://u:{secret}@host:99999/v1?key={secret}") == "http://host:99999/v1"
    err = translate(RuntimeError("boom"), base_url=url, model="m", read_timeout_s=1, connect_timeout_s=1)
    assert secret not in err.message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET /v1?api-key=abc123SECRET&x=1 failed", "GET /v1?api-key=***&x=1 failed"),
        ("bad api_key=abc123SECRET", "bad api_key=***"),
        ("url was https://h/v1?key=abc123SECRET", "url was https://h/v1?key=***"),
        ("APIKEY=abc123SECRET; token=t0k3nSECRET", "APIKEY=***; token=***"),
        ("api-version=2024-06-01 and max_tokens=4096", "api-version=2024-06-01 and max_tokens=4096"),
    ],
)
def test_redact_removes_key_parameters(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_unknown_exceptions_become_llm_errors() -> None:
    err = translate(
        RuntimeError("weird"),
        base_url="http://localhost:1/v1",
        model="m",
        read_timeout_s=1,
        connect_timeout_s=1,
    )
    assert isinstance(err, LLMError) and err.kind == "server" and "weird" in err.message


def test_bad_base_url_is_a_config_error() -> None:
    import httpx2

    err = translate(
        httpx2.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."),
        base_url="ftp://x/v1",
        model="m",
        read_timeout_s=1,
        connect_timeout_s=1,
    )
    assert err.kind == "config" and "not a valid http(s) URL" in err.message


def test_standard_reports() -> None:
    partial = Completion(text="half", truncated=True)
    err = truncation_error(partial)
    assert err.kind == "truncated" and err.partial is partial
    assert deadline_error(600).kind == "timeout"
    assert "600 s" in deadline_error(600).message


def test_messages_are_one_line() -> None:
    err = translate(
        ConnectionRefusedError(111, "Connection\nrefused"),
        base_url="http://localhost:9/v1",
        model="m",
        read_timeout_s=1,
        connect_timeout_s=1,
    )
    assert "\n" not in err.message and err.kind == "connection"


def test_model_not_configured_message_says_exactly_how() -> None:
    from astro_tui.config import config_path

    text = model_not_configured_message()
    for needle in (
        "OPENAI_API_KEY",
        "ASTRO_MODEL",
        "astro --model qwen2.5-coder:7b --base-url http://localhost:11434/v1",
        "OPENAI_BASE_URL",
        str(config_path()),
        'model = "',
        "--model",
        "--base-url",
    ):
        assert needle in text, needle

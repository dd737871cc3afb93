"""When to try a model request again, and how long to wait first.

We retry ourselves (the SDK's retries are off) so that a retry is visible to the
user through ``on_retry``, is never attempted once a reply has started streaming,
and never sleeps longer than a person will sit through.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

RETRY_AFTER_CAP_S = 20.0
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retry_after_cap_s`` bounds a server-requested wait; beyond it we give up at once."""

    max_retries: int = 2
    retry_after_cap_s: float = RETRY_AFTER_CAP_S
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_max_s: float = BACKOFF_MAX_S

    def backoff(self, retries_taken: int) -> float:
        """Exponential backoff with jitter, so parallel clients do not retry in lockstep."""
        delay = self.backoff_base_s * (2.0 ** min(retries_taken, 16))
        delay = min(delay, self.backoff_max_s, self.retry_after_cap_s)
        return delay * (1.0 - 0.25 * random.random())


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, or ``Retry-After`` as
    seconds or an HTTP date. None when absent or unreadable."""
    if not headers:
        return None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        value = _number(millis)
        if value is not None:
            return value / 1000.0
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    value = _number(raw)
    if value is not None:
        return value
    try:
        parsed = email.utils.parsedate_tz(raw)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and not hasattr(headers, "multi_items"):
        lowered = {k.lower(): v for k, v in headers.items()}
        value = lowered.get(name)
    return value.strip() if isinstance(value, str) else None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if math.isnan(value) or value < 0:
        return None
    return value

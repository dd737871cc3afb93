"""Make untrusted text safe to print: data values and model output must never drive the terminal.

A value may hold ANSI/OSC escapes (OSC 52 writes the clipboard) or bidirectional
overrides that make printed SQL read differently from what ran; all of them are
shown as visible escapes instead.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, *, keep_newlines: bool = True) -> str:
    """C0/C1 controls (except newline and tab), bidi controls and lone surrogates (a model's
    JSON may hold `\\ud800`; a UTF-8 stream cannot print one) become `\\x1b`-style text."""
    cleaned = _UNSAFE.sub(_show, text)
    return cleaned if keep_newlines else cleaned.replace("\n", "\\n")


def json_inert(text: str) -> str:
    """Serialized JSON with C1, bidi and surrogate characters escaped (json.dumps leaves them raw)."""
    return re.sub(
        r"[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]",
        lambda m: f"\\u{ord(m.group()):04x}",
        text,
    )

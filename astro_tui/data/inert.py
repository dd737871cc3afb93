"""Make untrusted text safe to print: data values and model output must never drive the terminal.

A value may hold ANSI/OSC escapes (OSC 52 writes the clipboard) or bidirectional
overrides that make printed SQL read differently from what ran; all of them are
shown as visible escapes instead.
"""

from __future__ import annotations

import re

UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""C0/C1 controls but newline and tab, bidi controls, and lone surrogates."""

UNSAFE_RE2 = r"[\x00-\x08\x0b-\x1f\x7f-\x{9f}\x{200e}\x{200f}\x{202a}-\x{202e}\x{2066}-\x{2069}]"
"""The same set for RE2 (pyarrow.compute), minus surrogates, which valid UTF-8 cannot hold."""


def _shown(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_VISIBLE = {
    code: _shown(code)
    for code in (*range(0x20), *range(0x7F, 0xA0), 0x200E, 0x200F, *range(0x202A, 0x202F),
                 *range(0x2066, 0x206A), *range(0xD800, 0xE000))
    if code not in (0x09, 0x0A)
}  # fmt: skip
"""UNSAFE's characters and how each is shown: `str.translate` runs in C (a regex callback per
character took 15 s over a 5 MB value of controls)."""


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_JSON_VISIBLE = {code: f"\\u{code:04x}" for code in _VISIBLE if code >= 0x7F}


def inert(text: str, *, keep_newlines: bool = True) -> str:
    """C0/C1 controls (except newline and tab), bidi controls and lone surrogates (a model's
    JSON may hold `\\ud800`; a UTF-8 stream cannot print one) become `\\x1b`-style text."""
    if UNSAFE.search(text) is not None:
        text = text.translate(_VISIBLE)
    return text if keep_newlines else text.replace("\n", "\\n")


def json_inert(text: str) -> str:
    """Serialized JSON with C1, bidi and surrogate characters escaped (json.dumps leaves them raw)."""
    return text.translate(_JSON_VISIBLE) if _JSON_UNSAFE.search(text) is not None else text

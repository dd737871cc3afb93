"""Small text rules every layer shares, each written once.

- `inert`: untrusted text (data values, names, model output) made safe to print.
  A value may hold ANSI/OSC escapes (OSC 52 writes the clipboard) or bidirectional
  overrides that make printed SQL read differently from what ran; all of them are
  shown as visible escapes instead.
- `one_line` and `clip`: text flattened to one line and cut to a width, for
  titles, summaries, progress lines and table cells.
- `redact_url`: a connection or model-server URL as a person may see it, never
  with a password or token in it; `without_secrets`: the same URL with them left
  out, for a client that finds them itself (`.pgpass`, the environment).
"""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size

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

_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_JSON_VISIBLE = {code: f"\\u{code:04x}" for code in (*(c for c in _VISIBLE if c >= 0x7F), 0x2028, 0x2029)}


def inert(text: object, *, keep_newlines: bool = True) -> str:
    """C0/C1 controls (except newline and tab), bidi controls and lone surrogates (a model's
    JSON may hold `\\ud800`; a UTF-8 stream cannot print one) become `\\x1b`-style text.

    In a one-line place (`keep_newlines=False`) a newline becomes a visible `\\n` too: a
    name `a<newline>b` must not read as another name `a b`."""
    text = text if isinstance(text, str) else str(text)
    if UNSAFE.search(text) is not None:
        text = text.translate(_VISIBLE)
    return text if keep_newlines else text.replace("\n", "\\n")


def json_inert(text: str) -> str:
    """Serialized JSON with C1, bidi, line-separator and surrogate characters escaped (json.dumps
    leaves them raw): a line of JSON stays one line for any reader (`str.splitlines` also breaks at
    U+0085, U+2028 and U+2029) and prints inert."""
    return text.translate(_JSON_VISIBLE) if _JSON_UNSAFE.search(text) is not None else text


def clip(text: str, width: int) -> str:
    """Cut to `width` terminal cells, a wide (CJK) character counting two, marked with `…`."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(0, width - 1)).rstrip() + "…"


def one_line(text: object, limit: int | None = None) -> str:
    """Inert, every run of whitespace (newlines too) one space, cut to `limit` cells."""
    flat = " ".join(inert(text).split())
    return flat if limit is None else clip(flat, limit)


_WEB = re.compile(r"^(https?://)(?:[^/?#]*@)?([^/?#]*)([^?#]*)", re.I)
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)([^/?#]*)@", re.I)
_SECRET_PARAMS = re.compile(
    r"([?&;][\w.-]*(?:password|passwd|pwd|token|secret|key|sig|signature|credential)[\w.-]*=)[^&;#]*",
    re.I,
)


def redact_url(url: str) -> str:
    """A URL as a person may see it, never with a secret in it.

    A web URL (`http`, `https`: a model server) keeps its scheme, host, port and path
    only: proxies take keys as the user name, in the query (`?api-key=`) or the
    fragment. A database URL keeps the user name, as psql shows it, and its
    parameters; the password and every secret-looking parameter (`password=`,
    `token=`, …) become `***`, and the fragment is dropped:
    `postgresql://ann:secret@host/db?password=x` → `postgresql://ann:***@host/db?password=***`.
    """
    web = _WEB.match(url)
    if web is not None:
        return "".join(web.groups())

    def userinfo(match: re.Match[str]) -> str:
        user, sep, _ = match.group(2).partition(":")
        return f"{match.group(1)}{user}{':***' if sep else ''}@"

    shown = _USERINFO.sub(userinfo, url, count=1).split("#", 1)[0]
    return _SECRET_PARAMS.sub(r"\1***", shown)


def without_secrets(url: str) -> str:
    """A database URL with its password and secret parameters left out rather than masked: what
    a replay connects with, the client finding the secret itself (`.pgpass`, the environment)."""

    def userinfo(match: re.Match[str]) -> str:
        user = match.group(2).partition(":")[0]
        return f"{match.group(1)}{user}@" if user else match.group(1)

    shown = _USERINFO.sub(userinfo, url, count=1).split("#", 1)[0]
    base, sep, query = shown.partition("?")
    base = _SECRET_PARAMS.sub(lambda m: "" if m.group(1).startswith(";") else m.group(0), base)
    kept = [p for p in re.split(r"[&;]", query) if p and not _SECRET_PARAMS.match("&" + p)]
    return base + (sep + "&".join(kept) if kept else "")

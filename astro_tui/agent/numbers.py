"""The numbers a reader sees in an answer's text, and which of them astro traced to a cell.

`verified` is decided on the rendered text, not on how the text was made: every
number-like run in it must lie within one span astro rendered from a cell, or it is a
number the model typed. A run is digits in any script (`4`, `٤`, `½`, `④`) and English
number words (`forty-two`), with what changes their meaning glued to them: a sign, a
currency, separators (`1,234.5`, `12:30`, `3/4`, `1e6`, `2024-01-05`), a unit or scale
(`42k`, `$42M`, `3x`, `42%`). Separators also join what Markdown would show as one number
(`100<!-- -->100`, `1**00**`), so two adjacent spans cannot make a number no cell holds.
No run is exempt: a year, a clock time or a list marker the model typed is a typed number.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Iterator

_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred",
    "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions", "trillion",
    "trillions", "dozen", "dozens",
)  # fmt: skip
_WORD = re.compile(r"(?<![^\W\d_])(?:" + "|".join(_WORDS) + r")(?![^\W\d_])", re.IGNORECASE)
_PART = re.compile(r"0+|W+")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_JOIN = re.compile(
    r"(?:[,.'’_:/\-\u2212\u00a0\u2007\u2009\u202f\u200b\u200c\u200d\u2060\u00ad*`~\\]"
    r"|<!--.*?-->|</?[A-Za-z][^<>\n]{0,200}>)+",
    re.DOTALL,
)
_EXPONENT = re.compile(r"[eE][-+]?")
_SPACED = re.compile(r"[ \t]+(?:and[ \t]+)?", re.IGNORECASE)
_SIGNS = "-+−±"
_SUFFIX = re.compile(r"[ ]?[%‰]|[^\W\d_]+")


def _shadow(text: str) -> str:
    """`text` with each numeric character as `0` and each number word as `W`s (same length).
    A character reference Markdown would show as a digit (`&#52;`, `&frac12;`) is one; one it
    would show as nothing or a space joins like a separator."""
    chars = ["0" if ch.isnumeric() else ("#" if ch == "W" else ch) for ch in text]
    for match in _ENTITY.finditer(text):
        shown = html.unescape(match.group())
        if any(ch.isnumeric() for ch in shown):
            chars[match.start() : match.end()] = "0" * (match.end() - match.start())
        elif not shown.strip() or all(unicodedata.category(ch) == "Cf" for ch in shown):
            chars[match.start() : match.end()] = "_" * (match.end() - match.start())
    return _WORD.sub(lambda m: "W" * len(m.group()), "".join(chars))


def _joined(gap: str, before: str, after: str) -> bool:
    if not gap or _JOIN.fullmatch(gap):
        return True
    if before[0] == "0" and after[0] == "0" and _EXPONENT.fullmatch(gap):
        return True
    if "W" in (before[0], after[0]) and _SPACED.fullmatch(gap):
        return True
    return gap == " " and before[0] == "0" and after == "000"  # `1 000`: a group of thousands


def number_runs(text: str) -> Iterator[tuple[int, int]]:
    """Where each number-like run is in `text` (start, end)."""
    shadow = _shadow(text)
    parts = [(m.start(), m.end()) for m in _PART.finditer(shadow)]
    i = 0
    while i < len(parts):
        start, end = parts[i]
        while i + 1 < len(parts):
            nxt_start, nxt_end = parts[i + 1]
            if not _joined(shadow[end:nxt_start], shadow[start:end], shadow[nxt_start:nxt_end]):
                break
            end = nxt_end
            i += 1
        i += 1
        yield _widened(text, start, end)


def _widened(text: str, start: int, end: int) -> tuple[int, int]:
    """The run with its sign, currency and unit: they change which number is meant."""
    if start and unicodedata.category(text[start - 1]) == "Sc":
        start -= 1
    elif start > 1 and text[start - 1] == " " and unicodedata.category(text[start - 2]) == "Sc":
        start -= 2
    if start and text[start - 1] in _SIGNS and (start == 1 or not text[start - 2].isalnum()):
        start -= 1
        if start and unicodedata.category(text[start - 1]) == "Sc":
            start -= 1
    suffix = _SUFFIX.match(text, end)
    if suffix is not None:
        end = suffix.end()
    if end < len(text) and unicodedata.category(text[end]) == "Sc":
        end += 1
    return start, end


def numbers_in_text(text: str) -> list[str]:
    """Every number in `text`, as written: none of them traced."""
    return [text[start:end] for start, end in number_runs(text)]


def typed_numbers(text: str, spans: Iterable[tuple[int, int]]) -> list[str]:
    """The runs of `text` that do not lie within one of `spans` (start, end): numbers astro did
    not render from a cell, in order, each once."""
    covered = sorted(spans)
    found: dict[str, None] = {}
    for start, end in number_runs(text):
        if not any(s <= start and end <= e for s, e in covered):
            found.setdefault(text[start:end], None)
    return list(found)

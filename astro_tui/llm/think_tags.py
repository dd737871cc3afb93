"""Reasoning written inside the reply as `<think>…</think>` (older Ollama, DeepSeek-R1 builds).

Servers that know the convention send it as ``reasoning_content``; others pass the
tags through in ``content``. The tag can be split across chunks, so the start
of a reply is held back until it is clear whether it opens with ``<think>``
(at most seven characters), and a possible closing tag at the end of a chunk
waits for the next one.
"""

from __future__ import annotations

from typing import Literal

OPEN = "<think>"
CLOSE = "</think>"

Piece = tuple[bool, str]  # (is reasoning, text)


class ThinkSplitter:
    """Feed content pieces in order; each call returns the (reasoning?, text) pieces now certain."""

    __slots__ = ("_held", "_state")

    def __init__(self) -> None:
        self._state: Literal["start", "think", "gap", "text"] = "start"
        self._held = ""

    @property
    def settled(self) -> bool:
        """Past the start (and any reasoning): every further piece is reply text, as it is."""
        return self._state == "text"

    def feed(self, piece: str) -> list[Piece]:
        if self._state == "text":
            return [(False, piece)]
        if self._state == "gap":  # the blank lines between the reasoning and the reply
            piece = piece.lstrip()
            if not piece:
                return []
            self._state = "text"
            return [(False, piece)]
        text = self._held + piece
        self._held = ""
        out: list[Piece] = []
        if self._state == "start":
            stripped = text.lstrip()
            if not stripped or (len(stripped) < len(OPEN) and OPEN.startswith(stripped)):
                self._held = text
                return out
            if not stripped.startswith(OPEN):
                self._state = "text"
                return [(False, text)]
            self._state = "think"
            text = stripped[len(OPEN) :]
        end = text.find(CLOSE)
        if end >= 0:
            self._state = "gap"
            if text[:end]:
                out.append((True, text[:end]))
            return out + self.feed(text[end + len(CLOSE) :])
        keep = _partial_suffix(text, CLOSE)
        self._held = text[len(text) - keep :] if keep else ""
        if len(text) > keep:
            out.append((True, text[: len(text) - keep]))
        return out

    def rest(self) -> Piece | None:
        """What is held back, for the end of the stream (an unclosed `<think>` stays reasoning)."""
        if not self._held:
            return None
        return (self._state == "think", self._held)


def split_unopened(text: str) -> tuple[str, str] | None:
    """(reasoning, answer) for a reply whose template opened `<think>` in the prompt, so only
    `</think>` streamed; None when there is no such tag."""
    end = text.find(CLOSE)
    if end < 0 or OPEN in text[:end]:
        return None
    return text[:end].strip(), text[end + len(CLOSE) :].lstrip()


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is the start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0

"""The conversation as the model sees it: earlier turns condensed, the current one whole.

Replaying every old result would make each follow-up cost more than the last and
push the question out of small local models' context, so tool results of earlier
turns are replaced by the one-line summary made when they were produced.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal

from astro_tui.agent.provenance import SavedAnswer

TurnStatus = Literal["open", "answer", "text", "cancelled", "error", "limit"]
SUMMARY_CHARS = 300


@dataclass(slots=True)
class Entry:
    """One chat message; `summary` replaces a tool message's content once its turn is over,
    and `shown` is what the person saw of an output tool's answer (the message is the
    model's side of it)."""

    message: dict[str, Any]
    summary: str | None = None
    shown: str | None = None


@dataclass(slots=True)
class Turn:
    question: str
    started: str = field(default_factory=lambda: dt.datetime.now().isoformat(timespec="seconds"))
    entries: list[Entry] = field(default_factory=list)
    status: TurnStatus = "open"
    workspace_next: int = 1
    answer: SavedAnswer | None = None
    """The verified answer that ended the turn, with where its values came from."""

    @property
    def came_to_nothing(self) -> bool:
        """Failed before the model said anything: no model configured, its server unreachable.
        Such a turn is not worth a saved conversation of its own. A cancelled turn is kept: the
        person chose to stop it, and a query may have run (its call is rolled back with it)."""
        return self.status == "error" and len(self.entries) <= 2  # the question, a note

    @property
    def shown_answer(self) -> str | None:
        """What the person saw of the answer that ended this turn, if an output tool gave one."""
        return next((e.shown for e in reversed(self.entries) if e.shown), None)


def short_summary(content: str, limit: int = SUMMARY_CHARS) -> str:
    """The start of a tool's output, marked as cut, for tools without a summary of their own."""
    text = content.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … (cut from {len(text):,} characters; run it again if needed)"


class History:
    def __init__(self, turns: list[Turn] | None = None) -> None:
        self.turns: list[Turn] = turns or []

    @property
    def current(self) -> Turn | None:
        return self.turns[-1] if self.turns and self.turns[-1].status == "open" else None

    def begin(self, question: str, workspace_next: int) -> Turn:
        turn = Turn(question=question, workspace_next=workspace_next)
        turn.entries.append(Entry({"role": "user", "content": question}))
        self.turns.append(turn)
        return turn

    def messages(self, system: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for turn in self.turns:
            condensed = turn.status != "open"
            for entry in turn.entries:
                if condensed and entry.summary is not None and entry.message.get("role") == "tool":
                    out.append({**entry.message, "content": entry.summary})
                else:
                    out.append(entry.message)
        return out

    def rollback_to_consistent(self, turn: Turn) -> None:
        """Drop a trailing assistant message whose tool calls did not all get results."""
        entries = turn.entries
        for i in range(len(entries) - 1, -1, -1):
            message = entries[i].message
            if message.get("role") != "assistant" or not message.get("tool_calls"):
                continue
            wanted = {c["id"] for c in message["tool_calls"]}
            answered = {
                e.message.get("tool_call_id") for e in entries[i + 1 :] if e.message.get("role") == "tool"
            }
            if not wanted <= answered:
                del entries[i:]
            return

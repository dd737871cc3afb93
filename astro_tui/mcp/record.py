"""What an outside agent did stays reviewable: each MCP session is saved as a conversation.

One conversation per MCP session (a stdio connection, an HTTP session; calls
without a session share the server's), in the same format and directory as the
app's, so `/resume` in the app lists it for this database. Each call is one
turn: the call as the client sent it, and a closing note with the SQL exactly
as executed and the result's shape — never its rows. A `submit_result` turn
also keeps its answer with its provenance, as the app's do, so `astro replay`
takes it like any other. The file is rewritten atomically after every call.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from astro_tui.agent.conversations import new_conversation_id
from astro_tui.agent.events import Answer
from astro_tui.agent.history import Entry, Turn
from astro_tui.agent.provenance import saved_answer
from astro_tui.session import Session
from astro_tui.text import inert

log = logging.getLogger("astro.mcp")

SAVE_PAUSE_S = 0.2
MAX_TURNS = 200
"""Calls per saved conversation; a longer session goes on in the next one."""
MAX_SESSIONS = 64
"""MCP sessions remembered (their tool sets, their open conversations); the oldest goes first."""
KEPT_CHARS = 20_000
"""Longer arguments are kept cut: the record is for reading, not for replaying a megabyte of SQL."""

Status = Literal["text", "answer", "error", "cancelled"]


@dataclass(slots=True)
class CallRecord:
    """One call as it ended; filled by the tool while it runs, saved when it returns."""

    name: str
    arguments: dict[str, Any]
    status: Status = "text"
    sql: list[str] = field(default_factory=list)
    outcome: str = ""
    """One line: the result's shape, the error, or what a text tool returned (its first line)."""
    elapsed_ms: float = 0.0
    answer: Answer | None = None
    """`submit_result`'s answer, kept with its provenance like the app's, so it replays."""


@dataclass(slots=True)
class _Conversation:
    id: str
    client: str
    created: str
    turns: list[Turn] = field(default_factory=list)
    scheduled: bool = False
    """A write is on its way; calls added meanwhile go in it."""


class Conversations:
    """Calls are appended at once and written by one background thread a moment later, so a call's
    answer never waits for a disk and calls in quick succession share one write; a conversation is
    rewritten whole (the format has a header that counts the turns), so after `MAX_TURNS` calls the
    session continues in a new one. Only the `MAX_SESSIONS` sessions called last keep their turns in
    memory: a server that runs for weeks holds no more than that (and an id per conversation)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._open: OrderedDict[str, _Conversation] = OrderedDict()
        self._ids: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="astro-mcp-save")
        self._warned = False

    def conversation_ids(self, session: str = "") -> list[str]:
        with self._lock:
            return [id_ for key, id_ in self._ids if key == session]

    def add(self, session: str, client: str, call: CallRecord) -> None:
        with self._lock:
            conversation = self._open.get(session)
            if conversation is None or len(conversation.turns) >= MAX_TURNS:
                now = dt.datetime.now()
                conversation = _Conversation(
                    new_conversation_id(now), client, now.isoformat(timespec="seconds")
                )
                self._open[session] = conversation
                self._ids.append((session, conversation.id))
                while len(self._open) > MAX_SESSIONS:
                    self._open.popitem(last=False)
            self._open.move_to_end(session)
            conversation.turns.append(_turn(call, len(conversation.turns) + 1))
            schedule = not conversation.scheduled
            conversation.scheduled = True
        if schedule:
            try:
                self._writer.submit(self._write, conversation)
            except RuntimeError:  # a call that ends while the server shuts down
                self._write(conversation)

    def _write(self, conversation: _Conversation) -> None:
        time.sleep(SAVE_PAUSE_S)
        with self._lock:
            conversation.scheduled = False
            turns = list(conversation.turns)
        try:
            self._session.save_conversation(
                conversation.id, turns, created=conversation.created, by=conversation.client
            )
        except OSError as exc:
            if not self._warned:
                self._warned = True
                log.warning("astro mcp: cannot save the conversation: %s", exc.strerror or exc)

    def close(self) -> None:
        """Write what is pending, then stop the writer."""
        self._writer.shutdown(wait=True)


def _kept(value: Any) -> Any:
    if isinstance(value, str):
        return inert(value if len(value) <= KEPT_CHARS else value[:KEPT_CHARS] + "… (cut)")
    if isinstance(value, list):
        return [_kept(v) for v in value]
    if isinstance(value, dict):
        return {inert(str(k), keep_newlines=False): _kept(v) for k, v in value.items()}
    return value


def _label(call: CallRecord, arguments: dict[str, Any]) -> str:
    if call.name == "run_sql" and isinstance(arguments.get("sql"), str):
        shown = arguments["sql"]
    elif call.name == "submit_result" and arguments.get("title"):
        shown = str(arguments["title"])
    else:
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
    shown = " ".join(shown.split())
    return f"MCP {call.name}: {shown[:200]}" if shown else f"MCP {call.name}"


def _turn(call: CallRecord, number: int) -> Turn:
    arguments = _kept(call.arguments)
    label = _label(call, arguments)
    call_id = f"mcp_{number}"
    outcome = inert(call.outcome, keep_newlines=False)
    what = {"error": "failed", "cancelled": "was cancelled by the client"}.get(call.status, "ran")
    note = [f"The MCP client's `{call.name}` call {what} ({call.elapsed_ms:,.0f} ms)."]
    for sql in call.sql:
        note.append(f"SQL as executed:\n```sql\n{_kept(sql)}\n```")
    if outcome:
        note.append(outcome)
    turn = Turn(question=label, status=call.status)
    if call.answer is not None:
        turn.answer = saved_answer(call.answer)
    turn.entries.append(Entry({"role": "user", "content": label}))
    turn.entries.append(
        Entry(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": json.dumps(arguments, ensure_ascii=False),
                        },
                    }
                ],
            }
        )
    )
    turn.entries.append(Entry({"role": "tool", "tool_call_id": call_id, "content": outcome}, outcome))
    turn.entries.append(Entry({"role": "assistant", "content": "\n\n".join(note)}))
    return turn

"""Conversations saved as JSONL under the state directory, one file each, rewritten atomically.

A file is rewritten whole after every turn (temp file, fsync, rename), so a
SIGKILL in the middle of a write leaves the previous complete version. The first
line is a header carrying what a list needs (title, turns, time), so listing
reads one line per file.

Version 2 keeps what the person saw of an answer as the tool message's `shown`
field. Version 1 files had it only inside the text addressed to the model
("Shown to the person: …"); `load_conversation` reads it from there.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from astro_tui.agent.history import Entry, Turn, TurnStatus
from astro_tui.agent.provenance import answer_from_record, answer_record
from astro_tui.errors import AstroError
from astro_tui.files import atomic_write_text
from astro_tui.text import json_inert

FORMAT_VERSION = 2
_LEGACY_SHOWN = "Shown to the person"
_STATUSES = frozenset(get_args(TurnStatus))


class ConversationError(AstroError):
    """A conversation cannot be found or read; the message is one line."""


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    path: Path
    db_key: str
    model: str | None
    created: str
    updated: str
    title: str
    turns: int
    db_label: str = ""


def conversations_dir(state_dir: Path) -> Path:
    return state_dir / "conversations"


def new_conversation_id(now: dt.datetime | None = None) -> str:
    return f"{(now or dt.datetime.now()).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def conversation_path(state_dir: Path, conversation_id: str) -> Path:
    if (
        not conversation_id
        or "/" in conversation_id
        or "\\" in conversation_id
        or conversation_id.startswith(".")
    ):
        raise ConversationError(f"not a conversation id: {conversation_id!r}")
    return conversations_dir(state_dir) / f"{conversation_id}.jsonl"


def save_conversation(
    state_dir: Path,
    conversation_id: str,
    turns: list[Turn],
    *,
    db_key: str,
    db_label: str,
    model: str | None,
    created: str,
    client: dict[str, Any] | None = None,
) -> Path:
    path = conversation_path(state_dir, conversation_id)
    text = conversation_text(
        conversation_id, turns, db_key=db_key, db_label=db_label, model=model, created=created, client=client
    )
    atomic_write_text(path, text)
    return path


def conversation_text(
    conversation_id: str,
    turns: list[Turn],
    *,
    db_key: str,
    db_label: str,
    model: str | None,
    created: str,
    client: dict[str, Any] | None = None,
) -> str:
    """The whole file: cheap to build, so the caller can take it where the turns cannot change.
    `client` is how a replay reaches the data (`data/clients.py`)."""
    header = {
        "type": "header",
        "version": FORMAT_VERSION,
        "id": conversation_id,
        "db_key": db_key,
        "db_label": db_label,
        "model": model,
        "created": created,
        "updated": dt.datetime.now().isoformat(timespec="seconds"),
        "title": " ".join(turns[0].question.split())[:120] if turns else "",
        "turns": len(turns),
        **({"client": client} if client is not None else {}),
    }
    lines = [_dumps(header)]
    for index, turn in enumerate(turns):
        lines.append(
            _dumps(
                {
                    "type": "turn",
                    "index": index,
                    "question": turn.question,
                    "status": turn.status,
                    "started": turn.started,
                    "workspace_next": turn.workspace_next,
                    **({"answer": answer_record(turn.answer)} if turn.answer is not None else {}),
                }
            )
        )
        for entry in turn.entries:
            record: dict[str, Any] = {"type": "message", "turn": index, "message": entry.message}
            if entry.summary is not None:
                record["summary"] = entry.summary
            if entry.shown is not None:
                record["shown"] = entry.shown
            lines.append(_dumps(record))
    return "\n".join(lines) + "\n"


def _dumps(record: dict[str, Any]) -> str:
    """One record on one line whatever its texts hold: U+0085, U+2028 and U+2029 (line breaks to
    many readers) are escaped like the controls, so the file is JSON lines for every reader."""
    return json_inert(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str))


def load_conversation(state_dir: Path, conversation_id: str) -> tuple[dict[str, Any], list[Turn]]:
    """The header and the turns; unreadable lines are an error rather than silently lost turns.

    Anything that is not what `save_conversation` writes (a line that is not an
    object, a turn number that is not a number, a message that is not a chat
    message) raises ConversationError, never a stray TypeError or KeyError.
    """
    return load_conversation_file(conversation_path(state_dir, conversation_id), conversation_id)


def load_conversation_file(path: Path, conversation_id: str) -> tuple[dict[str, Any], list[Turn]]:
    """`load_conversation` of a file anywhere (`astro replay FILE`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConversationError(f"no conversation {conversation_id}") from None
    except OSError as exc:
        raise ConversationError(f"cannot read conversation {conversation_id}: {exc}") from None
    header: dict[str, Any] | None = None
    turns: list[Turn] = []
    # only "\n" ends a record: a file written before the escapes holds raw U+2028 in its texts
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise ConversationError(f"conversation {conversation_id}: line {number} is not JSON") from None
        problem = "is not a record" if not isinstance(record, dict) else None
        kind = record.get("type") if problem is None else None
        if kind == "header":
            header = record
        elif kind == "turn":
            status = record.get("status", "error")
            workspace_next = record.get("workspace_next", 1)
            try:
                answer = answer_from_record(record["answer"]) if "answer" in record else None
            except ValueError:
                answer, problem = None, "has a turn whose answer is not a saved answer"
            if not _is_int(workspace_next) or workspace_next < 1:
                problem = "has a turn whose workspace_next is not a positive whole number"
            elif problem is None:
                turns.append(
                    Turn(
                        question=str(record.get("question", "")),
                        started=str(record.get("started", "")),
                        status=status if status in _STATUSES else "error",
                        workspace_next=workspace_next,
                        answer=answer,
                    )
                )
        elif kind == "message" and turns:
            message, summary, shown = record.get("message"), record.get("summary"), record.get("shown")
            if not _is_message(message) or not all(v is None or isinstance(v, str) for v in (summary, shown)):
                problem = "has a message that is not a chat message"
            else:
                turns[-1].entries.append(Entry(message, summary, shown))
        if problem is not None:
            raise ConversationError(f"conversation {conversation_id}: line {number} {problem}")
    if header is None:
        raise ConversationError(f"conversation {conversation_id} has no header line")
    for turn in turns:
        if turn.status == "open":
            turn.status = "cancelled"
        if header.get("version") == 1 and turn.status == "answer":
            _legacy_shown(turn)
    return header, turns


def _legacy_shown(turn: Turn) -> None:
    """A version 1 answer: what the person saw was only in the text for the model (or, for
    `send_message`, in the call's arguments)."""
    tools = [e for e in turn.entries if e.message.get("role") == "tool"]
    if not tools:
        return
    last = tools[-1]
    content = last.message.get("content")
    if isinstance(content, str) and content.startswith(_LEGACY_SHOWN):
        last.shown = content[len(_LEGACY_SHOWN) :].lstrip(".:").strip() or None
    calls = [c.get("function") for e in turn.entries for c in e.message.get("tool_calls") or ()]
    call = calls[-1] if calls else None
    if last.shown is None and isinstance(call, dict) and call.get("name") == "send_message":
        try:
            last.shown = str(json.loads(call.get("arguments") or "{}").get("message") or "") or None
        except (ValueError, AttributeError, TypeError):
            last.shown = None


def list_conversations(state_dir: Path, db_key: str | None = None) -> list[ConversationInfo]:
    """Saved conversations (of one database, if given), newest first."""
    folder = conversations_dir(state_dir)
    if not folder.is_dir():
        return []
    found: list[ConversationInfo] = []
    for path in folder.glob("*.jsonl"):
        try:
            with open(path, encoding="utf-8") as fh:
                header = json.loads(fh.readline())
        except (OSError, ValueError, RecursionError):  # one bad file must not hide the others
            continue
        if not isinstance(header, dict) or header.get("type") != "header":
            continue
        if db_key is not None and header.get("db_key") != db_key:
            continue
        model, turns = header.get("model"), header.get("turns", 0)
        if not _is_int(turns) or not (model is None or isinstance(model, str)):
            continue
        found.append(
            ConversationInfo(
                id=path.stem,
                path=path,
                db_key=str(header.get("db_key", "")),
                model=model,
                created=str(header.get("created", "")),
                updated=str(header.get("updated", "")),
                title=str(header.get("title", "")),
                turns=turns,
                db_label=str(header.get("db_label", "")),
            )
        )
    found.sort(key=lambda c: (c.updated, c.id), reverse=True)
    return found


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_message(message: Any) -> bool:
    """A chat message as the history replays it: a role, and tool calls that each have an id."""
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return False
    calls = message.get("tool_calls")
    if calls is None:
        return True
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls
    )

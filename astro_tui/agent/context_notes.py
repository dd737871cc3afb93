"""Persistent notes about one database, which the model reads and appends to across sessions.

Notes outlive conversations, so a crash while writing must never lose them: every
change rewrites the file through a temp file, fsync and rename.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from pathlib import Path

from astro_tui.agent.registry import ToolError
from astro_tui.agent.state import safe_file_stem
from astro_tui.files import atomic_write_text

MAX_NOTE_CHARS = 2_000
MAX_FILE_CHARS = 50_000
_LOCK = threading.Lock()


def notes_path(state_dir: Path, db_key: str) -> Path:
    return state_dir / "context" / f"{safe_file_stem(db_key)}.md"


class ContextNotes:
    """`seed` is what the notes start from before anything is written (`Database.context_seed`)."""

    def __init__(self, state_dir: Path, db_key: str, seed: str = "") -> None:
        self.path = notes_path(state_dir, db_key)
        self.db_key = db_key
        self.seed = seed

    def read(self) -> str:
        """The notes, seeding the file on first read so later edits start from the seed."""
        with _LOCK:
            if self.path.exists():
                return self.path.read_text(encoding="utf-8")
            seed = self.seed
            if seed:
                # a state directory that cannot be written must not stop questions being answered
                with contextlib.suppress(OSError):
                    atomic_write_text(self.path, seed)
            return seed

    def append(self, note: str, *, now: dt.datetime | None = None) -> str:
        """Add one dated bullet; returns the line written."""
        text = " ".join(note.split())
        if not text:
            raise ToolError("update_context: the note is empty")
        if len(text) > MAX_NOTE_CHARS:
            raise ToolError(f"update_context: keep a note under {MAX_NOTE_CHARS:,} characters")
        current = self.read()
        stamp = (now or dt.datetime.now()).strftime("%Y-%m-%d")
        line = f"- {text} ({stamp})"
        with _LOCK:
            if len(current) + len(line) > MAX_FILE_CHARS:
                raise ToolError(
                    f"update_context: the notes are full; the person can edit {self.path} to tidy them up"
                )
            body = current.rstrip("\n")
            if "## Notes from the assistant" not in body:
                body = (body + "\n\n" if body else "") + "## Notes from the assistant\n"
            atomic_write_text(self.path, body + "\n" + line + "\n")
        return line

"""Slash commands typed into the question box: parsed here, carried out by the app."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from astro_tui.errors import AstroError

EXPORT_FORMATS = ("csv", "parquet", "json")

COMMANDS: dict[str, tuple[str, str]] = {
    "sql": ("SQL", "run read-only SQL; the result opens in the results pane"),
    "clear": ("", "clear the conversation from the screen (the model keeps its memory)"),
    "new": ("", "start a new conversation"),
    "resume": ("[ID]", "resume an earlier conversation (a list without ID)"),
    "context": ("", "show the notes kept about this database"),
    "copy": ("", "copy the verified SQL of the current result"),
    "export": ("FORMAT [PATH]", "save the current result as csv, parquet or json"),
    "replay": (
        "[ipynb|marimo|sql] [PATH]",
        "write the conversation as a notebook or script that checks its numbers",
    ),
    "model": ("", "show the model and server in use"),
    "help": ("", "keys and slash commands"),
}


ACTIONS = {
    "clear": "clear_conversation",
    "new": "new_conversation",
    "resume": "resume",
    "context": "show_context",
    "copy": "copy_sql",
    "model": "show_model",
    "replay": "replay",
    "help": "help",
}
"""The app action a command without an argument runs (`/sql`, `/export` and `/resume ID` take theirs)."""


@dataclass(frozen=True, slots=True)
class Slash:
    name: str
    arg: str = ""


class SlashError(AstroError):
    """A malformed slash command; the message is one line for the user."""


def parse(text: str) -> Slash | None:
    """The command in `text`, or None when it is a question. `//x` sends `/x` as a question."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    name = head.strip().lower()
    if name not in COMMANDS:
        raise SlashError(f"unknown command /{head}; /help lists the commands")
    arg = rest.strip()
    if name == "sql" and not arg:
        raise SlashError("/sql needs a statement, e.g. /sql SELECT 42")
    return Slash(name, arg)


def unescape_question(text: str) -> str:
    stripped = text.strip()
    return stripped[1:] if stripped.startswith("//") else stripped


def export_args(arg: str) -> tuple[str, str | None]:
    """(format, path or None) from `FORMAT [PATH]`; the format may also come from PATH's suffix."""
    try:
        parts = shlex.split(arg)
    except ValueError as exc:
        raise SlashError(f"/export: {exc}") from None
    if not parts:
        raise SlashError("/export needs a format: csv, parquet or json")
    fmt = parts[0].lower()
    if fmt not in EXPORT_FORMATS:
        suffix = fmt.rsplit(".", 1)[-1] if "." in fmt else ""
        if suffix in EXPORT_FORMATS and len(parts) == 1:
            return suffix, parts[0]
        raise SlashError(f"/export: unknown format {parts[0]!r}; use csv, parquet or json")
    if len(parts) > 2:
        raise SlashError("/export takes a format and one path")
    return fmt, parts[1] if len(parts) == 2 else None

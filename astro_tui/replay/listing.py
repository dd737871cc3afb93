"""`astro replay --list`: the saved conversations of every database, newest first, one line each."""

from __future__ import annotations

from pathlib import Path

from astro_tui.agent.conversations import ConversationInfo, list_conversations
from astro_tui.text import one_line


def replay_list(state_dir: Path) -> list[ConversationInfo]:
    return list_conversations(state_dir)


def listing_lines(found: list[ConversationInfo]) -> list[str]:
    """id, date, target, first question; columns aligned."""
    if not found:
        return []
    rows = [
        (c.id, (c.updated or c.created)[:16].replace("T", " "), one_line(c.db_label or c.db_key), c.title)
        for c in found
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + one_line(row[3], 80)
        for row in rows
    ]

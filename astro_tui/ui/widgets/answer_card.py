"""The end of a turn as the user sees it: verified answers look different from the model's words.

A verified card holds text rendered from query results plus the SQL that
produced them; anything the model typed itself wears an "unverified" mark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from astro_tui.text import inert, one_line
from astro_tui.ui.inert import inert_text
from astro_tui.ui.widgets.tool_block import result_status, sql_syntax

if TYPE_CHECKING:
    from astro_tui.agent.events import Answer

UNVERIFIED_NOTE = "⚠ unverified: the model's own words, not checked against the database"
# Laying out a text block costs time in proportion to its length, on the UI loop: a 2 MB
# reply held the screen for seconds. Beyond this much a block shows a note instead (the
# whole text is still in the conversation the model sees and in the saved file).
MAX_SHOWN_CHARS = 20_000  # as much as a verified answer's template may render


def capped(shown: int, text: str) -> str:
    """The part of `text` still to show when `shown` characters of its block are on screen."""
    room = MAX_SHOWN_CHARS - shown
    if room <= 0:
        return ""
    if len(text) <= room:
        return text
    return text[:room] + f"\n\n… (longer than {MAX_SHOWN_CHARS:,} characters: the rest is not shown here)"


class AnswerCard(Vertical):
    """A verified answer (output tool) or an unverified one, with its SQL one key from the clipboard."""

    def __init__(self, answer: Answer) -> None:
        kind = "-verified" if answer.verified else ("-message" if answer.kind == "message" else "-unverified")
        super().__init__(classes=f"answer-card {kind}")
        self.answer = answer

    def compose(self) -> ComposeResult:
        from astro_tui.ui.widgets.traced_answer import TracedAnswer

        answer = self.answer
        title = one_line(answer.title, 100) if answer.title else ""
        if answer.verified:
            head = "✓ Verified answer" + (f" — {title}" if title else "")
        elif answer.kind == "message":
            head = "? The model asks" + (f" — {title}" if title else "")
        elif answer.tables:  # from queries, but a number in it was typed
            head = "⚠ Not verified: a number was typed by the model" + (f" — {title}" if title else "")
        else:
            head = UNVERIFIED_NOTE
        yield Static(inert_text(head), classes="answer-head")
        if answer.text.strip() and answer.text.strip() != (answer.title or "").strip():
            inputs = {t.name: t.result for t in answer.tables}
            yield TracedAnswer(capped(0, answer.text), answer.provenance, inputs)
        if answer.unverified_numbers:
            numbers = ", ".join(inert(n, keep_newlines=False) for n in answer.unverified_numbers[:12])
            yield Static(
                inert_text(f"⚠ typed by the model, not from the database: {numbers}"),
                classes="answer-warning",
            )
        if answer.chart is not None:
            yield Static(
                inert_text(
                    f"▦ chart: {one_line(answer.chart.title or answer.chart.kind, 80)} (results pane)"
                ),
                classes="answer-meta",
            )
        if answer.tables:
            dark = self.app.current_theme.dark
            parts = []
            for table in answer.tables:
                parts += [inert_text(f"-- {table.name}", "bold"), sql_syntax(table.sql, dark=dark)]
            label = "SQL" if len(answer.tables) == 1 else f"SQL ({len(answer.tables)} queries)"
            with Collapsible(title=f"{label} · ctrl+y copies", collapsed=True, classes="answer-sql"):
                yield Static(Group(*parts))
            stats = "   ".join(
                f"{inert(t.name, keep_newlines=False)}: {result_status(self, t.result)}"
                for t in answer.tables
            )
            yield Static(inert_text(stats), classes="answer-meta")

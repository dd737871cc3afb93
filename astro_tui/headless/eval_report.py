"""How `astro eval` shows itself: a progress line on stderr while it runs, a table and summary at the end.

Question text comes from a file someone else wrote and errors may quote the
model, so everything printed is made inert first.
"""

from __future__ import annotations

import json
from typing import TextIO

from rich.cells import cell_len

from astro_tui.data.text_table import pad
from astro_tui.headless.evaluation import EvalQuestion, EvalSummary, QuestionReport
from astro_tui.text import inert, json_inert, one_line

BAR_WIDTH = 20
ID_WIDTH = 24
QUESTION_WIDTH = 44
MARKS = {"correct": "✓", "wrong": "✗", "unverified": "?", "no answer": "!", "gold failed": "-"}


class EvalProgress:
    """On a terminal, one line redrawn in place (a bar, the count, the running accuracy, the current
    question); in a pipe or a log, one plain line per finished question."""

    def __init__(self, err: TextIO, total: int) -> None:
        self.err = err
        self.total = total
        self.correct = 0
        self.done = 0
        isatty = getattr(err, "isatty", None)
        self.live = bool(isatty and isatty())

    def start(self, index: int, question: EvalQuestion) -> None:
        if self.live:
            self._draw(f"{question.id}  {one_line(question.question, QUESTION_WIDTH)}")

    def report(self, index: int, report: QuestionReport) -> None:
        self.done += 1
        self.correct += report.correct
        if self.live:
            self._draw(f"{MARKS[report.status]} {report.id}")
            if self.done == self.total:
                self.err.write("\r\x1b[K")
                self.err.flush()
            return
        detail = f"  ({one_line(report.error, 80)})" if report.error else ""
        self.err.write(
            f"[{self.done}/{self.total}] {MARKS[report.status]} {report.status:<11} {inert(report.id)}  "
            f"{report.tool_calls} calls  {report.tokens:,} tokens  {report.seconds:.1f} s{detail}\n"
        )
        self.err.flush()

    def _draw(self, tail: str) -> None:
        filled = round(BAR_WIDTH * self.done / self.total) if self.total else BAR_WIDTH
        bar = "█" * filled + "░" * (BAR_WIDTH - filled)
        accuracy = f"  {100 * self.correct / self.done:.0f}% correct" if self.done else ""
        self.err.write(f"\r\x1b[K{bar} {self.done}/{self.total}{accuracy}  {tail}")
        self.err.flush()


def summary_line(summary: EvalSummary) -> str:
    scored = len(summary.scored)
    line = (
        f"accuracy {summary.count('correct')}/{scored} ({summary.accuracy:.1f}%) · "
        f"verified {summary.count('verified')}/{scored} ({summary.verified_rate:.1f}%) · "
        f"per question: {summary.mean('tool_calls'):.1f} tool calls, {summary.mean('tokens'):,.0f} tokens, "
        f"{summary.mean('seconds'):.1f} s"
    )
    if summary.gold_failed:
        line += f" · {summary.gold_failed} gold failed (not scored)"
    return line


def format_summary(summary: EvalSummary) -> str:
    """The per-question table, then who was measured on what, then the summary line."""
    header = ("id", "result", "verified", "calls", "tokens", "seconds", "question")
    rows = [
        (
            one_line(r.id, ID_WIDTH),
            f"{MARKS[r.status]} {r.status}",
            "yes" if r.verified else "no",
            str(r.tool_calls),
            f"{r.tokens:,}",
            f"{r.seconds:.1f}",
            one_line(r.question, QUESTION_WIDTH),
        )
        for r in summary.reports
    ]
    widths = [max(cell_len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    right = {3, 4, 5}

    def line(cells: tuple[str, ...]) -> str:
        parts = [pad(c, w, right=i in right) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    out = [line(header), line(tuple("─" * w for w in widths)), *map(line, rows)]
    failures = [r for r in summary.reports if r.error]
    if failures:
        out.append("")
        out += [f"{one_line(r.id, ID_WIDTH)}: {r.status}: {one_line(r.error or '', 160)}" for r in failures]
    out.append("")
    who = f"model {inert(summary.model or '?')} on {inert(summary.database or '?')}"
    out.append(who)
    out.append(summary_line(summary))
    return "\n".join(out)


def format_json(summary: EvalSummary) -> str:
    return json_inert(json.dumps(summary.as_dict(), ensure_ascii=False, default=str))

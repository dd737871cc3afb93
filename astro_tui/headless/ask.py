"""`astro ask`: one turn without the TUI, for scripts and pipes.

Progress goes to stderr and the answer to stdout, so `astro ask … > file` keeps
only the answer; `--json` makes stdout exactly one JSON object. Everything
printed that came from the data or the model is made inert first: a value could
hold terminal escapes.
"""

from __future__ import annotations

import json
import shutil
import time
from typing import Any, TextIO, assert_never

from astro_tui.agent.chart_draw import render_chart_text
from astro_tui.agent.conversations import conversation_path
from astro_tui.agent.events import (
    AgentEvent,
    Answer,
    Done,
    ErrorEvent,
    Notice,
    Reasked,
    ReasoningDelta,
    RetryEvent,
    TextDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallSkipped,
    ToolCallStarted,
    ToolResult,
    UsageEvent,
)
from astro_tui.agent.provenance import provenance_json
from astro_tui.data.results import QueryResult
from astro_tui.data.text_table import format_table, json_safe
from astro_tui.errors import AstroError
from astro_tui.llm import model_not_configured_message
from astro_tui.session import Session
from astro_tui.text import inert, json_inert

TEXT_ROWS = 50
LIVE_REFRESH_S = 0.1
JSON_ROWS = 1_000
CONFIG_ERROR_KINDS = frozenset({"config", "auth", "not_found"})


class _Progress:
    """Tool calls as one line each on stderr; the model's interim words before them, dimmed by position.

    On a terminal the line of a call being written counts its characters as they
    stream, then is replaced by the call's summary; in a pipe only the summary is written.
    """

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.pending: list[str] = []
        self.live = _is_terminal(err)
        self.writing: tuple[str, int, float] | None = None  # name, characters, when last shown
        self.waiting = False

    def wait(self, model: str) -> None:
        """On a terminal, say whom astro is waiting for until the first word or call arrives:
        a model on a slow server may take many seconds to its first token."""
        if self.live:
            self.err.write(f"… waiting for {inert(model, keep_newlines=False)}")
            self.err.flush()
            self.waiting = True

    def event(self, event: AgentEvent) -> None:
        if self.waiting:
            self.waiting = False
            self.err.write("\r\x1b[K")
        match event:
            case TextDelta():
                self.pending.append(event.text)
            case ToolCallStarted():
                self.flush()
                if self.live:
                    self.writing = (event.name, 0, 0.0)
                    self._show_writing()
            case ToolCallArguments():
                if self.writing is not None:
                    name, size, shown = self.writing
                    self.writing = (name, size + len(event.text), shown)
                    if time.monotonic() - shown >= LIVE_REFRESH_S:
                        self._show_writing()
            case ToolCallFinished():
                summary = f"  {event.summary}" if event.summary else ""
                self.line(f"▶ {event.name}{summary}")
            case ToolCallSkipped():
                self.line(f"– {event.name}  {event.reason}")
            case ToolResult():
                if not event.ok:
                    first = event.content.strip().splitlines()[0] if event.content.strip() else "failed"
                    self.line(f"  ✗ {first[:200]}")
            case RetryEvent():
                self.line(f"… {event.message}")
            case Reasked():
                self.flush()
                self.line(f"↻ {event.note}")
            case Notice():
                self.line(f"ℹ {event.message}")
            case ReasoningDelta() | UsageEvent() | Answer() | ErrorEvent() | Done():
                pass  # reasoning is not printed; the answer and errors are printed at the end
            case _:
                assert_never(event)

    def _show_writing(self) -> None:
        assert self.writing is not None
        name, size, _ = self.writing
        self.writing = (name, size, time.monotonic())
        self.err.write(f"\r\x1b[K▶ {inert(name, keep_newlines=False)}  writing… {size:,} characters")
        self.err.flush()

    def end(self) -> None:
        """Clear a call's live line, so whatever is printed next starts a line of its own."""
        if self.writing is not None or self.waiting:
            self.writing, self.waiting = None, False
            self.err.write("\r\x1b[K")
            self.err.flush()

    def flush(self) -> None:
        text = "".join(self.pending).strip()
        self.pending.clear()
        if text:
            self.line(text)

    def line(self, text: str) -> None:
        if self.writing is not None:
            self.writing = None
            self.err.write("\r\x1b[K")
        self.err.write(inert(text) + "\n")
        self.err.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _is_scalar(result: QueryResult) -> bool:
    return result.row_count <= 1 and len(result.columns) <= 1


def _text_answer(answer: Answer, out: TextIO) -> None:
    parts: list[str] = []
    if answer.title and answer.kind != "chart":
        parts.append(answer.title)
    if answer.chart is not None:
        width = min(100, shutil.get_terminal_size((80, 24)).columns)
        parts.append(render_chart_text(answer.chart, width=width, height=20))
    elif answer.text:
        parts.append(answer.text)
    main = answer.main_result
    if main is not None and answer.chart is None and not _is_scalar(main):
        parts.append(format_table(main, max_rows=TEXT_ROWS))
    if answer.sql:
        sql = "\n\n".join(s.strip() for s in answer.sql)
        parts.append("SQL:\n" + "\n".join("  " + line if line.strip() else "" for line in sql.splitlines()))
    out.write(inert("\n\n".join(parts)) + "\n")
    out.flush()


def _data(result: QueryResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        "columns": result.columns,
        "rows": [[json_safe(v) for v in row] for row in result.rows(JSON_ROWS)],
        "row_count": result.row_count,
        "truncated": result.truncated,
    }


def _json_answer(
    question: str,
    answer: Answer | None,
    done: Done | None,
    *,
    error: str | None,
    conversation_id: str | None,
    out: TextIO,
) -> None:
    usage = done.usage if done is not None else None
    record: dict[str, Any] = {
        "question": question,
        "answer": answer.text if answer is not None else None,
        "verified": bool(answer is not None and answer.verified),
        "kind": answer.kind if answer is not None else None,
        "title": answer.title if answer is not None else None,
        "sql": answer.sql if answer is not None else [],
        "data": _data(answer.main_result) if answer is not None else None,
        "unverified_numbers": list(answer.unverified_numbers) if answer is not None else [],
        "tool_calls": done.tool_calls if done is not None else 0,
        "usage": {  # null when the server reported no usage: unknown, not zero
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        }
        if usage is not None
        else None,
        "conversation_id": conversation_id,
        **provenance_json(answer),
    }
    if answer is not None and answer.chart is not None:
        spec = answer.chart
        record["chart"] = {"kind": spec.kind, "x": spec.x, "y": list(spec.y), "title": spec.title}
    if error is not None:
        record["error"] = error
    out.write(json_inert(json.dumps(record, ensure_ascii=False, default=str)) + "\n")
    out.flush()


def json_failure(question: str, message: str, out: TextIO) -> None:
    """The one JSON object of `astro ask --json` when the question could not even be asked
    (a bad setting, no model, data that would not open): the answer fields empty, `error` set."""
    first = message.strip().splitlines()[0] if message.strip() else message
    _json_answer(question, None, None, error=first, conversation_id=None, out=out)


async def run_ask(question: str, session: Session, *, json_output: bool, out: TextIO, err: TextIO) -> int:
    """One headless turn on SESSION, which is closed at the end (its model client lives on
    this event loop); returns the exit code (0 answered, 1 failed, 2 configuration)."""

    def fail(message: str, code: int, *, done: Done | None = None, conversation_id: str | None = None) -> int:
        err.write(inert(message).rstrip("\n") + "\n")
        err.flush()
        if json_output:
            first = message.strip().splitlines()[0].removeprefix("astro: ") if message.strip() else message
            _json_answer(question, None, done, error=first, conversation_id=conversation_id, out=out)
        return code

    if not session.settings.model_configured:
        return fail(model_not_configured_message(), 2)
    progress = _Progress(err)
    progress.wait(session.settings.model or "the model")
    try:
        reply = await session.turn(question, progress.event)
    except AstroError as exc:
        return fail(f"astro: {exc}", 1)
    finally:
        progress.end()
        await session.aclose()

    answer, done = reply.answer, reply.done
    if answer is None:
        first = reply.failure()
        code = 2 if first.kind in CONFIG_ERROR_KINDS else 1
        kept = reply.conversation_id  # a question that came to nothing is not saved (agent/loop.py)
        if kept is not None and not conversation_path(session.state_dir, kept).is_file():
            kept = None
        return fail(f"astro: {first.message}", code, done=done, conversation_id=kept)
    if json_output:
        _json_answer(question, answer, done, error=None, conversation_id=reply.conversation_id, out=out)
    else:
        _text_answer(answer, out)
    if not answer.verified and answer.kind == "unverified":
        progress.line("(unverified: the model answered in its own words; no query produced this text)")
    elif answer.unverified_numbers:
        numbers = ", ".join(answer.unverified_numbers)
        progress.line(f"(unverified: typed into the answer by the model, not from the data: {numbers})")
    return 0

"""`astro eval`: answer a set of questions with the configured model and score them against gold SQL.

Each question runs as one fresh turn of the same agent `astro ask` uses, in an
isolated session (`Session.isolated`): every question starts from the person's
notes and nothing an evaluation does is written to their notes or conversation
list. A question is correct when a verified answer (one
that came through an output tool) holds an input whose result matches the gold
SQL's result on the same database (`result_match` has the rules).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from astro_tui.data.errors import DataError
from astro_tui.errors import AstroError
from astro_tui.headless.ask import CONFIG_ERROR_KINDS
from astro_tui.headless.result_match import gold_is_ordered, results_match
from astro_tui.resources import resource_dir
from astro_tui.session import Session

GOLD_KEYS = ("sql", "query", "SQL")
"""Keys that may hold the gold SQL: ours, Spider's and BIRD's."""

Status = Literal["correct", "wrong", "unverified", "no answer", "gold failed"]


class EvalInputError(AstroError):
    """The question file cannot be used; the message is one line naming the file and line."""


class EvalAborted(AstroError):
    """The model server cannot be used at all (no key, unknown model, unreachable): asking the
    remaining questions would only repeat the failure. `code` is the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    id: str
    question: str
    gold_sql: str
    db: str | None = None
    line: int = 0


@dataclass(slots=True)
class QuestionReport:
    """One question's outcome; `status` is the single word the table shows."""

    id: str
    question: str
    status: Status
    correct: bool = False
    verified: bool = False
    tool_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    seconds: float = 0.0
    answer_sql: list[str] = field(default_factory=list)
    matched: str | None = None
    error: str | None = None
    db: str | None = None


@dataclass(slots=True)
class EvalSummary:
    reports: list[QuestionReport]
    model: str | None = None
    database: str | None = None

    @property
    def scored(self) -> list[QuestionReport]:
        """Questions whose gold ran: the denominator of every rate."""
        return [r for r in self.reports if r.status != "gold failed"]

    @property
    def gold_failed(self) -> int:
        return len(self.reports) - len(self.scored)

    def count(self, flag: Literal["correct", "verified"]) -> int:
        return sum(bool(getattr(r, flag)) for r in self.scored)

    def _rate(self, flag: Literal["correct", "verified"]) -> float:
        scored = len(self.scored)
        return 100.0 * self.count(flag) / scored if scored else 0.0

    @property
    def accuracy(self) -> float:
        return self._rate("correct")

    @property
    def verified_rate(self) -> float:
        return self._rate("verified")

    def mean(self, attr: Literal["tool_calls", "tokens", "seconds"]) -> float:
        """Per scored question: a failed gold costs no model call, so it would only dilute the mean."""
        scored = self.scored
        return sum(getattr(r, attr) for r in scored) / len(scored) if scored else 0.0

    def as_dict(self) -> dict[str, object]:
        scored = self.scored
        return {
            "model": self.model,
            "database": self.database,
            "questions": len(self.reports),
            "scored": len(scored),
            "correct": self.count("correct"),
            "verified": self.count("verified"),
            "gold_failed": self.gold_failed,
            "accuracy": round(self.accuracy, 2),
            "verified_rate": round(self.verified_rate, 2),
            "mean_tool_calls": round(self.mean("tool_calls"), 2),
            "total_tokens": sum(r.tokens for r in scored),
            "mean_tokens": round(self.mean("tokens"), 1),
            "total_seconds": round(sum(r.seconds for r in self.reports), 3),
            "mean_seconds": round(self.mean("seconds"), 3),
            "results": [asdict(r) | {"seconds": round(r.seconds, 3)} for r in self.reports],
        }


def default_questions_path() -> Path:
    """The question set shipped for the sample warehouse."""
    return resource_dir("warehouse") / "questions.jsonl"


def load_questions(path: Path) -> list[EvalQuestion]:
    """Parse a JSON Lines file; the first problem raises EvalInputError with one clear line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalInputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    questions: list[EvalQuestion] = []
    seen: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):  # a text may hold U+2028: not a line end
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvalInputError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise EvalInputError(f"{where}: not a JSON object")
        question = record.get("question")
        gold = next((record[k] for k in GOLD_KEYS if isinstance(record.get(k), str)), None)
        if not isinstance(question, str) or not question.strip():
            raise EvalInputError(f'{where}: no "question"')
        if gold is None or not gold.strip():
            raise EvalInputError(f'{where}: no gold SQL ("sql", "query" or "SQL")')
        qid = str(record.get("id", record.get("question_id", len(questions) + 1)))
        if qid in seen:
            raise EvalInputError(f'{where}: id "{qid}" is used twice')
        seen.add(qid)
        db = record.get("db", record.get("db_id"))
        questions.append(EvalQuestion(qid, question.strip(), gold, str(db) if db else None, number))
    if not questions:
        raise EvalInputError(f"{path}: no questions")
    return questions


async def evaluate_question(question: EvalQuestion, session: Session) -> QuestionReport:
    """Gold first (a failing gold costs no tokens), then one fresh agent turn, then the comparison."""
    report = QuestionReport(question.id, question.question, "no answer", db=question.db)
    db = session.database()
    try:
        gold = await asyncio.to_thread(db.execute, question.gold_sql)
    except DataError as exc:
        report.status, report.error = "gold failed", " ".join(str(exc).split())
        return report
    if gold.truncated:
        report.status = "gold failed"
        report.error = f"the gold result has more than {gold.row_count:,} rows (raise --max-rows)"
        return report
    ordered = gold_is_ordered(question.gold_sql, db.dialect.name)
    async with session.isolated() as trial:
        started = time.perf_counter()
        reply = await trial.turn(question.question)
        report.seconds = time.perf_counter() - started
    report.tool_calls, report.tokens = reply.tool_calls, reply.tokens
    usage = reply.done.usage if reply.done is not None else None
    report.prompt_tokens = usage.prompt_tokens if usage is not None else 0
    answer = reply.answer
    if answer is None:
        failure = reply.failure()
        if failure.kind in CONFIG_ERROR_KINDS:
            raise EvalAborted(failure.message, 2)
        if failure.kind == "connection":
            raise EvalAborted(failure.message, 1)
        report.error = failure.message
        return report
    report.answer_sql = answer.sql
    report.verified = answer.verified
    if not answer.verified:
        report.status = "unverified"
        return report
    for table in answer.tables:
        if results_match(gold, table.result, ordered=ordered):
            report.correct, report.matched = True, table.name
            break
    report.status = "correct" if report.correct else "wrong"
    return report


async def evaluate(
    questions: list[EvalQuestion],
    session: Session,
    *,
    on_start: Callable[[int, EvalQuestion], None] | None = None,
    on_report: Callable[[int, QuestionReport], None] | None = None,
) -> EvalSummary:
    """Every question in order, one at a time (a model server rarely gains from more). Each
    starts from the notes in the session's state directory and leaves them as they were."""
    summary = EvalSummary([], model=session.model, database=session.label)
    for index, question in enumerate(questions):
        if on_start is not None:
            on_start(index, question)
        report = await evaluate_question(question, session)
        summary.reports.append(report)
        if on_report is not None:
            on_report(index, report)
    return summary

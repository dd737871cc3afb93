"""`astro eval` end to end: the shipped question set on the sample warehouse, the scripted model
server replaying (or botching) the gold SQL through the real tools, and the comparison rules."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from astro_tui.data.database import Database
from astro_tui.headless.eval_report import EvalProgress
from astro_tui.headless.evaluation import (
    EvalInputError,
    EvalQuestion,
    EvalSummary,
    QuestionReport,
    default_questions_path,
    evaluate,
    load_questions,
)
from astro_tui.headless.result_match import gold_is_ordered, rows_equal
from astro_tui.llm import ChatClient
from astro_tui.session import Session
from tests.support import ROOT
from tests.support.fake_openai import FakeOpenAI, Reply, error, text_reply, tool_call_reply

BY_STATUS = "SELECT status, count(*) AS orders FROM sales.orders GROUP BY status"
BY_STATUS_ORDERED = BY_STATUS + " ORDER BY orders DESC"
REGIONS = "SELECT count(*) AS regions FROM sales.regions"

# the child processes find the sample already built in the session's cache, so stderr holds only eval's lines
pytestmark = pytest.mark.usefixtures("sample_path")


class Run(NamedTuple):
    exit_code: int
    stdout: str
    stderr: str


def replay(sql: str, *, answer_sql: str | None = None) -> list[Reply]:
    """A model that explores with `sql`, then answers through submit_result with `answer_sql`."""
    final = sql if answer_sql is None else answer_sql
    return [
        tool_call_reply([("run_sql", {"sql": sql})]),
        tool_call_reply(
            [("submit_result", {"inputs": {"answer": final}, "template": "{{ answer.row_count }} rows"})]
        ),
    ]


async def _evaluate(
    questions: list[EvalQuestion], db: Database, fake: FakeOpenAI, *, notes_from: Path | None = None
) -> EvalSummary:
    """`evaluate` on a session over `db` with a client of its own, closed after; the person's
    notes are in `notes_from` (none when not given)."""
    client = ChatClient(fake.settings())
    try:
        with tempfile.TemporaryDirectory() as empty:
            state = notes_from or Path(empty)
            return await evaluate(
                questions, Session.over(db, fake.settings(), state_dir=state, client=client)
            )
    finally:
        await client.aclose()


def write_questions(path: Path, *records: dict[str, Any] | str) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cli(args: list[str], fake: FakeOpenAI | None, monkeypatch: pytest.MonkeyPatch) -> Run:
    """The real command in a child process, as a user runs it: DuckDB refuses to open the sample
    a second time in this process, where the session fixture holds it open."""
    if fake is not None:
        monkeypatch.setenv("ASTRO_MODEL", fake.model)
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    done = subprocess.run(
        [sys.executable, "-m", "astro_tui.cli", "eval", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


# --------------------------------------------------------------------------- the shipped set


def test_shipped_questions_run_on_the_sample(sample_db: Database) -> None:
    questions = load_questions(default_questions_path())
    assert len(questions) >= 30
    assert len({q.id for q in questions}) == len(questions)
    for q in questions:
        result = sample_db.execute(q.gold_sql)
        assert result.row_count >= 1, q.id
        assert not result.truncated, q.id


def test_shipped_top_n_questions_have_no_tie_at_the_cut(sample_db: Database) -> None:
    """`ORDER BY … LIMIT n` is only a fair gold when row n+1 sorts strictly after row n;
    otherwise a correct answer could pick the other tied row."""
    import sqlglot
    from sqlglot import exp

    checked = 0
    for q in load_questions(default_questions_path()):
        tree = sqlglot.parse_one(q.gold_sql, read="duckdb")
        limit, order = tree.args.get("limit"), tree.args.get("order")
        if limit is None or order is None:
            continue
        n = int(limit.expression.name)
        k = len(order.expressions)
        keys = tree.copy()  # the order keys appended to the select list, where aliases resolve
        keys.set("expressions", [*keys.expressions, *(o.this.copy() for o in order.expressions)])
        keys.set("limit", exp.Limit(expression=exp.Literal.number(n + 1)))
        rows = [row[-k:] for row in sample_db.execute(keys.sql(dialect="duckdb")).rows()]
        if len(rows) > n:
            assert rows[n - 1] != rows[n], q.id
        checked += 1
    assert checked >= 5


def test_shipped_set_ships_in_the_wheel() -> None:
    """The wheel maps `warehouse/` into the package; the question file must live there."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shipped = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped["warehouse"] == "astro_tui/_resources/warehouse"
    assert default_questions_path().parent.name == "warehouse"


def test_no_arguments_replays_the_shipped_set_at_100_percent(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = load_questions(default_questions_path())
    for q in questions:
        fake_openai.script(*replay(q.gold_sql))
    result = run_cli(["--json"], fake_openai, monkeypatch)
    assert result.exit_code == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["questions"] == len(questions) == record["scored"]
    assert record["accuracy"] == 100.0 and record["verified_rate"] == 100.0
    assert record["correct"] == len(questions) and record["gold_failed"] == 0
    assert record["mean_tool_calls"] == 2.0
    assert all(r["status"] == "correct" and r["matched"] == "answer" for r in record["results"])
    assert all(r["tokens"] > 0 and r["seconds"] > 0 for r in record["results"])
    # progress: one line per question on stderr (not a terminal), the last one numbered N/N
    assert result.stderr.count("\n") == len(questions)
    assert f"[{len(questions)}/{len(questions)}] ✓ correct" in result.stderr
    fake_openai.assert_script_consumed()


# --------------------------------------------------------------------------- failures count


async def test_wrong_and_plain_text_answers_are_failures(
    sample_db: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    questions = [
        EvalQuestion("right", "orders by status?", BY_STATUS),
        EvalQuestion("wrong_sql", "orders by status?", BY_STATUS),
        EvalQuestion("wrong_order", "orders by status, most first?", BY_STATUS_ORDERED),
        EvalQuestion("clarify", "how many regions?", REGIONS),
        EvalQuestion("plain_text", "how many regions?", REGIONS),
    ]
    # the right rows with the columns swapped and in another order still count
    fake_openai.script(*replay(BY_STATUS, answer_sql="SELECT count(*), status FROM sales.orders GROUP BY 2"))
    fake_openai.script(
        *replay(BY_STATUS, answer_sql="SELECT status, count(*) FROM sales.orders GROUP BY 1 LIMIT 4")
    )
    fake_openai.script(*replay(BY_STATUS, answer_sql=BY_STATUS_ORDERED.replace("DESC", "ASC")))
    fake_openai.script(tool_call_reply([("send_message", {"message": "Which regions do you mean?"})]))
    # a plain-text answer (twice, in case the agent asks once more for an output tool)
    fake_openai.script(text_reply("There are 9 regions."), text_reply("There are 9 regions."))
    summary = await _evaluate(questions, sample_db, fake_openai)
    by_id = {r.id: r for r in summary.reports}
    assert by_id["right"].status == "correct" and by_id["right"].verified
    assert by_id["wrong_sql"].status == "wrong" and by_id["wrong_sql"].verified
    assert not by_id["wrong_sql"].correct
    assert by_id["wrong_order"].status == "wrong"
    for qid in ("clarify", "plain_text"):
        assert by_id[qid].status == "unverified", qid
        assert not by_id[qid].verified and not by_id[qid].correct
    assert by_id["plain_text"].answer_sql == []
    assert summary.accuracy == pytest.approx(20.0)
    assert summary.verified_rate == pytest.approx(60.0)


async def test_gold_that_fails_is_reported_and_costs_no_model_call(
    sample_db: Database, fake_openai: FakeOpenAI
) -> None:
    questions = [
        EvalQuestion("broken", "?", "SELECT nope FROM sales.nowhere"),
        EvalQuestion("fine", "how many regions?", REGIONS),
    ]
    fake_openai.script(*replay(REGIONS))
    summary = await _evaluate(questions, sample_db, fake_openai)
    broken, fine = summary.reports
    assert broken.status == "gold failed" and broken.error and "nowhere" in broken.error
    assert fine.status == "correct"
    assert len(fake_openai.chat_requests) == 2
    assert summary.gold_failed == 1 and summary.accuracy == 100.0


# --------------------------------------------------------------------------- the command


def test_table_output_and_exit_code_when_gold_fails(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_questions(
        tmp_path / "q.jsonl",
        {"id": "regions", "question": "How many regions?", "query": REGIONS},
        {"question": "Broken gold", "SQL": "SELECT * FROM sales.nowhere"},
    )
    fake_openai.script(*replay(REGIONS))
    result = run_cli([str(path)], fake_openai, monkeypatch)
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["id", "result", "verified", "calls", "tokens", "seconds", "question"]
    assert lines[2].split()[:5] == ["regions", "✓", "correct", "yes", "2"]
    assert lines[3].split()[:4] == ["2", "-", "gold", "failed"]
    assert lines[-1].startswith("accuracy 1/1 (100.0%) · verified 1/1 (100.0%)")
    assert "1 gold failed" in lines[-1]
    assert any(line.startswith("2: gold failed: ") and "nowhere" in line for line in lines)


def test_json_shape(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write_questions(
        tmp_path / "q.jsonl",
        {"id": 7, "question": "How many regions?", "sql": REGIONS, "db": "shop"},
        {"question": "Orders by status?", "sql": BY_STATUS},
    )
    fake_openai.script(*replay(REGIONS), text_reply("Lots."), text_reply("Lots."))
    result = run_cli([str(path), "--json"], fake_openai, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("\n") == 1
    record = json.loads(result.stdout)
    assert set(record) == {
        "model",
        "database",
        "questions",
        "scored",
        "correct",
        "verified",
        "gold_failed",
        "accuracy",
        "verified_rate",
        "mean_tool_calls",
        "total_tokens",
        "mean_tokens",
        "total_seconds",
        "mean_seconds",
        "results",
    }
    assert record["model"] == fake_openai.model
    assert (record["questions"], record["correct"], record["verified"]) == (2, 1, 1)
    assert record["accuracy"] == 50.0 and record["verified_rate"] == 50.0
    first, second = record["results"]
    assert set(first) == {
        "id",
        "question",
        "status",
        "correct",
        "verified",
        "tool_calls",
        "tokens",
        "prompt_tokens",
        "seconds",
        "answer_sql",
        "matched",
        "error",
        "db",
    }
    assert first["id"] == "7" and first["db"] == "shop" and first["answer_sql"] == [REGIONS]
    assert first["tool_calls"] == 2 and first["tokens"] > first["prompt_tokens"] > 0
    assert second["id"] == "2" and second["status"] == "unverified" and second["correct"] is False


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ('{"question": "q", "sql": "SELECT 1"}\nnot json\n', "q.jsonl line 2: not JSON"),
        ('{"question": "q", "sql": "SELECT 1"}\n\n{"sql": "SELECT 1"}\n', 'q.jsonl line 3: no "question"'),
        ('{"question": "q"}\n', "q.jsonl line 1: no gold SQL"),
        ('["question", "sql"]\n', "q.jsonl line 1: not a JSON object"),
        (
            '{"id": 1, "question": "q", "sql": "SELECT 1"}\n{"id": 1, "question": "r", "sql": "SELECT 2"}\n',
            "used twice",
        ),
        ("\n\n", "no questions"),
    ],
)
def test_bad_input_is_one_clear_line(
    content: str | None,
    message: str,
    fake_openai: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    path = tmp_path / "q.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = run_cli([str(path)], fake_openai, monkeypatch)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("astro: ")
    assert message in result.stderr
    assert fake_openai.chat_requests == []
    with pytest.raises(EvalInputError):
        load_questions(path)


def test_no_model_configured_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_questions(tmp_path / "q.jsonl", {"question": "q", "sql": REGIONS})
    result = run_cli([str(path)], None, monkeypatch)
    assert result.exit_code == 2 and "ASTRO_MODEL" in result.stderr


# --------------------------------------------------------------------------- the comparison


def test_order_matters_only_when_the_gold_orders() -> None:
    assert gold_is_ordered("SELECT a FROM t ORDER BY a")
    assert gold_is_ordered("(SELECT a FROM t ORDER BY a)")
    assert gold_is_ordered("SELECT a FROM t UNION ALL SELECT b FROM u ORDER BY 1")
    assert not gold_is_ordered("SELECT a FROM (SELECT a FROM t ORDER BY a) s")
    assert not gold_is_ordered("SELECT a, row_number() OVER (ORDER BY a) FROM t")
    assert not gold_is_ordered("WITH s AS (SELECT a FROM t ORDER BY a) SELECT a FROM s")
    assert gold_is_ordered("WITH s AS (SELECT a FROM t) SELECT a FROM s ORDER BY a")
    rows = [("a", 1), ("b", 2)]
    assert rows_equal(rows, rows[::-1], ordered=False)
    assert not rows_equal(rows, rows[::-1], ordered=True)
    assert not rows_equal(rows, [("a", 1), ("a", 1)], ordered=False)  # a multiset, not a set
    assert not rows_equal(rows, rows[:1], ordered=False)


def test_columns_names_and_number_types() -> None:
    assert rows_equal([("x", Decimal("1.50"), 2)], [(2, 1.5, "x")], ordered=True)
    assert not rows_equal([("x", 1)], [("x", 1, 1)], ordered=True)
    assert rows_equal([(1 / 3,)], [(0.3333334,)], ordered=True)  # relative 1e-6
    assert not rows_equal([(1 / 3,)], [(0.3334,)], ordered=True)
    assert rows_equal([(0.448550046,)], [(0.45,)], ordered=True)  # rounded by the model
    assert rows_equal([(Decimal("354.38"),)], [(354.38411217761455,)], ordered=True)
    assert not rows_equal([(10.5,)], [(10.46,)], ordered=True)  # both exact: no rounding excuse
    assert not rows_equal([(354,)], [(354.38411217761455,)], ordered=True)  # no rounding to integers
    assert rows_equal([(None, "a")], [("a", None)], ordered=True)
    assert not rows_equal([(None,)], [(0,)], ordered=True)
    assert not rows_equal([("1",)], [(1,)], ordered=True)
    assert not rows_equal([(True,)], [(1,)], ordered=True)


def test_dates_match_their_text() -> None:
    import datetime as dt

    assert rows_equal([(dt.date(2025, 6, 30),)], [("2025-06-30",)], ordered=True)
    assert rows_equal([(dt.datetime(2026, 1, 1, 2, 45, 38),)], [("2026-01-01 02:45:38",)], ordered=True)


def test_rows_that_sort_apart_after_rounding_still_pair_up() -> None:
    gold = [("a", 0.124912), ("b", 0.123456)]
    answer = [("b", 0.12), ("a", 0.12)]
    assert rows_equal(gold, answer, ordered=False)


async def test_a_server_error_fails_one_question_and_the_run_goes_on(
    sample_db: Database, fake_openai: FakeOpenAI
) -> None:
    questions = [EvalQuestion("first", "?", REGIONS), EvalQuestion("second", "?", REGIONS)]
    fake_openai.script(error(500, "overloaded"), *replay(REGIONS))
    summary = await _evaluate(questions, sample_db, fake_openai)
    first, second = summary.reports
    assert first.status == "no answer" and first.error and "overloaded" in first.error
    assert second.status == "correct"
    assert summary.accuracy == 50.0


def test_an_unreachable_server_stops_the_run_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FakeOpenAI() as gone:
        base_url = gone.base_url
    monkeypatch.setenv("ASTRO_MODEL", gone.model)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    path = write_questions(
        tmp_path / "q.jsonl", {"question": "q", "sql": REGIONS}, {"question": "r", "sql": REGIONS}
    )
    result = run_cli([str(path)], None, monkeypatch)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("astro: ")


def test_progress_on_a_terminal_redraws_one_line() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    progress = EvalProgress(err, 2)
    question = EvalQuestion("q1", "How many regions?", REGIONS)
    progress.start(0, question)
    progress.report(0, QuestionReport("q1", "How many regions?", "correct", correct=True))
    progress.start(1, question)
    progress.report(1, QuestionReport("q2", "?", "wrong"))
    text = err.getvalue()
    assert "\n" not in text
    assert text.count("\r\x1b[K") == 5
    assert "0/2  q1  How many regions?" in text
    assert "1/2  100% correct  ✓ q1" in text
    assert "2/2  50% correct  ✗ q2" in text
    assert text.endswith("\r\x1b[K")


async def test_questions_see_the_persons_notes_but_never_change_them(
    sample_db: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from astro_tui.agent.context_notes import notes_path

    theirs = notes_path(tmp_path, sample_db.key)
    theirs.parent.mkdir(parents=True)
    theirs.write_text("# Notes\n- Regions are called markets here.\n", encoding="utf-8")
    questions = [EvalQuestion("a", "how many regions?", REGIONS), EvalQuestion("b", "and now?", REGIONS)]
    fake_openai.script(
        tool_call_reply([("update_context", {"note": "The first question wrote this."})]),
        *replay(REGIONS),
        *replay(REGIONS),
    )
    summary = await _evaluate(questions, sample_db, fake_openai, notes_from=tmp_path)
    assert [r.status for r in summary.reports] == ["correct", "correct"]
    assert theirs.read_text(encoding="utf-8") == "# Notes\n- Regions are called markets here.\n"
    systems = [r.body["messages"][0]["content"] for r in fake_openai.chat_requests]
    assert all("Regions are called markets here." in s for s in systems)
    assert "The first question wrote this." not in systems[-1]  # b starts from the same notes as a

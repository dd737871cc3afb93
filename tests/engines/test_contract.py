"""What every server engine promises, written once and run on each (`engine`, tests/engines/conftest.py):
the row cap's probe row and the whole agent path with the scripted model server, its answer equal
to the server's own count and its secret in nothing sent or saved."""

from __future__ import annotations

import io
from pathlib import Path

from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.engines.conftest import Engine
from tests.support.fake_openai import FakeOpenAI, tool_call_reply


def test_row_cap_reads_one_probe_row(engine: Engine) -> None:
    capped = engine.db.execute("SELECT id FROM sales.orders ORDER BY id", row_cap=10)
    assert capped.row_count == 10 and capped.truncated
    assert [r[0] for r in capped.rows()] == list(range(1, 11))
    exact = engine.db.execute("SELECT id FROM sales.orders ORDER BY id LIMIT 10", row_cap=10)
    assert exact.row_count == 10 and not exact.truncated


# the agent ----------------------------------------------------------------------------------------

REFUNDED = "SELECT count(*) AS n FROM sales.orders WHERE status = 'refunded'"


async def test_agent_answer_equals_the_engines_own_count(
    engine: Engine, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": "-- refunded orders\n" + REFUNDED})]),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {
                        "inputs": {"refunded": REFUNDED},
                        "template": "{{ refunded.value }} orders were refunded.",
                        "title": "Refunds",
                    },
                )
            ]
        ),
    )
    out, err = io.StringIO(), io.StringIO()
    state = tmp_path / "state"
    code = await run_ask(
        "how many refunded orders?",
        Session.over(engine.db, fake_openai.settings(), state_dir=state),
        json_output=False,
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    ((counted,),) = engine.truth("SELECT count(*) FROM sales.orders WHERE status = 'refunded'")
    truth = int(counted)
    assert truth == 500
    assert f"{truth} orders were refunded." in out.getvalue()
    sent = b"".join(r.raw for r in fake_openai.requests)
    assert engine.dialect.encode() in sent
    assert engine.secret.encode() not in sent
    saved = b"".join(p.read_bytes() for p in state.rglob("*") if p.is_file())
    assert saved and engine.secret.encode() not in saved

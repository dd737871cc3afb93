"""Issue 34 on each server engine (`engine`, tests/engines/conftest.py): what `astro replay` writes
holds only statements the engine's own guard judged, and connects to the data judged. A saved
conversation is hostile; a statement no guard would run is refused in one line, no file written."""

from __future__ import annotations

from pathlib import Path

import pytest

from astro_tui.agent.provenance import Source, Span
from astro_tui.config import Settings
from astro_tui.replay.model import Quoted, Replay, ReplayAnswer, ReplayError
from astro_tui.session import Session
from tests.engines.conftest import Engine

COUNT = "SELECT count(*) AS n FROM sales.orders WHERE status = 'refunded'"
HOSTILE = {
    "postgres": [
        "COPY (SELECT 1 AS n) TO PROGRAM 'touch /tmp/astro-pwned'",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SELECT count(*) AS n FROM sales.orders; DROP TABLE sales.orders",
        "SELECT pg_terminate_backend(1) AS n",
    ],
    "spark": [
        "DROP TABLE sales.orders",
        "SELECT count(*) AS n FROM sales.orders; DROP TABLE sales.orders",
        "CREATE TABLE astro_pwned AS SELECT 1 AS n",
    ],
}


def _replay(client: dict | None, sql: str, value: int) -> Replay:
    source = Source(input="count", sql=sql, row=0, column="n", value=value)
    span = Span(10, 10 + len(str(value)), str(value), value, False, (source,))
    quoted = Quoted("A1 orders", str(value), value, False, (source,), 0)
    text = f"There are {value} orders."
    answer = ReplayAnswer(1, "q", "orders", "result", text, True, {"count": sql}, None, (span,), (quoted,))
    return Replay("c-x", Path("c.jsonl"), "", "orders", client, (answer,))


@pytest.mark.parametrize("fmt", ["sql", "ipynb", "marimo"])
def test_a_saved_query_the_guard_refuses_is_never_written(engine: Engine, tmp_path: Path, fmt: str) -> None:
    session = Session.over(engine.db, Settings(), state_dir=tmp_path)
    out = tmp_path / f"r.{fmt}"
    for sql in HOSTILE[engine.name]:
        with pytest.raises(ReplayError) as refused:
            session.write_replay(_replay(engine.db.client_info, sql, 1), fmt, out)
        message = str(refused.value)
        assert "\n" not in message and "the guard refuses" in message and "nothing written" in message, sql
        assert not out.exists(), sql
    (count,) = engine.truth(COUNT)[0]
    written = session.write_replay(_replay(engine.db.client_info, COUNT, int(count)), fmt, out)
    assert "refunded" in written.read_text(encoding="utf-8")


def test_the_file_connects_to_the_data_judged_never_the_host_it_names(
    engine: Engine, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A conversation naming an attacker's host (where libpq would send PGPASSWORD) is judged and
    written against the data the person names, and the file connects there only."""
    session = Session.over(engine.db, Settings(), state_dir=tmp_path)
    scheme = "postgresql" if engine.name == "postgres" else "spark"
    url = "postgresql://attacker.example/db" if engine.name == "postgres" else "sc://attacker.example:15002"
    (count,) = engine.truth(COUNT)[0]
    replay = _replay({"engine": scheme, "url": url}, COUNT, int(count))
    own = engine.db.client_info
    assert own is not None
    server = request.getfixturevalue("pg_server" if engine.name == "postgres" else "spark_server")
    target = server.url() if engine.name == "postgres" else server.url  # with its secret, never written
    for fmt in ("sql", "ipynb"):
        written = session.write_replay(replay, fmt, tmp_path / f"r.{fmt}", targets=[target])
        text = written.read_text(encoding="utf-8")
        assert "attacker" not in text and own["url"] in text and engine.secret not in text

"""The API key goes in the Authorization header and nowhere else.

Not in the prompt or any request body, not in a saved conversation or the context
notes, not in anything printed (answers, progress, error messages, even when the
server echoes the key back in its error body or mid-stream), not in `astro config`'s
listing; and the config file that may hold it is written with mode 0600.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from astro_tui.config import Settings, config_path
from astro_tui.data.database import Database
from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.support.fake_openai import FakeOpenAI, tool_call_reply
from tests.support.security_figures import ECHOES, KEY, MASKED, dead_url
from tests.support.sql_corpus import build_watched


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    db = Database.open([str(build_watched(tmp_path_factory.mktemp("secrets")))], Settings())
    yield db
    db.close()


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def assert_nowhere(secret: str, texts: list[str], roots: list[Path]) -> None:
    for text in texts:
        assert secret not in text
    for path in files_under(*roots):
        assert secret.encode() not in path.read_bytes(), path


async def ask(
    db: Database, settings: Settings, state: Path, *, json_output: bool = False
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    session = Session.over(db, settings, state_dir=state)
    code = await run_ask("q", session, json_output=json_output, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


async def test_a_full_turn_sends_the_key_only_as_a_header(
    shop: Database, fake_openai: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    state = tmp_path / "state"
    fake_openai.script(
        tool_call_reply([("run_sql", {"sql": "SELECT count(*) AS n FROM sales.orders"})]),
        tool_call_reply([("update_context", {"note": "orders has 100 rows"})]),
        tool_call_reply(
            [
                (
                    "submit_result",
                    {"inputs": {"n": "SELECT count(*) FROM sales.orders"}, "template": "{{ n.value }}"},
                )
            ]
        ),
    )
    code, out, err = await ask(shop, fake_openai.settings(api_key=KEY), state)
    assert code == 0 and out.startswith("100")
    assert len(fake_openai.chat_requests) == 3
    for request in fake_openai.requests:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert KEY.encode() not in request.raw, "the key is in a request body (the prompt?)"
        assert not any(KEY in value for name, value in request.headers.items() if name != "authorization")
    assert_nowhere(KEY, [out, err], [state, tmp_path / "config"])
    assert files_under(state / "conversations") and files_under(state / "context")


@pytest.mark.parametrize("echo", list(ECHOES), ids=list(ECHOES))
async def test_a_key_echoed_by_the_server_is_not_repeated(
    echo: str, shop: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    for json_output in (False, True):
        fake_openai.script(*ECHOES[echo])
        code, out, err = await ask(shop, fake_openai.settings(api_key=KEY), state, json_output=json_output)
        assert code in (1, 2) and err.startswith("astro: ")
        if json_output:
            assert json.loads(out)["error"]
        assert_nowhere(KEY, [out, err], [state])
        assert MASKED not in err and "3210" not in err.replace(str(fake_openai.port), "")


async def test_connection_errors_do_not_show_credentials_in_the_url(shop: Database, tmp_path: Path) -> None:
    """Some proxies take the key as URL credentials; the message shows the URL without them."""
    url = dead_url().replace("http://", f"http://user:{KEY}@")
    code, out, err = await ask(shop, Settings(model="m", base_url=url, api_key=KEY, max_retries=0), tmp_path)
    assert code == 1 and "cannot reach the model server" in err
    assert KEY not in err and "user:" not in err and out == ""


def test_config_file_is_private_and_the_key_is_not_listed() -> None:
    runner = CliRunner()
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('model = "m"\n')
    os.chmod(path, 0o644)  # a file the person created by hand, readable by others
    result = runner.invoke(main, ["config", "set", "api_key", KEY])
    assert result.exit_code == 0 and KEY not in result.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f'api_key = "{KEY}"' in path.read_text() and 'model = "m"' in path.read_text()
    result = runner.invoke(main, ["config", "set", "query_timeout_s", "12"])
    assert result.exit_code == 0 and stat.S_IMODE(path.stat().st_mode) == 0o600
    listing = runner.invoke(main, ["config"])
    assert listing.exit_code == 0 and KEY not in listing.output
    assert re.search(r"^api_key +\= \(set\) ", listing.output, re.M), listing.output
    leftovers = [p.name for p in path.parent.iterdir() if p.name != path.name]
    assert leftovers == []

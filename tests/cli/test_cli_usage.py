"""The command line as a newcomer types it: a mistyped command or option names the nearest one
(exit 2), `--json` is one JSON object whatever fails, and `astro ask` says what it waits for
and how it ended."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from astro_tui.cli import _DefaultGroup, main
from astro_tui.data.database import Database
from astro_tui.headless.ask import run_ask
from astro_tui.session import Session
from tests.cli.test_ask import _Terminal, warehouse
from tests.support.fake_openai import FakeOpenAI, stall, text_reply
from tests.support.waiting import HANG_GUARD_S, wait_for

__all__ = ["warehouse"]


def _usage(args: list[str]) -> str:
    done = CliRunner().invoke(main, args, prog_name="astro")
    assert done.exit_code == 2, done.output
    assert not done.stdout
    return done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sqll", "select 1"], "No such command 'sqll'. Did you mean 'sql'?"),
        (["shel", "ls"], "No such command 'shel'. Did you mean 'shell'?"),
        (["confg"], "No such command 'confg'. Did you mean 'config'?"),
        (["--foo"], "No such option '--foo'."),
        (["--hid", "x"], "No such option '--hid'. Did you mean '--hide'?"),
        (["sql", "--fromat", "csv", "select 1"], "No such option '--fromat'. Did you mean '--format'?"),
        (["sql", "select 1", "--max-row", "3"], "No such option '--max-row'. Did you mean '--max-rows'?"),
    ],
)
def test_a_mistyped_command_or_option_names_the_nearest(args: list[str], said: str) -> None:
    shown = _usage(args)
    assert shown.rstrip().endswith(f"Error: {said}"), shown
    assert "astro open" not in shown  # the app's hidden command is never named
    assert "Try 'astro" in shown


def test_a_word_that_names_a_file_stays_a_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a word that names nothing is taken for a mistyped command: a file called `sqll`,
    a connection, a URL, a path or a glob is a target."""
    monkeypatch.chdir(tmp_path)
    group = main
    assert isinstance(group, _DefaultGroup)
    ctx = click.Context(group, info_name="astro")
    with pytest.raises(click.UsageError):
        group._refuse_mistyped_command(ctx, "sqll")
    (tmp_path / "sqll").write_text("a,b\n1,2\n")
    for word in ("sqll", "@sql", "sqll.csv", "sc://sqll", "data/*.csv", "qwertyuiop"):
        group._refuse_mistyped_command(ctx, word)
    missing = CliRunner().invoke(main, ["sql", "select 1", "nosuch.csv"])
    assert missing.exit_code == 1 and missing.stderr == "astro: nosuch.csv: no such file\n"


def test_sql_that_starts_with_a_dash_is_still_sql() -> None:
    done = CliRunner().invoke(main, ["sql", "-- the count\nselect 42 AS n", "--format", "csv"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == ["n", "42"]


@pytest.mark.parametrize(
    ("args", "code", "error"),
    [
        (["ask", "q?", "--json"], 2, "no model is configured (run without --json to see how to set one)"),
        (["ask", "q?", "--json", "--max-rows", "0"], 2, "row_cap = '0' (flag --max-rows): expected"),
        (["ask", "q?", "--json", "--model", "m", "--base-url", "http://h:9/v1", "x.csv"], 1, "x.csv: no"),
        (["eval", "--json"], 2, "no model is configured"),
        (["replay", "--check", "--json"], 2, "no saved conversation"),
    ],
)  # fmt: skip
def test_json_is_one_object_whatever_fails(args: list[str], code: int, error: str) -> None:
    done = CliRunner().invoke(main, args)
    assert done.exit_code == code, done.output
    record = json.loads(done.stdout)  # exactly one JSON document
    assert record["error"].startswith(error), record
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("astro: ")
    if args[0] == "ask":
        assert record["question"] == "q?" and record["answer"] is None and record["conversation_id"] is None


async def test_ask_says_whom_it_waits_for_until_the_first_word(
    warehouse: Database, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(text_reply("Nothing to query."))
    out, err = io.StringIO(), _Terminal()
    session = Session.over(warehouse, fake_openai.settings(), state_dir=tmp_path)
    await run_ask("hello?", session, json_output=False, out=out, err=err)
    shown = err.getvalue()
    assert shown.startswith(f"… waiting for {fake_openai.settings().model}\r\x1b[K"), shown
    piped = io.StringIO()
    fake_openai.script(text_reply("Nothing to query."))
    session = Session.over(warehouse, fake_openai.settings(), state_dir=tmp_path)
    await run_ask("hello?", session, json_output=False, out=io.StringIO(), err=piped)
    assert "waiting" not in piped.getvalue() and "\r" not in piped.getvalue()


def test_ctrl_c_while_ask_waits_ends_with_a_line(fake_openai: FakeOpenAI, sample_path: Path) -> None:
    fake_openai.script(stall(seconds=HANG_GUARD_S))
    settings = fake_openai.settings()
    env = {**os.environ, "ASTRO_MODEL": settings.model or "", "OPENAI_BASE_URL": settings.base_url or ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "astro_tui.cli", "ask", "revenue?"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(
        lambda: proc.poll() is not None or fake_openai.chat_requests, what="the question reached the server"
    )
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "astro: interrupted" and out == ""

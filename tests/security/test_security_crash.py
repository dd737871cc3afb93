"""SIGKILL while a conversation or the context notes are being written loses nothing.

A child process rewrites the file in a loop through the product's own code
(`save_conversation`, `ContextNotes.append`), reporting each version number once its
write returned. The parent kills it with SIGKILL: half the time the instant the
temporary file appears (so the kill lands mid-write), half after a random pause.
Afterwards the file must be a complete version, the last one reported or the one
being written if its rename got through: never a mix, never partial, always parseable.

The first kill of each target is a fresh interpreter (`python -c`); the others are
forked from this process, which has the product already imported (a fresh interpreter
pays ~1 s of imports per kill). Either way it is a separate process killed outright.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from astro_tui.agent.context_notes import ContextNotes, notes_path
from astro_tui.agent.conversations import (
    conversations_dir,
    list_conversations,
    load_conversation,
    save_conversation,
)
from astro_tui.agent.history import Entry, Turn
from astro_tui.agent.registry import ToolError
from tests.support import ROOT
from tests.support.security_figures import KILLS_PER_TARGET, TARGETS

WINDOW = 4  # turns kept per conversation version, so every write is about the same size
BLOB = 250_000  # characters per answer: a ~1 MB file per write widens the window
NOTE = 100  # characters per note: ~400 appends before the notes file is full (50,000)
REPO = ROOT


def write_conversations(state: Path, report: IO[str]) -> None:
    """Version n holds turns n-3..n, each with a large answer; forever."""
    turns: list[Turn] = []
    for n in range(1, 1_000_000):
        turn = Turn(question=f"question {n}", status="answer")
        turn.entries.append(Entry({"role": "user", "content": f"question {n}"}))
        turn.entries.append(Entry({"role": "assistant", "content": f"{n}:" + "y" * BLOB}))
        turns = [*turns, turn][-WINDOW:]
        save_conversation(state, "crash", turns, db_key="k", db_label="k", model="m", created="c")
        report.write(f"{n}\n")
        report.flush()


def write_notes(state: Path, report: IO[str]) -> None:
    """Append numbered notes until the notes file is full."""
    notes = ContextNotes(state, "k")
    for n in range(1, 1_000_000):
        try:
            notes.append(f"note {n} " + "z" * NOTE)
        except ToolError:
            report.write("full\n")
            report.flush()
            return
        report.write(f"{n}\n")
        report.flush()


WRITERS: dict[str, Callable[[Path, IO[str]], None]] = {
    "conversation": write_conversations,
    "notes": write_notes,
}


def fresh_code(target: str) -> str:
    """The writer's own source, run by a new interpreter that imports only the product."""
    imports = {
        "conversation": "from astro_tui.agent.conversations import save_conversation\n"
        "from astro_tui.agent.history import Entry, Turn\n",
        "notes": "from astro_tui.agent.context_notes import ContextNotes\n"
        "from astro_tui.agent.registry import ToolError\n",
    }[target]
    writer = WRITERS[target]
    return (
        f"from __future__ import annotations\nimport sys\nfrom pathlib import Path\n{imports}"
        f"WINDOW, BLOB, NOTE = {WINDOW}, {BLOB}, {NOTE}\n"
        f"{inspect.getsource(writer)}\n{writer.__name__}(Path(sys.argv[1]), sys.stdout)\n"
    )


def target_path(target: str, state: Path) -> Path:
    return conversations_dir(state) / "crash.jsonl" if target == "conversation" else notes_path(state, "k")


def spawn(target: str, state: Path, *, fresh: bool) -> tuple[int, IO[str], Callable[[], int]]:
    """Start a writer; returns its pid, its report stream, and how to reap it (its wait status)."""
    if fresh:
        child = subprocess.Popen(
            [sys.executable, "-c", fresh_code(target), str(state)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
        )
        assert child.stdout is not None
        return child.pid, child.stdout, lambda: child.wait(timeout=10)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write until killed, and never return into pytest
        try:
            os.close(read_fd)
            WRITERS[target](state, os.fdopen(write_fd, "w"))
        finally:
            os._exit(0)
    os.close(write_fd)

    def reap() -> int:
        _, status = os.waitpid(pid, 0)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    return pid, os.fdopen(read_fd), reap


def kill_mid_write(
    target: str, state: Path, *, fresh: bool, at_temp_file: bool, rng: random.Random
) -> tuple[int, bool]:
    """Run a writer, SIGKILL it; return the last version it reported and whether it died mid-write."""
    path = target_path(target, state)
    pid, report, reap = spawn(target, state, fresh=fresh)
    temps = f".{path.name}.*.tmp"  # astro_tui.files.atomic_write_text's temp files
    wait_for = rng.randint(1, 3)
    try:
        for _ in range(wait_for):  # a few complete versions first
            line = report.readline().strip()
            assert line.isdigit(), f"the writer stopped early: {line!r}"
        if at_temp_file:
            deadline = time.monotonic() + 5
            while not any(path.parent.glob(temps)) and time.monotonic() < deadline:
                time.sleep(0.0002)
        else:
            time.sleep(rng.uniform(0, 0.02))
        os.kill(pid, signal.SIGKILL)
        status = reap()
        reported = [line.strip() for line in report.read().splitlines()]
    finally:
        report.close()
    assert status == -signal.SIGKILL, "the writer was not alive when killed"
    assert "full" not in reported
    numbers = [int(x) for x in reported if x.isdigit()]
    return max(numbers, default=wait_for), any(path.parent.glob(temps))


def check_conversation(state: Path, last: int) -> None:
    header, turns = load_conversation(state, "crash")  # raises on any line that does not parse
    newest = int(turns[-1].question.split()[1])
    assert newest in (last, last + 1), (newest, last)
    expected = list(range(max(1, newest - WINDOW + 1), newest + 1))
    assert [int(t.question.split()[1]) for t in turns] == expected
    assert header["turns"] == len(turns) == len(expected)
    for number, turn in zip(expected, turns, strict=True):
        assert turn.entries[1].message["content"] == f"{number}:" + "y" * BLOB
    assert [c.id for c in list_conversations(state)] == ["crash"]  # a leftover temp file is not listed


def check_notes(state: Path, last: int) -> None:
    text = target_path("notes", state).read_text(encoding="utf-8")
    assert text.endswith("\n")
    lines = text.rstrip("\n").split("\n")
    assert lines[:2] == ["## Notes from the assistant", ""]
    numbers = []
    for line in lines[2:]:
        head, _, rest = line.partition(" " + "z" * NOTE + " (")
        assert head.startswith("- note ") and rest.endswith(")") and len(rest) == len("2026-01-01)"), line[
            :80
        ]
        numbers.append(int(head.removeprefix("- note ")))
    assert numbers == list(range(1, len(numbers) + 1))
    assert numbers[-1] in (last, last + 1), (numbers[-1], last)
    assert ContextNotes(state, "k").read() == text


@pytest.mark.parametrize("target", TARGETS)
def test_sigkill_mid_write_leaves_a_complete_version(target: str, tmp_path: Path) -> None:
    rng = random.Random(f"astro-crash-{target}-{time.time_ns()}")
    kills = mid_write = 0
    for attempt in range(KILLS_PER_TARGET):
        state = tmp_path / f"state-{attempt}"
        last, left_temp = kill_mid_write(
            target, state, fresh=attempt == 0, at_temp_file=attempt % 2 == 0, rng=rng
        )
        kills += 1
        mid_write += left_temp
        if target == "conversation":
            check_conversation(state, last)
        else:
            check_notes(state, last)
    assert kills == KILLS_PER_TARGET
    # The timed kills must really have hit the write window, or this test proves little.
    assert mid_write >= KILLS_PER_TARGET // 4, f"only {mid_write} of {kills} kills landed mid-write"


def test_the_writers_produce_what_the_product_reads(tmp_path: Path) -> None:
    """Uninterrupted, the writers' files read back like any conversation and notes."""

    class Stop(Exception):
        pass

    class Report:
        def __init__(self, limit: int) -> None:
            self.limit, self.count = limit, 0

        def write(self, text: str) -> None:
            self.count += text.strip().isdigit()
            if self.count >= self.limit:
                raise Stop

        def flush(self) -> None:
            pass

    for target, limit in (("conversation", 6), ("notes", 3)):
        with pytest.raises(Stop):
            WRITERS[target](tmp_path / target, Report(limit))  # type: ignore[arg-type]
    check_conversation(tmp_path / "conversation", 6)
    first = json.loads(
        (conversations_dir(tmp_path / "conversation") / "crash.jsonl").read_text().splitlines()[0]
    )
    assert first["type"] == "header" and first["turns"] == WINDOW
    check_notes(tmp_path / "notes", 3)

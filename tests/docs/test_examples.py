"""Every fenced shell and Python example of the documentation runs as written.

The pages: README.md, CONTRIBUTING.md, warehouse/README.md and every docs/**/*.md. The blocks: ```sh, ```bash,
```console and ```python (```toml and ```json are files, not commands). Each runs in a
folder of its own holding the files the examples name (`flights.csv`, `shop.duckdb`, … made
by `_make_files`), with the suite's sample warehouse and no model configured:

- a `sh` block runs in bash with `set -e`: every command must succeed;
- a `console` block runs each `$ ` command; its output must show the lines printed under it, in
  order (spacing aside; `…` in a line stands for any text, a line `…` alone for any lines),
  and it must fail exactly when one of those lines starts with `astro:`;
- a `python` block runs with the suite's Python and must exit 0.

`uv run CMD` runs CMD in this checkout's environment, as `uv run` does. `astro [TARGET...]`
without a command (the full-screen app) opens the same targets with the same options
through `astro sql "select 1"`, without a screen.

A block that cannot run here is marked in the page itself by an HTML comment on the line
before it, one of:

    <!-- doc-test: needs a model server -->
    <!-- doc-test: needs a remote service (what it needs) -->
    <!-- doc-test: runs the test suite -->

and nothing else is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from tests.support import ROOT

PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "warehouse" / "README.md",
        *(ROOT / "docs").glob("**/*.md"),
    ],
    key=lambda p: str(p),
)
RUN = ("sh", "bash", "shell", "console", "python", "py")
MARKER = re.compile(
    r"<!--\s*doc-test:\s*(needs a model server|needs a remote service(?: \([^)]*\))?|runs the test suite)"
    r"\s*-->"
)
ANY_MARKER = re.compile(r"<!--\s*doc-test:")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(```+)\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        start, ticks, language = i, fence.group(1), fence.group(2).lower()
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith(ticks):
            body.append(lines[i])
            i += 1
        i += 1
        if language not in RUN:
            continue
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        if ANY_MARKER.search(before) and not MARKER.search(before):
            raise AssertionError(f"{page.name}:{start + 1}: unknown doc-test marker {before.strip()!r}")
        marked = MARKER.search(before)
        found.append(
            Block(page, start + 1, language, "\n".join(body) + "\n", marked.group(1) if marked else None)
        )
    return found


ALL = [block for page in PAGES if page.is_file() for block in blocks(page)]

PRELUDE = r"""
set -o pipefail
uv() { if [ "$1" = run ]; then shift; "$@"; else command uv "$@"; fi; }
astro() {
  case "${1:-}" in
    sql|shell|ask|eval|mcp|replay|config|--version|--help|-h) command astro "$@" ;;
    *) command astro sql "select 1" "$@" >/dev/null ;;
  esac
}
"""
"""`uv run` is this environment; the app's targets and options open without a screen."""


def _make_files(folder: Path) -> None:
    """The files the examples open: small, made here, named as the pages name them."""
    (folder / "flights.csv").write_text(
        "carrier,origin,dep_delay\nUA,EWR,12\nAA,JFK,-3\nDL,LGA,41\nUA,EWR,0\n"
    )
    (folder / "orders.csv").write_text("order_id,amount\n1,10.5\n2,20.25\n")
    (folder / "events").mkdir()
    con = duckdb.connect()
    for day in (1, 2):
        target = folder / "events" / f"day{day}.parquet"
        con.execute(f"COPY (SELECT range AS id, {day} AS day FROM range(5)) TO '{target}' (FORMAT parquet)")
    con.close()
    shop = duckdb.connect(str(folder / "shop.duckdb"))
    shop.execute("CREATE SCHEMA sales")
    shop.execute(
        "CREATE TABLE sales.orders AS SELECT range AS order_id, range * 1.5 AS amount FROM range(10)"
    )
    shop.close()
    shutil.copyfile(folder / "shop.duckdb", folder / "copy.duckdb")
    staff = duckdb.connect(str(folder / "staff.duckdb"))
    staff.execute("CREATE SCHEMA hr")
    staff.execute("CREATE TABLE hr.people (id INT, name TEXT, email TEXT, salary INT)")
    staff.execute("CREATE TABLE hr.reviews (id INT, person_id INT, score INT)")
    staff.execute("INSERT INTO hr.people VALUES (1, 'Ann', 'ann@example.com', 100)")
    staff.close()


@pytest.fixture
def folder(tmp_path: Path, sample_path: Path) -> Path:
    """A working folder with the examples' files; the sample warehouse is the suite's copy."""
    work = tmp_path / "work"
    work.mkdir()
    _make_files(work)
    return work


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("NO_COLOR", None)
    env["COLUMNS"] = "200"
    return env


def _bash(script: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", PRELUDE + script],
        cwd=folder,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def _normal(line: str) -> str:
    return " ".join(line.split())


def _shows(expected: list[str], actual: str) -> str | None:
    """None when the output shows the expected lines in order, else the first one it lacks."""
    lines = [_normal(line) for line in actual.splitlines()]
    at = 0
    for want in expected:
        if want.strip() in ("…", "..."):
            continue
        parts = _normal(want).replace(" …", "…").split("…")  # `region …` is also `region, …`
        pattern = re.compile(".*".join(re.escape(part) for part in parts))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def _console(block: Block) -> list[tuple[str, list[str]]]:
    """Each `$ ` command with the lines printed under it."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def test_the_pages_have_examples_and_markers_are_known() -> None:
    assert any(b.page.name == "README.md" and b.language == "python" for b in ALL)
    assert sum(1 for b in ALL if b.skip is None) >= 8, "most examples run"


@pytest.mark.parametrize("block", ALL, ids=[b.id for b in ALL])
def test_the_example_runs_as_written(block: Block, folder: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"marked in the page: {block.skip}")
    if block.language in ("python", "py"):
        done = subprocess.run(
            [sys.executable, "-c", block.text],
            cwd=folder,
            env=_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"
        return
    if block.language == "console":
        for command, expected in _console(block):
            done = _bash(command, folder)
            fails = any(line.startswith("astro:") for line in expected)
            assert (done.returncode != 0) == fails, f"{block.id}: $ {command}\n{done.stdout}"
            missing = _shows(expected, done.stdout)
            assert missing is None, f"{block.id}: $ {command}\nwanted: {missing!r}\ngot:\n{done.stdout}"
        return
    done = _bash("set -e\n" + block.text, folder)
    assert done.returncode == 0, f"{block.id}:\n{done.stdout}"

"""What the command line prints around the data: JSON in UTF-8, the help's targets, no
bytecode chatter from `uv run`, and a test run that ends with its counts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from astro_tui.cli import main
from tests.support import ROOT


def test_sql_json_is_utf8_with_controls_escaped() -> None:
    sql = (
        "select 'Ørjan' as navn, '東京' as city, chr(27) || '[31mred' as esc, chr(155) as csi, "
        "chr(8238) || 'evil' as bidi, 'a' || chr(10) || 'b' as two_lines"
    )
    result = CliRunner().invoke(main, ["sql", sql, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout_bytes
    assert "Ørjan".encode() in out and "東京".encode() in out and b"\\u00d8" not in out
    for raw in (b"\x1b", "\x9b".encode(), "\u202e".encode()):
        assert raw not in out
    assert b"\\u001b[31mred" in out and b"\\u009b" in out and b"\\u202eevil" in out and b"a\\nb" in out
    record = json.loads(out)
    assert record["rows"] == [["Ørjan", "東京", "\x1b[31mred", "\x9b", "\u202eevil", "a\nb"]]


def test_help_lists_every_kind_of_target() -> None:
    result = CliRunner().invoke(main, ["--help"])
    text = " ".join(result.stdout.split())
    for kind in ("postgresql://", "sc://", "@NAME", "DuckDB file", "CSV", "Parquet", "JSON", "globs"):
        assert kind in text, kind


def test_a_launch_writes_the_bytecode_it_compiles(tmp_path: Path) -> None:
    """Under PYTHONDONTWRITEBYTECODE (many containers) the first launch still leaves bytecode
    behind, so the next one does not compile again."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(tmp_path)}
    code = "import astro_tui, astro_tui.text"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    written = {p.name.split(".")[0] for p in tmp_path.rglob("*.pyc")}
    assert "text" in written, written
    subprocess.run([sys.executable, "-c", "import json.decoder"], env=env, check=True)
    assert "decoder" not in {p.name.split(".")[0] for p in tmp_path.rglob("*.pyc")}


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_uv_run_prints_nothing_of_its_own() -> None:
    env = {k: v for k, v in os.environ.items() if k != "UV_COMPILE_BYTECODE"}
    done = subprocess.run(
        ["uv", "run", "--frozen", "--offline", "astro", "--version"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "astro, version" in done.stdout and "Bytecode compiled" not in done.stderr, done.stderr


def test_pytest_q_ends_with_the_counts(tmp_path: Path) -> None:
    (tmp_path / "test_tiny.py").write_text(
        "import pytest\n\ndef test_one():\n    pass\n\n@pytest.mark.skip('x')\ndef test_two():\n    pass\n"
    )
    config = ["-c", str(ROOT / "pyproject.toml"), "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *config, str(tmp_path / "test_tiny.py")],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.fullmatch(r"1 passed, 1 skipped in [\d.]+s", done.stdout.strip().splitlines()[-1]), done.stdout

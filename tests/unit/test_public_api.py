"""The Python API's one public surface (`astro_tui.__all__`), its paths as `str` or `os.PathLike`,
the sample warehouse named from Python, and a failed question kept out of the saved ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePath

import pyarrow.parquet as pq
import pytest

import astro_tui
from astro_tui.errors import AstroError
from tests.support.fake_openai import FakeOpenAI, error
from tests.support.ui import shop_db

__all__ = ["shop_db"]


def test_the_public_names_are_the_whole_surface() -> None:
    assert sorted(dir(astro_tui)) == sorted(astro_tui.__all__)
    for stray in ("Any", "Path", "os", "sys", "TYPE_CHECKING", "annotations"):
        assert stray not in dir(astro_tui), stray
    for name in astro_tui.__all__:
        value = getattr(astro_tui, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, AstroError), name
    from astro_tui.data.errors import GuardError, QueryCancelled, QueryTimeout
    from astro_tui.session import AskFailed, Session

    assert (astro_tui.GuardError, astro_tui.QueryTimeout, astro_tui.QueryCancelled) == (
        GuardError,
        QueryTimeout,
        QueryCancelled,
    )
    assert astro_tui.AskFailed is AskFailed and astro_tui.Session is Session
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        astro_tui.Nope  # noqa: B018


def test_importing_the_package_imports_none_of_its_names() -> None:
    """`astro sql` imports the package first: its public names cost nothing until used."""
    code = "import sys, astro_tui; print(sorted(m for m in sys.modules if m.startswith('astro_tui')))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "['astro_tui']"


@pytest.mark.parametrize("kind", [str, Path, PurePath])
def test_export_takes_any_path(shop_db: Path, tmp_path: Path, kind: type) -> None:
    with astro_tui.open(str(shop_db), state_dir=str(tmp_path / "state")) as session:
        result = session.sql(
            "SELECT region, sum(amount) AS revenue FROM sales.orders GROUP BY region ORDER BY region"
        )
        written = session.export(result, "parquet", kind(tmp_path / "out.parquet"))
    assert written == tmp_path / "out.parquet"
    assert pq.read_table(written).num_rows == result.to_arrow().num_rows > 0


def test_the_sample_is_named_from_python(sample_path: Path, tmp_path: Path) -> None:
    assert astro_tui.sample_path() == sample_path and astro_tui.sample_path(build=False) == sample_path
    with astro_tui.open(astro_tui.sample_path(), state_dir=tmp_path) as session:
        assert session.sql("SELECT count(*) FROM sales.orders").rows()[0][0] > 100_000


def test_asking_without_a_model_tells_a_python_caller_how(shop_db: Path, tmp_path: Path) -> None:
    with astro_tui.open(shop_db, state_dir=tmp_path) as session:
        with pytest.raises(astro_tui.AskFailed) as failed:
            session.ask("revenue?")
        assert session.conversations() == []
    assert failed.value.kind == "config" and "astro_tui.open(model=…)" in str(failed.value)
    assert not (tmp_path / "conversations").exists()


def test_a_question_that_came_to_nothing_is_not_saved(
    shop_db: Path, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Only a conversation in which the model said something is kept for `/resume` and replay."""
    fake_openai.script(error(404, "model not found"))
    session = astro_tui.open(shop_db, settings=fake_openai.settings(max_retries=0), state_dir=tmp_path)
    with session:
        with pytest.raises(astro_tui.AskFailed):
            session.ask("revenue?")
        assert session.conversations() == []
        assert session.replays() == []

"""Replay: a conversation's verified answers taken out of astro, as code that checks its own numbers.

`model.py` reads a saved conversation into answers, queries and quoted numbers;
`notebook.py` (ipynb), `marimo.py` and `sql_script.py` write it for a plain
Jupyter kernel, marimo or the engine's own client, from the cells in `cells.py`
and the helpers in `runtime.py` (copied into every notebook, so it runs without
astro); `check.py` runs the queries again and names the numbers that moved;
`listing.py` lists the conversations. The session drives all of it.
"""

from __future__ import annotations

from pathlib import Path

from astro_tui.files import atomic_write_text
from astro_tui.replay.check import CheckReport, Moved, check_replay
from astro_tui.replay.judge import Judge
from astro_tui.replay.model import Replay, ReplayError, load_replay

FORMATS = {"ipynb": ".ipynb", "marimo": ".py", "sql": ".sql"}


def replay_text(replay: Replay, fmt: str, path: Path, judge: Judge | None) -> str:
    """The file's text, each statement in it judged by `judge` (none: refused)."""
    if fmt == "ipynb":
        from astro_tui.replay.notebook import notebook_text

        return notebook_text(replay, judge)
    if fmt == "marimo":
        from astro_tui.replay.marimo import marimo_text

        return marimo_text(replay, judge)
    if fmt == "sql":
        from astro_tui.replay.sql_script import script_text

        return script_text(replay, path.name, judge)
    raise ReplayError(f"unknown replay format {fmt!r} (ipynb, marimo or sql)")


def default_path(replay: Replay, fmt: str) -> Path:
    return Path(f"astro-{replay.id}{FORMATS.get(fmt, '')}")


def write_replay(
    replay: Replay, fmt: str, path: Path | None = None, *, overwrite: bool = False, judge: Judge | None = None
) -> Path:
    """Write the replay; ReplayError for a statement the guard (`judge`) refuses or cannot judge,
    an existing file (without `overwrite`) or one that cannot be written. The file appears whole,
    every statement in it judged, or not at all."""
    path = path or default_path(replay, fmt)
    text = replay_text(replay, fmt, path, judge)
    if path.exists() and not overwrite:
        raise ReplayError(f"{path} exists (--force to overwrite it)")
    if path.is_dir():
        raise ReplayError(f"{path} is a directory")
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise ReplayError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


__all__ = [
    "FORMATS",
    "CheckReport",
    "Judge",
    "Moved",
    "Replay",
    "ReplayError",
    "check_replay",
    "default_path",
    "load_replay",
    "write_replay",
]

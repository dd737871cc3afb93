"""Where per-project state lives: `.astro/` beside the work, or `ASTRO_STATE_DIR`."""

from __future__ import annotations

import os
import re
from pathlib import Path


def state_dir() -> Path:
    env = os.environ.get("ASTRO_STATE_DIR")
    return Path(env) if env else Path.cwd() / ".astro"


def safe_file_stem(key: str) -> str:
    """A database key as a file name: keys come from target names, which may hold anything."""
    stem = re.sub(r"[^\w.-]+", "_", key).strip("._")
    return stem[:80] or "default"


def atomic_write_text(path: Path, text: str) -> None:
    """Temp file, fsync, rename: a crash at any point leaves the old or the new file, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # A lone surrogate (a model's JSON may hold "\ud800") cannot be encoded; written as its
    # escape it stays valid UTF-8, and inside a JSON string it reads back as the same text.
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


default_state_dir = state_dir

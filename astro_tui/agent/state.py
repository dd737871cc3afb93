"""File names for per-database state; the state directory itself is `config.state_dir()`."""

from __future__ import annotations

import re


def safe_file_stem(key: str) -> str:
    """A database key as a file name: keys come from target names, which may hold anything."""
    stem = re.sub(r"[^\w.-]+", "_", key).strip("._")
    return stem[:80] or "default"

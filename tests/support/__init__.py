"""Helpers the tests share: servers, fakes, waits, tiers. Nothing here is a test."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: README.md, SECURITY.md, pyproject.toml, warehouse/."""
DATA = ROOT / "tests" / "data"
"""The corpora and hostile databases the tests read."""

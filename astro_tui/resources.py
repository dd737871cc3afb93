"""Where shipped files live: inside the wheel, or at the top of a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def resource_dir(name: str) -> Path:
    """`styles` or `warehouse`, from the wheel's copy or the checkout's."""
    bundled = _PACKAGE / "_resources" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent / name

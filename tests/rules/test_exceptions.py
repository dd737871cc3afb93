"""Every error astro can show is an `AstroError`: phrased for the person, shown by `error_line`
as its own message. An exception class outside that root is private to its module (it never
leaves it), or on the short list below with the reason it is not an error at all."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import astro_tui
from astro_tui.errors import AstroError

NOT_ERRORS = {
    "astro_tui.catalog.options.HelpRequested": "control flow: `--help` unwinds a command to print its usage",
}
"""Public exception classes that are not errors, each with the reason."""


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in astro_tui, by dotted name (nested ones included)."""
    found: dict[str, type[BaseException]] = {}

    def visit(owner: object, prefix: str, module: str) -> None:
        for name, value in vars(owner).items():
            dotted = f"{prefix}.{name}"
            if inspect.isclass(value) and value.__module__ == module and dotted not in found:
                if issubclass(value, BaseException):
                    found[dotted] = value
                visit(value, dotted, module)

    for info in pkgutil.walk_packages(astro_tui.__path__, "astro_tui."):
        visit(importlib.import_module(info.name), info.name, info.name)
    return found


def test_every_exception_is_an_astro_error_private_or_listed_with_its_reason() -> None:
    classes = _exception_classes()
    assert {"astro_tui.catalog.options.HelpRequested", "astro_tui.errors.AstroError"} <= classes.keys()
    assert "astro_tui.data.catalog_model.ColumnsNotRead" in classes, "the walk reaches the data layer"
    outside = {
        name
        for name, cls in classes.items()
        if not issubclass(cls, AstroError)
        and not any(part.startswith("_") for part in name.split("."))
        and name not in NOT_ERRORS
    }
    assert not outside, sorted(outside)
    assert NOT_ERRORS.keys() <= classes.keys(), "the list names classes that exist"
    listed_errors = [name for name in NOT_ERRORS if issubclass(classes[name], AstroError)]
    assert not listed_errors, "listed, but an error already"

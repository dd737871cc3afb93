"""Declared dependencies = imported ones: an import that only works because another
package happens to pull it in breaks the day that package stops doing so."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from tests.support import ROOT

PACKAGE = ROOT / "astro_tui"


def _imported_modules() -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere in the package, with where."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("astro_tui", "__future__"):
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


# The users' extra installs the thin client; the dev group installs the full distribution
# (it ships the test server). Both provide the same module.
_ALSO_PROVIDED_BY = {"pyspark": {"pyspark-client", "pyspark-connect"}}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return {_normal(re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0]) for spec in specs}


def test_every_imported_package_is_declared() -> None:
    distributions = packages_distributions()
    declared = _declared()
    missing = {}
    for module, where in sorted(_imported_modules().items()):
        owners = {_normal(d) for d in distributions.get(module, [module])}
        owners |= _ALSO_PROVIDED_BY.get(module, set())
        if not owners & declared:
            missing[module] = sorted(where)[:3]
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_check_sees_the_imports_it_must() -> None:
    modules = _imported_modules()
    for known in ("duckdb", "textual", "numpy", "rich", "httpx2", "markdown_it", "tomlkit"):
        assert known in modules, known

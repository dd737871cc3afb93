"""Markers by what a test needs, read from the fixtures it uses and the code it reaches.

A marker written by hand on each test drifts: the test starts a subprocess through a helper
three calls down and nobody adds the mark. So the marks are derived at collection:

- `postgres` / `spark`: the test's fixture closure holds the suite's server fixture, its
  code reaches `tests.support.pg_server` / `tests.support.spark_server` directly, or it runs
  the engine contract (`engine`, tests/engines/conftest.py) on that engine;
- `subprocess`: its code (or a fixture's, or a helper's in `tests/`, followed transitively)
  starts another program: `subprocess`, `asyncio`'s subprocess calls, an MCP stdio client,
  a notebook kernel;
- `ui`: it drives the Textual app (`run_test`, snapshot comparison);
- `serial`: it shares a server that runs one statement at a time well (Spark's two task
  slots), so under xdist one worker owns the server and runs those tests one after another
  (`xdist_group`, with `--dist loadgroup`).

The markers are registered in pyproject.toml. The fast tier is what is left:
`-m "not postgres and not spark and not subprocess and not ui"`.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable, Iterator

import pytest

_SERVER_FIXTURES = {"pg_server": "postgres", "spark_server": "spark"}
_SERVER_MODULES = {"tests.support.pg_server": "postgres", "tests.support.spark_server": "spark"}
_SUBPROCESS_NAMES = frozenset({"Popen", "create_subprocess_exec", "create_subprocess_shell", "stdio_client"})
_PROGRAM_MODULES = frozenset({"subprocess", "nbclient", "jupyter_client"})
_UI_NAMES = frozenset({"run_test"})
_UI_FIXTURES = frozenset({"snap_compare"})
_SERIAL = frozenset({"spark"})
_ENGINE_FIXTURE = "engine"
"""The engine contract's parametrized fixture (tests/engines/conftest.py): its value names the
server it starts through `request.getfixturevalue`, which no fixture closure shows."""


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _ours(obj: object) -> bool:
    return (getattr(obj, "__module__", "") or "").split(".")[0] == "tests"


def _functions_of(obj: object) -> Iterator[Callable[..., object]]:
    """The plain functions behind a test, fixture, helper or helper class."""
    obj = inspect.unwrap(obj)  # type: ignore[arg-type]
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        yield obj
    elif isinstance(obj, type) and _ours(obj):
        for value in vars(obj).values():
            if isinstance(value, (types.FunctionType, staticmethod, classmethod, property)):
                yield from _functions_of(value.fget if isinstance(value, property) else value)


def _starts_program(name: str, value: object) -> bool:
    if name in _SUBPROCESS_NAMES:
        return True
    module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] in _PROGRAM_MODULES


def needs(fn: object, seen: set[int] | None = None) -> set[str]:
    """The markers `fn`'s code reaches, following the helpers defined under `tests/`."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    for func in _functions_of(fn):
        if id(func) in seen:
            continue
        seen.add(id(func))
        if func.__module__ in _SERVER_MODULES:  # the server's own programs are the server marker's
            found.add(_SERVER_MODULES[func.__module__])
            continue
        scope = func.__globals__
        for code in _codes(func.__code__):
            for name in code.co_names:
                value = scope.get(name, sys.modules.get(name))
                if name in _UI_NAMES:
                    found.add("ui")
                if _starts_program(name, value):
                    found.add("subprocess")
                if isinstance(value, types.ModuleType):
                    if value.__name__ in _SERVER_MODULES:
                        found.add(_SERVER_MODULES[value.__name__])
                    continue
                if _ours(value):
                    found |= needs(value, seen)
    return found


def marks_for(item: pytest.Item) -> set[str]:
    names = set(getattr(item, "fixturenames", ()))
    found = {_SERVER_FIXTURES[n] for n in names & _SERVER_FIXTURES.keys()}
    if names & _UI_FIXTURES:
        found.add("ui")
    function = getattr(item, "function", None)
    if function is not None:
        found |= needs(function)
    info = getattr(item, "_fixtureinfo", None)
    for name in names:
        for definition in info.name2fixturedefs.get(name, ()) if info else ():
            if _ours(definition.func):
                found |= needs(definition.func)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get(_ENGINE_FIXTURE) in _SERVER_FIXTURES.values():
        found.add(callspec.params[_ENGINE_FIXTURE])  # the contract's engine, started on demand
    if found & _SERIAL:
        found.add("serial")
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_itemcollected(item: pytest.Item) -> None:
    """Before xdist reads `xdist_group` (in its collection hook), so the groups hold."""
    for name in sorted(marks_for(item)):
        item.add_marker(name)
    if item.get_closest_marker("serial"):
        item.add_marker(pytest.mark.xdist_group("serial"))

"""Imports point one way, down the layers, and never in a circle.

front ends (ui, cli, mcp, headless, the package's own `astro_tui.open`) → session →
replay / agent → llm / catalog → data → config / errors / text / files / resources / patterns
/ sizes (the spelling of a scope pattern and of a memory size, which the settings check).
A module imports from its own layer or below; within a layer, packages import each other
one way (replay uses agent, never the reverse), and no module reaches itself through
others, lazy imports and `TYPE_CHECKING` ones included (a loop is one module in two files).
"""

from __future__ import annotations

import ast
from pathlib import Path

import astro_tui

PACKAGE = Path(astro_tui.__file__).parent
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"config", "errors", "text", "files", "resources", "patterns", "sizes", "display"}),
    frozenset({"data"}),
    frozenset({"llm", "catalog"}),
    frozenset({"replay", "agent"}),
    frozenset({"session"}),
    frozenset({"ui", "cli", "mcp", "headless", ""}),  # "": astro_tui/__init__.py, the Python API
)
"""By the first part under `astro_tui` (a package or a module's name without `.py`)."""
UPWARD_ALLOWED: dict[tuple[str, str], str] = {}
"""Arrows that run up a layer, each with the reason; the fewer the better."""


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """astro_tui's modules `path` imports; `from pkg import module` counts as the module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in MODULES}


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def _layer(module: str) -> int:
    return next(i for i, parts in enumerate(LAYERS) if _part(module) in parts)


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts with more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part: list[str] = []
                while not part or part[-1] != node:
                    part.append(stack.pop())
                    on_stack.discard(part[-1])
                if len(part) > 1:
                    loops.append(sorted(part))
    return loops


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 100 and "astro_tui.session.core" in MODULES
    assert not [name for name in MODULES if not any(_part(name) in layer for layer in LAYERS)]


def test_no_import_runs_up_a_layer() -> None:
    upward = {
        (module, target)
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(target) > _layer(module)
    }
    assert upward - UPWARD_ALLOWED.keys() == set(), sorted(upward - UPWARD_ALLOWED.keys())
    assert UPWARD_ALLOWED.keys() <= upward, "an allowed arrow that is gone comes off the list"


def test_no_module_imports_itself_through_others() -> None:
    assert _loops(GRAPH) == []


def test_packages_import_each_other_one_way() -> None:
    """Within a layer too: replay may use agent, or agent replay, not both."""
    packages: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        down = {_part(t) for t in targets if (module, t) not in UPWARD_ALLOWED}
        packages.setdefault(_part(module), set()).update(down - {_part(module)})
    assert packages["replay"] >= {"agent"}, "the graph holds the arrows between packages"
    assert _loops(packages) == []


def test_the_loop_finder_finds_loops() -> None:
    assert _loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _loops({"a": {"b"}, "b": set()}) == []

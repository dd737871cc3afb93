"""What every shell command receives and returns: the tree, the working directory, lines out."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from astro_tui.catalog.paths import PathError, Resolved, expand, resolve
from astro_tui.catalog.syntax import Word
from astro_tui.catalog.vfs import File, Node, VirtualFS
from astro_tui.data.catalog_model import Catalog

if TYPE_CHECKING:
    from astro_tui.data.database import CancelToken, Database

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 127


@dataclass(slots=True)
class Output:
    """stdout as lines (no newlines); stderr lines are shown before stdout's final result."""

    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    code: int = EXIT_OK

    def error(self, message: str, code: int = EXIT_FAIL) -> Output:
        self.stderr.append(message)
        self.code = code
        return self


@dataclass(slots=True)
class Operand:
    """One path operand after glob expansion: resolved, or the reason it is not."""

    text: str
    resolved: Resolved | None
    problem: str | None = None

    @property
    def node(self) -> Node | None:
        return self.resolved.node if self.resolved else None


RUN_CANCEL: ContextVar[CancelToken | None] = ContextVar("astro_shell_cancel", default=None)
"""The token of the command line running in this thread (`Shell.run(..., cancel=)`)."""


@dataclass(slots=True)
class ShellContext:
    vfs: VirtualFS
    db: Database | None
    cwd: str = "/"
    oldpwd: str = "/"
    run_line: Callable[[list[Word], list[str] | None], Output] | None = None
    max_lines: int = 200
    """The shell's output cap: no command needs to produce more lines than are shown."""

    @property
    def catalog(self) -> Catalog:
        return self.vfs.catalog

    @property
    def cancel(self) -> CancelToken | None:
        """Stops the queries of the running command line; per run, so threads never share one."""
        return RUN_CANCEL.get()

    def resolve(self, path: str) -> Resolved:
        return resolve(self.vfs, self.cwd, path)

    def operands(self, words: list[Word]) -> list[Operand]:
        """Expand globs like a shell (an unmatched glob stays as typed) and resolve each path."""
        found: list[Operand] = []
        for word in words:
            paths = expand(self.vfs, self.cwd, word.pattern) if word.pattern else []
            for text in paths or [word.text]:
                try:
                    found.append(Operand(text, self.resolve(text)))
                except PathError as exc:
                    found.append(Operand(text, None, str(exc)))
        return found


def read_inputs(
    ctx: ShellContext, command: str, words: list[Word], stdin: list[str] | None, out: Output
) -> list[tuple[str | None, list[str]]]:
    """(name, lines) per input: the named cards, or stdin when no path is given; problems go to out."""
    if not words or [w.text for w in words] == ["-"]:
        return [(None, stdin or [])]
    inputs: list[tuple[str | None, list[str]]] = []
    for operand in ctx.operands(words):
        node = operand.node
        if operand.text == "-":
            inputs.append((None, stdin or []))
        elif node is None:
            out.error(f"{command}: {operand.text}: {operand.problem}")
        elif not isinstance(node, File):
            out.error(f"{command}: {operand.text}: is a directory (try ls {operand.text})")
        else:
            inputs.append((node.path, ctx.vfs.card(node).splitlines()))
    return inputs

"""The metadata shell: one command line in, capped text and an exit code out.

The same object serves the catalog pane, `astro shell` and the model's `shell`
tool, so its output is plain text that never floods: whatever a command prints,
the result is cut to `max_output_lines`/`max_output_chars` with a last line
saying how much was left out. Errors are one line each, shell style, mixed into
the output where a terminal would show stderr.

Over an outline (a catalog whose columns are still being read) the names are
all there, so `ls`, `cd` or `find` answer at once; a command line that touches a
column (`cat`, `grep`, `ls -l`) raises `ColumnsNotRead` wherever it does, and
is run again from the start over the whole catalog, once `whole` has it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from astro_tui.catalog.commands import COMMANDS, usage_error
from astro_tui.catalog.options import HelpRequested, UsageError
from astro_tui.catalog.paths import PathError, absolute, lookup
from astro_tui.catalog.runtime import (
    EXIT_FAIL,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    RUN_CANCEL,
    Output,
    ShellContext,
)
from astro_tui.catalog.syntax import Command, Pipeline, Redirect, ShellSyntaxError, Word, parse
from astro_tui.catalog.vfs import Dir, VirtualFS, render_card
from astro_tui.data.catalog_model import NOT_READ_MESSAGE, Catalog, ColumnsNotRead, Table
from astro_tui.errors import error_line

if TYPE_CHECKING:
    from astro_tui.data.database import CancelToken, Database

_SAFE_WORD = re.compile(r"^[\w./%+,:@=~-]*$")


@dataclass(frozen=True)
class ShellResult:
    """`output` is already capped; errors are lines like `ls: /nope: no such schema or table`."""

    output: str
    exit_code: int


class Shell:
    """A working directory over one catalog; `run` is synchronous and queries only for `sample`."""

    def __init__(
        self,
        catalog: Catalog,
        db: Database | None = None,
        *,
        whole: Callable[[], Catalog] | None = None,
        max_output_lines: int = 200,
        max_output_chars: int = 20_000,
    ) -> None:
        """`whole`: the whole catalog, waited for, when `catalog` is an outline."""
        self.catalog = catalog
        self.db = db
        self.whole = whole
        self.vfs = VirtualFS(catalog)
        self._ctx = ShellContext(self.vfs, db, run_line=self._run_words)
        self._lock = threading.RLock()
        self.max_output_lines = max_output_lines
        self.max_output_chars = max_output_chars

    def use(self, catalog: Catalog) -> None:
        """Go on over `catalog` (the whole of the outline this shell had), in the same folder."""
        with self._lock:
            old = self._ctx
            self.catalog, self.vfs = catalog, VirtualFS(catalog)
            self._ctx = ShellContext(self.vfs, self.db, run_line=self._run_words, max_lines=old.max_lines)
            for name in ("cwd", "oldpwd"):
                path = getattr(old, name)
                try:
                    self._ctx.resolve(path)
                except PathError:
                    path = "/"
                setattr(self._ctx, name, path)

    def with_columns(self) -> Shell:
        """This shell, over the whole catalog (waited for) if it had only the outline."""
        with self._lock:
            if not self.catalog.complete:
                if self.whole is None:
                    raise ColumnsNotRead(NOT_READ_MESSAGE)
                self.use(self.whole())
            return self

    def card(self, table: Table) -> str:
        """The card `cat` prints for `table` (with the tables referencing it), over the whole
        catalog, waited for: the table may be whole while this shell still has the outline."""
        shell = self.with_columns()
        node = shell.vfs.node_for_table(table)
        return shell.vfs.card(node) if node is not None else render_card(table)

    @property
    def max_output_lines(self) -> int:
        return self._ctx.max_lines

    @max_output_lines.setter
    def max_output_lines(self, lines: int) -> None:
        self._ctx.max_lines = lines

    @property
    def cwd(self) -> str:
        return self._ctx.cwd

    @cwd.setter
    def cwd(self, path: str) -> None:
        self._ctx.cwd = path

    def run(self, command: str, *, cancel: CancelToken | None = None) -> ShellResult:
        """Run one command line; `cancel` stops the queries it makes (`sample`)."""
        with self._lock:
            before = (self._ctx.cwd, self._ctx.oldpwd)
            try:
                return self._run(command, cancel)
            except ColumnsNotRead as exc:
                try:
                    self.with_columns()
                except Exception as failed:  # the catalog could not be read: one line, as any error
                    return ShellResult(f"astro: {error_line(failed if self.whole else exc)}", EXIT_FAIL)
            self._ctx.cwd, self._ctx.oldpwd = before
            return self._run(command, cancel)

    def _run(self, command: str, cancel: CancelToken | None) -> ShellResult:
        try:
            sequence = parse(command)
        except ShellSyntaxError as exc:
            return ShellResult(f"astro: {exc}", EXIT_USAGE)
        lines: list[str] = []
        code = 0
        token = RUN_CANCEL.set(cancel)
        try:
            for connector, pipeline in sequence:
                if (connector == "&&" and code != 0) or (connector == "||" and code == 0):
                    continue
                out = self._pipeline(pipeline)
                lines.extend(out.stderr)
                lines.extend(out.stdout)
                code = out.code
        finally:
            RUN_CANCEL.reset(token)
        return ShellResult(self._cap(lines), code)

    def _pipeline(self, pipeline: Pipeline) -> Output:
        stdin: list[str] | None = None
        errors: list[str] = []
        code = 0
        for command in pipeline.commands:
            out = self._command(command, stdin)
            errors.extend(out.stderr)
            stdin, code = out.stdout, out.code
        return Output(stdin or [], errors, code)

    def _run_words(self, words: list[Word], stdin: list[str] | None) -> Output:
        return self._command(Command(words), stdin)

    def _command(self, command: Command, stdin: list[str] | None) -> Output:
        name = command.words[0].text
        info = COMMANDS.get(name)
        if info is None:
            return Output([], [f"{name}: command not found (try help)"], EXIT_NOT_FOUND)
        for redirect in command.redirects:
            if redirect.fd == 0:
                try:
                    node = self._ctx.resolve(redirect.target).node
                except PathError as exc:
                    return Output([], [f"astro: {redirect.target}: {exc}"], EXIT_FAIL)
                if isinstance(node, Dir):
                    return Output([], [f"astro: {redirect.target}: is a directory"], EXIT_FAIL)
                stdin = self.vfs.card(node).splitlines()
            elif redirect.target not in ("/dev/null", "&1", "&2"):
                return Output([], [f"astro: {redirect.target}: read-only file system"], EXIT_FAIL)
        try:
            out = info.run(self._ctx, command.words[1:], stdin)
        except HelpRequested:
            out = Output([f"usage: {info.usage}", f"  {info.summary}"])
        except UsageError as exc:
            out = usage_error(name, str(exc))
        except ColumnsNotRead:
            raise  # `run` reads them and runs the line again
        except Exception as exc:  # a shell reports, it does not crash its caller (pane or model)
            out = Output([], [f"{name}: {error_line(exc)}"], EXIT_FAIL)
        return _redirect(out, command.redirects)

    def _cap(self, lines: list[str]) -> str:
        total_chars = sum(len(line) + 1 for line in lines)
        if len(lines) <= self.max_output_lines and total_chars <= self.max_output_chars:
            return "\n".join(lines)
        kept: list[str] = []
        used = 0
        for line in lines[: self.max_output_lines]:
            if used + len(line) + 1 > self.max_output_chars:
                if not kept:
                    kept.append(line[: self.max_output_chars])
                    used += len(kept[0]) + 1
                break
            kept.append(line)
            used += len(line) + 1
        cut_lines = len(lines) - len(kept)
        if kept and len(kept[-1]) < len(lines[len(kept) - 1]):
            cut_lines += 1
        kept.append(
            f"[output cut: {cut_lines:,} of {len(lines):,} lines ({total_chars - used:,} characters) "
            "not shown; narrow it with grep, head or a more specific path]"
        )
        return "\n".join(kept)

    def complete(self, text: str) -> list[str]:
        """Whole-line candidates for tab: the line with its last word completed.

        A word in command position completes to command names, anything else to
        paths relative to the working directory (directories end with `/`;
        names that need quoting come back quoted).
        """
        start = _last_word_start(text)
        head, word = text[:start], text[start:]
        stripped = head.rstrip()
        if not stripped or stripped[-1] in "|;&":
            names = sorted(n for n in COMMANDS if n.startswith(word))
            return [f"{head}{n} " for n in names]
        word = word.replace("'", "").replace('"', "")
        folder, slash, partial = word.rpartition("/")
        base = folder + slash
        node = self.vfs.root
        for part in absolute(self.cwd, base or "."):
            child = lookup(node, part) if isinstance(node, Dir) else None
            if child is None:
                return []
            node = child
        if not isinstance(node, Dir):
            return []
        dirs_only = head.split()[:1] == ["cd"]
        names = [n for n, c in node.children.items() if not dirs_only or isinstance(c, Dir)]
        matches = [n for n in names if n.startswith(partial)] or [
            n for n in names if n.lower().startswith(partial.lower())
        ]
        candidates = []
        for name in matches:
            completed = base + name + ("/" if isinstance(node.children[name], Dir) else "")
            candidates.append(head + _quote(completed))
        return candidates


def _redirect(out: Output, redirects: list[Redirect]) -> Output:
    for redirect in redirects:
        if redirect.fd == 0:
            continue
        if redirect.target == "/dev/null":
            if redirect.fd in (2, 3):
                out.stderr = []
            if redirect.fd in (1, 3):
                out.stdout = []
        elif redirect.fd == 2 and redirect.target == "&1":
            out.stdout = out.stderr + out.stdout
            out.stderr = []
        elif redirect.fd == 1 and redirect.target == "&2":
            out.stderr = out.stderr + out.stdout
            out.stdout = []
    return out


def _last_word_start(text: str) -> int:
    start, quote = 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in " \t|;&":
            start = i + 1
    return start


def _quote(word: str) -> str:
    if _SAFE_WORD.match(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


__all__ = ["Shell", "ShellResult"]

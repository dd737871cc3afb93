"""The command table: names, usage lines, one-line summaries, and `help` and `xargs` themselves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from astro_tui.catalog import filters, navigation
from astro_tui.catalog.grep import grep_command
from astro_tui.catalog.options import OptionSpec, UsageError, parse_options
from astro_tui.catalog.runtime import EXIT_USAGE, Output, ShellContext
from astro_tui.catalog.syntax import Word

Run = Callable[[ShellContext, list[Word], list[str] | None], Output]


@dataclass(frozen=True, slots=True)
class CommandInfo:
    name: str
    usage: str
    summary: str
    run: Run


def _help(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, OptionSpec())
    if opts.operands:
        out = Output()
        for word in opts.operands:
            info = COMMANDS.get(word.text)
            if info is None:
                out.error(f"help: no help topics match '{word.text}'")
            else:
                out.stdout.extend([f"usage: {info.usage}", f"  {info.summary}"])
        return out
    width = 36
    lines = ["The catalog as files: /schema/table.table (views: .view). Paths may be relative,"]
    lines.append("globbed (/sales/order*) or typed case-insensitively; pipes: grep -ri email / | head -5.")
    lines.append("")
    for c in COMMANDS.values():
        if c.name in ALIASES:
            continue
        if len(c.usage) <= width:
            lines.append(f"  {c.usage:<{width}}  {c.summary}")
        else:
            lines += [f"  {c.usage}", f"  {'':<{width}}  {c.summary}"]
    lines.append("")
    lines.append("also: less, more (= cat), ll (= ls -l); ; && || between commands; 2>/dev/null, 2>&1.")
    lines.append("exit codes: 0 ok, 1 nothing found or failed, 2 usage error, 127 unknown command.")
    return Output(lines)


def _xargs(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    """Run a command with the piped words appended, e.g. `find / -name '*order*' | xargs head -3`."""
    if not words:
        raise UsageError("missing command (usage: xargs COMMAND [ARG...])")
    if words[0].text.startswith("-"):
        raise UsageError(f"invalid option -- '{words[0].text.lstrip('-')[:1]}'")
    if words[0].text == "xargs":
        raise UsageError("xargs cannot run xargs")
    extra = [Word(token) for line in stdin or [] for token in line.split()]
    if ctx.run_line is None:
        return Output().error("xargs: unavailable here")
    return ctx.run_line([*words, *extra], None)


def _ll(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    return navigation.ls(ctx, [Word("-l"), *words], stdin)


_TABLE = [
    (
        "ls",
        "ls [-l] [-d] [-R] [PATH...]",
        "list schemas or tables (-l: rows, columns, comment)",
        navigation.ls,
    ),
    ("cd", "cd [PATH | -]", "change the working directory", navigation.cd),
    ("pwd", "pwd", "print the working directory", navigation.pwd),
    (
        "cat",
        "cat [-n] [-s] [PATH...]",
        "print table cards (-s: add sample rows)",
        navigation.cat,
    ),
    ("head", "head [-n N | -N] [PATH...]", "first N lines (default 10) of cards or input", filters.head),
    ("tail", "tail [-n N | -n +N] [PATH...]", "last N lines, or from line N on", filters.tail),
    (
        "tree",
        "tree [-L N] [-d] [PATH...]",
        "the tree below a directory (-L: depth)",
        navigation.tree,
    ),
    (
        "find",
        "find [PATH...] [-name P] [-iname P] [-path P] [-type f|d] [-maxdepth N] [-o] [!]",
        "paths whose name matches a glob (a table also matches without .table)",
        navigation.find,
    ),
    (
        "grep",
        "grep [-irlLncwxvoEFhHq] [-e P] [-m N] PATTERN [PATH...]",
        "search cards (a directory is searched recursively) or piped input",
        grep_command,
    ),
    ("wc", "wc [-l] [-w] [-c] [PATH...]", "count lines, words, characters", filters.wc),
    ("sort", "sort [-r] [-u] [-n] [-f] [PATH...]", "sort lines", filters.sort),
    (
        "uniq",
        "uniq [-c] [-d] [-u] [-i] [PATH]",
        "collapse repeated lines (-c: count)",
        filters.uniq,
    ),
    (
        "sample",
        "sample [-n N] [-c COLUMN] PATH...",
        "real rows from the database (-c: a column's most frequent values, counted)",
        navigation.sample,
    ),
    ("echo", "echo [TEXT...]", "print text", filters.echo),
    ("xargs", "xargs COMMAND [ARG...]", "run COMMAND with the piped words as arguments", _xargs),
    ("help", "help [COMMAND]", "this list, or one command's usage", _help),
]

COMMANDS: dict[str, CommandInfo] = {
    name: CommandInfo(name, usage, summary, run) for name, usage, summary, run in _TABLE
}
ALIASES = {"less": "cat", "more": "cat", "ll": "ls"}
for _alias, _target in ALIASES.items():
    _info = COMMANDS[_target]
    COMMANDS[_alias] = CommandInfo(_alias, _info.usage, _info.summary, _ll if _alias == "ll" else _info.run)


def usage_error(name: str, message: str) -> Output:
    info = COMMANDS.get(name)
    about_usage = "option" in message or message.startswith("missing")
    hint = f" (usage: {info.usage})" if info and about_usage and "usage:" not in message else ""
    return Output([], [f"{name}: {message}{hint}"], EXIT_USAGE)

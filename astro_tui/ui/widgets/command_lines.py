"""A how-to laid out for its width: prose wrapped under its own indent, commands that still run
when copied."""

from __future__ import annotations

import textwrap
from itertools import groupby

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

COMMAND_INDENT = 4
"""A line indented this much (or more) is a command or a setting to copy."""
SHIFTS = (0, 2)
"""Where a command would have to break inside its options, the whole how-to moves left by the
first of these that lets it break only between them: the nesting stays as written."""
CONTINUED = 2
"""How much further a command's continuation lines are indented."""


class HowTo:
    """Paragraphs (consecutive lines of one indent) are wrapped under that indent; commands all
    share one indent, and one that does not fit is broken with a trailing ` \\`, which a shell
    reads as one line — between its options (`--flag value` stays together) when they fit, never
    inside a word: a wrap in the middle of a URL would break the copy. A setting (`key = value`)
    is never broken: TOML has no continuation lines."""

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def plain(self) -> str:
        """The text as written, as a `Text` gives it (selection, copy, tests)."""
        return self.text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in howto_lines(self.text, options.max_width):
            yield Text(line)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        lines = self.text.splitlines()
        words = [len(w) for line in lines for w in line.split()] or [0]
        return Measurement(max(words) + COMMAND_INDENT + CONTINUED, max(map(len, lines), default=0))


def howto_lines(text: str, width: int) -> list[str]:
    lines = text.rstrip().splitlines()
    commands = [line.strip() for line in lines if _kind(line)[0] == "command"]
    settings = [line.strip() for line in lines if _kind(line)[0] == "setting"]

    def fits(shift: int) -> bool:
        indent = COMMAND_INDENT - shift
        return all(_fits(_units(c), indent, width) for c in commands) and all(
            indent + len(line) <= width for line in settings
        )

    shift = next((n for n in SHIFTS if fits(n)), SHIFTS[-1])
    out: list[str] = []
    for (kind, depth), group in groupby(lines, key=_kind):
        block = list(group)
        if kind == "blank":
            out += [""] * len(block)
        elif kind == "command":
            for line in block:
                out += fit_command(line.strip(), width, COMMAND_INDENT - shift)
        elif kind == "setting":
            out += [" " * (COMMAND_INDENT - shift) + line.strip() for line in block]
        else:
            indent = " " * max(depth - shift, 0)
            out += textwrap.wrap(
                " ".join(line.strip() for line in block),
                width=max(width, len(indent) + 1),
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
    return out


def fit_command(command: str, width: int, indent: int = COMMAND_INDENT) -> list[str]:
    """One command as lines a shell reads as one: options whole where they fit, else words."""
    units = _units(command)
    if not _fits(units, indent, width):
        units = command.split()
    parts: list[str] = []
    current = " " * indent + units[0]
    for n, unit in enumerate(units[1:], start=2):
        if len(current) + 1 + len(unit) + (2 if n < len(units) else 0) > width:
            parts.append(current + " \\")
            current = " " * (indent + CONTINUED) + unit
        else:
            current = f"{current} {unit}"
    return [*parts, current]


def _units(command: str) -> list[str]:
    """Words, with an option's value kept beside it (`--base-url URL`)."""
    units: list[str] = []
    for word in command.split():
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + word
        else:
            units.append(word)
    return units or [""]


def _fits(units: list[str], indent: int, width: int) -> bool:
    if indent + len(" ".join(units)) <= width:
        return True
    return indent + len(units[0]) + 2 <= width and all(
        indent + CONTINUED + len(unit) + (2 if n < len(units) else 0) <= width
        for n, unit in enumerate(units[1:], start=2)
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _kind(line: str) -> tuple[str, int]:
    if not line.strip():
        return "blank", 0
    if _indent(line) >= COMMAND_INDENT:
        setting = " = " in line or line.lstrip().startswith("#")
        return ("setting" if setting else "command"), 0
    return "prose", _indent(line)

"""Commands to copy, laid out so that a copy still runs at any width."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text


class CommandLines:
    """Lines of shell commands (or settings) for a person to copy. One that does not fit first
    gives up its indent, then is broken between words with a trailing ` \\`, which a shell
    reads as one line: a wrap in the middle of a URL would break the copy."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            for part in fit_command(line, options.max_width):
                yield Text(part)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        words = [len(w) for line in self.lines for w in line.split()] or [0]
        return Measurement(max(words) + 4, max((len(line) for line in self.lines), default=0))


def fit_command(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    line = "  " + line.strip()
    if len(line) <= width:
        return [line]
    parts: list[str] = []
    current = ""
    for word in line.split():
        if current and len(current) + 1 + len(word) + 2 > width:
            parts.append(current + " \\")
            current = "    " + word
        else:
            current = f"{current} {word}" if current else "  " + word
    return [*parts, current]

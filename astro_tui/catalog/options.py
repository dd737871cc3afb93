"""Unix option parsing for the shell's commands: combined flags, attached values, `--`.

GNU-style: options may follow operands (`grep email / -i`), `-ri` is `-r -i`,
`-n5` and `-n 5` are the same, `-5` means `-n 5` where a command says so, and
`--help` anywhere asks for usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from astro_tui.catalog.syntax import Word
from astro_tui.errors import AstroError


class UsageError(AstroError):
    """A bad flag or operand; `str()` is the one-line message without the command name."""


class HelpRequested(Exception):
    """`--help` was given."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """`flags` take no value, `values` take one; `long` maps long names to short letters."""

    flags: str = ""
    values: str = ""
    long: dict[str, str] = field(default_factory=dict)
    numeric: str | None = None
    permute: bool = True


@dataclass(slots=True)
class Options:
    flags: set[str] = field(default_factory=set)
    values: dict[str, list[str]] = field(default_factory=dict)
    operands: list[Word] = field(default_factory=list)

    def has(self, letter: str) -> bool:
        return letter in self.flags

    def value(self, letter: str) -> str | None:
        found = self.values.get(letter)
        return found[-1] if found else None

    def int_value(self, letter: str, default: int, *, minimum: int = 0) -> int:
        text = self.value(letter)
        if text is None:
            return default
        try:
            number = int(text)
        except ValueError:
            raise UsageError(f"invalid number: '{text}'") from None
        if number < minimum:
            raise UsageError(f"invalid number: '{text}'")
        return number


def parse_options(words: list[Word], spec: OptionSpec) -> Options:
    parsed = Options()
    i = 0
    while i < len(words):
        word = words[i]
        text = word.text
        i += 1
        if text == "--":
            parsed.operands.extend(words[i:])
            break
        if text == "--help":
            raise HelpRequested
        if text.startswith("--"):
            name, eq, value = text[2:].partition("=")
            letter = spec.long.get(name)
            if letter is None:
                raise UsageError(f"unrecognized option '{text}'")
            if letter in spec.values:
                if not eq:
                    if i >= len(words):
                        raise UsageError(f"option '--{name}' requires an argument")
                    value, i = words[i].text, i + 1
                parsed.values.setdefault(letter, []).append(value)
            elif eq:
                raise UsageError(f"option '--{name}' doesn't allow an argument")
            else:
                parsed.flags.add(letter)
            continue
        if len(text) < 2 or not text.startswith("-"):
            parsed.operands.append(word)
            if not spec.permute:
                parsed.operands.extend(words[i:])
                break
            continue
        if spec.numeric and text[1:].isascii() and text[1:].isdigit():
            parsed.values.setdefault(spec.numeric, []).append(text[1:])
            continue
        j = 1
        while j < len(text):
            letter = text[j]
            if letter in spec.values:
                value = text[j + 1 :]
                if not value:
                    if i >= len(words):
                        raise UsageError(f"option requires an argument -- '{letter}'")
                    value, i = words[i].text, i + 1
                parsed.values.setdefault(letter, []).append(value)
                break
            if letter not in spec.flags:
                raise UsageError(f"invalid option -- '{letter}'")
            parsed.flags.add(letter)
            j += 1
    return parsed

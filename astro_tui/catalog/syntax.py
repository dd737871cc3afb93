"""The command line grammar: POSIX-style words and quoting, pipes, lists and a few redirections.

Written by hand rather than with `shlex` because a word must remember which of
its characters were quoted: `cat "/sales/a*b.table"` names one file while
`cat /sales/a*` is a glob. Redirections that would write a file are parsed so
they can be refused with a reason; `2>/dev/null` and `2>&1` work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from astro_tui.errors import AstroError

_GLOB_CHARS = "*?["
_OPERATOR_START = "|&;<>"


class ShellSyntaxError(AstroError):
    """`str()` is a bash-like message, e.g. "syntax error near unexpected token `|'"."""


@dataclass(frozen=True, slots=True)
class Word:
    """`text` has quotes removed; `pattern` is set when unquoted glob characters make it a glob."""

    text: str
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class Redirect:
    """`fd` is 1, 2 or 0 (stdin); `target` is a word, or `&N` for a duplication."""

    fd: int
    append: bool
    target: str


@dataclass(slots=True)
class Command:
    words: list[Word]
    redirects: list[Redirect] = field(default_factory=list)


@dataclass(slots=True)
class Pipeline:
    commands: list[Command]


@dataclass(frozen=True, slots=True)
class _Op:
    text: str


@dataclass(frozen=True, slots=True)
class _Redir:
    fd: int
    op: str
    dup: str | None


def parse(line: str) -> list[tuple[str, Pipeline]]:
    """(connector, pipeline) pairs; the connector says when to run it: `;`, `&&` or `||`."""
    tokens = _tokenize(line)
    result: list[tuple[str, Pipeline]] = []
    connector = ";"
    commands: list[Command] = []
    current = Command([])
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Word):
            current.words.append(token)
        elif isinstance(token, _Redir):
            target = token.dup
            if target is None:
                following = tokens[i + 1] if i + 1 < len(tokens) else None
                if not isinstance(following, Word):
                    raise ShellSyntaxError(_unexpected(following))
                target = following.text
                i += 1
            fd = 0 if token.op == "<" else token.fd
            current.redirects.append(Redirect(fd, token.op == ">>", target))
        else:
            if not current.words:
                raise ShellSyntaxError(_unexpected(token))
            commands.append(current)
            current = Command([])
            if token.text != "|":
                result.append((connector, Pipeline(commands)))
                commands, connector = [], token.text
        i += 1
    if current.words:
        commands.append(current)
    elif current.redirects or commands or connector in ("&&", "||"):
        raise ShellSyntaxError(_unexpected(None))
    if commands:
        result.append((connector, Pipeline(commands)))
    return result


def _unexpected(token: object) -> str:
    if isinstance(token, _Op):
        return f"syntax error near unexpected token `{token.text}'"
    if isinstance(token, _Redir):
        return f"syntax error near unexpected token `{token.op}'"
    return "syntax error near unexpected token `newline'"


def _tokenize(line: str) -> list[Word | _Op | _Redir]:
    tokens: list[Word | _Op | _Redir] = []
    text: list[str] = []
    pattern: list[str] = []
    magic = False
    started = False
    quoted_any = False
    i, n = 0, len(line)

    def finish() -> None:
        nonlocal text, pattern, magic, started, quoted_any
        if started:
            tokens.append(Word("".join(text), "".join(pattern) if magic else None))
        text, pattern, magic, started, quoted_any = [], [], False, False, False

    def literal(chars: str) -> None:
        text.append(chars)
        pattern.extend(f"[{c}]" if c in _GLOB_CHARS else c for c in chars)

    while i < n:
        c = line[i]
        if c in " \t\n":
            finish()
            i += 1
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unexpected EOF while looking for matching `''")
            literal(line[i + 1 : end])
            started = quoted_any = True
            i = end + 1
        elif c == '"':
            i = _double_quoted(line, i + 1, literal)
            started = quoted_any = True
        elif c == "\\":
            if i + 1 < n:
                literal(line[i + 1])
                started = True
            i += 2
        elif c in _OPERATOR_START:
            fd = 1
            if c in "<>" and started and not quoted_any and _ascii_digits("".join(text)):
                fd = int("".join(text))
                text, pattern, started = [], [], False
            finish()
            i = _operator(line, i, fd, tokens)
        else:
            text.append(c)
            pattern.append(c)
            magic = magic or c in _GLOB_CHARS
            started = True
            i += 1
    finish()
    return tokens


def _double_quoted(line: str, i: int, literal: Callable[[str], None]) -> int:
    """Inside double quotes a backslash escapes only `"`, `\\`, `$` and a backtick."""
    chunk: list[str] = []
    while i < len(line):
        c = line[i]
        if c == '"':
            literal("".join(chunk))
            return i + 1
        if c == "\\" and i + 1 < len(line) and line[i + 1] in '"\\$`':
            chunk.append(line[i + 1])
            i += 2
            continue
        chunk.append(c)
        i += 1
    raise ShellSyntaxError("unexpected EOF while looking for matching `\"'")


def _operator(line: str, i: int, fd: int, tokens: list[Word | _Op | _Redir]) -> int:
    two = line[i : i + 2]
    if two in ("||", "&&"):
        tokens.append(_Op(two))
        return i + 2
    if two == "&>":
        fd, i = 3, i + 1
    c = line[i]
    if c in "|;":
        tokens.append(_Op(c))
        return i + 1
    if c == "&":
        raise ShellSyntaxError("background jobs (&) are not supported")
    op = ">>" if line[i : i + 2] == ">>" else c
    i += len(op)
    dup = None
    if op != "<" and line[i : i + 1] == "&":
        j = i + 1
        while j < len(line) and _ascii_digits(line[j]):
            j += 1
        dup, i = "&" + line[i + 1 : j], j
    tokens.append(_Redir(fd, op, dup))
    return i


def _ascii_digits(text: str) -> bool:
    """`str.isdigit` is true of "²" too, which `int()` refuses; a descriptor is 0-9 only."""
    return text.isascii() and text.isdigit()

"""The DuckDB CLI's reading of a script (`duckdb -f FILE`, `duckdb < FILE`), ported from
`ShellState::ProcessInput` and `SQLIsComplete` in tools/shell/shell.cpp (v1.5).

The shell reads a line at a time (a `\\r` before the `\\n` dropped). With no SQL
pending, a blank or comment-only line is skipped, a line starting with `.` is a dot
command (`.shell`, `.read`, `.system` ...) and one starting with `#` is dropped;
any other line starts a statement. Lines pile up until one holding a `;` leaves
the pile complete by the shell's own small lexer, and the pile goes to DuckDB
whole. Its lexer is not DuckDB's (no escapes in `E'...'`, a `--` comment ends only
at `\\n`), which is why each pile is compared with the statement astro meant.
"""

from __future__ import annotations

from astro_tui.data.client_scripts.steps import Step, sql_step

_SPACE = " \t\n\v\f\r"  # duckdb::StringUtil::CharacterIsSpace


def read(text: str) -> list[Step]:
    steps: list[Step] = []
    pile: str | None = None
    for line in _lines(text):
        if line.startswith("\x03"):  # taken for Ctrl-C even from a file: what is pending is dropped
            pile = None
            continue
        if pile is None and _all_whitespace(line):
            continue
        if pile is None and line[:1] in (".", "#"):
            if line[0] == ".":
                steps.append(Step("command", line))
            continue
        if pile is None:
            prior, pile = 0, line.lstrip(_SPACE)
        else:
            prior, pile = len(pile), pile + "\n" + line
        if pile and ";" in pile[prior:] and _complete(pile):
            steps.append(sql_step(pile))
            pile = None
        elif pile is not None and _all_whitespace(pile):
            pile = None
    if pile and not _all_whitespace(pile):
        steps.append(sql_step(pile))
    return steps


def _lines(text: str) -> list[str]:
    """`local_getline`: up to each `\\n`, a `\\r` right before it dropped; a last line without one."""
    lines = text.split("\n")
    last = lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines] + ([last] if last else [])


def _all_whitespace(z: str) -> bool:
    i, n = 0, len(z)
    while i < n:
        if z[i] in _SPACE:
            i += 1
        elif z.startswith("/*", i):
            end = z.find("*/", i + 2)
            if end < 0:
                return False
            i = end + 2
        elif z.startswith("--", i):
            end = z.find("\n", i + 2)
            if end < 0:
                return True
            i = end + 1
        else:
            return False
    return True


def _complete(z: str) -> bool:
    """`SQLIsComplete`: the text ends in a `;` outside quotes and comments, as the shell lexes it."""
    semicolon = False
    i, n = 0, len(z)
    while i < n:
        c = z[i]
        state: bool | None = False  # None: whitespace, no change
        if c == ";":
            state = True
        elif c in " \r\t\n\f":
            state = None
        elif c == "/" and z.startswith("*", i + 1):
            end = z.find("*/", i + 2)
            if end < 0:
                return False
            i, state = end + 1, None
        elif c == "-" and z.startswith("-", i + 1):
            end = z.find("\n", i)
            if end < 0:
                return semicolon
            i, state = end, None
        elif c == "$":
            tag = _dollar_tag(z, i)
            if tag is not None:
                end = _dollar_end(z, i + len(tag) + 2, tag)
                if end is None:
                    return False
                i, state = end, None
        elif c in "'\"":
            end = z.find(c, i + 1)
            if end < 0:
                return False
            i, state = end, None
        if state is not None:
            semicolon = state
        i += 1
    return semicolon


def _dollar_tag(z: str, at: int) -> str | None:
    """The tag of a dollar quote opening at `at` (`$tag$`), or None when none opens there."""
    idx = 1
    while at + idx < len(z):
        ch = z[at + idx]
        if ch == "$":
            return z[at + 1 : at + idx]
        letter = ("A" <= ch <= "Z") or ("a" <= ch <= "z") or ch == "_" or ord(ch) >= 0x80
        if not letter and not (idx > 1 and "0" <= ch <= "9"):
            return None
        idx += 1
    return None


def _dollar_end(z: str, i: int, tag: str) -> int | None:
    """`skipDollarQuotedString`: the index of the closing quote's last `$`, or None."""
    n = len(z)
    while i < n:
        if z[i] == "$":
            start = i + 1
            end = z.find("$", start)
            if end < 0:
                return None
            if z[start:end] == tag:
                return end
            i = start - 1
        i += 1
    return None

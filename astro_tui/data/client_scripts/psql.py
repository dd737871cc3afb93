"""psql's reading of a script (`psql -f FILE`), after psqlscan.l and mainloop.c.

psql lexes the whole file as the server does (quotes, nested `/* */`, `--` to the
end of the line or a `\\r`, parentheses) and sends a statement at a `;` outside
parentheses; before a statement starts, whitespace and `--` comments are dropped.
Outside quotes a backslash starts one of psql's own commands (`\\!` runs a shell)
and `:name`, `:'name'`, `:"name"` are replaced by psql variables, which the
person's `~/.psqlrc` may set. A backslash inside single quotes is an escape or not
by the server's `standard_conforming_strings`, and `$` starts a dollar quote or
not by what precedes it: the file cannot settle either, so both are refused.
The script's own commands (`\\set ON_ERROR_STOP on`, ...) are whole lines at the
top, each read as a command.
"""

from __future__ import annotations

import re

from astro_tui.data.client_scripts.steps import SQL_SPACE, Step, Unprovable, sql_step

_VARIABLE_NEXT = re.compile(r"[A-Za-z0-9_'\"{\x80-\U0010ffff]")
_CREATE = re.compile(r"create\b", re.I)


def read(text: str) -> list[Step]:
    steps: list[Step] = []
    buf: list[str] = []
    state = ""  # "" outside quotes, "'", '"' or "/*"
    depth = parens = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if state and text[i : i + 2] == "\r\n":
            raise Unprovable("a \\r\\n inside quotes or a comment, which psql versions read differently")
        if state == "'":
            if c == "\\":
                raise Unprovable(
                    "a backslash inside quotes, an escape or not by the server's standard_conforming_strings"
                )
            state = "" if c == "'" else state
        elif state == '"':
            state = "" if c == '"' else state
        elif state == "/*":
            if text.startswith("/*", i):
                depth, i = depth + 1, i + 1
                buf.append("/")
                c = "*"
            elif text.startswith("*/", i):
                depth, i = depth - 1, i + 1
                buf.append("*")
                c = "/"
                state = "" if depth < 0 else state
        elif not buf and c in SQL_SPACE:
            if c == "\v":
                raise Unprovable("a vertical tab between statements, whitespace only to psql 16 and later")
            i += 1
            continue
        elif text.startswith("--", i):
            end = min((p for p in (text.find("\n", i), text.find("\r", i)) if p >= 0), default=n)
            if buf:
                buf.append(text[i:end])
            i = end
            continue
        elif c == "\\":
            line_end = text.find("\n", i)
            line_end = n if line_end < 0 else line_end
            if "\\" in text[i + 1 : line_end]:
                raise Unprovable("a psql command line holding another backslash, where its arguments may end")
            steps.append(Step("command", text[i:line_end]))  # its arguments run to the end of the line
            i = line_end
            continue
        elif c == "$":
            raise Unprovable("a `$` outside quotes, a dollar quote or not by what precedes it")
        elif c == ":":
            if text.startswith("::", i):
                buf.append(":")
                i += 1
            elif _VARIABLE_NEXT.match(text, i + 1):
                raise Unprovable(f"{text[i : i + 12]!r}, which psql replaces when a variable is set")
        elif c in "'\"":
            state = c
        elif text.startswith("/*", i):
            state, depth = "/*", 0
            buf.append("/")
            i, c = i + 1, "*"
        elif c == "(":
            parens += 1
        elif c == ")":
            parens = max(0, parens - 1)
        elif c == ";" and parens == 0:
            buf.append(c)
            steps.append(_statement("".join(buf)))
            buf = []
            i += 1
            continue
        buf.append(c)
        i += 1
    if "".join(buf).strip(SQL_SPACE):
        steps.append(_statement("".join(buf)))  # psql sends what is left at the end of the file
    return steps


def _statement(text: str) -> Step:
    if _CREATE.match(text):
        raise Unprovable("a CREATE statement, whose BEGIN ... END psql counts")
    return sql_step(text)

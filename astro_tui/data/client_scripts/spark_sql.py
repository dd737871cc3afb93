"""spark-sql's reading of a script (`spark-sql -f FILE`), after Hive 2.3's `CliDriver.processReader`
and Spark's `SparkSQLCLIDriver` (`processReader`, `processLine`, `processCmd`).

The file is read a line at a time (`\\n`, `\\r` or `\\r\\n` ends one) and every line
starting with `--` is dropped (after trimming since Spark 4.3, untrimmed in Hive's own
reader: both are read and must agree) *before* statements are split, so a quoted
text can lose a line. The rest is split at `;`: up to Spark 4.2 by `splitSemiColon`,
a small lexer of its own (quotes, backslash escapes, comments, no backticks), since
4.3 by Spark's SQL lexer; both splits are made and must agree, and a backslash
outside a quoted text (which continues a `--` comment for one of them) is refused.
A piece ending in `\\` is joined to the next. A piece starting with `!` runs as a
program, one starting `source` runs a file, `quit`/`exit` stop, and `dfs`,
`crypto`, `compile`, `reload` go to Hive; the rest goes to Spark, which replaces
`${...}` from its configuration. The file is decoded in the platform's encoding, so
a statement holding non-ASCII text is not certain to reach Spark as written.
"""

from __future__ import annotations

import re
import unicodedata

from astro_tui.data.client_scripts.steps import Step, Unprovable

_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_JAVA_SPLIT = re.compile(r"[ \t\n\x0b\f\r]+")
_HIVE = frozenset({"dfs", "crypto", "compile", "reload"})


def read(text: str) -> list[Step]:
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    kept = {"".join(f"{line}\n" for line in lines if not _dropped(line, trim)) for trim in (True, False)}
    if len(kept) != 1:
        raise Unprovable("a line starting with `--` after spaces, which Hive builds drop or keep")
    content = kept.pop()
    pieces = split_semicolon(content)
    if [p for p in pieces if not _blank(p)] != [p for p in lexer_split(content) if not _blank(p)]:
        raise Unprovable("statements that spark-sql splits differently before and since Spark 4.3")
    steps: list[Step] = []
    command = ""
    for piece in pieces:
        if piece.endswith("\\"):
            command += piece[:-1] + ";"
            continue
        command += piece
        if not _blank(command):
            steps.append(_classify(command))
            command = ""
    return steps


def _dropped(line: str, trim: bool) -> bool:
    return (line.strip(_JAVA_TRIM) if trim else line).startswith("--")


def _classify(command: str) -> Step:
    trimmed = command.strip(_JAVA_TRIM)
    first = _JAVA_SPLIT.split(trimmed, maxsplit=1)[0]
    words = {first.lower(), first.casefold(), trimmed.lower()}
    if trimmed.startswith("!") or words & {"source", "quit", "exit", *_HIVE}:
        return Step("command", trimmed)
    if "${" in trimmed:
        raise Unprovable("a `${`, which Spark replaces from its configuration")
    if not trimmed.isascii():
        raise Unprovable("non-ASCII text in a statement, which spark-sql decodes in the platform's encoding")
    return Step("sql", trimmed)


def _blank(text: str) -> bool:
    """Java's `Character.isWhitespace` over every character (StringUtils.isBlank)."""
    return all(
        ch in "\t\n\x0b\f\r\x1c\x1d\x1e\x1f"
        or (unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in "\xa0\u2007\u202f")
        for ch in text
    )


def split_semicolon(line: str) -> list[str]:
    """`SparkSQLCLIDriver.splitSemiColon`, line for line."""
    single = double = simple = leaving = escape = statement = False
    level = begin = 0
    found: list[str] = []
    for index, ch in enumerate(line):
        if leaving:
            level, leaving = level - 1, False
        comment = simple or level > 0
        if ch == "'" and not comment:
            if not escape and not double:
                single = not single
        elif ch == '"' and not comment:
            if not escape and not single:
                double = not double
        elif ch == "-":
            if not (double or single or comment) and line.startswith("-", index + 1):
                simple = True
        elif ch == ";":
            if not (single or double or comment):
                if statement:
                    found.append(line[begin:index])
                begin, statement = index + 1, False
        elif ch == "\n":
            if not escape:
                simple = False
        elif ch == "/" and not simple:
            if single or double:
                pass
            elif level > 0 and line[index - 1] == "*":
                leaving = True
            elif line.startswith("*", index + 1):
                level += 1
        if escape:
            escape = False
        elif ch == "\\":
            escape = True
        comment = simple or level > 0
        statement = statement or (not comment and index > begin and ch.strip(_JAVA_TRIM) != "")
    if not (leaving and level == 1) and (statement or level > 0):
        found.append(line[begin:])
    return found


def lexer_split(text: str) -> list[str]:
    """The split of Spark's SQL lexer (spark-sql since 4.3): at a `;` outside quotes (`'`, `"` with
    backslash escapes; backticks), `--` comments and nested `/* */` comments. A backslash outside a
    quoted text, an unterminated quote or comment (the lexer recovers from them) are Unprovable."""
    pieces: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if c != "`" and text[j] == "\\" else 1
            if j >= n:
                raise Unprovable("an unterminated quote, which Spark's lexer skips to go on")
            i = j + 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            if depth:
                raise Unprovable("an unterminated comment, which Spark's lexer reads its own way")
        elif c == "\\":
            raise Unprovable("a backslash outside a quoted text, which continues a `--` comment for Spark")
        else:
            if c == ";":
                pieces.append(text[start:i])
                start = i + 1
            i += 1
    pieces.append(text[start:])
    return pieces

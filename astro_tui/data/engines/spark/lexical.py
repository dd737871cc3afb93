"""Text Spark could read otherwise than sqlglot, or that acts while Spark only analyzes it.

These rules look at the raw characters, whatever a lexer makes of them, so they
hold even where sqlglot and Spark disagree about what is a comment or a string;
both guard layers run them first (`guard.py` before sqlglot, `verdict.py` before
anything is sent to Spark's analyzer).

- A backslash before a line break: Spark continues a `--` comment over it
  (`-- \\⏎DROP TABLE t` is one comment to sqlglot, a DROP to Spark).
- Controls other than tab and line breaks, and Unicode spaces, line separators,
  invisible and direction marks: where a lexer puts them is a guess.
- `${`: Spark substitutes variables (`${env:HOME}`) before parsing, unless the
  session turned substitution off and proved it (`substitution_off`).
- The words EXECUTE and IMMEDIATE together: Spark runs `EXECUTE IMMEDIATE 'DROP …'`
  while it *analyzes* the statement, before any plan can be judged. Spark upper-cases
  a keyword character by character (`ımmedıate` is IMMEDIATE), so the words are
  looked for after the same folding, in comments and strings too.
- Size: the bound on every parser's work, here and on the server.
"""

from __future__ import annotations

import re

from astro_tui.data.errors import GuardError

MAX_SQL_CHARS = 100_000

_CONTINUED_LINE = re.compile(r"\\[\r\n]")
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00a0\u1680\u180e\u2000-\u200f\u2028-\u202f"
    "\u205f-\u206f\u3000\ufeff\ud800-\udfff]"
)
_EXECUTE = re.compile(r"(?<![A-Z0-9_])EXECUTE(?![A-Z0-9_])")
_IMMEDIATE = re.compile(r"(?<![A-Z0-9_])IMMEDIATE(?![A-Z0-9_])")


def check_text(sql: str, *, substitution_off: bool) -> None:
    """Raise GuardError with one line when the raw text falls under a rule above."""
    if not sql or not sql.strip():
        raise GuardError("refused: empty SQL")
    if len(sql) > MAX_SQL_CHARS:
        raise GuardError(f"refused: the SQL is longer than {MAX_SQL_CHARS:,} characters")
    found = _INVISIBLE.search(sql)
    if found:
        raise GuardError(
            f"refused: the SQL holds the invisible or control character U+{ord(found.group()):04X}, "
            "which Spark and the guard could read differently"
        )
    if _CONTINUED_LINE.search(sql):
        raise GuardError(
            "refused: a backslash at the end of a line (Spark continues a -- comment onto the next line)"
        )
    if "${" in sql and not substitution_off:
        raise GuardError("refused: ${…} is substituted by Spark before it parses the statement")
    folded = fold(sql)
    if _EXECUTE.search(folded) and _IMMEDIATE.search(folded):
        raise GuardError("refused: EXECUTE IMMEDIATE runs SQL given as text")


def fold(sql: str) -> str:
    """Upper case, one character for one, as Spark's lexer matches keywords."""
    if sql.isascii():
        return sql.upper()
    return "".join(u if len(u := c.upper()) == 1 else c for c in sql)

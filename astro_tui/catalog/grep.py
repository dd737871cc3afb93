"""`grep` over table cards and piped text, with GNU's pattern dialects and output shapes.

Without `-E` the pattern is a POSIX basic regex as GNU grep reads it (`\\|` is
alternation, a bare `|` is a character); `-E` is extended, `-F` fixed. Both are
translated to RE2's syntax and matched by Arrow's RE2 kernels, which run in time
linear in the text: a pattern like `(.|.)*Q$` cannot freeze the app the way a
backtracking engine would. RE2 has no back-references or look-around; such a
pattern is refused. A recursive search matches every line of every card in one
call over a cached array, which is what keeps `grep -ri email /` over 10,000
tables within a couple of hundred milliseconds.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from astro_tui.catalog.options import Options, OptionSpec, UsageError, parse_options
from astro_tui.catalog.runtime import EXIT_FAIL, EXIT_OK, EXIT_USAGE, Output, ShellContext
from astro_tui.catalog.syntax import Word
from astro_tui.catalog.vfs import Dir, File, VirtualFS, string_array

if TYPE_CHECKING:
    import pyarrow as pa

# Arrow is imported where a pattern is matched: a shell that only lists (`astro shell "ls /"`)
# pays none of it (~0.2 s with NumPy).

GREP_SPEC = OptionSpec(
    flags="iyrRlLncwxvoEFGhHsq",
    values="em",
    long={
        "ignore-case": "i",
        "recursive": "r",
        "files-with-matches": "l",
        "files-without-match": "L",
        "line-number": "n",
        "count": "c",
        "word-regexp": "w",
        "line-regexp": "x",
        "invert-match": "v",
        "only-matching": "o",
        "extended-regexp": "E",
        "fixed-strings": "F",
        "basic-regexp": "G",
        "no-filename": "h",
        "with-filename": "H",
        "no-messages": "s",
        "quiet": "q",
        "silent": "q",
        "regexp": "e",
        "max-count": "m",
    },
)

_POSIX_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r"\s",
    "blank": r" \t",
    "punct": r"!-/:-@\[-`{-~",
    "xdigit": "0-9A-Fa-f",
    "word": r"\w",
}
_BRE_META = set("\\.[]*^$")
_ERE_META = _BRE_META | set("+?(){}|")
_RE2_META = frozenset("\\.+*?()|[]{}^$")
_UNSUPPORTED = ("invalid perl operator", "invalid escape sequence", "invalid repetition size", "too large")


@dataclass(frozen=True, slots=True)
class Matcher:
    """The pattern in RE2 syntax, flags inline (`(?i)`), matched one line at a time."""

    pattern: str

    def mask(self, lines: pa.Array) -> pa.BooleanArray:
        """Whether each line matches."""
        import pyarrow.compute as pc

        return pc.match_substring_regex(lines, self.pattern)

    def test(self, lines: list[str]) -> list[bool]:
        return self.mask(string_array(lines)).to_pylist() if lines else []

    def only_matching(self, lines: list[str]) -> list[list[str]]:
        """The non-empty matches in each line, left to right, as `grep -o` prints them.

        RE2 replaces every match with itself between two marks (a character no
        line contains), and splitting on the mark leaves the matches at odd places.
        """
        if not lines:
            return []
        import pyarrow.compute as pc

        mark = _unused_char(lines)
        marked = pc.replace_substring_regex(string_array(lines), self.pattern, mark + "\\0" + mark)
        return [[m for m in text.split(mark)[1::2] if m] for text in marked.to_pylist()]


def _unused_char(lines: list[str]) -> str:
    joined = "".join(lines)
    for code in itertools.chain(range(0xE000, 0xF900), range(0xF0000, 0x10FFFE)):
        if chr(code) not in joined:
            return chr(code)
    raise UsageError("line uses every private-use character")  # pragma: no cover - 137,000 distinct ones


@functools.cache
def _probe() -> pa.Array:
    """Built on first use: `pa.array` imports pandas when it is installed (seconds under load)."""
    import pyarrow as pa

    return pa.array([""], pa.large_string())


def compile_matcher(patterns: list[str], opts: Options) -> Matcher:
    import pyarrow as pa
    import pyarrow.compute as pc

    mode = "F" if opts.has("F") else "E" if opts.has("E") else "G"
    parts = [_translate(p, mode) for p in patterns]
    body = "|".join(f"(?:{p})" for p in parts) if len(parts) > 1 else parts[0]
    if opts.has("w"):
        body = rf"\b(?:{body})\b"
    if opts.has("x"):
        body = rf"^(?:{body})$"
    if opts.has("i") or opts.has("y"):
        body = "(?i)" + body
    try:
        pc.match_substring_regex(_probe(), body)
    except pa.ArrowInvalid as exc:
        reason = str(exc).removeprefix("Invalid regular expression: ")
        if any(marker in reason for marker in _UNSUPPORTED):
            raise _unsupported(patterns, reason) from None
        raise UsageError(f"invalid regular expression: {reason}") from None
    return Matcher(body)


def _unsupported(patterns: list[str], reason: str) -> UsageError:
    shown = " ".join(patterns).replace("\n", "\\n").replace("\r", "\\r")
    if len(shown) > 80:
        shown = shown[:79] + "…"
    return UsageError(f"unsupported pattern: {shown} ({reason})")


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _RE2_META else c for c in text)


def _translate(pattern: str, mode: str) -> str:
    if mode == "F":
        return _escape(pattern)
    out: list[str] = []
    i, n = 0, len(pattern)
    basic = mode == "G"
    while i < n:
        c = pattern[i]
        if c == "[":
            end = _bracket_end(pattern, i)
            if end < 0:
                raise UsageError("invalid regular expression: unmatched [")
            out.append(_bracket(pattern[i : end + 1]))
            i = end + 1
            continue
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            i += 2
            if nxt in "<>":
                out.append(r"\b")
            elif basic and nxt in "|(){}+?":
                out.append(nxt)
            elif nxt in "123456789":
                raise _unsupported([pattern], f"back-reference \\{nxt}")
            elif nxt in "wWsSbBdD0":
                out.append("\\" + nxt)
            else:
                out.append(_escape(nxt))
            continue
        if basic and c in "|(){}+?":
            out.append("\\" + c)
        elif basic and c == "*" and (not out or out[-1] in ("(", "|", "^")):
            out.append(r"\*")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _bracket_end(pattern: str, start: int) -> int:
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            if close > 0:
                i = close + 2
                continue
        if pattern[i] == "]":
            return i
        i += 1
    return -1


def _bracket(expr: str) -> str:
    """POSIX classes become ranges; a literal `[` or `\\` inside stays literal."""
    body = expr[1:-1]
    negate = body.startswith("^")
    if negate:
        body = body[1:]
    out: list[str] = []
    i = 0
    while i < len(body):
        if body.startswith("[:", i):
            close = body.find(":]", i + 2)
            name = body[i + 2 : close] if close > 0 else ""
            if name in _POSIX_CLASSES:
                out.append(_POSIX_CLASSES[name])
                i = close + 2
                continue
        c = body[i]
        if c == "\\" and i + 1 < len(body) and body[i + 1] in "wWsSdD]\\-^":
            out.append(body[i : i + 2])
            i += 2
            continue
        out.append("\\" + c if c in "[\\" or (c == "]" and i == 0) else c)
        i += 1
    return "[" + ("^" if negate else "") + "".join(out) + "]"


Hit = tuple[int, str]
"""(line number, line)."""


def grep_command(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    out = Output()
    opts = parse_options(words, GREP_SPEC)
    operands = list(opts.operands)
    patterns = opts.values.get("e", [])
    if not patterns:
        if not operands:
            raise UsageError("missing PATTERN (usage: grep [OPTION...] PATTERN [PATH...])")
        patterns = [operands.pop(0).text]
    matcher = compile_matcher(patterns, opts)
    max_count = opts.int_value("m", -1, minimum=0) if opts.value("m") is not None else None
    invert = opts.has("v")
    if not operands and stdin is not None:
        hits = grep_lines(matcher, stdin, invert)
        return _format(out, opts, matcher, [(None, hits)], prefix=opts.has("H"), max_count=max_count)

    groups: list[tuple[File | None, list[Hit]]] = []
    recursive_scan = False
    failed = False
    targets = ctx.operands(operands) if operands else ctx.operands([Word(ctx.cwd)])
    for operand in targets:
        node = operand.node
        if node is None:
            failed = True
            if not opts.has("s"):
                out.stderr.append(f"grep: {operand.text}: {operand.problem}")
            continue
        if isinstance(node, Dir):
            recursive_scan = True
            if node.last > node.first:
                every = invert or opts.has("L")
                groups.extend(scan_cards(ctx.vfs, matcher, node.first, node.last, invert=invert, every=every))
        else:
            groups.append((node, grep_lines(matcher, ctx.vfs.card(node).splitlines(), invert)))
    prefix = opts.has("H") or (not opts.has("h") and (recursive_scan or len(targets) > 1))
    result = _format(out, opts, matcher, groups, prefix=prefix, max_count=max_count, sparse=recursive_scan)
    if failed and not (opts.has("q") and result.code == EXIT_OK):
        result.code = EXIT_USAGE
    return result


def grep_lines(matcher: Matcher, lines: list[str], invert: bool) -> list[Hit]:
    tests = matcher.test(lines)
    return [(n, line) for n, (line, hit) in enumerate(zip(lines, tests, strict=True), 1) if hit != invert]


def scan_cards(
    vfs: VirtualFS, matcher: Matcher, first: int, last: int, *, invert: bool = False, every: bool = False
) -> list[tuple[File, list[Hit]]]:
    """The cards among first..last with matching lines (every card if `every`), and those lines.

    One RE2 pass over the cached array of every card's lines; only the hits
    come back to Python.
    """
    import pyarrow.compute as pc

    cards = vfs.card_lines()
    lo, hi = cards.starts[first], cards.starts[last]
    lines = cards.lines.slice(lo, hi - lo)
    mask = matcher.mask(lines)
    found = pc.indices_nonzero(pc.invert(mask) if invert else mask)
    owners = cards.owners.slice(lo, hi - lo).take(found).to_pylist()
    texts = lines.take(found).to_pylist()
    groups: dict[int, list[Hit]] = {i: [] for i in range(first, last)} if every else {}
    starts = cards.starts
    for owner, row, text in zip(owners, found.to_pylist(), texts, strict=True):
        hits = groups.get(owner)
        if hits is None:
            hits = groups[owner] = []
        hits.append((lo + row - starts[owner] + 1, text))
    return [(vfs.files[i], hits) for i, hits in groups.items()]


def _format(
    out: Output,
    opts: Options,
    matcher: Matcher,
    groups: list[tuple[File | None, list[Hit]]],
    *,
    prefix: bool,
    max_count: int | None,
    sparse: bool = False,
) -> Output:
    lines = out.stdout
    matched = False
    for file, hits in groups:
        if max_count is not None:
            hits = hits[:max_count]
        name = file.path if file is not None else "(standard input)"
        if opts.has("q"):
            matched = matched or bool(hits)
            continue
        if opts.has("L"):
            if not hits:
                lines.append(name)
                matched = True
            continue
        if not hits:
            if opts.has("c") and not sparse:
                lines.append(f"{name}:0" if prefix else "0")
            continue
        matched = True
        if opts.has("l"):
            lines.append(name)
        elif opts.has("c"):
            lines.append(f"{name}:{len(hits)}" if prefix else str(len(hits)))
        else:
            lead = f"{name}:" if prefix else ""
            numbered = opts.has("n")
            if opts.has("o") and not opts.has("v"):
                found = matcher.only_matching([line for _, line in hits])
                for (number, _), matches in zip(hits, found, strict=True):
                    head = f"{lead}{number}:" if numbered else lead
                    lines.extend(head + m for m in matches)
            elif numbered:
                lines.extend(f"{lead}{number}:{line}" for number, line in hits)
            else:
                lines.extend(lead + line for _, line in hits)
    out.code = EXIT_OK if matched else EXIT_FAIL
    return out

"""Line filters for pipes: head, tail, wc, sort, uniq, echo — over cards or piped lines."""

from __future__ import annotations

import re

from astro_tui.catalog.options import OptionSpec, UsageError, parse_options
from astro_tui.catalog.runtime import Output, ShellContext, read_inputs
from astro_tui.catalog.syntax import Word

HEAD_SPEC = OptionSpec(flags="qv", values="n", long={"lines": "n", "quiet": "q"}, numeric="n")


def head(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    return _ends(ctx, "head", words, stdin)


def tail(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    return _ends(ctx, "tail", words, stdin)


def _ends(ctx: ShellContext, command: str, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, HEAD_SPEC)
    text = opts.value("n") or "10"
    from_start = command == "tail" and text.startswith("+")
    try:
        count = int(text.lstrip("+"))
    except ValueError:
        raise UsageError(f"invalid number of lines: '{text}'") from None
    if count < 0:
        raise UsageError(f"invalid number of lines: '{text}'")
    out = Output()
    inputs = read_inputs(ctx, command, opts.operands, stdin, out)
    headers = len(inputs) > 1 and not opts.has("q")
    for index, (name, lines) in enumerate(inputs):
        if headers:
            if index:
                out.stdout.append("")
            out.stdout.append(f"==> {name or 'standard input'} <==")
        if command == "head":
            out.stdout.extend(lines[:count])
        elif from_start:
            out.stdout.extend(lines[max(count - 1, 0) :])
        else:
            out.stdout.extend(lines[-count:] if count else [])
    return out


WC_SPEC = OptionSpec(flags="lwcmL", long={"lines": "l", "words": "w", "bytes": "c", "chars": "m"})


def wc(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, WC_SPEC)
    chosen = [f for f in "lwmc" if opts.has(f)] or ["l", "w", "c"]
    out = Output()
    inputs = read_inputs(ctx, "wc", opts.operands, stdin, out)
    totals = dict.fromkeys(chosen, 0)
    rows: list[tuple[list[int], str | None]] = []
    for name, lines in inputs:
        counts = []
        for flag in chosen:
            if flag == "l":
                value = len(lines)
            elif flag == "w":
                value = sum(len(line.split()) for line in lines)
            elif flag == "m":
                value = sum(len(line) + 1 for line in lines)
            else:
                value = sum(len(line.encode("utf-8")) + 1 for line in lines)
            totals[flag] += value
            counts.append(value)
        rows.append((counts, name))
    if len(rows) > 1:
        rows.append(([totals[f] for f in chosen], "total"))
    single = len(rows) == 1 and len(chosen) == 1
    width = max((len(str(v)) for counts, _ in rows for v in counts), default=1)
    for counts, name in rows:
        numbers = " ".join(str(v) if single else str(v).rjust(width) for v in counts)
        out.stdout.append(f"{numbers} {name}" if name else numbers)
    return out


SORT_SPEC = OptionSpec(
    flags="rufnb",
    long={"reverse": "r", "unique": "u", "ignore-case": "f", "numeric-sort": "n"},
)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")


def sort(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, SORT_SPEC)
    out = Output()
    lines = [line for _, chunk in read_inputs(ctx, "sort", opts.operands, stdin, out) for line in chunk]
    fold = opts.has("f")

    def key(line: str) -> tuple[float, str]:
        text = line.lower() if fold else line
        if opts.has("n"):
            match = _NUMBER.match(line)
            return (float(match.group(1)) if match else 0.0, text)
        return (0.0, text)

    ordered = sorted(lines, key=key, reverse=opts.has("r"))
    if opts.has("u"):
        seen: set[str] = set()
        unique = []
        for line in ordered:
            marker = line.lower() if fold else line
            if marker not in seen:
                seen.add(marker)
                unique.append(line)
        ordered = unique
    out.stdout.extend(ordered)
    return out


UNIQ_SPEC = OptionSpec(flags="cdui", long={"count": "c", "repeated": "d", "unique": "u", "ignore-case": "i"})


def uniq(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, UNIQ_SPEC)
    out = Output()
    lines = [line for _, chunk in read_inputs(ctx, "uniq", opts.operands[:1], stdin, out) for line in chunk]
    runs: list[tuple[str, int]] = []
    for line in lines:
        marker = line.lower() if opts.has("i") else line
        if runs and (runs[-1][0].lower() if opts.has("i") else runs[-1][0]) == marker:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    for line, n in runs:
        if (opts.has("d") and n < 2) or (opts.has("u") and n > 1):
            continue
        out.stdout.append(f"{n:7} {line}" if opts.has("c") else line)
    return out


def echo(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    texts = [w.text for w in words]
    if texts[:1] == ["-n"]:
        texts = texts[1:]
    return Output(" ".join(texts).split("\n"))

"""Commands that walk the tree: ls, cd, pwd, cat, tree, find, and sample (the one that queries).

Output follows the Unix tools closely enough that habits carry over, with two
deliberate differences: directories are listed with a trailing `/`, and every
path printed is absolute, so a line of output can be pasted into the next command.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from astro_tui.catalog.introspect import frequent_values, sample_values
from astro_tui.catalog.options import OptionSpec, UsageError, parse_options
from astro_tui.catalog.runtime import EXIT_USAGE, Output, ShellContext, read_inputs
from astro_tui.catalog.syntax import Word
from astro_tui.catalog.vfs import Dir, File, Node, count_text
from astro_tui.data.text_table import cell_len, cell_text, pad, table_cells
from astro_tui.display import groups_digits
from astro_tui.text import one_line

_COMMENT_WIDTH = 90
_CELL_WIDTH = 40


def _label(node: Node) -> str:
    return node.name + "/" if isinstance(node, Dir) and node.kind != "root" else node.name


def _long_rows(nodes: list[tuple[str, Node]]) -> list[str]:
    """`name  kind  size  columns  comment`, aligned; the name comes first so it reads like a list."""
    rows: list[tuple[str, str, str, str, str | None]] = []
    for name, node in nodes:
        if isinstance(node, File):
            table = node.table
            size = count_text(table.row_count, "row") if table.row_count is not None else ""
            if table.kind == "view":
                size = ""
            rows.append((name, table.kind, size, count_text(len(table.columns), "col"), table.comment))
        else:
            tables = node.last - node.first
            rows.append((name, node.kind, count_text(tables, "table"), "", node.comment))
    name_w = max((cell_len(r[0]) for r in rows), default=0)
    kind_w = max((len(r[1]) for r in rows), default=0)
    size_w = max((len(r[2]) for r in rows), default=0)
    cols_w = max((len(r[3]) for r in rows), default=0)
    return [
        f"{pad(n, name_w)}  {k:<{kind_w}}  {s:>{size_w}}  {c:>{cols_w}}  {comment}".rstrip()
        for n, k, s, c, m in rows
        for comment in [one_line(m or "", _COMMENT_WIDTH)]
    ]


LS_SPEC = OptionSpec(flags="l1aAdFhR", long={"all": "a", "directory": "d"})


def ls(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, LS_SPEC)
    out = Output()
    operands = ctx.operands(opts.operands or [Word(".")])
    files: list[tuple[str, Node]] = []
    dirs: list[tuple[str, Dir]] = []
    for operand in operands:
        node = operand.node
        if node is None:
            out.error(f"ls: {operand.text}: {operand.problem}", EXIT_USAGE)
        elif isinstance(node, Dir) and not opts.has("d"):
            dirs.append((node.path, node))
        else:
            files.append((node.path, node))
    lines = out.stdout
    if files:
        lines.extend(_long_rows(files) if opts.has("l") else [_label_path(p, n) for p, n in files])
    recursive = opts.has("R")
    queue = list(dirs)
    headers = len(operands) > 1 or recursive
    while queue:
        path, directory = queue.pop(0)
        if headers:
            if lines:
                lines.append("")
            lines.append(f"{path}:")
        entries = list(directory.children.values())
        if opts.has("l"):
            lines.extend(_long_rows([(_label(n), n) for n in entries]))
        else:
            lines.extend(_label(n) for n in entries)
        if recursive:
            queue[0:0] = [(n.path, n) for n in entries if isinstance(n, Dir)]
    return out


def _label_path(path: str, node: Node) -> str:
    return path + "/" if isinstance(node, Dir) and node.kind != "root" else path


def cd(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, OptionSpec(flags="LP"))
    out = Output()
    if len(opts.operands) > 1:
        return out.error("cd: too many arguments")
    word = opts.operands[0] if opts.operands else Word("/")
    if word.text == "-":
        word = Word(ctx.oldpwd)
        out.stdout.append(ctx.oldpwd)
    found = ctx.operands([word])
    if len(found) > 1:
        return out.error("cd: too many arguments")
    operand = found[0]
    node = operand.node
    if node is None:
        return out.error(f"cd: {operand.text}: {operand.problem}")
    if isinstance(node, File):
        return out.error(f"cd: {operand.text}: not a directory (try cat {operand.text})")
    ctx.oldpwd, ctx.cwd = ctx.cwd, node.path
    return out


def pwd(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    parse_options(words, OptionSpec(flags="LP"))
    return Output([ctx.cwd])


CAT_SPEC = OptionSpec(flags="nsA", long={"number": "n", "sample": "s"})


def cat(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, CAT_SPEC)
    out = Output()
    inputs = read_inputs(ctx, "cat", opts.operands, stdin, out)
    number = 0
    for index, (name, lines) in enumerate(inputs):
        if index and name is not None and out.stdout:
            out.stdout.append("")
        for line in lines:
            number += 1
            out.stdout.append(f"{number:6}\t{line}" if opts.has("n") else line)
        if opts.has("s") and name is not None:
            node = ctx.resolve(name).node
            assert isinstance(node, File)
            _sample_rows(ctx, node, 5, out, "cat")
    return out


SAMPLE_SPEC = OptionSpec(values="nc", long={"lines": "n", "column": "c"}, numeric="n")


def sample(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    """Real rows from the database: the only command that runs a query."""
    opts = parse_options(words, SAMPLE_SPEC)
    # more rows than the shell shows would only be fetched to be cut
    limit = min(opts.int_value("n", 5, minimum=1), max(1, ctx.max_lines))
    column = opts.value("c")
    out = Output()
    if not opts.operands:
        raise UsageError("missing table path (usage: sample [-n N] [-c COLUMN] PATH...)")
    if ctx.db is None:
        return out.error("sample: no database is connected")
    targets = ctx.operands(opts.operands)
    for operand in targets:
        node = operand.node
        if node is None:
            out.error(f"sample: {operand.text}: {operand.problem}")
            continue
        if not isinstance(node, File):
            out.error(f"sample: {operand.text}: is a directory")
            continue
        if len(targets) > 1:
            if out.stdout:
                out.stdout.append("")
            out.stdout.append(f"==> {node.path} <==")
        if column is None:
            _sample_rows(ctx, node, limit, out, "sample")
        else:
            _sample_column(ctx, node, column, limit, out)
    return out


def _sample_rows(ctx: ShellContext, node: File, limit: int, out: Output, command: str) -> None:
    from astro_tui.data.errors import DataError

    if ctx.db is None:
        out.error(f"{command}: no database is connected")
        return
    try:
        result = sample_values(ctx.db, node.table, limit=limit, cancel=ctx.cancel)
    except DataError as exc:
        out.error(f"{command}: {node.path}: {exc}")
        return
    if result.row_count == 0:
        out.stdout.append("(no rows)")
        return
    header, rows = table_cells(result, max_rows=result.row_count, max_cell=_CELL_WIDTH)
    widths = [max(cell_len(h), *(cell_len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out.stdout.append(" | ".join(pad(h, w) for h, w in zip(header, widths, strict=True)).rstrip())
    out.stdout.append("-+-".join("-" * w for w in widths))
    out.stdout.extend(" | ".join(pad(c, w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _sample_column(ctx: ShellContext, node: File, column: str, limit: int, out: Output) -> None:
    from astro_tui.data.errors import DataError

    assert ctx.db is not None
    found = node.table.column(column)
    if found is None:
        out.error(f"sample: {node.path}: no column '{column}'")
        return
    try:
        values = frequent_values(ctx.db, node.table, found.name, limit=limit, cancel=ctx.cancel)
    except DataError as exc:
        out.error(f"sample: {node.path}: {exc}")
        return
    grouping = groups_digits(found.name)
    counts = [f"{n:,}" for _, n in values]
    width = max(map(len, counts), default=0)
    out.stdout.extend(f"{n:>{width}}  {_cell(v, grouping)}" for (v, _), n in zip(values, counts, strict=True))


def _cell(value: object, grouping: bool) -> str:
    text = cell_text(value, grouping=grouping)
    return one_line(text, _CELL_WIDTH)


TREE_SPEC = OptionSpec(flags="dafF", values="L", long={"level": "L"})


def tree(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    opts = parse_options(words, TREE_SPEC)
    depth = opts.int_value("L", 1_000, minimum=1)
    out = Output()
    for operand in ctx.operands(opts.operands or [Word(".")]):
        node = operand.node
        if node is None:
            out.error(f"tree: {operand.text}: {operand.problem}")
            continue
        if out.stdout:
            out.stdout.append("")
        out.stdout.append(_label_path(node.path, node) if node.path != "/" else "/")
        counts = [0, 0]
        if isinstance(node, Dir):
            _tree_lines(node, "", depth, opts.has("d"), out.stdout, counts)
        else:
            counts[1] += 1
        out.stdout.append("")
        dirs = count_text(counts[0], "directory").replace("directorys", "directories")
        out.stdout.append(f"{dirs}, {count_text(counts[1], 'file')}")
    return out


def _tree_lines(
    directory: Dir, indent: str, depth: int, dirs_only: bool, lines: list[str], counts: list[int]
) -> None:
    entries = [n for n in directory.children.values() if isinstance(n, Dir) or not dirs_only]
    for i, node in enumerate(entries):
        last = i == len(entries) - 1
        lines.append(f"{indent}{'└── ' if last else '├── '}{_label(node)}")
        if isinstance(node, Dir):
            counts[0] += 1
            if depth > 1:
                _tree_lines(node, indent + ("    " if last else "│   "), depth - 1, dirs_only, lines, counts)
        else:
            counts[1] += 1


@dataclass(frozen=True, slots=True)
class _Test:
    kind: str
    arg: str
    negate: bool
    regex: re.Pattern[str] | None = None

    @classmethod
    def make(cls, kind: str, arg: str, negate: bool) -> _Test:
        if kind == "type":
            return cls(kind, arg, negate)
        flags = re.IGNORECASE if kind.startswith("i") else 0
        return cls(kind, arg, negate, re.compile(fnmatch.translate(arg), flags))

    def matches(self, node: Node) -> bool:
        if self.regex is None:
            return ((self.arg == "d") == isinstance(node, Dir)) != self.negate
        match = self.regex.match
        if self.kind in ("path", "ipath"):
            found = match(node.path) is not None
        elif isinstance(node, File):
            found = match(node.name) is not None or match(node.name.rsplit(".", 1)[0]) is not None
        else:
            found = match("/" if node.kind == "root" else node.name) is not None
        return found != self.negate


def find(ctx: ShellContext, words: list[Word], stdin: list[str] | None) -> Output:
    """`find [PATH...] [EXPRESSION]`: -name/-iname/-path/-type tests, `!`/-not, -o, -maxdepth."""
    texts = [w.text for w in words]
    if "--help" in texts:
        from astro_tui.catalog.options import HelpRequested

        raise HelpRequested
    start = 0
    while start < len(words) and not (texts[start].startswith("-") or texts[start] in ("!", "(")):
        start += 1
    roots = words[:start] or [Word(".")]
    groups, min_depth, max_depth = _find_expression(texts[start:])
    out = Output()
    for operand in ctx.operands(roots):
        node = operand.node
        if node is None:
            out.error(f"find: '{operand.text}': {operand.problem}")
            continue
        for depth, candidate in _walk(node, max_depth):
            if depth < min_depth:
                continue
            if not groups or any(all(t.matches(candidate) for t in group) for group in groups):
                out.stdout.append(candidate.path)
    return out


def _find_expression(args: list[str]) -> tuple[list[list[_Test]], int, int]:
    groups: list[list[_Test]] = [[]]
    min_depth, max_depth = 0, 1_000
    negate = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in ("!", "-not"):
            negate = not negate
            continue
        if arg in ("-o", "-or"):
            groups.append([])
            continue
        if arg in ("-a", "-and", "-print"):
            continue
        if arg in ("(", ")"):
            raise UsageError("parentheses are not supported; use -o between groups of tests")
        if arg not in ("-name", "-iname", "-path", "-ipath", "-wholename", "-type", "-maxdepth", "-mindepth"):
            raise UsageError(f"unknown predicate `{arg}'")
        if i >= len(args):
            raise UsageError(f"missing argument to `{arg}'")
        value = args[i]
        i += 1
        if arg in ("-maxdepth", "-mindepth"):
            if not (value.isascii() and value.isdigit()):
                raise UsageError(f"{arg}: invalid number '{value}'")
            if arg == "-maxdepth":
                max_depth = int(value)
            else:
                min_depth = int(value)
            continue
        if arg == "-type" and value not in ("f", "d"):
            raise UsageError(f"-type: unknown type '{value}' (use f for tables, d for schemas)")
        kind = "path" if arg == "-wholename" else arg[1:]
        groups[-1].append(_Test.make(kind, value, negate))
        negate = False
    if any(not g for g in groups) and len(groups) > 1:
        raise UsageError("-o needs a test on each side")
    return [g for g in groups if g], min_depth, max_depth


def _walk(node: Node, max_depth: int, depth: int = 0) -> list[tuple[int, Node]]:
    found: list[tuple[int, Node]] = [(depth, node)]
    if isinstance(node, Dir) and depth < max_depth:
        for child in node.children.values():
            found.extend(_walk(child, max_depth, depth + 1))
    return found

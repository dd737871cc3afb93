"""The command-line grammar and option parsing, without any catalog."""

from __future__ import annotations

import pytest

from astro_tui.catalog.options import HelpRequested, OptionSpec, UsageError, parse_options
from astro_tui.catalog.syntax import Redirect, ShellSyntaxError, Word, parse


def words(line: str) -> list[Word]:
    ((_, pipeline),) = parse(line)
    (command,) = pipeline.commands
    return command.words


def test_quoting_and_escapes() -> None:
    assert [w.text for w in words("cat 'a b' \"c d\" e\\ f")] == ["cat", "a b", "c d", "e f"]
    assert [w.text for w in words('echo \'it\'\\\'\'s\' "say \\"hi\\"" "a\\b"')] == [
        "echo",
        "it's",
        'say "hi"',
        "a\\b",
    ]
    assert [w.text for w in words("echo '' \"\"")] == ["echo", "", ""]
    assert [w.text for w in words("grep 'a|b' \"x;y\"")] == ["grep", "a|b", "x;y"]


def test_globs_remember_which_characters_were_quoted() -> None:
    plain, quoted, mixed = words("cat /s/or* '/s/or*' /s/'a*'b?")[1:]
    assert plain.pattern == "/s/or*"
    assert quoted.pattern is None and quoted.text == "/s/or*"
    assert mixed.text == "/s/a*b?" and mixed.pattern == "/s/a[*]b?"


def test_pipes_lists_and_redirections() -> None:
    parsed = parse("ls | grep x && wc -l || echo no; pwd 2>/dev/null")
    assert [c for c, _ in parsed] == [";", "&&", "||", ";"]
    assert len(parsed[0][1].commands) == 2
    (pwd,) = parsed[3][1].commands
    assert pwd.redirects == [Redirect(2, False, "/dev/null")]
    ((_, pipeline),) = parse("grep x 2>&1 >> out < /s/t.table")
    assert pipeline.commands[0].redirects == [
        Redirect(2, False, "&1"),
        Redirect(1, True, "out"),
        Redirect(0, False, "/s/t.table"),
    ]
    assert parse("ls;") == parse("ls")
    assert parse("") == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("ls |", "syntax error near unexpected token `newline'"),
        ("| ls", "syntax error near unexpected token `|'"),
        ("ls && ", "syntax error near unexpected token `newline'"),
        ("ls > ", "syntax error near unexpected token `newline'"),
        ("ls > | x", "syntax error near unexpected token `|'"),
        ("echo 'a", "unexpected EOF while looking for matching `''"),
        ('echo "a', "unexpected EOF while looking for matching `\"'"),
        ("sleep 1 &", "background jobs (&) are not supported"),
    ],
)
def test_syntax_errors(line: str, message: str) -> None:
    with pytest.raises(ShellSyntaxError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        parse(line)


SPEC = OptionSpec(flags="ilr", values="nm", long={"ignore-case": "i", "max": "m"}, numeric="n")


def _w(*texts: str) -> list[Word]:
    return [Word(t) for t in texts]


def test_options_combined_attached_and_permuted() -> None:
    opts = parse_options(_w("-ri", "x", "-n5", "/", "-m", "2", "--ignore-case", "--max=3"), SPEC)
    assert opts.flags == {"r", "i"}
    assert opts.values == {"n": ["5"], "m": ["2", "3"]}
    assert opts.value("m") == "3" and opts.int_value("n", 0) == 5
    assert [w.text for w in opts.operands] == ["x", "/"]
    assert parse_options(_w("-7"), SPEC).value("n") == "7"
    assert [w.text for w in parse_options(_w("--", "-i", "-"), SPEC).operands] == ["-i", "-"]


def test_option_errors() -> None:
    with pytest.raises(UsageError, match="invalid option -- 'z'"):
        parse_options(_w("-iz"), SPEC)
    with pytest.raises(UsageError, match="option requires an argument -- 'n'"):
        parse_options(_w("-n"), SPEC)
    with pytest.raises(UsageError, match="unrecognized option '--nope'"):
        parse_options(_w("--nope"), SPEC)
    with pytest.raises(UsageError, match="option '--ignore-case' doesn't allow an argument"):
        parse_options(_w("--ignore-case=1"), SPEC)
    with pytest.raises(UsageError, match="invalid number: 'x'"):
        parse_options(_w("-nx"), SPEC).int_value("n", 0)
    with pytest.raises(HelpRequested):
        parse_options(_w("x", "--help"), SPEC)


def test_digits_that_int_refuses_are_words_not_descriptors() -> None:
    """`"²".isdigit()` is true and `int("²")` raises: found by the shell fuzzer (`²<`)."""
    with pytest.raises(ShellSyntaxError, match="unexpected token `newline'"):
        parse("²<")
    ((_, pipeline),) = parse("ls ²> out")
    assert pipeline.commands[0].words == _w("ls", "²")
    assert pipeline.commands[0].redirects == [Redirect(1, False, "out")]
    with pytest.raises(UsageError, match="invalid option -- '²'"):
        parse_options(_w("-²"), SPEC)

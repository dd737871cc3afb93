"""grep over cards: every flag, GNU's regex dialects, and the fast corpus path agreeing with line-by-line."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator

import pytest

from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog, Column, Schema, Table
from astro_tui.data.database import Database
from tests.support import ROOT
from tests.support.catalog import make_shop

EMAIL_LINE = "  email        VARCHAR            Contact e-mail address."


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    path = make_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb")
    with Database.open([str(path)], Settings()) as db:
        yield load_catalog(db)


@pytest.fixture
def sh(catalog: Catalog) -> Shell:
    return Shell(catalog)


def run(sh: Shell, command: str, code: int = 0) -> list[str]:
    result = sh.run(command)
    assert result.exit_code == code, result.output
    return result.output.splitlines()


def test_recursive_case_insensitive(sh: Shell) -> None:
    assert run(sh, "grep -ri EMAIL /") == [f"/sales/customers.table:{EMAIL_LINE}"]
    assert run(sh, "grep -r EMAIL /", 1) == []
    assert run(sh, "grep -R -i email /sales") == [f"/sales/customers.table:{EMAIL_LINE}"]
    assert run(sh, "grep --ignore-case --recursive EMAIL /") == [f"/sales/customers.table:{EMAIL_LINE}"]
    assert run(sh, "grep email / -ri") == [f"/sales/customers.table:{EMAIL_LINE}"]


def test_directory_without_r_is_searched_and_no_path_means_cwd(sh: Shell) -> None:
    assert run(sh, "grep email /sales") == [f"/sales/customers.table:{EMAIL_LINE}"]
    run(sh, "cd /sales")
    assert run(sh, "grep -r email") == [f"/sales/customers.table:{EMAIL_LINE}"]
    run(sh, "cd /marketing")
    assert run(sh, "grep -r email", 1) == []


def test_filename_prefix_rules(sh: Shell) -> None:
    assert run(sh, "grep email /sales/customers.table") == [EMAIL_LINE]
    assert run(sh, "grep -H email /sales/customers.table") == [f"/sales/customers.table:{EMAIL_LINE}"]
    two = "grep email /sales/customers.table /sales/orders.table"
    assert run(sh, two) == [f"/sales/customers.table:{EMAIL_LINE}"]
    assert run(sh, two.replace("grep", "grep -h")) == [EMAIL_LINE]
    assert run(sh, "grep -rh email /") == [EMAIL_LINE]
    assert run(sh, "grep email /sales/cust*") == [EMAIL_LINE]


def test_list_files_with_and_without_matches(sh: Shell) -> None:
    assert run(sh, "grep -ril 'web shop' /") == [
        "/marketing/web_sessions.table",
        "/sales/customers.table",
        "/sales/orders.table",
    ]
    assert run(sh, "grep -rL 'sql:' /", 1) == []
    assert "/sales/orders.table" in run(sh, "grep -rL email /sales")
    assert "/sales/customers.table" not in run(sh, "grep -rL email /sales")


def test_line_numbers_counts_and_quiet(sh: Shell) -> None:
    assert run(sh, "grep -n email /sales/customers.table") == [f"6:{EMAIL_LINE}"]
    assert run(sh, "grep -rn email /") == [f"/sales/customers.table:6:{EMAIL_LINE}"]
    assert run(sh, "grep -c . /sales/orders.table") == ["12"]
    assert run(sh, "grep -c zzz /sales/orders.table", 1) == ["0"]
    assert run(sh, "grep -rc order_id /sales") == [
        "/sales/order_items.table:3",
        "/sales/orders.table:3",
    ]
    assert run(sh, "grep -q email /sales/customers.table") == []
    assert run(sh, "grep -q zzz /sales/customers.table", 1) == []
    assert run(sh, "grep -m 1 order /sales/orders.table") == ["sales.orders  (table, 3 rows)"]
    assert run(sh, "grep -rm 1 -c order /sales")[0] == "/sales/customers.table:1"


def test_word_line_invert_only_matching(sh: Shell) -> None:
    assert run(sh, "grep -w order /sales/orders.table") == [
        "  One row per customer order placed on the web shop."
    ]
    assert run(sh, "grep -x 'sql: sales.orders' /sales/orders.table") == ["sql: sales.orders"]
    assert run(sh, "grep -x sql /sales/orders.table", 1) == []
    inverted = run(sh, "grep -v '^  ' /sales/orders.table")
    assert inverted[0] == "sales.orders  (table, 3 rows)" and all(not x.startswith("  ") for x in inverted)
    assert run(sh, "grep -o 'CNY' /sales/orders.table") == ["CNY"]
    assert run(sh, "grep -rho 'DECIMAL([0-9,]*)' /") == ["DECIMAL(12,2)", "DECIMAL(12,2)", "DECIMAL(38,2)"]
    assert run(sh, "grep -vc . /sales/orders.table", 1) == ["0"]
    assert run(sh, "grep -rv . /sales", 1) == []


def test_basic_extended_and_fixed_dialects(sh: Shell) -> None:
    card = "/sales/orders.table"
    assert len(run(sh, f"grep -E 'status|CNY' {card}")) == 2
    assert len(run(sh, f"grep 'status\\|CNY' {card}")) == 2
    assert run(sh, f"grep 'status|CNY' {card}", 1) == []
    assert run(sh, f"grep 'DECIMAL(12' {card}") == run(sh, f"grep -F 'DECIMAL(12,2)' {card}")
    assert run(sh, f"grep -F '.' {card}")[0] == "sales.orders  (table, 3 rows)"
    assert run(sh, f"grep -c '^s.l' {card}") == ["2"]
    assert run(sh, f"grep -c '[[:digit:]]' {card}") == ["2"]
    assert run(sh, f"grep -c '[[:upper:]][[:upper:]]*' {card}") == ["6"]
    assert run(sh, f"grep '\\<order\\>' {card}") == ["  One row per customer order placed on the web shop."]
    assert run(sh, f"grep -E 'ord(er)+_id' {card}")[0].startswith("  order_id")
    assert run(sh, f"grep 'ord\\(er\\)\\+_id' {card}")[0].startswith("  order_id")
    assert run(sh, f"grep '*' {card}", 1) == []
    assert len(run(sh, f"grep -e CNY -e status {card}")) == 2
    assert run(sh, "grep -rE 'e-mail address\\.\\s+signup' /", 1) == []
    assert run(sh, "grep -rE 'email\\s+VARCHAR' /") == [f"/sales/customers.table:{EMAIL_LINE}"]


def test_grep_on_piped_input(sh: Shell) -> None:
    assert run(sh, "ls /sales | grep order") == ["order_items.table", "orders.table"]
    assert run(sh, "ls /sales | grep -c order") == ["2"]
    assert run(sh, "ls /sales | grep -n view") == ["5:revenue_by_region.view"]
    assert run(sh, "ls /sales | grep -H view") == ["(standard input):revenue_by_region.view"]
    assert run(sh, "ls /sales | grep zzz", 1) == []
    assert run(sh, "cat /sales/orders.table | grep -i 'NOT NULL' | wc -l") == ["2"]


def test_grep_errors(sh: Shell) -> None:
    assert run(sh, "grep", 2)[0].startswith("grep: missing PATTERN")
    assert run(sh, "grep -E '(' /", 2)[0].startswith("grep: invalid regular expression:")
    assert run(sh, "grep '[abc' /", 2)[0].startswith("grep: invalid regular expression: unmatched [")
    assert run(sh, "grep -Z x /", 2)[0].startswith("grep: invalid option -- 'Z'")
    assert run(sh, "grep email /nope", 2) == ["grep: /nope: no such schema or table"]
    lines = run(sh, "grep email /nope /sales/customers.table", 2)
    assert lines == ["grep: /nope: no such schema or table", f"/sales/customers.table:{EMAIL_LINE}"]
    assert run(sh, "grep -s email /nope", 2) == []
    assert run(sh, "grep -m x a /", 2)[0].startswith("grep: invalid number: 'x'")


def test_catastrophic_patterns_finish_fast(sh: Shell) -> None:
    """RE2 is linear: patterns that make a backtracking engine run for ages take milliseconds.

    `(a|a)*Q$` over 24 a's takes a backtracking engine seconds; `(.|.)*Q$` over a
    card line of 60 characters would take it longer than the universe has existed.
    """
    note = Column("note", "VARCHAR", True, "a" * 24)
    slow = Shell(Catalog((Schema(None, "s", (Table(None, "s", "t", "table", (note,)),)),)))
    started = time.perf_counter()
    assert run(slow, "grep -E '(a|a)*Q$' /s/t.table", 1) == []
    assert run(slow, "grep -rE '(a|a)*Q$' /", 1) == []
    assert run(slow, "grep -ow 'a*' /s/t.table") == ["a" * 24]
    assert time.perf_counter() - started < 1.0
    started = time.perf_counter()
    assert run(sh, "grep -E '(.|.)*Q$' /sales/orders.table", 1) == []
    assert run(sh, "grep -rE '(.|.)*Q$' /", 1) == []
    assert run(sh, "grep -rvcE '(.|.)*Q$' /sales") == run(sh, "grep -rc '' /sales")
    assert time.perf_counter() - started < 1.0


def test_patterns_re2_cannot_run_are_refused_on_one_line(sh: Shell) -> None:
    card = "/sales/orders.table"
    for command in (
        f"grep '\\(o\\)\\1' {card}",
        f"grep -E '(o)\\1' {card}",
        f"grep -E 'order(?=_id)' {card}",
        "grep -rE '(?<!x)order' /",
        f"grep -E 'x{{2000}}' {card}",
    ):
        lines = run(sh, command, 2)
        assert len(lines) == 1 and lines[0].startswith("grep: unsupported pattern: "), (command, lines)
    assert run(sh, "grep -E '(o)' /sales/orders.table")  # groups without back-references still work


def test_only_matching_with_flags(sh: Shell) -> None:
    card = "/sales/orders.table"
    assert run(sh, f"grep -oi 'cny' {card}") == ["CNY"]
    assert run(sh, f"grep -on 'order_id' {card}") == ["4:order_id", "9:order_id", "11:order_id"]
    assert run(sh, f"grep -oE 'o[a-z]+' {card}")[:4] == ["orders", "ows", "ow", "omer"]
    assert run(sh, f"grep -ow 'order' {card}") == ["order"]
    assert run(sh, f"grep -oE 'Z*' {card}") == []  # lines match, but empty matches print nothing
    assert run(sh, "ls /sales | grep -o 'or.'") == ["ord", "ord"]
    assert run(sh, "grep -xi 'SQL: SALES.ORDERS' /sales/orders.table") == ["sql: sales.orders"]


def test_case_folding_that_changes_length_still_works() -> None:
    table = Table(None, "s", "offices", "table", (Column("city", "VARCHAR", True, "İstanbul or Ankara"),))
    other = Table(None, "s", "plain", "table", (Column("x", "INTEGER", True, "ankara office"),))
    sh = Shell(Catalog((Schema(None, "s", (table, other)),)))
    assert run(sh, "grep -ril ankara /") == ["/s/offices.table", "/s/plain.table"]
    line = run(sh, "grep -h stanbul /s")[0]
    assert run(sh, "grep -ri 'İSTANBUL' /") == [f"/s/offices.table:{line}"]
    assert run(sh, "grep -rc 'OR ANKARA' /", 1) == []
    assert run(sh, "grep -rci 'OR ANKARA' /") == ["/s/offices.table:1"]


# The recursive grep searches one joined string; it must agree with grepping each card line by line.

_SYNTHETIC_PATTERNS = [
    ("-ri", "email"),
    ("-r", "Region"),
    ("-ri", "^  id "),
    ("-rE", "region_(id|name)"),
    ("-rE", "[0-9]{5}"),
    ("-ri", "not null$"),
    ("-rw", "id"),
    ("-riF", "e-mail"),
    ("-r", "\\.$"),
    ("-rE", "amount\\s+DECIMAL"),
    ("-rE", "a\\s+b"),
    ("-ri", "sql: "),
    ("-rE", "^[^ ]"),
]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    sys.path.insert(0, str(ROOT))
    from bench.synthetic import synthetic_catalog_db

    path = synthetic_catalog_db(tmp_path_factory.mktemp("synthetic") / "s.duckdb", tables=120, columns=12)
    with Database.open([str(path)], Settings()) as db:
        yield load_catalog(db)


@pytest.mark.parametrize(("flags", "pattern"), _SYNTHETIC_PATTERNS)
def test_corpus_search_agrees_with_line_by_line(synthetic: Catalog, flags: str, pattern: str) -> None:
    sh = Shell(synthetic, max_output_lines=1_000_000, max_output_chars=100_000_000)
    fast = sh.run(f"grep {flags} '{pattern}' /").output.splitlines()
    expected = []
    regex_flags = re.IGNORECASE if "i" in flags else 0
    body = re.escape(pattern) if "F" in flags else pattern.replace("\\.", "[.]")
    if "w" in flags:
        body = rf"(?<!\w){body}(?!\w)"
    regex = re.compile(body, regex_flags)
    for node in sh.vfs.files:
        expected += [f"{node.path}:{line}" for line in sh.vfs.card(node).splitlines() if regex.search(line)]
    assert fast == expected
    assert len(sh.run(f"grep -c{flags.strip('-')} '{pattern}' /").output.splitlines()) == len(
        {line.split(":", 1)[0] for line in expected}
    )

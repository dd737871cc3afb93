"""The metadata shell, command by command, over the small shop database (real DuckDB)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from astro_tui.catalog import navigation
from astro_tui.catalog.introspect import load_catalog
from astro_tui.catalog.shell import Shell, ShellResult
from astro_tui.config import Settings
from astro_tui.data.catalog_model import Catalog
from astro_tui.data.database import Database
from tests.support.catalog import make_shop


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = Database.open([str(make_shop(tmp_path_factory.mktemp("shop") / "shop.duckdb"))], Settings())
    yield database
    database.close()


@pytest.fixture(scope="module")
def catalog(db: Database) -> Catalog:
    return load_catalog(db)


@pytest.fixture
def sh(catalog: Catalog, db: Database) -> Shell:
    return Shell(catalog, db)


def run(sh: Shell, command: str, code: int = 0) -> list[str]:
    result = sh.run(command)
    assert isinstance(result, ShellResult)
    assert result.exit_code == code, result.output
    return result.output.splitlines()


ORDERS_CARD = [
    "sales.orders  (table, 3 rows)",
    "  One row per customer order placed on the web shop.",
    "columns:",
    "  order_id      BIGINT         not null  [PK]",
    "  customer_id   BIGINT         not null  -> sales.customers.customer_id",
    "  order_date    DATE",
    "  total_amount  DECIMAL(12,2)            Order total in CNY, including tax.",
    "  status        VARCHAR                  placed, shipped, delivered or cancelled.",
    "primary key: order_id",
    "foreign key: customer_id -> sales.customers(customer_id)",
    "referenced by: sales.order_items(order_id)",
    "sql: sales.orders",
]
COMMAND_NAMES = (
    "ls", "cd", "pwd", "cat", "head", "tail", "tree", "find", "grep", "wc", "sort", "uniq", "sample",
    "echo", "xargs", "help",
)  # fmt: skip
SALES_FILES = [
    "customers.table",
    "order_items.table",
    "orders.table",
    "regions.table",
    "revenue_by_region.view",
]


# ls -------------------------------------------------------------------------------------------


def test_ls_root_and_schema(sh: Shell) -> None:
    assert run(sh, "ls") == ["marketing/", "Odd Schema/", "sales/"]
    assert run(sh, "ls /sales") == SALES_FILES
    assert run(sh, "ls sales/") == SALES_FILES
    assert run(sh, "ls -1a /sales") == SALES_FILES


def test_ls_long(sh: Shell) -> None:
    root = run(sh, "ls -l /")
    assert root[2].split()[:4] == ["sales/", "schema", "5", "tables"]
    lines = run(sh, "ls -l /sales")
    orders = next(line for line in lines if line.startswith("orders.table"))
    assert orders.split()[:6] == ["orders.table", "table", "3", "rows", "5", "cols"]
    assert orders.endswith("One row per customer order placed on the web shop.")
    view = next(line for line in lines if line.startswith("revenue_by_region.view"))
    assert "rows" not in view and "2 cols" in view
    assert run(sh, "ll /sales") == lines


def test_ls_files_dirs_and_several_operands(sh: Shell) -> None:
    assert run(sh, "ls /sales/orders.table") == ["/sales/orders.table"]
    assert run(sh, "ls -d /sales") == ["/sales/"]
    assert run(sh, "ls /marketing /sales/orders.table") == [
        "/sales/orders.table",
        "",
        "/marketing:",
        "campaigns.table",
        "web_sessions.table",
    ]
    recursive = run(sh, "ls -R /")
    assert "/sales:" in recursive and "orders.table" in recursive


def test_ls_errors(sh: Shell) -> None:
    assert run(sh, "ls /nope", 2) == ["ls: /nope: no such schema or table"]
    assert run(sh, "ls -z", 2) == ["ls: invalid option -- 'z' (usage: ls [-l] [-d] [-R] [PATH...])"]
    assert run(sh, "ls --bogus", 2)[0].startswith("ls: unrecognized option '--bogus'")
    assert run(sh, "ls --help")[0].startswith("usage: ls")
    lines = run(sh, "ls /nope /sales", 2)
    assert lines[0] == "ls: /nope: no such schema or table" and "orders.table" in lines


# cd, pwd --------------------------------------------------------------------------------------


def test_cd_and_pwd(sh: Shell) -> None:
    assert sh.cwd == "/"
    run(sh, "cd sales")
    assert sh.cwd == "/sales" and run(sh, "pwd") == ["/sales"]
    run(sh, "cd ..")
    assert sh.cwd == "/"
    run(sh, "cd SALES/")
    assert sh.cwd == "/sales"
    assert run(sh, "cd -") == ["/"]
    assert sh.cwd == "/"
    run(sh, "cd '/odd schema'")
    assert sh.cwd == "/Odd Schema"
    run(sh, "cd")
    assert sh.cwd == "/"
    run(sh, "cd /sa*")
    assert sh.cwd == "/sales"
    run(sh, "cd ~")
    assert sh.cwd == "/"


def test_cd_errors(sh: Shell) -> None:
    assert run(sh, "cd /nope", 1) == ["cd: /nope: no such schema or table"]
    assert run(sh, "cd /sales/orders.table", 1) == [
        "cd: /sales/orders.table: not a directory (try cat /sales/orders.table)"
    ]
    assert run(sh, "cd a b", 1) == ["cd: too many arguments"]
    assert run(sh, "cd /*", 1) == ["cd: too many arguments"]
    assert sh.cwd == "/"


def test_cwd_can_be_set(sh: Shell) -> None:
    sh.cwd = "/sales"
    assert run(sh, "cat orders | head -1") == ["sales.orders  (table, 3 rows)"]


# cat ------------------------------------------------------------------------------------------


def test_cat_card(sh: Shell) -> None:
    assert run(sh, "cat /sales/orders.table") == ORDERS_CARD
    run(sh, "cd /sales")
    assert run(sh, "cat orders") == ORDERS_CARD
    assert run(sh, "cat ../sales/orders.table/") == ORDERS_CARD
    assert run(sh, "cat sales.orders") == ORDERS_CARD
    assert run(sh, "less orders") == ORDERS_CARD
    assert run(sh, "more orders") == ORDERS_CARD


def test_cat_several_and_globs(sh: Shell) -> None:
    lines = run(sh, "cat /sales/order*")
    assert lines[0] == "sales.order_items  (table, 0 rows)"
    assert "" in lines and "sales.orders  (table, 3 rows)" in lines
    assert len(run(sh, "cat /*/*")) > 40


def test_cat_numbered_and_stdin(sh: Shell) -> None:
    assert run(sh, "cat -n /sales/orders.table")[0] == "     1\tsales.orders  (table, 3 rows)"
    assert run(sh, "echo hello | cat") == ["hello"]
    assert run(sh, "echo hello | cat -") == ["hello"]


def test_cat_odd_names_and_quoting(sh: Shell) -> None:
    card = run(sh, "cat '/Odd Schema/My Table.table'")
    assert card[0] == "Odd Schema.My Table  (table, 0 rows)"
    assert any(line.startswith('  "Order Date"') for line in card)
    assert any(line.startswith('  "select"') for line in card)
    assert card[-1] == 'sql: "Odd Schema"."My Table"'
    assert run(sh, 'cat "/Odd Schema/it\'s.table"')[-1] == 'sql: "Odd Schema"."it\'s"'
    assert run(sh, "cat '/Odd Schema/it'\\''s.table'")[-1] == 'sql: "Odd Schema"."it\'s"'
    assert run(sh, "cat /Odd\\ Schema/weird.name.table")[-1] == 'sql: "Odd Schema"."weird.name"'
    assert run(sh, "cat '/Odd Schema/a%2Fb.table'")[-1] == 'sql: "Odd Schema"."a/b"'
    assert run(sh, "cat '/odd schema/upper'")[-1] == 'sql: "Odd Schema"."UPPER"'
    assert run(sh, "cat '/Odd Schema/*.table'", 1) == ["cat: /Odd Schema/*.table: no such schema or table"]


def test_cat_errors(sh: Shell) -> None:
    assert run(sh, "cat /sales", 1) == ["cat: /sales: is a directory (try ls /sales)"]
    assert run(sh, "cat /nope", 1) == ["cat: /nope: no such schema or table"]
    lines = run(sh, "cat /nope /sales/regions.table", 1)
    assert lines[0] == "cat: /nope: no such schema or table" and lines[1] == "sales.regions  (table, 3 rows)"
    assert run(sh, "cat -x /sales", 2)[0].startswith("cat: invalid option -- 'x'")


# sample (the only command that queries) ---------------------------------------------------------


def test_sample_rows_and_column_values(sh: Shell) -> None:
    lines = run(sh, "sample /sales/regions.table")
    assert lines[0].split(" | ") == ["region_id", "name       ", "country"]
    assert lines[1].startswith("----------+")
    assert "East China" in lines[2] and len(lines) == 5
    assert len(run(sh, "sample -n 1 /sales/regions")) == 3
    assert len(run(sh, "sample -2 /sales/regions")) == 4
    assert run(sh, "sample -c name -n 2 /sales/regions") == ["1  Bavaria", "1  East China"]
    assert run(sh, "sample -c country /sales/regions") == ["2  CN", "1  DE"], "counted, most frequent first"
    assert run(sh, "sample /sales/order_items") == ["(no rows)"]
    both = run(sh, "sample -n 1 /sales/regions /marketing/campaigns")
    assert both[0] == "==> /sales/regions.table <==" and "==> /marketing/campaigns.table <==" in both


def test_sample_fetches_no_more_rows_than_the_shell_shows(
    catalog: Catalog, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []

    def spy(original: Any) -> Any:
        def wrapper(*args: Any, limit: int, **kwargs: Any) -> Any:
            asked.append(limit)
            return original(*args, limit=limit, **kwargs)

        return wrapper

    monkeypatch.setattr(navigation, "sample_values", spy(navigation.sample_values))
    monkeypatch.setattr(navigation, "frequent_values", spy(navigation.frequent_values))
    sh = Shell(catalog, db, max_output_lines=50)
    assert len(run(sh, "sample -n 1000000000 /sales/regions")) == 5
    assert run(sh, "sample -c name -n 30000000 /sales/regions")[0] == "1  Bavaria"
    assert run(sh, "sample -n 3 /sales/regions")[0].startswith("region_id")
    assert asked == [50, 50, 3]


def test_cat_with_sample_rows(sh: Shell) -> None:
    lines = run(sh, "cat -s /sales/regions.table")
    assert lines[0] == "sales.regions  (table, 3 rows)"
    assert any("North China" in line for line in lines)


def test_sample_errors(sh: Shell, catalog: Catalog) -> None:
    assert run(sh, "sample", 2)[0].startswith("sample: missing table path")
    assert run(sh, "sample /sales", 1) == ["sample: /sales: is a directory"]
    assert run(sh, "sample -c nope /sales/regions", 1) == ["sample: /sales/regions.table: no column 'nope'"]
    assert run(sh, "sample -n x /sales/regions", 2)[0].startswith("sample: invalid number: 'x'")
    offline = Shell(catalog)
    assert run(offline, "sample /sales/regions", 1) == ["sample: no database is connected"]
    lines = run(offline, "cat -s /sales/regions", 1)
    assert lines[0] == "cat: no database is connected"


# head, tail -----------------------------------------------------------------------------------


def test_head_and_tail(sh: Shell) -> None:
    assert run(sh, "head /sales/orders.table") == ORDERS_CARD[:10]
    assert run(sh, "head -n 3 /sales/orders.table") == ORDERS_CARD[:3]
    assert run(sh, "head -3 /sales/orders.table") == ORDERS_CARD[:3]
    assert run(sh, "head -n3 /sales/orders.table") == ORDERS_CARD[:3]
    assert run(sh, "head --lines=2 /sales/orders.table") == ORDERS_CARD[:2]
    assert run(sh, "cat /sales/orders.table | head -n 2") == ORDERS_CARD[:2]
    assert run(sh, "tail -n 2 /sales/orders.table") == ORDERS_CARD[-2:]
    assert run(sh, "tail -n +11 /sales/orders.table") == ORDERS_CARD[10:]
    assert run(sh, "cat /sales/orders.table | tail -1") == ORDERS_CARD[-1:]
    assert run(sh, "head -n 0 /sales/orders.table") == []
    two = run(sh, "head -n 1 /sales/orders.table /sales/regions.table")
    assert two == [
        "==> /sales/orders.table <==",
        ORDERS_CARD[0],
        "",
        "==> /sales/regions.table <==",
        "sales.regions  (table, 3 rows)",
    ]


def test_head_errors(sh: Shell) -> None:
    assert run(sh, "head -n x /sales/orders.table", 2)[0].startswith("head: invalid number of lines: 'x'")
    assert run(sh, "head -n", 2)[0].startswith("head: option requires an argument -- 'n'")
    assert run(sh, "head /sales", 1) == ["head: /sales: is a directory (try ls /sales)"]


# tree -----------------------------------------------------------------------------------------


def test_tree(sh: Shell) -> None:
    lines = run(sh, "tree /")
    assert lines[0] == "/"
    assert "├── marketing/" in lines and "│   ├── campaigns.table" in lines
    assert "└── sales/" in lines and "    └── revenue_by_region.view" in lines
    assert lines[-1] == "3 directories, 12 files"
    assert run(sh, "tree -L 1") == [
        "/",
        "├── marketing/",
        "├── Odd Schema/",
        "└── sales/",
        "",
        "3 directories, 0 files",
    ]
    assert run(sh, "tree -d /")[-1] == "3 directories, 0 files"
    assert run(sh, "tree /sales/orders.table") == ["/sales/orders.table", "", "0 directories, 1 file"]
    assert run(sh, "tree /nope", 1) == ["tree: /nope: no such schema or table"]
    assert run(sh, "tree -L 0", 2)[0].startswith("tree: invalid number: '0'")


# find -----------------------------------------------------------------------------------------


def test_find(sh: Shell) -> None:
    assert run(sh, "find / -name '*order*'") == ["/sales/order_items.table", "/sales/orders.table"]
    assert run(sh, "find / -name orders") == ["/sales/orders.table"]
    assert run(sh, "find /sales -iname 'REV*'") == ["/sales/revenue_by_region.view"]
    assert run(sh, "find / -name '*.view'") == ["/sales/revenue_by_region.view"]
    assert run(sh, "find / -type d") == ["/", "/marketing", "/Odd Schema", "/sales"]
    assert run(sh, "find / -maxdepth 1 -type d -name s*") == ["/sales"]
    assert run(sh, "find /marketing") == [
        "/marketing",
        "/marketing/campaigns.table",
        "/marketing/web_sessions.table",
    ]
    assert run(sh, "find /marketing -mindepth 1 -type f -name '*camp*'") == ["/marketing/campaigns.table"]
    assert run(sh, "find / -name orders -o -name regions") == ["/sales/orders.table", "/sales/regions.table"]
    assert run(sh, "find /sales -type f ! -name '*o*'") == []
    assert run(sh, "find /sales -type f -not -name '*s.table'") == ["/sales/revenue_by_region.view"]
    assert run(sh, "find / -path '*Odd*' -name 'it*'") == ["/Odd Schema/it's.table"]
    run(sh, "cd /sales")
    assert run(sh, "find . -name 'reg*' -print") == ["/sales/regions.table"]
    assert run(sh, "find /nowhere -name x", 1) == ["find: '/nowhere': no such schema or table"]
    assert run(sh, "find / -name '*zzz*'") == []


def test_find_errors(sh: Shell) -> None:
    assert run(sh, "find / -foo", 2)[0].startswith("find: unknown predicate `-foo'")
    assert run(sh, "find / -name", 2)[0].startswith("find: missing argument to `-name'")
    assert run(sh, "find / -type x", 2)[0].startswith("find: -type: unknown type 'x'")
    assert run(sh, "find / -maxdepth x", 2)[0].startswith("find: -maxdepth: invalid number 'x'")
    assert run(sh, "find / ( -name x )", 2)[0].startswith("find: parentheses are not supported")
    assert run(sh, "find / -o -name x", 2)[0].startswith("find: -o needs a test on each side")
    assert run(sh, "find --help")[0].startswith("usage: find")


# wc, sort, uniq, echo, xargs, help ------------------------------------------------------------


def test_wc(sh: Shell) -> None:
    assert run(sh, "wc -l /sales/orders.table") == ["12 /sales/orders.table"]
    assert run(sh, "ls /sales | wc -l") == ["5"]
    assert run(sh, "echo a b c | wc -w") == ["3"]
    assert run(sh, "echo abc | wc -c") == ["4"]
    assert run(sh, "echo abc | wc -m") == ["4"]
    assert run(sh, "echo a b | wc")[0].split() == ["1", "2", "4"]
    both = run(sh, "wc -l /sales/orders.table /sales/regions.table")
    assert both[-1].split() == ["21", "total"]


def test_sort_and_uniq(sh: Shell) -> None:
    assert run(sh, "ls /sales | sort -r")[0] == "revenue_by_region.view"
    assert run(sh, "ls / | sort") == ["Odd Schema/", "marketing/", "sales/"]
    assert run(sh, "ls / | sort -f") == ["marketing/", "Odd Schema/", "sales/"]
    assert run(sh, "grep -rc . / | sort -t: -n", 2)[0].startswith("sort: invalid option -- 't'")
    numbers = run(sh, "grep -rc . /sales | sed", 127)
    assert numbers == ["sed: command not found (try help)"]
    counts = run(sh, "grep -rch . /sales | sort -n")
    assert [int(c) for c in counts] == sorted(int(c) for c in counts)
    assert run(sh, "grep -rch . /sales | sort -rn")[0] == max(counts, key=int)
    doubled = "cat /sales/regions.table /sales/regions.table | sort"
    card = run(sh, "cat /sales/regions.table")
    assert run(sh, doubled + " -u") == sorted(["", *card])
    assert run(sh, doubled + " | uniq -d") == sorted(card)
    assert run(sh, doubled + " | uniq -u | wc -l") == ["1"]
    assert run(sh, doubled + " | uniq -c")[1:] == [f"      2 {line}" for line in sorted(card)]
    assert run(sh, "echo A | uniq -i") == ["A"]


def test_echo_and_xargs(sh: Shell) -> None:
    assert run(sh, "echo hello   world") == ["hello world"]
    assert run(sh, "echo 'hello   world'") == ["hello   world"]
    assert run(sh, "echo -n x") == ["x"]
    assert run(sh, "find /sales -name 'reg*' | xargs head -n 1") == ["sales.regions  (table, 3 rows)"]
    assert run(sh, "grep -rl email / | xargs grep -c email") == ["1"]
    assert run(sh, "echo x | xargs", 2)[0].startswith("xargs: missing command")
    assert run(sh, "echo x | xargs nope", 127) == ["nope: command not found (try help)"]


def test_help(sh: Shell) -> None:
    lines = run(sh, "help")
    text = "\n".join(lines)
    for name in COMMAND_NAMES:
        assert f"  {name} " in text
    assert run(sh, "help grep")[0].startswith("usage: grep")
    assert run(sh, "grep --help")[0].startswith("usage: grep")
    assert run(sh, "help nope", 1) == ["help: no help topics match 'nope'"]


# the command line: pipes, lists, redirections, syntax errors --------------------------------------


def test_unknown_command_and_syntax_errors(sh: Shell) -> None:
    assert run(sh, "foo /sales", 127) == ["foo: command not found (try help)"]
    assert run(sh, "ls |", 2) == ["astro: syntax error near unexpected token `newline'"]
    assert run(sh, "| ls", 2) == ["astro: syntax error near unexpected token `|'"]
    assert run(sh, "ls ;; ls", 2) == ["astro: syntax error near unexpected token `;'"]
    assert run(sh, "cat 'unterminated", 2) == ["astro: unexpected EOF while looking for matching `''"]
    assert run(sh, 'cat "unterminated', 2) == ["astro: unexpected EOF while looking for matching `\"'"]
    assert run(sh, "ls &", 2) == ["astro: background jobs (&) are not supported"]
    assert run(sh, "") == []
    assert run(sh, "   ") == []


def test_pipes_and_lists(sh: Shell) -> None:
    assert run(sh, "grep -ri email / | head -5") == [
        "/sales/customers.table:  email        VARCHAR            Contact e-mail address."
    ]
    assert run(sh, "ls /sales | grep order | wc -l") == ["2"]
    assert run(sh, "ls /nope || echo fallback") == ["ls: /nope: no such schema or table", "fallback"]
    assert run(sh, "ls /marketing && echo done") == ["campaigns.table", "web_sessions.table", "done"]
    assert run(sh, "ls /nope && echo never", 2) == ["ls: /nope: no such schema or table"]
    assert run(sh, "cd /sales; pwd; cd ..; pwd") == ["/sales", "/"]
    assert run(sh, "ls /nope | wc -l") == ["ls: /nope: no such schema or table", "0"]


def test_redirections(sh: Shell) -> None:
    assert run(sh, "ls /nope 2>/dev/null", 2) == []
    assert run(sh, "ls /nope 2>&1 | wc -l") == ["1"]
    assert run(sh, "ls /sales >/dev/null") == []
    assert run(sh, "ls /nope &>/dev/null", 2) == []
    assert run(sh, "ls /sales > out.txt", 1) == ["astro: out.txt: read-only file system"]
    assert run(sh, "ls /sales >> /sales/x", 1) == ["astro: /sales/x: read-only file system"]
    assert run(sh, "grep -c . < /sales/orders.table") == ["12"]
    assert run(sh, "head -1 < /nope", 1) == ["astro: /nope: no such schema or table"]
    assert run(sh, "ls /sales 1>&2 | wc -l")[-1] == "0"


# output cap -----------------------------------------------------------------------------------


def test_output_is_capped_by_lines(catalog: Catalog) -> None:
    sh = Shell(catalog, max_output_lines=5)
    lines = run(sh, "cat /sales/orders.table")
    assert lines[:5] == ORDERS_CARD[:5]
    assert lines[5].startswith("[output cut: 7 of 12 lines (")
    assert lines[5].endswith("not shown; narrow it with grep, head or a more specific path]")
    assert len(lines) == 6


def test_output_is_capped_by_chars(catalog: Catalog) -> None:
    sh = Shell(catalog, max_output_chars=100)
    lines = run(sh, "cat /sales/orders.table")
    assert sum(len(line) + 1 for line in lines[:-1]) <= 100
    assert lines[-1].startswith("[output cut: ")
    huge = run(sh, "echo " + "x" * 500)
    assert huge[0] == "x" * 100 and huge[1].startswith("[output cut: 1 of 1 lines")


def test_pipes_see_the_whole_output_before_the_cap(catalog: Catalog) -> None:
    sh = Shell(catalog, max_output_lines=3)
    everything = Shell(catalog, max_output_lines=10_000).run("cat /*/*").output.splitlines()
    assert run(sh, "cat /*/* | wc -l") == [str(len(everything))]


# completion -----------------------------------------------------------------------------------


def test_complete_commands_and_paths(sh: Shell) -> None:
    assert sh.complete("l") == ["less ", "ll ", "ls "]
    assert sh.complete("gr") == ["grep "]
    assert sh.complete("ls | gr") == ["ls | grep "]
    assert sh.complete("cat /sa") == ["cat /sales/"]
    assert sh.complete("cat /sales/or") == ["cat /sales/order_items.table", "cat /sales/orders.table"]
    assert sh.complete("cat /SALES/REG") == ["cat /SALES/regions.table"]
    assert sh.complete("cat /odd") == ["cat '/Odd Schema/'"]
    assert sh.complete("cat '/Odd Schema/it") == ["cat '/Odd Schema/it'\\''s.table'"]
    assert sh.complete("cat '/Odd Schema/My") == ["cat '/Odd Schema/My Table.table'"]
    assert sh.complete("cd /") == ["cd /marketing/", "cd '/Odd Schema/'", "cd /sales/"]
    assert sh.complete("cat /nope/x") == []
    run(sh, "cd /sales")
    assert sh.complete("head re") == ["head regions.table", "head revenue_by_region.view"]
    assert sh.complete("cat ../mar") == ["cat ../marketing/"]


def test_complete_round_trips_through_the_shell(sh: Shell) -> None:
    (line,) = sh.complete("cat '/Odd Schema/it")
    assert run(sh, line)[-1] == 'sql: "Odd Schema"."it\'s"'


def test_shell_on_multiple_databases(tmp_path: Path) -> None:
    first = make_shop(tmp_path / "shop.duckdb")
    second = make_shop(tmp_path / "copy.duckdb")
    with Database.open([str(first), str(second)], Settings()) as db:
        sh = Shell(load_catalog(db), db)
        assert run(sh, "ls") == ["copy/", "shop/"]
        assert run(sh, "ls -l /")[0].split()[:4] == ["copy/", "database", "12", "tables"]
        card = run(sh, "cat /shop/sales/orders.table")
        assert card[0] == "shop.sales.orders  (table, 3 rows)"
        assert card[-1] == "sql: shop.sales.orders"
        assert run(sh, "find / -name regions") == ["/copy/sales/regions.table", "/shop/sales/regions.table"]
        assert run(sh, "sample -n 1 /copy/sales/regions")[2].startswith("1 ")
        assert run(sh, "grep -rl 'e-mail' /") == [
            "/copy/sales/customers.table",
            "/shop/sales/customers.table",
        ]

"""Opening text files: prose is refused, one-column lists open, and a wrong table name
over file targets names the tables astro made. The prose is real (this repository's
documents, the licences and notes shipped with the installed packages); so is the data
(tz database country names, Unicode character names, the packages' own summaries)."""

from __future__ import annotations

import csv
import importlib.metadata as md
import shutil
import unicodedata
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb.targets import REFUSED_AS_TABLE
from astro_tui.data.errors import QueryError, TargetError
from tests.support import ROOT

_PROSE_NAMES = ("license", "licence", "copying", "notice", "readme")
"""Prose by its name. Not AUTHORS: one name a line is a one-column list, which opens (jedi's does)."""


def _shipped_prose() -> list[Path]:
    """The first licence, notice or readme of each installed distribution (text, > 500 bytes)."""
    found: dict[str, Path] = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        for file in dist.files or []:
            lower = str(file).lower()
            if name in found or lower.endswith((".py", ".pyc", ".html")):
                continue
            if any(word in lower for word in _PROSE_NAMES):
                path = Path(str(file.locate()))
                if path.is_file() and path.stat().st_size > 500:
                    found[name] = path
    return sorted(found.values())


def _refusal(path: Path) -> str:
    with pytest.raises(TargetError) as caught:
        Database.open([str(path)], Settings()).close()
    return str(caught.value)


def test_prose_is_refused_as_not_delimited_data(tmp_path: Path) -> None:
    documents = [ROOT / n for n in ("README.md", "SECURITY.md", "BENCHMARKS.md", "warehouse/README.md")]
    shipped = _shipped_prose()
    assert len(shipped) >= 20, shipped
    reasons: dict[str, list[Path]] = {}
    for i, source in enumerate([*documents, *shipped]):
        for suffix in (".txt", ".csv"):
            path = Path(shutil.copy(source, tmp_path / f"doc{i}{suffix}"))
            message = _refusal(path)
            assert message.startswith(f"{path}: ") and "\n" not in message, message
            # DuckDB's sniffer skips a licence's first paragraphs to read its all-caps
            # disclaimer as a 17-column header: that prose is refused as no rows or broken rows
            [reason] = [r for r in ("not delimited data", "broken rows", "no rows") if r in message]
            reasons.setdefault(reason, []).append(source)
    assert set(documents) <= set(reasons["not delimited data"]), reasons
    assert len(reasons["not delimited data"]) >= 0.8 * 2 * (len(documents) + len(shipped)), reasons


def test_prose_refusal_says_what_was_seen(tmp_path: Path) -> None:
    path = Path(shutil.copy(ROOT / "README.md", tmp_path / "README.txt"))
    message = _refusal(path)
    assert "commas in " in message and "do not line up into columns, and paragraphs" in message, message
    assert "unknown file type" in _refusal(Path(shutil.copy(ROOT / "README.md", tmp_path / "README.md")))


def _one_column(path: Path, header: str, values: list[str]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([header])
        writer.writerows([v] for v in values)
    return path


def _lists(tmp_path: Path) -> dict[Path, list[str]]:
    names = ["Alice", "Bob", "Ørjan Nilsen", "Mary-Jane O'Neil", "José María", "Nguyễn Văn An", "李小龍"]
    characters = [unicodedata.name(chr(c), "") for c in range(0x20, 0x2000, 7)]
    summaries = sorted({d.metadata["Summary"] for d in md.distributions() if d.metadata["Summary"]})
    lists = {
        _one_column(tmp_path / "names.csv", "name", names): names,
        _one_column(tmp_path / "characters.txt", "character name", [c for c in characters if c]): [
            c for c in characters if c
        ],
        # summaries hold commas and sentences: quoted, as a CSV writer quotes them, they are data
        _one_column(tmp_path / "summaries.csv", "summary", summaries): summaries,
        _one_column(tmp_path / "ids.csv", "id", [str(i) for i in range(40)]): [str(i) for i in range(40)],
    }
    try:
        table = Path(str(md.distribution("tzdata").locate_file("tzdata/zoneinfo/iso3166.tab")))
        countries = [line.split("\t")[1] for line in table.read_text().splitlines() if line[:1] != "#"]
        lists[_one_column(tmp_path / "countries.csv", "country", countries)] = countries
    except (md.PackageNotFoundError, OSError):
        pass
    return lists


def test_one_column_lists_are_data(tmp_path: Path) -> None:
    lists = _lists(tmp_path)
    assert len(lists) >= 4
    for path, values in lists.items():
        with Database.open([str(path)], Settings()) as db:
            [table] = [t for s in db.load_catalog().schemas for t in s.tables]
            rows = db.execute(f'select * from "{table.name}"').table.column(0).to_pylist()
        assert len(rows) == len(values) and [str(v) for v in rows] == values, path


def test_a_list_with_one_unquoted_comma_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    path.write_text("name\nAlice\nSmith, Jr.\nCarol\nDave\nEve\nFrank\n", encoding="utf-8")
    with Database.open([str(path)], Settings()) as db:
        assert db.execute("select count(*) from people").rows() == [(6,)]


def test_a_broken_csv_still_says_broken_rows(tmp_path: Path) -> None:
    path = tmp_path / "broken.csv"
    path.write_text("a,b,c\n1,2,3\n4,5\n6,7,8,9\n10,11,12\n", encoding="utf-8")
    assert "broken rows" in _refusal(path)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a,b\n1,2\n3,4,5\n6,7\n", "line 3 has 3"),  # issue 37: it said "1 read" for a row of 3
        ("a,b\n1,2\n3\n6,7\n", "line 3 has 1"),
        ('a;b\n1;2\n\n"x\ny";4\n5;6;7;8\n', "line 6 has 4"),  # a blank line, a quoted newline
    ],
)
def test_a_ragged_row_is_named_with_its_own_field_count(tmp_path: Path, text: str, found: str) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text(text, encoding="utf-8")
    assert _refusal(path) == (
        f"{path}: rows do not match the header (2 fields in the header, {found}): the file has broken rows"
    )


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "flights"
    folder.mkdir()
    (folder / "jan.csv").write_text("carrier,n\nUA,1\n", encoding="utf-8")
    (folder / "feb.csv").write_text("carrier,n\nAA,2\n", encoding="utf-8")
    return folder


def test_a_missing_table_over_files_names_the_tables_astro_made(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    spec = str(folder / "*.csv")
    with Database.open([spec, str(_one_column(tmp_path / "ids.csv", "id", ["1"]))], Settings()) as db:
        for sql in ("select * from jan", "select * from nope.jan"):
            with pytest.raises(QueryError) as caught:
                db.execute(sql)
            first, second = str(caught.value).split("\n")
            assert "does not exist" in first
            assert second == f"Tables from your files: flights ({spec}), ids ({tmp_path / 'ids.csv'})"
        with pytest.raises(QueryError) as caught:
            db.execute("select * from flight")  # DuckDB's own guess is the better hint
        assert str(caught.value).endswith('Did you mean "flights"?')
        with pytest.raises(QueryError) as caught:
            db.execute("select nope from flights")
        assert "Tables from your files" not in str(caught.value)


def test_a_missing_table_in_a_database_file_gets_no_file_hint(sample_db: Database) -> None:
    with pytest.raises(QueryError) as caught:
        sample_db.execute("select * from jan")
    assert "does not exist" in str(caught.value) and "Tables from your files" not in str(caught.value)


def test_a_file_emptied_since_the_last_open_is_refused(tmp_path: Path) -> None:
    """Each open reads the file again: one that had rows at the last open, in the same process,
    and is empty now is refused, not remembered."""
    path = tmp_path / "orders.csv"
    path.write_text("id,amount\n1,2\n")
    with Database.open([str(path)], Settings()) as db:
        assert db.execute("SELECT count(*) AS n FROM orders").rows() == [(1,)]
    path.write_text("")
    assert _refusal(path) == f"{path}: the file is empty: nothing to open"


def test_file_tables_get_names_a_user_can_type_and_describe_files_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: `2024-sales.csv` was `t_2024_sales`, `select.csv` was `select` (unusable unquoted),
    and a glob's per-file tables were described by absolute paths where a single file is not."""
    monkeypatch.chdir(tmp_path)
    for name, header in (
        ("2024-sales.csv", "a"),
        ("select.csv", "a"),
        ("Order Lines.csv", "a"),
        ("map.csv", "a"),
    ):
        (tmp_path / name).write_text(f"{header}\n1\n", encoding="utf-8")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "one.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (mixed / "two.csv").write_text("c\n3\n", encoding="utf-8")
    specs = ["2024-sales.csv", "select.csv", "Order Lines.csv", "map.csv", "mixed/*.csv"]
    with Database.open(specs, Settings()) as db:
        # `map` is a keyword DuckDB still takes as a table name: kept as it is
        for table in ("sales_2024", "select_", "order_lines", "map", "one", "two"):
            assert db.execute(f"SELECT count(*) FROM {table}").rows() == [(1,)], table
        described = {table.name: table.comment for table in db.load_catalog().tables}
    assert described == {
        "map": "from map.csv",
        "one": "from mixed/one.csv",
        "order_lines": "from Order Lines.csv",
        "sales_2024": "from 2024-sales.csv",
        "select_": "from select.csv",
        "two": "from mixed/two.csv",
    }


def test_the_words_refused_as_a_table_name_are_the_ones_duckdb_s_parser_refuses() -> None:
    """The set kept so that naming a file table loads no DuckDB is read off the parser itself:
    an upgrade that changes what `FROM word` parses fails here, not in a user's query."""
    with duckdb.connect() as con:
        keywords = {row[0] for row in con.sql("SELECT keyword_name FROM duckdb_keywords()").fetchall()}
        refused = set()
        for word in keywords:
            try:
                con.extract_statements(f"SELECT {word}.x FROM {word}")
            except duckdb.ParserException:
                refused.add(word)
    assert refused == REFUSED_AS_TABLE

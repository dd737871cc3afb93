"""What a DuckDB file defines, kept between processes for the guard (issue 27).

The guard lists the file's macros, views and generated columns, and DuckDB's own
functions, before it judges anything; an entry of `definitions_cache.py` stands in
for that listing only for the very files it was written for. Each test opens a
real file through the engine (a one-shot command's own process, or the app's
worker) and shows what the guard decides; the cache is used only where the test
has shown that the listing was not read again. A file is used once it has
settled (`identity.SETTLED_S`), as a user's file has: the tests wait for that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from astro_tui.config import Settings
from astro_tui.data import private_cache
from astro_tui.data.database import Database
from astro_tui.data.engines.duckdb import identity, resolved
from astro_tui.data.errors import DataError, GuardError
from tests.support.hostile_file import ATTACKS, HOSTILE, build_hostile
from tests.support.waiting import wait_for

MACRO_REFUSED = "declares 2 parameters; give all of them"


def _settle(*paths: Path) -> None:
    """A file is keyed once its last change is SETTLED_S old (a coarse file-system clock)."""

    def settled() -> bool:
        newest = max(max(p.stat().st_mtime, p.stat().st_ctime) for p in paths)
        return time.time() - newest > identity.SETTLED_S

    wait_for(settled, what="the files to settle")


def _entries(path: Path) -> list[Path]:
    """The entries kept for this file (the cache folder is the test session's)."""
    folder = Path(os.environ["ASTRO_CACHE_DIR"]) / "definitions"
    named = json.dumps(os.path.realpath(path))
    return sorted(e for e in folder.glob("*.json") if named in _key_of(e))


def _key_of(entry: Path) -> str:
    try:
        return str(json.loads(entry.read_text()).get("key", ""))
    except ValueError:
        return ""


@pytest.fixture
def listings_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every listing of DuckDB's functions read in this process (a one-shot engine runs the
    guard here), through the real query."""
    seen: list[str] = []
    real = resolved.rows_of

    def counted(cursor, sql):  # type: ignore[no-untyped-def]
        if sql == resolved._FUNCTIONS:
            seen.append(sql)
        return real(cursor, sql)

    monkeypatch.setattr(resolved, "rows_of", counted)
    yield seen


def _shop(root: Path, *definitions: str) -> Path:
    path = root / "shop.duckdb"
    con = duckdb.connect(str(path))
    try:
        con.execute("CREATE TABLE IF NOT EXISTS t AS SELECT range AS i FROM range(10)")
        for statement in definitions:
            con.execute(statement)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return path


def _refusal(path: Path, sql: str) -> str:
    """The guard's refusal of `sql` in a one-shot command's engine, or "" if it ran."""
    with Database.open([str(path)], Settings(), one_shot=True) as db:
        try:
            db.execute(sql)
        except GuardError as exc:
            return str(exc)
    return ""


def test_every_attack_is_refused_from_the_kept_listings(tmp_path: Path, listings_read: list[str]) -> None:
    """The hostile corpus, judged a second time from what the first open kept."""
    path = build_hostile(tmp_path / "hostile")
    _settle(path)
    with Database.open([str(path)], Settings(), one_shot=True) as db, pytest.raises(GuardError):
        db.execute(ATTACKS[0]["sql"])
    assert len(listings_read) == 1 and len(_entries(path)) == 1
    ran = []
    with Database.open([str(path)], Settings(), one_shot=True) as db:
        for attack in ATTACKS:
            try:
                db.execute(attack["sql"], timeout=30)
            except DataError as exc:
                if not isinstance(exc, GuardError) or not str(exc).startswith("refused: "):
                    ran.append((attack["sql"], str(exc)))
                continue
            ran.append((attack["sql"], "ran"))
        for legit in HOSTILE["legitimate"]:
            assert len(db.execute(legit["sql"]).rows()) == len(legit["rows"]), legit["sql"]
    assert ran == []
    assert len(listings_read) == 1, "the second open listed the file again"


def test_a_macro_added_later_is_seen_settled_or_not(tmp_path: Path, listings_read: list[str]) -> None:
    path = _shop(tmp_path)
    _settle(path)
    assert _refusal(path, "SELECT count(*) FROM t") == ""
    assert len(_entries(path)) == 1
    _shop(tmp_path, "CREATE MACRO m(a, b := 42) AS a + b")
    assert MACRO_REFUSED in _refusal(path, "SELECT m(1)")  # just changed: nothing is kept or read
    assert len(_entries(path)) == 1
    _settle(path)
    reads = len(listings_read)
    assert MACRO_REFUSED in _refusal(path, "SELECT m(1)")  # settled: a new key, listed again
    assert len(listings_read) == reads + 1 and len(_entries(path)) == 2
    assert MACRO_REFUSED in _refusal(path, "SELECT m(1)")
    assert len(listings_read) == reads + 1


def test_a_changed_file_with_the_same_times_and_size_is_a_new_key(tmp_path: Path) -> None:
    """`cp -p` / `touch -r` keep the modification time; the status-change time still moves."""
    path = _shop(tmp_path)
    _settle(path)
    before = identity.files_identity([("shop", str(path))], settled=True)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert identity.files_identity([("shop", str(path))]) != before
    assert identity.files_identity([("shop", str(path))], settled=True) is None


def test_the_log_beside_a_file_is_part_of_its_key(tmp_path: Path) -> None:
    path = _shop(tmp_path)
    _settle(path)
    files = [("shop", str(path))]
    without = identity.files_identity(files, settled=True)
    assert without is not None
    Path(f"{path}.wal").write_bytes(b"")
    assert identity.files_identity(files) not in (None, without)


CRASHED_WRITER = """
import duckdb, os, sys
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE t AS SELECT range i FROM range(10)")
con.execute("CREATE MACRO m(a) AS a + 1")
con.execute("CHECKPOINT")
con.execute("PRAGMA disable_checkpoint_on_shutdown")
con.execute("SET wal_autocheckpoint = '1TB'")
con.execute("CREATE TABLE u AS SELECT 1 j")
con.execute("SET debug_checkpoint_abort = 'before_wal_finish'")
try:
    con.execute("CHECKPOINT")
except duckdb.Error:
    pass
os._exit(0)
"""
"""A writer that stopped in the middle of a checkpoint: its log holds the checkpoint's mark."""
HIDDEN_DEFAULT_LOG = """
import duckdb, os, sys
con = duckdb.connect(sys.argv[1])
con.execute("PRAGMA disable_checkpoint_on_shutdown")
con.execute("SET wal_autocheckpoint = '1TB'")
con.execute("CREATE OR REPLACE MACRO m(a, b := 42) AS a + b")
os._exit(0)
"""
"""A log of the same database that gives `m` a hidden default, left unmerged."""


def test_a_checkpoint_log_left_beside_the_file_is_never_judged_from_a_kept_entry(tmp_path: Path) -> None:
    """DuckDB replays `<file>.wal.checkpoint` where a writer stopped mid-checkpoint (the outside
    review's attack): with one planted after an entry was kept, `m(1)` ran the hidden default."""
    path, copy = tmp_path / "x.duckdb", tmp_path / "copy.duckdb"
    subprocess.run([sys.executable, "-c", CRASHED_WRITER, str(path)], check=True)
    copy.write_bytes(path.read_bytes())
    subprocess.run([sys.executable, "-c", HIDDEN_DEFAULT_LOG, str(copy)], check=True)
    _settle(path, Path(f"{path}.wal"))
    assert _refusal(path, "SELECT m(1)") == ""  # m(a) AS a + 1
    assert len(_entries(path)) == 1
    planted = Path(f"{path}.wal.checkpoint")
    planted.write_bytes(Path(f"{copy}.wal").read_bytes())
    _settle(path, planted)
    assert MACRO_REFUSED in _refusal(path, "SELECT m(1)")
    assert identity.files_identity([("x", str(path))], settled=True) is None


def test_only_files_no_other_account_can_swap_are_keyed(tmp_path: Path) -> None:
    """Renaming a folder changes no time of the files in it, and a log can be added beside a
    file and taken away again: such places are never keyed (the outside review's race)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = _shop(home)
    _settle(path)
    files = [("shop", str(path))]
    assert identity.files_identity(files, settled=True) is not None
    for mode in (0o777, 0o1777, 0o775):  # the file's own folder: others could add a log
        home.chmod(mode)
        assert identity.files_identity(files, settled=True) is None, oct(mode)
    home.chmod(0o700)
    tmp_path.chmod(0o1777)  # a sticky folder above: only the owner may rename `home`
    assert identity.files_identity(files, settled=True) is not None
    tmp_path.chmod(0o777)  # not sticky: anyone may rename it
    assert identity.files_identity(files, settled=True) is None
    tmp_path.chmod(0o700)
    if os.getuid() == 0:
        os.chown(home, 65534, -1)  # a folder of another account
        assert identity.files_identity(files, settled=True) is None
        os.chown(home, 0, -1)
    link = tmp_path / "link"
    link.symlink_to(home, target_is_directory=True)  # one swapped in between the two looks
    assert identity.files_identity([("shop", str(link / "shop.duckdb"))], settled=True) is None
    wal = Path(f"{path}.wal")
    for file, mode in ((path, 0o666), (wal, 0o664)):  # others could write through a mapping, moving no time
        file.touch()
        file.chmod(mode)
        _settle(*(p for p in (path, wal) if p.exists()))
        assert identity.files_identity(files, settled=True) is None, (file.name, oct(mode))
        file.chmod(0o600)
    wal.unlink()
    wal.symlink_to(path)
    assert identity.files_identity(files, settled=True) is None
    wal.unlink()
    if os.getuid() == 0:
        wal.touch(mode=0o600)
        os.chown(wal, 65534, -1)
        _settle(path, wal)
        assert identity.files_identity(files, settled=True) is None
        wal.unlink()
    _settle(path)
    assert identity.files_identity(files, settled=True) is not None
    odd = tmp_path / "w?"
    odd.mkdir()
    moved = odd / "shop.duckdb"
    path.rename(moved)  # DuckDB puts the log before a `?`: in another folder
    _settle(moved)
    assert identity.files_identity([("shop", str(moved))]) is None


def test_an_entry_others_could_write_or_a_malformed_one_is_not_read(
    tmp_path: Path, listings_read: list[str]
) -> None:
    path = _shop(tmp_path, "CREATE MACRO m(a, b := 42) AS a + b")
    _settle(path)
    assert MACRO_REFUSED in _refusal(path, "SELECT m(1)")
    (entry,) = _entries(path)
    kept = json.loads(entry.read_text())
    assert [row[2] for row in kept["macros"]] == ["m"]
    forged = {**kept, "macros": []}  # hides the macro
    for text, mode in (
        (json.dumps(forged), 0o666),  # another account could have written it
        (json.dumps({**kept, "macros": [["shop", "main", "m", "macro", "a + b", "2"]]}), 0o600),
        (json.dumps({**forged, "key": kept["key"] + "x"}), 0o600),  # another file's entry
        ("{not json", 0o600),
        ("[" * 100_000, 0o600),  # deeper than the JSON reader goes
    ):
        entry.write_text(text)
        entry.chmod(mode)
        reads = len(listings_read)
        assert MACRO_REFUSED in _refusal(path, "SELECT m(1)"), text[:80]
        assert len(listings_read) == reads + 1
    assert json.loads(entry.read_text()) == kept  # written again, whole


def test_the_apps_worker_keeps_the_listings_for_the_next_command(tmp_path: Path) -> None:
    """The app's worker (its own process) writes the entry; `astro sql` then judges from it."""
    path = _shop(tmp_path, "CREATE MACRO m(a, b := 42) AS a + b")
    _settle(path)
    with Database.open([str(path)], Settings()) as db, pytest.raises(GuardError, match=MACRO_REFUSED):
        db.execute("SELECT m(1)")
    (entry,) = _entries(path)
    written = entry.stat().st_mtime_ns
    argv = [sys.executable, "-m", "astro_tui.cli", "sql", "SELECT m(1)", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert MACRO_REFUSED in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run([*argv[:4], "SELECT m(1, 2) AS three", str(path)], capture_output=True, text=True)
    assert done.returncode == 0 and "three" in done.stdout and " 3" in done.stdout
    assert _entries(path) == [entry] and entry.stat().st_mtime_ns == written


def test_a_cache_folder_an_older_astro_left_to_the_umask_is_made_private(tmp_path: Path) -> None:
    """Entries are read only from a folder no one else can write: one made 0775 before is
    closed on the next write, and its entries are read again."""
    folder = tmp_path / "entries"
    folder.mkdir(mode=0o775)
    folder.chmod(0o775)
    entry = folder / "a.json"
    private_cache.write(entry, b"{}", keep=4)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert private_cache.read(entry) == b"{}"
    folder.chmod(0o775)
    assert private_cache.read(entry) is None

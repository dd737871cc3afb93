"""An outside attack on Spark's read-only promise (issue 21), one test per finding, on the real server.

Each test is named for the class of its finding: `leak` (the server's paths, settings, user),
`limits` (astro's own work, or the statement on the server, outliving the time limit or the
memory limit), `lifecycle` (a statement left running after astro exits) and `legit`
(a query an analyst would write, refused). The findings fixed on this branch pass; those
astro cannot stop are strict xfails, listed in SECURITY.md's Spark known gaps.

The server-side tests read the Spark server's own CPU time (from /proc, the server being a
child of this test session): a statement stopped at the time limit leaves the server idle,
a statement that is not stopped keeps it busy.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from astro_tui.data.engines.spark import guard, verdict
from astro_tui.data.engines.spark.engine import SparkEngine, _redacted
from astro_tui.data.errors import DataError, QueryTimeout
from tests.support.spark_server import SparkServer
from tests.support.waiting import wait_for

GUARD_CPU_S = 1.0
"""What the guard's own reading of one statement may cost in astro's process: the smallest time
limit a person sets is a second. The linear readings take milliseconds; the quadratic ones took
10–30 s on these statements (and hours on the longest the size bound lets through)."""


@pytest.fixture(scope="module")
def spark(spark_server: SparkServer) -> Iterator[Database]:
    db = Database.open([spark_server.url], Settings())
    yield db
    db.close()


def _engine(db: Database) -> SparkEngine:
    engine = db.engine
    assert isinstance(engine, SparkEngine)
    return engine


def _cpu(work: Callable[[], object]) -> float:
    """CPU seconds `work` costs this thread: what the machine's load does not inflate."""
    started = time.thread_time()
    with contextlib.suppress(DataError):
        work()
    return time.thread_time() - started


# leak -------------------------------------------------------------------------------------------------


def test_leak_explain_formatted_shows_no_storage_path(spark: Database, spark_server: SparkServer) -> None:
    """`EXPLAIN FORMATTED` prints `Location: InMemoryFileIndex [file:/…/warehouse/…]`, with a space
    the redaction did not expect: the warehouse path reached the user. Fixed (engine._LOCATION)."""
    for sql in (
        "EXPLAIN FORMATTED SELECT * FROM sales.orders WHERE amount > 10",
        "EXPLAIN FORMATTED SELECT * FROM sales.big_orders",
    ):
        plan = "\n".join(str(r[0]) for r in spark.execute(sql).rows())
        assert "Location: InMemoryFileIndex" in plan, plan
        assert str(spark_server.warehouse) not in plan and "file:" not in plan, plan


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT current_user() AS u, user() AS v, session_user() AS w",
        "SELECT user AS u",
        "SELECT `current_user` AS u",
        "SELECT session_user AS u",
        "SELECT `uſer` AS u",
        "VALUES (user)",
        "SELECT typeof(user) AS t",
        "SELECT CAST(user AS INT) AS x",
        "SELECT 1 AS x WHERE CAST(`current_user` AS INT) = 1",
        "SELECT to_date(session_user, 'yyyy') AS d",
        "SELECT CAST(concat('x', USER) AS DATE) AS d",
    ],
)
def test_leak_current_user_does_not_name_the_servers_account(spark_server: SparkServer, sql: str) -> None:
    """`current_user()`, `user()` and `session_user()` passed both gates and returned the account the
    Spark server runs as (`root` here), whatever user the client names (`user_id=…`): the issue
    counted `${system:user.name}` as a leak, and this is the same name. The bare names (`user`,
    `` `current_user` ``, any case, Java's folding) are current_user() to Spark and a column to
    sqlglot; folded into the verdict's own plan, a cast of one failed there and its error printed
    the name before any plan was judged. Fixed: the functions are refused by name in both readings
    (verdict.OUTSIDE), the bare names by the first gate (guard._ACCOUNT_NAMES); a view that filters
    on current_user() is refused with them."""
    account = pwd.getpwuid(os.geteuid()).pw_name  # the suite's server runs as the suite's user
    with Database.open([spark_server.url + ";user_id=analyst"], Settings()) as db:
        try:
            shown = repr(db.execute(sql).rows())
        except DataError as exc:
            shown = str(exc)
    assert account not in shown, shown
    assert shown.startswith("refused:"), shown


def test_leak_the_servers_time_zone_is_refused(spark: Database) -> None:
    """`current_timezone()` names a setting of the server (`spark.sql.session.timeZone`): refused."""
    with pytest.raises(DataError, match=r"^refused: current_timezone"):
        spark.execute("SELECT current_timezone() AS tz")


# legit ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "EXPLAIN SELECT status, count(*) AS n FROM sales.orders GROUP BY status",
        "EXPLAIN SELECT upper(status) AS s FROM sales.orders",
        "EXPLAIN EXTENDED SELECT amount * 2 AS double_amount FROM sales.orders",
    ],
)
def test_legit_explain_of_a_query_with_an_alias_runs(spark: Database, sql: str) -> None:
    """Every alias gets a new expression id at every parse (`n#256` in the EXPLAIN, `n#262` in the
    inner query read alone): the two roots never matched, so any EXPLAIN of a query with an alias
    was refused as "another query than the guard". Fixed (ids are not compared)."""
    plan = str(spark.execute(sql).rows()[0][0])
    assert "Physical Plan" in plan


# limits: the guard's own work in astro's process --------------------------------------------------------


def test_limits_a_literal_of_dotted_names_is_judged_in_linear_time(spark: Database) -> None:
    """`SELECT 'a.a.a.…'`: the verdict's search for catalog calls (`db.fn(`) retried from every
    `a`, quadratic in the plan; 24,000 characters kept astro 21 s past a 2 s time limit, in the
    caller's thread, where no time limit reaches. Fixed (verdict._QUALIFIED_CALL)."""
    sql = "SELECT '" + "a." * 12_000 + "' AS x"
    engine = _engine(spark)
    plan = engine._explain(sql)
    expected = guard.inspect(sql, frozenset(), True)
    assert _cpu(lambda: verdict.judge(plan, expected, engine.functions)) < GUARD_CPU_S


def test_limits_a_literal_of_relation_prefixes_is_judged_in_linear_time(spark: Database) -> None:
    """A literal repeating `'UnresolvedRelation [` (and the TVF prefix) with no `]` after it: the
    table and table-function searches scanned to the end from every repeat (3.8 s each on a
    statement of 100,000 characters). Fixed (verdict._RELATION, verdict._TVF)."""
    body = ("'UnresolvedRelation [" * 2_300) + ("'UnresolvedTableValuedFunction [" * 1_500)
    sql = 'SELECT 1 AS one WHERE "' + body + '" = "x"'
    engine = _engine(spark)
    plan = engine._explain(sql)
    expected = guard.inspect(sql, frozenset(), True)
    assert _cpu(lambda: verdict.judge(plan, expected, engine.functions)) < GUARD_CPU_S


def test_limits_an_explain_full_of_location_prefixes_is_redacted_in_linear_time(spark: Database) -> None:
    """The EXPLAIN's redaction of file lists retried from every `Location: a[` of a folded literal
    whose line has no `]`: 23.5 s at a 2 s time limit with 20,000 repeats (hours with 200,000),
    after the result had arrived. Fixed (engine._LOCATION)."""
    sql = "EXPLAIN SELECT * FROM (SELECT concat(repeat('Location: a[', 12000), char(10)) AS x)"
    table = spark.execute(sql).table
    assert "Location: a[" in str(table.column(0)[0])
    assert _cpu(lambda: _redacted(table)) < GUARD_CPU_S


def _peak_rss_mb_during(work: Callable[[], object]) -> float:
    """This process's peak resident memory above where it stood, while `work` ran (Linux: writing
    5 to clear_refs resets the peak)."""
    Path("/proc/self/clear_refs").write_text("5")

    def status(key: str) -> float:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(key))
        return int(line.split()[1]) / 1024

    before = status("VmRSS:")
    with contextlib.suppress(DataError):
        work()
    return status("VmHWM:") - before


def test_limits_the_verdicts_plan_counts_against_the_memory_limit(spark_server: SparkServer) -> None:
    """A constant the optimizer folds (`repeat('x', 50000000)`) is printed whole in the
    optimized and physical plans of the verdict's EXPLAIN: ~100 MB of plan text arrived and was
    split and searched in astro's process, outside the byte budget. With a 100 MB limit astro
    reached +230 MB for the EXPLAIN alone and +369 MB with a 60 MB result (538 MB peak). Fixed:
    the session's `spark.sql.maxPlanStringLength` is a fifth of the memory limit (16 MiB at most),
    and a plan Spark cut there is refused (verdict._CUT)."""
    sql = "SELECT id FROM range(1) WHERE concat(CAST(id AS STRING), repeat('x', 50000000)) = 'y'"
    with Database.open([spark_server.url], Settings(memory_limit="100MB")) as db:
        grown = _peak_rss_mb_during(lambda: db.execute(sql, timeout=120))
    assert grown < 110, f"astro's process grew {grown:.0f} MB under a 100 MB limit"
    with Database.open([spark_server.url], Settings(memory_limit="100MB")) as db:
        with pytest.raises(DataError, match="longer than astro reads"):
            db.execute(sql, timeout=120)
        assert db.execute("SELECT length(repeat('x', 50000000)) AS n").rows() == [(50_000_000,)]


# limits: the statement on the server -----------------------------------------------------------------


def _server_pid(server: SparkServer) -> int:
    """The JVM itself, not the spark-submit scripts that started it with the same arguments."""
    marker = f"-Dderby.system.home={server.root / 'derby'}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
                if marker in command and b"org.apache.spark.deploy.SparkSubmit" in command:
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError("the Spark server's process was not found")


def _thread_cpu_s(pid: int) -> dict[str, tuple[float, str]]:
    """CPU seconds and name of each of the server's threads."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended
        found[task.name] = ((int(fields[11]) + int(fields[12])) / ticks, name)
    return found


def _computing(pid: int) -> list[str]:
    """The names of the server's threads that compute through half a second. A thread left
    computing gains 0.05–0.5 s of CPU in it even on a loaded machine; an idle server's threads gain
    under 0.02 s. Threads, not the process, because a loaded machine shares the process's CPU."""
    first = _thread_cpu_s(pid)
    time.sleep(0.5)  # a rate needs an interval; the wait itself is a polled condition
    after = _thread_cpu_s(pid)
    return [name for t, (cpu, name) in after.items() if t in first and cpu - first[t][0] >= 0.03]


def _server_idle(pid: int) -> Callable[[], bool]:
    """True once no thread of the server computes through two half-second windows."""
    return lambda: not _computing(pid) and not _computing(pid)


SERVER_GRACE_S = 8.0
"""How long after astro reports the time limit the server may still be busy: the interrupt's
repeats (5 s at most) and the tasks noticing it. A statement not stopped ran 16–40 s here."""

GAP_REGEX = "^(.*a){7}b"
"""Backtracks polynomially on a run of `a`s (Java's memoization does not catch it): 52 of them take
~15 s on an idle 2-core machine and about a minute under load; `{8}` on 60 runs for hours."""


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param(
            f"SELECT regexp_like(repeat('a', 52), '{GAP_REGEX}') AS hit", id="folded-in-the-verdict"
        ),
        pytest.param(
            f"SELECT regexp_like(concat(repeat('a', 52), CAST(id AS STRING)), '{GAP_REGEX}') AS hit "
            "FROM range(0, 1, 1, 1)",
            id="in-a-task",
        ),
    ],
)
def test_known_gap_a_computation_that_never_checks_runs_on_past_the_time_limit(
    spark_server: SparkServer, sql: str
) -> None:
    """Not fixed (SECURITY.md, Spark, "analysis is not free"); asserted so that a fix shows. Folded
    by the optimizer, the regex runs in the verdict's EXPLAIN on a server thread astro stops
    waiting for; on a column, it runs in a task that the interrupt marks killed but that never
    checks. astro reports the time limit at once; the server is still computing after it. (As a
    strict xfail timed against a grace period this passed or failed by the machine's speed.)"""
    pid = _server_pid(spark_server)
    wait_for(_server_idle(pid), what="the server to be idle before the test")
    with Database.open([spark_server.url], Settings()) as db, pytest.raises(QueryTimeout):
        db.execute(sql, timeout=1)
    assert _computing(pid), "the server stopped the computation: the gap is closed, update SECURITY.md"
    wait_for(_server_idle(pid), timeout=600, what="the computation to end on the server")


# lifecycle ---------------------------------------------------------------------------------------------

BOUNDED_RUNAWAY = "SELECT sum(hash(id)) AS s FROM range(0, 500000000, 1, 1)"
"""One task, about a minute on the test machine: long enough to outlive astro, short enough not to
hold the suite's server for long when the test fails."""


@pytest.mark.parametrize(
    "sig",
    [
        signal.SIGTERM,
        signal.SIGHUP,
        pytest.param(
            signal.SIGKILL,
            marks=pytest.mark.xfail(
                strict=True,
                reason="known gap (SECURITY.md, Spark): after SIGKILL nothing of astro's runs to "
                "interrupt; the server keeps the detached operation (non-reattachable tried: same)",
            ),
        ),
    ],
    ids=["SIGTERM", "SIGHUP", "SIGKILL"],
)
def test_lifecycle_a_statement_does_not_outlive_astro(spark_server: SparkServer, sig: signal.Signals) -> None:
    """`astro sql` killed by SIGTERM or SIGHUP mid-query exited at once and left its statement
    running on the server (nothing interrupted its tag; the server keeps a detached operation for
    minutes). Measured: two task slots still busy 5 minutes after astro died. Fixed for SIGTERM and
    SIGHUP: the CLI handles them as it handles Ctrl+C (cli._interruptible: the query is stopped on
    the server, then astro exits with 128 + the signal). SIGKILL cannot be handled: a strict xfail."""
    pid = _server_pid(spark_server)
    wait_for(_server_idle(pid), timeout=240, what="the server to be idle (an earlier runaway ended)")
    astro = subprocess.Popen(
        [sys.executable, "-m", "astro_tui.cli", "sql", BOUNDED_RUNAWAY, spark_server.url, "--timeout", "600"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: any(n.startswith("Executor task") for n in _computing(pid)),
            what="the statement's task to compute on the server",
        )
        astro.send_signal(sig)
        astro.wait(timeout=60)
    finally:
        if astro.poll() is None:
            astro.kill()
            astro.wait()
    wait_for(_server_idle(pid), timeout=SERVER_GRACE_S, what="the statement to stop with astro")

"""A real Spark Connect server for the test session: local[2], a free port, a temp dir removed after.

The server is the one the `pyspark` wheel ships (`jars/spark-connect_*.jar`,
started by `spark-submit --class …SparkConnectServer`), so no jar is fetched
from Maven. It runs in its own directory with its own warehouse and Derby home,
a small heap, no UI and two shuffle partitions, so one start costs a few
seconds of the suite. It wants a token (`spark.connect.authenticate.token`), so
wrong credentials can be tried on the same server. Tests and fixtures reach it
with the Spark Connect client (`SparkServer.session()`), which is also how the
dataset is loaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_START_TIMEOUT_S = 240.0
TOKEN = "sp4rk-T0ken-s3cret"


def _spark_home() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    home = Path(pyspark.__file__).parent
    return home if list((home / "jars").glob("spark-connect_*.jar")) else None


def missing() -> str | None:
    """Why a Spark Connect server cannot start here, or None when it can."""
    if _spark_home() is None:
        return "the full pyspark (with jars/spark-connect_*.jar) is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed; .ci/run installs openjdk-17-jre-headless"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class SparkServer:
    """Where the session's server listens, its warehouse, and a client session for fixtures."""

    port: int
    root: Path
    warehouse: Path
    _session: Any = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """With the token the server wants (sent over gRPC's local credentials to localhost)."""
        return self.url_with(TOKEN)

    def url_with(self, token: str | None) -> str:
        return f"sc://localhost:{self.port}" + (f"/;token={token}" if token else "")

    def session(self) -> Any:
        if self._session is None:
            from pyspark.sql.connect.session import SparkSession

            self._session = SparkSession.builder.remote(self.url).getOrCreate()
        return self._session

    def sql(self, statement: str) -> list[tuple[Any, ...]]:
        """Run trusted fixture SQL (may write); rows as tuples."""
        return [tuple(r) for r in self.session().sql(statement).collect()]

    def fingerprint(self) -> str:
        """Databases, tables, their rows and every file of the warehouse: what must not change."""
        parts = []
        for (db,) in self.sql("SHOW DATABASES"):
            parts.append(f"db {db}")
            for _ns, name, temp in self.sql(f"SHOW TABLES IN `{db}`"):
                if temp:
                    continue
                rows = self.sql(f"SELECT * FROM `{db}`.`{name}`")
                digest = hashlib.sha1(repr(sorted(map(repr, rows))).encode()).hexdigest()
                parts.append(f"table {db}.{name} {len(rows)} {digest}")
        for path in sorted(self.root.rglob("*")):
            if path.is_file() and "warehouse" in path.parts:
                parts.append(f"file {path.relative_to(self.root)} {path.stat().st_size}")
        return "\n".join(parts)


_ATTEMPTS = 3
"""Starts on a fresh free port: the port is free when picked, but another process can
take it before the server binds it."""
_BIND_FAILED = ("Address already in use", "BindException", "Failed to bind")


def _command(home: Path, root: Path, warehouse: Path, port: int, adaptive: bool) -> list[str]:
    return [
        str(home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--driver-memory",
        "1g",
        "--driver-java-options",
        f"-Dderby.system.home={root / 'derby'} -XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.port.maxRetries=0",  # fail on a taken port, never move to another
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.sql.warehouse.dir={warehouse}",
        "--conf",
        f"spark.connect.authenticate.token={TOKEN}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        f"spark.sql.adaptive.enabled={str(adaptive).lower()}",
        "--conf",
        "spark.sql.catalogImplementation=in-memory",
        "--conf",
        f"spark.local.dir={root / 'tmp'}",
        "--conf",
        "spark.driver.host=127.0.0.1",
        "spark-internal",
    ]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def _await_our_server(proc: subprocess.Popen[bytes], server: SparkServer, log_path: Path) -> str | None:
    """None once the server is up and proven ours; otherwise why this start failed.

    Something listening on the port is not proof: another process may have taken it.
    Ours is alive, its log says it started on this port, and a client session with our
    token answers with our warehouse directory.
    """
    started = f"Spark Connect server started at: 127.0.0.1:{server.port}"
    end = time.monotonic() + _START_TIMEOUT_S
    while True:
        text = log_path.read_text(errors="replace")
        if proc.poll() is not None:
            return f"the server exited with {proc.returncode}: {text[-3000:]}"
        if any(marker in text for marker in _BIND_FAILED):
            return f"port {server.port} was taken: {text[-1500:]}"
        if started in text and _listening(server.port):
            break
        if time.monotonic() > end:
            return f"not up after {_START_TIMEOUT_S:g} s: {text[-3000:]}"
        time.sleep(0.2)  # polling the log between checks
    try:
        answered = server.session().conf.get("spark.sql.warehouse.dir")
    except Exception as exc:  # any failure: not our server, or not working
        return f"the server on port {server.port} did not answer: {exc}"
    if proc.poll() is not None or not str(answered).rstrip("/").endswith(str(server.warehouse)):
        return f"port {server.port} answers for another server (warehouse {answered})"
    return None


@contextmanager
def running_server(dataset: list[str] | None = None, *, adaptive: bool = True) -> Iterator[SparkServer]:
    """Start a private Spark Connect server (and load `dataset`); stopped and removed on exit.

    `adaptive` is Spark's adaptive query execution, on by default as in Spark.
    Raises RuntimeError when it cannot start. Also used by the Spark benchmarks.
    """
    home = _spark_home()
    if home is None:
        raise RuntimeError(missing() or "no Spark")
    root = Path(tempfile.mkdtemp(prefix="astro-spark-"))
    warehouse = root / "warehouse"
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(root))
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.pop("SPARK_REMOTE", None)
    proc: subprocess.Popen[bytes] | None = None
    server: SparkServer | None = None
    failures: list[str] = []
    try:
        for attempt in range(_ATTEMPTS):
            log_path = root / f"server-{attempt}.log"
            server = SparkServer(_free_port(), root, warehouse)
            with log_path.open("wb") as log:
                proc = subprocess.Popen(
                    _command(home, root, warehouse, server.port, adaptive),
                    cwd=root,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            failure = _await_our_server(proc, server, log_path)
            if failure is None:
                break
            failures.append(failure)
            _close_session(server)
            _stop(proc)
        else:
            raise RuntimeError("Spark Connect did not start:\n" + "\n---\n".join(failures))
        for statement in _DATASET if dataset is None else dataset:
            server.sql(statement)
        yield server
    finally:
        if server is not None:
            _close_session(server)
        if proc is not None:
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def _close_session(server: SparkServer) -> None:
    if server._session is not None:
        with suppress(Exception):
            server._session.stop()
        server._session = None


@pytest.fixture(scope="session")
def spark_server() -> Iterator[SparkServer]:
    """One Spark Connect server per test session; skipped (with the reason) where it cannot run.

    Adaptive execution is off here, and only here: with it, an interrupt that lands
    while a stage is being launched leaves that stage's job running after its operation
    ended (Spark 4.x; the engine's `_SETTLE_S` covers a query's first stage, and
    bench/bench_spark_cancel.py measures it). On local[2] one such runaway would hold
    both task slots for the rest of the session. Without adaptive execution the
    suite's queries are not subject to that race, so their stops are deterministic.
    """
    reason = missing()
    if reason:
        pytest.skip(reason)
    started = time.perf_counter()
    with running_server(adaptive=False) as server:
        server.startup_s = time.perf_counter() - started  # type: ignore[attr-defined]
        yield server


_DATASET = [
    "CREATE DATABASE sales COMMENT 'Orders and the customers who place them'",
    """CREATE TABLE sales.customers (
        id INT COMMENT 'Customer number',
        name STRING,
        country STRING,
        tier STRING COMMENT 'Loyalty tier: bronze, silver or platinum'
    ) USING parquet COMMENT 'People and companies that buy from the shop'""",
    """INSERT INTO sales.customers
    SELECT CAST(id AS INT), concat('Customer ', id),
           element_at(array('France','Germany','Spain','Italy'), CAST(1 + id % 4 AS INT)),
           element_at(array('bronze','silver','platinum'), CAST(1 + id % 3 AS INT))
    FROM range(1, 201) AS r(id)""",
    """CREATE TABLE sales.orders (
        id INT,
        customer_id INT,
        placed_on DATE,
        status STRING COMMENT 'shipped, pending or refunded',
        amount DECIMAL(10,2) COMMENT 'In euros'
    ) USING parquet COMMENT 'One row per order; amount in euros'""",
    """INSERT INTO sales.orders
    SELECT CAST(id AS INT), CAST(1 + id % 200 AS INT), date_add(DATE'2024-01-01', CAST(id % 365 AS INT)),
           element_at(array('shipped','pending','refunded'), CAST(1 + id % 3 AS INT)),
           CAST(id % 97 + 0.5 AS DECIMAL(10,2))
    FROM range(1, 1501) AS r(id)""",
    "ANALYZE TABLE sales.orders COMPUTE STATISTICS",
    """CREATE VIEW sales.big_orders COMMENT 'Orders over 50 euros'
    AS SELECT * FROM sales.orders WHERE amount > 50""",
    """CREATE TABLE default.events (id BIGINT, kind STRING COMMENT 'view or click')
    USING parquet COMMENT 'Site events'""",
    "INSERT INTO default.events SELECT id, IF(id % 2 = 0, 'view', 'click') FROM range(300) AS r(id)",
]

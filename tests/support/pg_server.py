"""A real PostgreSQL server for the test session: initdb into a temp dir, a free port, removed after.

`initdb` refuses to run as root, so as root the server runs as the unprivileged
`postgres` user (`runuser`), in a directory that user owns. The server listens on
127.0.0.1 and on a unix socket inside its own directory, so parallel sessions on
the same machine never meet. Tests connect as `owner`, who owns (and could write)
every table: the read-only promise must hold whatever the role may do.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import DATA

OWNER = "owner"
OWNER_PASSWORD = "s3cret-Pa55word"
DATABASE = "shop"


@dataclass(frozen=True)
class PgServer:
    """Where the session's server listens, and how to reach it as a superuser for fixtures."""

    host: str
    port: int
    socket_dir: Path
    bin_dir: Path
    superuser: str

    def url(self, *, user: str = OWNER, password: str | None = OWNER_PASSWORD, db: str = DATABASE) -> str:
        auth = f"{user}:{password}@" if password is not None else f"{user}@"
        return f"postgresql://{auth}{self.host}:{self.port}/{db}"

    def psql(self, sql: str, *, db: str = DATABASE, user: str | None = None) -> str:
        """Run SQL as the superuser (or `user`) over the unix socket; stdout, unaligned, no headers."""
        out = subprocess.run(
            [
                str(self.bin_dir / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                user or self.superuser,
                "-d",
                db,
            ],
            input=sql,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout.strip()


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return Path(found[0]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], what: str) -> None:
    out = subprocess.run(_as_server_user(cmd), capture_output=True, text=True, timeout=180, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{what} failed: {(out.stderr or out.stdout).strip()[-2000:]}")


@contextmanager
def running_server(dataset: str | None = None) -> Iterator[PgServer]:
    """Start a private server (and load `dataset` as the owner); stopped and removed on exit.

    Raises FileNotFoundError when PostgreSQL is not installed. Also used by bench/bench_postgres.py.
    """
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
    root = Path(tempfile.mkdtemp(prefix="astro-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data = root / "data"
    superuser = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
    ctl = str(bin_dir / "pg_ctl")
    started = False
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                superuser,
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
            "initdb",
        )
        # password auth over TCP (so wrong passwords fail), trust on the private socket for fixtures
        (data / "pg_hba.conf").write_text(
            "local all all trust\n"
            "host all all 127.0.0.1/32 scram-sha-256\n"
            "host all all ::1/128 scram-sha-256\n"
        )
        for _attempt in range(3):
            port = _free_port()  # another session may take it between the probe and the bind: retry
            options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40"
            try:
                _run(
                    [
                        ctl,
                        "-D",
                        str(data),
                        "-o",
                        options,
                        "-l",
                        str(root / "log"),
                        "-w",
                        "-t",
                        "120",
                        "start",
                    ],
                    "pg_ctl",
                )
                started = True
                break
            except RuntimeError:
                continue
        if not started:
            log = (root / "log").read_text(errors="replace")[-2000:] if (root / "log").exists() else ""
            raise RuntimeError(f"PostgreSQL did not start: {log}")
        server = PgServer("127.0.0.1", port, root, bin_dir, superuser)
        server.psql(
            f"CREATE ROLE {OWNER} LOGIN PASSWORD '{OWNER_PASSWORD}'; "
            f"CREATE DATABASE {DATABASE} OWNER {OWNER};",
            db="postgres",
        )
        server.psql(_DATASET if dataset is None else dataset, user=OWNER)
        yield server
    finally:
        if started:
            subprocess.run(
                _as_server_user([ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
                capture_output=True,
                timeout=120,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)


HOSTILE_DATABASE = "trojans"
_HOSTILE_SQL = DATA / "hostile_postgres_db.sql"
_HOSTILE_AS_SUPERUSER = (
    "CREATE FUNCTION public.takes_locked(x trojan.locked_int) RETURNS int LANGUAGE sql STABLE AS 'SELECT 1'"
)
"""A harmless function the DBA wrote whose argument is the hostile owner's domain: its CHECK runs
at the call."""


def hostile_database(server: PgServer) -> str:
    """A second database, made by the owner (not a superuser) from `data/hostile_postgres_db.sql`:
    views, functions, operators, domains, casts, policies and aggregates that run what they should
    not. Its own database, so the shop's catalog and data stay as the other tests expect them."""
    found = f"SELECT count(*) FROM pg_database WHERE datname = '{HOSTILE_DATABASE}'"
    if server.psql(found, db="postgres") == "0":
        server.psql(f"CREATE DATABASE {HOSTILE_DATABASE} OWNER {OWNER}", db="postgres")
        server.psql(_HOSTILE_SQL.read_text(encoding="utf-8"), db=HOSTILE_DATABASE, user=OWNER)
        server.psql(_HOSTILE_AS_SUPERUSER, db=HOSTILE_DATABASE)
    return HOSTILE_DATABASE


@pytest.fixture(scope="session")
def pg_hostile(pg_server: PgServer) -> str:
    """The hostile database's name on the session's server (created on first use)."""
    return hostile_database(pg_server)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL per test session; skipped (with the reason) where PostgreSQL is not installed."""
    if _bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); .ci/run installs it")
    with running_server() as server:
        yield server


_DATASET = """
CREATE SCHEMA sales;
COMMENT ON SCHEMA sales IS 'Orders and the customers who place them';
CREATE TABLE sales.customers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    country text,
    tier text
);
COMMENT ON TABLE sales.customers IS 'People and companies that buy from the shop';
COMMENT ON COLUMN sales.customers.tier IS 'Loyalty tier: bronze, silver or platinum';
CREATE TABLE sales.orders (
    id integer PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES sales.customers(id),
    placed_on date NOT NULL,
    status text NOT NULL,
    amount numeric(10,2) NOT NULL
);
COMMENT ON TABLE sales.orders IS 'One row per order; amount in euros';
COMMENT ON COLUMN sales.orders.status IS 'shipped, pending or refunded';
CREATE SEQUENCE sales.invoice_no START 1000;
SELECT nextval('sales.invoice_no');
INSERT INTO sales.customers
SELECT i, 'Customer ' || i, (ARRAY['France','Germany','Spain','Italy'])[1 + i % 4],
       (ARRAY['bronze','silver','platinum'])[1 + i % 3]
FROM generate_series(1, 200) AS i;
INSERT INTO sales.orders
SELECT i, 1 + i % 200, DATE '2024-01-01' + (i % 365),
       (ARRAY['shipped','pending','refunded'])[1 + i % 3], (i % 97) + 0.5
FROM generate_series(1, 1500) AS i;
CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE amount > 50;
COMMENT ON VIEW sales.big_orders IS 'Orders over 50 euros';
CREATE MATERIALIZED VIEW sales.revenue_by_country AS
SELECT c.country, sum(o.amount) AS revenue FROM sales.orders o JOIN sales.customers c ON c.id = o.customer_id
GROUP BY c.country;
COMMENT ON MATERIALIZED VIEW sales.revenue_by_country IS 'Revenue per country, refreshed nightly';
CREATE TABLE public.events (id bigint, happened date NOT NULL, kind text) PARTITION BY RANGE (happened);
COMMENT ON TABLE public.events IS 'Site events, partitioned by month';
CREATE TABLE public.events_2024_01 PARTITION OF public.events
    FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE public.events_2024_02 PARTITION OF public.events
    FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');
INSERT INTO public.events SELECT i, DATE '2024-01-01' + (i % 59), (ARRAY['view','click'])[1 + i % 2]
FROM generate_series(1, 300) AS i;
CREATE TABLE public."Mixed Case" ("Weird Col" text);
ANALYZE;
"""

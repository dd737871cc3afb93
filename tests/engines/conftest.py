"""The engine contract's one fixture: each engine the suite can start, as the same handle.

A test that takes `engine` runs once per engine (the ibis pattern): a fourth engine gets
every contract test by adding one value to `ENGINES` and one branch to `_start`. The value
is the server's marker (tests/support/tiers.py reads it), so `-m postgres` selects the
PostgreSQL runs, and the Spark runs are `serial`: one xdist worker owns the Spark server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from astro_tui.config import Settings
from astro_tui.data.database import Database
from tests.support.pg_server import OWNER_PASSWORD
from tests.support.spark_server import TOKEN

Truth = Callable[[str], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class Engine:
    """An engine under test: its open database, the server's own answer to a query (`truth`,
    run past astro), the dialect's name as the model is told it, and the secret in its URL."""

    name: str
    db: Database
    truth: Truth
    dialect: str
    secret: str


ENGINES = ["postgres", "spark"]


def _start(
    name: str, request: pytest.FixtureRequest
) -> tuple[str, Callable[[str], list[tuple[Any, ...]]], str, str]:
    """The URL, the truth, the dialect and the secret of engine `name` (its server started)."""
    if name == "postgres":
        server = request.getfixturevalue("pg_server")
        rows = lambda sql: [tuple(line.split("|")) for line in server.psql(sql).splitlines()]  # noqa: E731
        return server.url(), rows, "PostgreSQL", OWNER_PASSWORD
    if name == "spark":
        server = request.getfixturevalue("spark_server")
        return server.url, server.sql, "Spark SQL", TOKEN
    raise ValueError(name)


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    url, truth, dialect, secret = _start(request.param, request)
    db = Database.open([url], Settings())
    yield Engine(request.param, db, truth, dialect, secret)
    db.close()

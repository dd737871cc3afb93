"""The one object the layers above `data/` use: an opened engine, guarded execution with limits.

`Database.execute` is the only way SQL from a person or the model reaches an
engine: the engine's own parser checks it (`Engine.check`), then the engine runs
it with the session's row cap and time limit and a cancel token. Which engine it
is — DuckDB, PostgreSQL, Spark — is `data/`'s business alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from astro_tui.config import Settings
from astro_tui.data.cancel import CancelToken
from astro_tui.data.engines import open_engine
from astro_tui.data.engines.base import Dialect, Engine, FirstRows
from astro_tui.data.errors import DataError
from astro_tui.data.results import QueryResult, RowSink
from astro_tui.data.scope import Scope

if TYPE_CHECKING:
    from astro_tui.data.catalog_model import Catalog  # the model: not for a process that only runs SQL


class Database:
    """An opened engine and the session's limits; safe to use from many threads.

    `label` is what the user sees, `key` names the data for per-database state
    (context notes, conversations); neither holds a secret.
    """

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings

    @classmethod
    def open(
        cls,
        specs: Sequence[str],
        settings: Settings,
        *,
        on_build: Callable[[str], None] | None = None,
        one_shot: bool = False,
    ) -> Database:
        """Open the given targets, or the sample warehouse when none are given. `one_shot`: this
        process runs one command and ends, and a limit may end it (`open_engine`)."""
        return cls(open_engine(specs, settings, on_build=on_build, one_shot=one_shot), settings)

    @property
    def label(self) -> str:
        return self.engine.label

    @property
    def key(self) -> str:
        return self.engine.key

    @property
    def context_seed(self) -> str:
        return self.engine.context_seed

    @property
    def client_info(self) -> dict[str, Any] | None:
        """How a replay reaches this data without astro (`data/clients.py`)."""
        return self.engine.client_info()

    @property
    def dialect(self) -> Dialect:
        return self.engine.dialect

    @property
    def scope(self) -> Scope:
        """What the model may not see; the engine's guard enforces it on every statement."""
        return self.engine.scope

    def load_catalog(self) -> Catalog:
        """The engine's catalog without what the scope hides: every consumer reads this one."""
        return self.scope.filter_catalog(self.engine.load_catalog())

    def load_outline(self) -> Catalog:
        """Schemas and tables first, filtered alike: an outline (`Catalog.complete` false) when
        the engine reads columns separately, else the whole catalog. Under a scope that hides
        columns, the whole catalog: a table whose every column is hidden is gone, and only its
        columns tell."""
        if any(len(p.parts) == 3 for p in self.scope.patterns):
            return self.load_catalog()
        return self.scope.filter_catalog(self.engine.load_outline())

    def ready(self) -> None:
        """Block until statements can run; raise TargetError when the data cannot be opened."""
        self.engine.ready()

    def execute(
        self,
        sql: str,
        *,
        row_cap: int | None = -1,
        timeout: float | None = -1,
        cancel: CancelToken | None = None,
        first: FirstRows | None = None,
        sink: RowSink | None = None,
    ) -> QueryResult:
        """Run one guarded, read-only statement; blocking, so call it off the UI loop.

        `row_cap=-1`/`timeout=-1` mean the settings' values; None means no limit. `first` may
        be given a long result's first rows while the rest is read, if the engine offers it.
        `sink` may be handed the rows as they are read, within the statement's limits, if the
        engine can: the result then holds none (`QueryResult.streamed`), else all of them.
        """
        cap = self.settings.row_cap if row_cap == -1 else row_cap
        limit = self.settings.query_timeout_s if timeout == -1 else timeout
        statement = self.engine.check(sql, timeout=limit)
        return self.engine.run(statement, cap=cap, timeout=limit, cancel=cancel, first=first, sink=sink)

    def count_rows(self, statement: str, *, timeout: float, cancel: CancelToken | None = None) -> int | None:
        """How many rows a statement returns, counted on the server within `timeout` seconds
        (a plain `count(*)` over it, guarded like any statement); None when it cannot be
        counted in time (or at all: `SHOW …` is not a subquery)."""
        body = statement.strip().rstrip(";").rstrip()
        try:
            result = self.execute(
                f"SELECT count(*) AS n FROM (\n{body}\n) AS astro_count",
                row_cap=1,
                timeout=timeout,
                cancel=cancel,
            )
        except DataError:
            return None
        if result.row_count != 1 or result.table.num_columns != 1:
            return None
        total = result.table.column(0)[0].as_py()
        return total if isinstance(total, int) and not isinstance(total, bool) else None

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CancelToken", "DataError", "Database", "QueryResult"]

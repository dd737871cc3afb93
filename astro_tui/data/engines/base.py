"""The contract every engine keeps, and the dialect hooks the layers above may use.

An engine is one kind of database (DuckDB, PostgreSQL, Spark). It answers five
questions: how to open a target, how to read its catalog into the typed model,
how to check SQL with the engine's own parser, how to run one statement with a
row cap, a time limit and cancel (returning Arrow), and which SQL dialect the
model should write. Everything above `data/` talks to `Database`, which wraps
one engine; nothing above `data/` names an engine.

Promises every engine keeps (tests hold each engine to them):
- `check` accepts exactly one read-only statement and refuses the rest with a
  one-line `GuardError`, before anything reaches the server;
- where the engine has a lock (read-only file, READ ONLY transaction), `run`
  uses it too, so a statement the parser missed still cannot write;
- `run` stops the statement on the server at its time limit and when the
  `CancelToken` fires, and the connection stays usable afterwards;
- `run` reads at most `cap + 1` rows: the probe row is how truncation is known;
- `run` may hand a long result's first rows to `first` once, after the check passed and
  while the rest is read (an optional capability: an engine may never call it); they are
  a prefix of the rows it then returns, and nothing else changes (limits, errors);
- `label` and `key` never contain a password or token: they are shown, saved
  and sent to the model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from astro_tui.data.cancel import CancelToken
from astro_tui.data.scope import Scope

if TYPE_CHECKING:
    import pyarrow as pa

    from astro_tui.data.catalog_model import Catalog
    from astro_tui.data.results import QueryResult, RowSink  # pyarrow: not for every importer

FirstRows = Callable[["pa.Table"], None]
"""Given a long result's first rows while the rest is read (`Engine.run`'s `first`)."""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How SQL is spelled on an engine, for the prompt and for the few queries astro writes itself.

    The defaults are DuckDB's; an engine overrides what differs. The value search
    (`catalog/values.py`) builds its batched scan from these pieces.
    """

    name: str = "DuckDB"
    quote: str = '"'
    text_type: str = "VARCHAR"
    shortest_template: str = "arg_min({v}, length({v}))"
    unpivot_template: str = "UNNEST(range({n})) AS col, UNNEST([{values}]) AS v"
    backslash_escapes: bool = False
    """Whether a backslash escapes the next character inside '…' (Spark, MySQL), not only ''."""
    hints: str = ""

    def quote_ident(self, name: str) -> str:
        return self.quote + name.replace(self.quote, self.quote * 2) + self.quote

    def literal(self, text: str) -> str:
        """`text` as a string literal this engine reads back unchanged."""
        if self.backslash_escapes:
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + text.replace("'", "''") + "'"

    def cast_text(self, expr: str) -> str:
        return f"CAST({expr} AS {self.text_type})"

    def shortest(self, expr: str) -> str:
        """An aggregate giving the shortest value of `expr` in the group."""
        return self.shortest_template.format(v=expr)

    def unpivot(self, values: list[str]) -> str:
        """A select-list fragment turning one row of `values` into rows `(col, v)`, col = 0…n-1."""
        return self.unpivot_template.format(n=len(values), values=", ".join(values))


class Engine(ABC):
    """One opened database of one kind; safe to use from several threads."""

    dialect: Dialect
    label: str
    key: str
    context_seed: str = ""
    scope: Scope = Scope()
    """What the model may not see (`--hide`); only an engine that enforces it is opened with one."""
    """Notes the model starts from on this database (the sample warehouse ships its own)."""

    @abstractmethod
    def load_catalog(self) -> Catalog:
        """Schemas, tables, views, columns, keys and row estimates in a few set-based requests."""

    def load_outline(self) -> Catalog:
        """Schemas and tables, their columns perhaps not yet (`Catalog.complete`): what can be
        shown first. An engine whose catalog comes in one read gives it whole."""
        return self.load_catalog()

    @abstractmethod
    def check(self, sql: str, *, timeout: float | None = None) -> str:
        """The statement to run if it is exactly one read-only statement; else raise GuardError.

        `timeout` is the statement's time limit, which bounds whatever the check asks a server."""

    @abstractmethod
    def run(
        self,
        statement: str,
        *,
        cap: int | None,
        timeout: float | None,
        cancel: CancelToken | None,
        first: FirstRows | None = None,
        sink: RowSink | None = None,
    ) -> QueryResult:
        """Run a checked statement with its limits; raise QueryError/QueryTimeout/QueryCancelled.
        `first`: see the promises above (an engine may ignore it). `sink`: an engine that can
        hands it the rows as they are read, inside the statement's limits, and returns a result
        that holds none (`QueryResult.streamed`); one that cannot ignores it."""

    def client_info(self) -> dict[str, Any] | None:
        """How the engine's own client reaches this data, as JSON without a secret (see
        `data/clients.py`); None where a replay cannot reach it."""
        return None

    def ready(self) -> None:
        """Block until statements can run; raise TargetError when the data cannot be opened.

        Engines that connect while opening are ready at once; DuckDB opens the file in its
        worker process meanwhile, and may answer `load_catalog` from its cache before that.
        """
        return None

    @abstractmethod
    def close(self) -> None:
        """Release the connection and anything written for this session (temp files)."""

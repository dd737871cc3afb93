"""What a session reports beside the agent's own events (`agent/events.py`).

Each is a frozen dataclass, safe to hand to another thread; a front end's listener
(`Session.listen`) receives them in the thread that caused them, in order. The app
routes them to its panes, a command-line front end prints the few it cares about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pyarrow as pa

    from astro_tui.data.catalog_model import Catalog
    from astro_tui.session.results import Result


@dataclass(frozen=True, slots=True)
class Building:
    """The sample warehouse is being built before it can be opened (first run only)."""

    text: str


@dataclass(frozen=True, slots=True)
class Opened:
    """The database is open; `label` is how it is named to the person (no secret in it)."""

    label: str


@dataclass(frozen=True, slots=True)
class OpenFailed:
    """The database cannot be opened, or cannot run statements; `retry_open()` tries again."""

    message: str


@dataclass(frozen=True, slots=True)
class CatalogOutlined:
    """Every schema and table, their columns still being read (`Catalog.complete` false);
    `CatalogLoaded` follows with the whole catalog."""

    catalog: Catalog


@dataclass(frozen=True, slots=True)
class CatalogLoaded:
    catalog: Catalog


@dataclass(frozen=True, slots=True)
class CatalogFailed:
    message: str


@dataclass(frozen=True, slots=True)
class AgentReady:
    """The agent is built (the model client imported): questions are answered from now on."""


@dataclass(frozen=True, slots=True)
class AgentFailed:
    """The model cannot be used; every question says so until the settings change."""

    message: str


@dataclass(frozen=True, slots=True)
class ResultAdded:
    """A result joined the session's log, named (`Result.name`)."""

    result: Result


@dataclass(frozen=True, slots=True)
class FirstRows:
    """The first rows of the person's running SQL while the rest is read (when the engine
    offers them): a prefix of its result, never in the log; `ResultAdded` or `QueryFailed`
    follows."""

    table: pa.Table


@dataclass(frozen=True, slots=True)
class QueryFailed:
    """The person's SQL (`sql`) or a table preview (`preview`) failed; the message is for them."""

    kind: Literal["sql", "preview"]
    message: str


@dataclass(frozen=True, slots=True)
class ExportFinished:
    """An export ended: `path` written with `rows` rows, or `error` says why not."""

    path: str
    rows: int
    error: str | None = None


SessionEvent = (
    Building
    | Opened
    | OpenFailed
    | CatalogOutlined
    | CatalogLoaded
    | CatalogFailed
    | AgentReady
    | AgentFailed
    | ResultAdded
    | FirstRows
    | QueryFailed
    | ExportFinished
)

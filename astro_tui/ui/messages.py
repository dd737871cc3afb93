"""Messages that workers post; the handlers that receive them own all widget state.

Workers never touch widgets: a thread worker running DuckDB, or the async
worker iterating the agent, reports back only through these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from astro_tui.agent.events import ChartSpec
    from astro_tui.data.catalog_model import Catalog, Table
    from astro_tui.data.database import Database
    from astro_tui.data.results import QueryResult


class BuildProgress(Message):
    """The sample warehouse is being built on first run."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class DatabaseOpened(Message):
    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db


class DatabaseFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class CatalogLoaded(Message):
    def __init__(self, catalog: Catalog) -> None:
        super().__init__()
        self.catalog = catalog


class CatalogFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


@dataclass
class ResultOrigin:
    """Where a result came from, which decides its name and whether its SQL is verified."""

    kind: str  # "sql" | "preview" | "tool" | "answer"
    label: str
    verified: bool = False
    chart: ChartSpec | None = None
    title: str | None = None
    sql_text: str | None = None


class ResultReady(Message):
    """A query finished; the results pane adds it to the session's list and shows it."""

    def __init__(self, result: QueryResult, origin: ResultOrigin, backend: Any = None) -> None:
        super().__init__()
        self.result = result
        self.origin = origin
        self.backend = backend
        """The table's display backend, when the worker built it (`ui/table_backend.py`)."""


class QueryFailed(Message):
    def __init__(self, message: str, origin: str) -> None:
        super().__init__()
        self.message = message
        self.origin = origin


class ShellOutput(Message):
    def __init__(self, command: str, output: str, exit_code: int, cwd: str) -> None:
        super().__init__()
        self.command = command
        self.output = output
        self.exit_code = exit_code
        self.cwd = cwd


class ShellReady(Message):
    """The metadata shell is built (in a worker: it imports the grep machinery, pandas among it)."""

    def __init__(self, shell: Any, error: str | None = None) -> None:
        super().__init__()
        self.shell = shell
        self.error = error


class TableCard(Message):
    def __init__(self, table: Table, card: str) -> None:
        super().__init__()
        self.table = table
        self.card = card


class AgentEvent(Message):
    """One event of the running turn, in order."""

    def __init__(self, event: Any, turn: int) -> None:
        super().__init__()
        self.event = event
        self.turn = turn


class TurnFinished(Message):
    """The turn's worker ended: normally, cancelled, or with an unexpected error."""

    def __init__(self, turn: int, *, cancelled: bool = False, error: str | None = None) -> None:
        super().__init__()
        self.turn = turn
        self.cancelled = cancelled
        self.error = error


class ExportFinished(Message):
    def __init__(self, path: str, rows: int, error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.rows = rows
        self.error = error


class InsertText(Message):
    """Ask the conversation pane to put text at the question's cursor."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class TablePrepared(Message):
    """A result's display backend is built (inert copy, column widths measured) off the loop."""

    def __init__(self, entry_id: int, backend: Any, error: str | None = None) -> None:
        super().__init__()
        self.entry_id = entry_id
        self.backend = backend
        self.error = error


class ChartPrepared(Message):
    def __init__(self, entry_id: int, series: Any, error: str | None = None) -> None:
        super().__init__()
        self.entry_id = entry_id
        self.series = series
        self.error = error


class AgentReady(Message):
    """The agent is built (the model client imported) and can take questions; or why not."""

    def __init__(self, agent: Any, error: str | None = None) -> None:
        super().__init__()
        self.agent = agent
        self.error = error

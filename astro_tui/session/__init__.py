"""The session every front end drives, and astro's Python API.

`core.py` is the one file to read: where a database is opened, where the agent
is built and where a result gets its name, in the order a session lives.
`events.py` lists what a session reports, `results.py` what it hands back
(`Result`, `Reply`), `export.py` how a result is written to a file.
"""

from astro_tui.session.core import ModelUnavailable, Session, SessionClosed
from astro_tui.session.events import (
    AgentFailed,
    AgentReady,
    Building,
    CatalogFailed,
    CatalogLoaded,
    CatalogOutlined,
    ExportFinished,
    FirstRows,
    Opened,
    OpenFailed,
    QueryFailed,
    ResultAdded,
    SessionEvent,
)
from astro_tui.session.result_log import sql_title
from astro_tui.session.results import AskFailed, Reply, Result

__all__ = [
    "AgentFailed",
    "AgentReady",
    "AskFailed",
    "Building",
    "CatalogFailed",
    "CatalogLoaded",
    "CatalogOutlined",
    "ExportFinished",
    "FirstRows",
    "ModelUnavailable",
    "OpenFailed",
    "Opened",
    "QueryFailed",
    "Reply",
    "Result",
    "ResultAdded",
    "Session",
    "SessionClosed",
    "SessionEvent",
    "sql_title",
]

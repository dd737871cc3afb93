"""DuckDB, the embedded default engine: files on this machine, opened read-only and locked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from astro_tui.data.engines.duckdb.engine import DuckDBEngine

__all__ = ["DuckDBEngine"]


def __getattr__(name: str) -> Any:
    """The engine is imported on first use: the statement worker, a submodule, must not pay for
    the guard and the catalog every time a process starts."""
    if name == "DuckDBEngine":
        from astro_tui.data.engines.duckdb.engine import DuckDBEngine

        return DuckDBEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

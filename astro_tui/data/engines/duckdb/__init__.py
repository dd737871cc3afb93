"""DuckDB, the embedded default engine: files on this machine, opened read-only and locked."""

from astro_tui.data.engines.duckdb.engine import DuckDBEngine

__all__ = ["DuckDBEngine"]

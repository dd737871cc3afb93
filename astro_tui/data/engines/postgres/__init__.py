"""PostgreSQL, the first server engine: ADBC (Arrow end to end), pglast's guard, READ ONLY transactions."""

from astro_tui.data.engines.postgres.engine import PostgresEngine, open_target

__all__ = ["PostgresEngine", "open_target"]

"""PostgreSQL, the first server engine: ADBC (Arrow end to end), pglast's guard, READ ONLY transactions."""

from astro_tui.data.engines.postgres.engine import PostgresEngine, open_target

SUPPORTS_SCOPES = True
"""`--hide` is enforced here (`scoped.py`): `open_target` takes the scope."""

__all__ = ["SUPPORTS_SCOPES", "PostgresEngine", "open_target"]

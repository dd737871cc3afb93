"""Spark over Spark Connect, the distributed engine: sqlglot's guard, server-side limits, Arrow results."""

from astro_tui.data.engines.spark.engine import SparkEngine, open_target

SUPPORTS_SCOPES = True
"""`--hide` is judged on Spark's analyzed plan (`scoped.py`)."""

__all__ = ["SUPPORTS_SCOPES", "SparkEngine", "open_target"]

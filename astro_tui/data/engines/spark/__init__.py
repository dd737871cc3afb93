"""Spark over Spark Connect, the distributed engine: sqlglot's guard, server-side limits, Arrow results."""

from astro_tui.data.engines.spark.engine import SparkEngine, open_target

__all__ = ["SparkEngine", "open_target"]

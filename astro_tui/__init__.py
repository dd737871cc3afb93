"""astro: ask a database questions; every value in the answer comes from the database."""

__version__ = "0.1.0"

"""astro: ask a database questions; every value in the answer comes from the database."""

import sys

__version__ = "0.1.0"

# The first launch writes the bytecode of what it imports, so no later launch compiles it,
# even where PYTHONDONTWRITEBYTECODE is set (many containers): uv's `compile-bytecode`
# would instead recompile all of site-packages, aloud, on every `uv run`.
sys.dont_write_bytecode = False

"""astro: ask a database questions; every value in the answer comes from the database.

As a library::

    import astro_tui

    with astro_tui.open("warehouse.duckdb") as session:
        df = session.sql("SELECT region, sum(amount) FROM sales.orders GROUP BY 1").to_pandas()
        reply = session.ask("which region sold most in 2025?")  # needs a configured model
        print(reply.text, reply.verified, reply.sql)

`open` takes the targets `astro` does (files, globs, `postgresql://…`, `sc://…`,
`@NAME`; none for the sample warehouse) and returns an opened `Session`
(`astro_tui/session/core.py`), with the same guard and limits as everywhere else.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from astro_tui.config import Settings
    from astro_tui.session import Session

__version__ = "0.1.0"

# The first launch writes the bytecode of what it imports, so no later launch compiles it,
# even where PYTHONDONTWRITEBYTECODE is set (many containers): uv's `compile-bytecode`
# would instead recompile all of site-packages, aloud, on every `uv run`.
sys.dont_write_bytecode = False


def open(
    *targets: str | os.PathLike[str],
    settings: Settings | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    **overrides: Any,
) -> Session:
    """Open TARGETS and read their catalog; raises `AstroError` with a one-line message.

    Settings come from the config file and the environment as for `astro`, with
    `overrides` (`model="…"`, `query_timeout_s=5`, `row_cap=1000`, …) winning;
    `settings` replaces all of that. Notes and conversations go to `state_dir`
    (default: `.astro/` in the working directory, or `ASTRO_STATE_DIR`).
    """
    from astro_tui.config import load_settings
    from astro_tui.config import state_dir as default_state_dir
    from astro_tui.session import Session

    chosen = settings if settings is not None else load_settings(overrides)
    folder = Path(state_dir) if state_dir is not None else default_state_dir()
    session = Session([os.fspath(t) for t in targets], chosen, state_dir=folder)
    try:
        return session.open()
    except BaseException:
        session.close()
        raise

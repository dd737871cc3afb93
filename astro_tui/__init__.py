"""astro: ask a database questions; every value in the answer comes from the database.

As a library::

    import astro_tui

    with astro_tui.open() as session:  # no target: the sample warehouse
        df = session.sql("SELECT region_name, sum(net_revenue) FROM sales.daily_revenue GROUP BY 1")
        reply = session.ask("which region sold most in 2025?")  # needs a model: open(model=…)
        print(reply.text, reply.verified, reply.sql)

`open` takes the targets `astro` does (files, globs, `postgresql://…`, `sc://…`,
`@NAME`; none for the sample warehouse, whose file `sample_path()` names) and returns an
opened `Session` (`astro_tui/session/core.py`), with the same guard and limits as
everywhere else. `__all__` is the whole public surface; every error it raises derives from
`AstroError` and reads as one line.

The names are imported when first used, so `astro sql` (which imports this package first)
pays for none of them.
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os
    from pathlib import Path
    from typing import Any

    from astro_tui.config import ConfigError, Settings
    from astro_tui.data.errors import GuardError, QueryCancelled, QueryError, QueryTimeout, TargetError
    from astro_tui.errors import AstroError
    from astro_tui.session import AskFailed, Reply, Result, Session
    from astro_tui.session.export import ExportError

__version__ = "0.1.0"

__all__ = [
    "AskFailed",
    "AstroError",
    "ConfigError",
    "ExportError",
    "GuardError",
    "QueryCancelled",
    "QueryError",
    "QueryTimeout",
    "Reply",
    "Result",
    "Session",
    "Settings",
    "TargetError",
    "__version__",
    "open",
    "sample_path",
]

_HOMES = {
    "AskFailed": "astro_tui.session.results",
    "AstroError": "astro_tui.errors",
    "ConfigError": "astro_tui.config",
    "ExportError": "astro_tui.session.export",
    "GuardError": "astro_tui.data.errors",
    "QueryCancelled": "astro_tui.data.errors",
    "QueryError": "astro_tui.data.errors",
    "QueryTimeout": "astro_tui.data.errors",
    "Reply": "astro_tui.session.results",
    "Result": "astro_tui.session.results",
    "Session": "astro_tui.session.core",
    "Settings": "astro_tui.config",
    "TargetError": "astro_tui.data.errors",
}
"""Where each public class lives; `astro_tui.X` imports it on first use."""

# The first launch writes the bytecode of what it imports, so no later launch compiles it,
# even where PYTHONDONTWRITEBYTECODE is set (many containers): uv's `compile-bytecode`
# would instead recompile all of site-packages, aloud, on every `uv run`.
_sys.dont_write_bytecode = False


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'astro_tui' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return list(__all__)


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
    import os
    from pathlib import Path

    from astro_tui.config import load_settings
    from astro_tui.config import state_dir as default_state_dir
    from astro_tui.session import Session

    labels = {name: f"astro_tui.open({name}=…)" for name in overrides}
    chosen = settings if settings is not None else load_settings(overrides, labels=labels)
    folder = Path(state_dir) if state_dir is not None else default_state_dir()
    session = Session([os.fspath(t) for t in targets], chosen, state_dir=folder)
    try:
        return session.open()
    except BaseException:
        session.close()
        raise


def sample_path(*, build: bool = True) -> Path:
    """The sample warehouse's DuckDB file (what `open()` with no target opens), built first if
    it is not there yet (a few seconds, once; kept in the user's cache directory, or
    `ASTRO_CACHE_DIR`). With `build=False`, where it is or will be."""
    from astro_tui.data.engines import sample_file

    return sample_file(build=build)

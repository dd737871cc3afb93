"""The theme the person picks (ctrl+t) is remembered in the config file, keeping their comments."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.app import App

from astro_tui.config import write_setting
from astro_tui.errors import AstroError


class ThemeMemory:
    """Listens to the app's theme changes; writes a new choice in a thread, off the UI loop."""

    def __init__(self, app: App[Any], saved: str | None) -> None:
        self.app = app
        self.saved = saved

    def changed(self, theme: Any) -> None:
        name = getattr(theme, "name", str(theme))
        if name != self.saved:
            self.saved = name
            self.app.run_worker(partial(self._save, name), thread=True, group="settings", exit_on_error=False)

    def _save(self, name: str) -> None:
        try:
            write_setting("theme", name)
        except (AstroError, OSError) as exc:
            self.app.call_from_thread(
                self.app.notify, f"Cannot save the theme: {exc}", severity="warning", markup=False
            )

"""The footer, rebuilt only when the keys it shows change.

Textual's footer recomposes on every bindings update: after each result, focus
change and turn, even when the same keys are shown. A recompose mounts a widget
per key, and with a large result on screen it held the UI loop for a good part
of a second.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widgets import Footer

ZOOM_UNSHOWN = "Panes"
"""The footer group left out of a zoomed view: its keys leave the zoom for another pane."""


class KeyFooter(Footer):
    """A `Footer` that skips the rebuild when the shown bindings are what it already shows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: tuple[Any, ...] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        shown = _signature(screen)
        if shown == self._shown and self.children:
            return
        super().bindings_changed(screen)
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = shown  # only once a rebuild is really on its way


def _signature(screen: Screen) -> tuple[Any, ...]:
    return tuple(
        (binding.key, binding.action, binding.description, enabled, tooltip, binding.group)
        for (_node, binding, enabled, tooltip) in screen.active_bindings.values()
        if binding.show
    )


class MainScreen(Screen):
    """The app's screen: a zoomed view's footer leaves out the keys that go to other panes (they
    still work, and F1 lists them), so that it fits one line with Esc at 80 columns."""

    @property
    def active_bindings(self) -> dict[str, ActiveBinding]:
        bindings = super().active_bindings
        if self.maximized is None:
            return bindings
        return {
            key: active._replace(binding=replace(active.binding, show=False))
            if active.binding.group is not None and active.binding.group.description == ZOOM_UNSHOWN
            else active
            for key, active in bindings.items()
        }

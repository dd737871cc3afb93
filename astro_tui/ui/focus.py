"""Moving focus before the next key is read.

`Widget.focus()` moves focus on a later turn of the event loop, after the keys
already queued; F4 followed at once by typing (a fast typist, a paste, leaving
zoom with Esc first) then typed into the pane F4 was meant to leave.
"""

from __future__ import annotations

from textual.widget import Widget


def focus_now(widget: Widget) -> None:
    """Focus `widget` before the next queued key; a widget that cannot take focus yet (shown by
    this same key) gets Textual's deferred focus instead. Whatever takes the keyboard is on
    screen: a zoomed pane that does not hold `widget` is restored first."""
    screen = widget.screen
    maximized = screen.maximized
    if maximized is not None and maximized not in widget.ancestors_with_self:
        screen.minimize()
    screen.set_focus(widget)
    if screen.focused is not widget:
        widget.focus()

"""Copy text to the clipboard the way that works where the user is.

pyperclip reaches the system clipboard on a desktop; over SSH or headless it
has none, and the terminal's OSC 52 sequence (Textual's `copy_to_clipboard`)
is the only way. The caller tells the user which one was used.
"""

from __future__ import annotations

from textual.app import App

SYSTEM = "system clipboard"
TERMINAL = "terminal clipboard (OSC 52)"


def copy_text(app: App[object], text: str) -> str:
    """Copy and return where it went; never raises for a missing clipboard."""
    try:
        import pyperclip

        pyperclip.copy(text)
    except Exception:
        # PyperclipException when no mechanism exists; anything else is just as unusable here.
        app.copy_to_clipboard(text)
        return TERMINAL
    return SYSTEM

"""Where the panes sit at each width, and what showing or hiding one does to the others.

Three columns when wide; below MEDIUM the catalog becomes a drawer (F6), below
NARROW the results move under the conversation. The state is the screen's
classes, which `styles/app.tcss` reads; this object only decides which to set,
so whatever takes the keyboard is on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from textual.screen import Screen

NARROW = 100
MEDIUM = 140

Kind = Literal["", "narrow", "medium", "wide"]


class PaneLayout:
    """The app's one layout: the width class it is in and the moves between panes."""

    def __init__(self, catalog_shown: Callable[[bool], object] = lambda shown: None) -> None:
        """`catalog_shown` hears whether the catalog is on screen after every move, so whatever
        names the way to it can say so only while it is hidden."""
        self.kind: Kind = ""
        self._catalog_shown = catalog_shown

    def catalog_on_screen(self, screen: Screen[object]) -> bool:
        if self.kind == "wide":
            return not screen.has_class("-no-catalog")
        return screen.has_class("-catalog-open")

    def _moved(self, screen: Screen[object]) -> None:
        self._catalog_shown(self.catalog_on_screen(screen))

    def apply_width(self, screen: Screen[object], width: int) -> None:
        kind: Kind = "narrow" if width < NARROW else "medium" if width < MEDIUM else "wide"
        if kind != self.kind:
            self.kind = kind
            screen.remove_class("-catalog-open", "-no-catalog", "-no-results", "-drawer-results")
        screen.set_class(kind == "narrow", "-narrow")
        screen.set_class(kind == "medium", "-medium")
        self._moved(screen)

    def show_catalog(self, screen: Screen[object]) -> None:
        screen.remove_class("-no-catalog")
        if self.kind != "wide" and not screen.has_class("-catalog-open"):
            screen.remove_class("-drawer-results")
            screen.add_class("-catalog-open")
        self._moved(screen)

    def show_results(self, screen: Screen[object]) -> None:
        """Below 140 columns the open drawer hides the results: between 100 and 140 it then sits
        beside them instead of the conversation, below 100 it closes."""
        screen.remove_class("-no-results")
        if self.kind == "narrow":
            screen.remove_class("-catalog-open")
        elif self.kind == "medium":
            screen.add_class("-drawer-results")
        self._moved(screen)

    def show_question(self, screen: Screen[object]) -> None:
        if self.kind == "narrow":
            screen.remove_class("-catalog-open")
        screen.remove_class("-drawer-results")
        self._moved(screen)

    def toggle_catalog(self, screen: Screen[object]) -> bool:
        """Open or close the drawer (hide or show the column when wide); True if it is now shown."""
        if self.kind != "wide":
            screen.toggle_class("-catalog-open")
            screen.remove_class("-drawer-results")
        else:
            screen.toggle_class("-no-catalog")
        self._moved(screen)
        return self.catalog_on_screen(screen)

    def toggle_results(self, screen: Screen[object]) -> bool:
        """True if the results are now shown."""
        screen.toggle_class("-no-results")
        screen.remove_class("-drawer-results")
        return not screen.has_class("-no-results")

    def result_arrived(self, screen: Screen[object]) -> None:
        """Below 100 columns a new result brings the hidden results back under the conversation."""
        if self.kind == "narrow":
            screen.remove_class("-no-results")

"""Work the app does ahead, so that a person's first result, chart and answer are not slow.

Both run in worker threads once the catalog is on screen: imports take the
interpreter for long stretches, and the first paint must not wait for them.
The imports wait for the person too (`WarmUp`): Arrow, pandas and the table
widget held ~90 MB of the app's memory from launch, which a person who only
browses the catalog never needed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

AFTER_PAINT_WAIT_S = 1.0  # background imports wait this long at most for a frame to be painted


def warm_imports(after: threading.Event) -> None:
    """Import what the first result, chart and answer need while the user is still typing: the
    result's first (a /sql may come within a second of the first key), then the rest."""
    after.wait(AFTER_PAINT_WAIT_S)
    import pyarrow as pa
    import textual_fastdatatable.data_table  # noqa: F401

    from astro_tui.ui.table_backend import display_backend

    # The widget's first measure imports pandas (a second or more); it measures text that is
    # not plain ASCII itself: "é" takes that path (`column_widths.py`), "x" the other.
    display_backend(pa.table({"text": ["x", "é"], "ascii": ["x", "y"], "number": [1, 2]}))
    import rich.markdown  # noqa: F401  (model text)
    import textual_plotext  # noqa: F401

    from astro_tui.ui.widgets.markdown_text import block_starts

    block_starts("warm\n")
    settle_heap()


def settle_heap() -> None:
    """Move what start-up allocated (modules, the catalog, the model client: a large heap)
    out of the garbage collector's sight. Otherwise every full collection walks all of it,
    about 150–300 ms with the loop stopped, every second or two while an answer streams."""
    import gc

    gc.freeze()


class WarmUp:
    """Starts the warm-up (`start`, given the event set once the catalog is painted) once the
    catalog is on screen and the person has pressed a key or clicked; once. Called on the
    event loop only."""

    def __init__(self, start: Callable[[threading.Event], None]) -> None:
        self._start = start
        self._painted: threading.Event | None = None
        self._asked = False
        self._started = False

    def catalog_shown(self, painted: threading.Event) -> None:
        self._painted = painted
        self._maybe_start()

    @property
    def started(self) -> bool:
        return self._started

    def input_seen(self) -> None:
        self._asked = True
        self._maybe_start()

    def _maybe_start(self) -> None:
        if self._started or not self._asked or self._painted is None:
            return
        self._started = True
        self._start(self._painted)

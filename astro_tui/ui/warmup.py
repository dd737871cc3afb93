"""Work the app does ahead, so that a person's first result, chart and answer are not slow.

Both run in worker threads once the catalog is on screen: imports take the
interpreter for long stretches, and the first paint must not wait for them.
The imports wait for the person too (`WarmUp`): Arrow, the table widget,
Markdown and charts hold tens of MB of the app's memory, which a person who only
browses the catalog never needs. A result's imports come first and are all a
result needs (no pandas: `data/without_pandas.py`); the rest wait while a
person's statement is on its way to the screen, since an import holds the
interpreter that the result's display needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

AFTER_PAINT_WAIT_S = 1.0  # background imports wait this long at most for a frame to be painted
RESULT_FIRST_WAIT_S = 5.0  # the later imports wait this long at most for a result to be shown


def warm_imports(after: threading.Event, quiet: threading.Event) -> None:
    """Import what the first result, chart and answer need while the user is still typing: the
    result's first (a /sql may come within a second of the first key), then the rest, each
    once no statement of the person's is on its way to the screen (`quiet`)."""
    after.wait(AFTER_PAINT_WAIT_S)
    import pyarrow as pa

    from astro_tui.data import without_pandas

    without_pandas.decide()  # before the first conversion below
    import textual_fastdatatable.data_table  # noqa: F401

    from astro_tui.ui.table_backend import display_backend

    # Accented text is counted in Arrow, a combining mark goes to the widget's own measure
    # (`column_widths.py`): "é" takes the one path, "e\u0301" the other, "x" the ASCII one.
    display_backend(pa.table({"text": ["x", "é", "e\u0301"], "ascii": ["x", "y", "z"], "number": [1, 2, 3]}))
    quiet.wait(RESULT_FIRST_WAIT_S)
    import rich.markdown  # noqa: F401  (model text)

    from astro_tui.ui.widgets.markdown_text import block_starts

    block_starts("warm\n")
    quiet.wait(RESULT_FIRST_WAIT_S)
    import textual_plotext  # noqa: F401

    settle_heap()


def settle_heap() -> None:
    """Move what start-up allocated (modules, the catalog, the model client: a large heap)
    out of the garbage collector's sight. Otherwise every full collection walks all of it,
    about 150–300 ms with the loop stopped, every second or two while an answer streams."""
    import gc

    gc.freeze()


class WarmUp:
    """Starts the warm-up (`start`, given the event set once the catalog is painted) once the
    catalog is on screen and the person has pressed a key or clicked; once. `holding` says a
    statement of the person's runs or its result is not yet on screen (`hold`, `release`):
    the warm-up's later imports wait for it. Called on the event loop only."""

    def __init__(self, start: Callable[[threading.Event], None]) -> None:
        self._start = start
        self._painted: threading.Event | None = None
        self._asked = False
        self._started = False
        self.quiet = threading.Event()
        self.quiet.set()

    def catalog_shown(self, painted: threading.Event) -> None:
        self._painted = painted
        self._maybe_start()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def holding(self) -> bool:
        return not self.quiet.is_set()

    def input_seen(self) -> None:
        self._asked = True
        self._maybe_start()

    def hold(self) -> None:
        self.quiet.clear()

    def release(self) -> None:
        self.quiet.set()

    def _maybe_start(self) -> None:
        if self._started or not self._asked or self._painted is None:
            return
        self._started = True
        self._start(self._painted)

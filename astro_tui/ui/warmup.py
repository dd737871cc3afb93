"""Work the app does ahead, so that a person's first result, chart and answer are not slow.

Both run in worker threads once the catalog is on screen: imports take the
interpreter for long stretches, and the first paint must not wait for them.
"""

from __future__ import annotations

import threading

AFTER_PAINT_WAIT_S = 1.0  # background imports wait this long at most for a frame to be painted


def warm_imports(after: threading.Event) -> None:
    """Import what the first result, chart and answer need while the user is still reading."""
    after.wait(AFTER_PAINT_WAIT_S)
    import pyarrow as pa
    import rich.markdown  # noqa: F401  (model text)
    import textual_fastdatatable.data_table  # noqa: F401
    import textual_plotext  # noqa: F401

    from astro_tui.ui.table_backend import display_backend
    from astro_tui.ui.widgets.markdown_text import block_starts

    block_starts("warm\n")
    # The widget measures text that is not plain ASCII itself, and its first measure imports
    # pandas (a second or more): "é" takes that path (`column_widths.py`), "x" the other.
    display_backend(pa.table({"text": ["x", "é"], "ascii": ["x", "y"], "number": [1, 2]}))
    settle_heap()


def settle_heap() -> None:
    """Move what start-up allocated (modules, the catalog, the model client: a large heap)
    out of the garbage collector's sight. Otherwise every full collection walks all of it,
    about 150–300 ms with the loop stopped, every second or two while an answer streams."""
    import gc

    gc.freeze()

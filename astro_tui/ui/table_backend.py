"""A result's table as the results pane shows it: an inert copy, floats exact, columns measured.

Built off the event loop: measuring a million rows' widths takes tens of
milliseconds, and over a second the first time (pyarrow imports pandas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def display_backend(table: pa.Table) -> Any:
    """The `ArrowBackend` a DataTable mounts at once, its column widths already measured."""
    from textual_fastdatatable import ArrowBackend

    from astro_tui.ui.display_numbers import exact_floats
    from astro_tui.ui.inert import inert_table

    backend = ArrowBackend(exact_floats(inert_table(table)))
    backend.render_markup = False
    _ = backend.column_content_widths
    return backend

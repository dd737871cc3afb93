"""A result's table as the results pane shows it: an inert copy, numbers as astro writes them.

Built off the event loop: a column the types cannot measure from a few values
(`column_widths.py`) costs tens of milliseconds over a million rows. None of it
needs pandas, which pyarrow would otherwise import at its first conversion from
Python values (a second or more, ~50 MB): `without_pandas.decide` comes first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def display_backend(table: pa.Table) -> Any:
    """The `ArrowBackend` a DataTable mounts at once, its column widths already measured."""
    from astro_tui.data import without_pandas

    without_pandas.decide()
    from astro_tui.ui.column_widths import DisplayBackend
    from astro_tui.ui.inert import inert_table

    backend = DisplayBackend(inert_table(table))
    backend.render_markup = False
    _ = backend.column_content_widths
    return backend

"""The chart pipeline as the results pane uses it: the same series as `astro ask`.

Choosing columns, bounding points and drawing live in `agent/charts.py`, below
the UI, so the app and the headless answer draw the same chart; this module
only names what the pane needs.
"""

from __future__ import annotations

from astro_tui.agent.charts import (
    KINDS,
    ChartChoice,
    Series,
    choice_of,
    default_choice,
    numeric_columns,
    prepare,
    rows_of,
    x_column,
)

__all__ = [
    "KINDS",
    "ChartChoice",
    "Series",
    "choice_of",
    "default_choice",
    "numeric_columns",
    "prepare",
    "rows_of",
    "x_column",
]

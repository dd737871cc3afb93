"""The Chart tab's plot: laid out again for its size at every repaint.

A zoomed or resized pane gets the layout its new size allows (labels under the bars,
bars lying down, numbered bars with a legend); a pane too small for any says so and
that F10 gives it room, whatever the kind of chart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from astro_tui.agent.chart_draw import draw

if TYPE_CHECKING:
    from astro_tui.agent.charts import Series


class ChartPlot(PlotextPlot):
    """A `PlotextPlot` that draws a prepared `Series` through the one chart pipeline."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: Series | None = None

    def show(self, series: Series) -> None:
        self.series = series
        self.refresh()

    def render(self) -> RenderResult:
        width, height = self.size
        if self.series is None or width <= 0 or height <= 0:
            return Text("")
        drawn = draw(self.plt, self.series, width, height)
        if drawn.too_small:
            zoomed = self.screen.maximized is not None
            room = "widen the terminal, or chart fewer rows" if zoomed else "F10 gives it room"
            return Text(f"{drawn.too_small[:1].upper()}{drawn.too_small[1:]}: {room}.", style="italic")
        # as PlotextPlot.render does: plotsize alone is cut to what plotext takes for the terminal
        self.plt._set_size(width, height - len(drawn.below))
        self.plt.theme(self._get_plotext_theme_name(self.app.theme))
        plot = Text.from_ansi(self.plt.build().rstrip("\n"))
        for line in drawn.below:
            plot.append("\n" + line)
        return plot

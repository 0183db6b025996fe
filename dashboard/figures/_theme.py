"""The figures' one theme: light, like Streamlit's own page, sized for a projector.

There is no dark variant: a dark figure inside Streamlit's light page read as a black box
(issue 34), and one theme for the whole page is simpler to read than a choice. Traces in
the foreground colour (the diagonal, reference curves) carry ``meta="ink"``, hand-drawn
panel frames and gridlines ``meta="grid"``, so tests can find them by role.
"""

from __future__ import annotations

import functools

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["THEME", "INK", "GRID", "apply_theme", "ink"]

INK = "ink"  # the meta tag of foreground-coloured traces
GRID = "grid"  # the meta tag of drawn frames and gridlines

THEME = {
    "template": "plotly_white",
    "paper": "#FFFFFF",
    "plot": "#FFFFFF",
    "ink": "#1A1A1A",
    "grid": "#D0D0D0",
    "line": "#5A5A5A",
    "hover_bg": "#FFFFFF",
}

FONT_SIZE = 15  # body text; never below 14 px anywhere (projector)
TICK_SIZE = 14
TITLE_SIZE = 19


def ink() -> str:
    """The foreground colour (text, diagonal)."""
    return THEME["ink"]


def _axis_style(t: dict) -> dict:
    return {
        "gridcolor": t["grid"],
        "zerolinecolor": t["grid"],
        "linecolor": t["line"],
        "showline": True,
        "tickfont": {"size": TICK_SIZE, "color": t["ink"]},
        "title": {"font": {"size": FONT_SIZE, "color": t["ink"]}},
    }


@functools.cache
def _template() -> go.layout.Template:
    """Plotly's base template with the theme's colours and sizes, built once.

    Styling every axis, ternary and annotation through the template costs one assignment;
    ``update_xaxes`` and friends on a 20-panel grid took over a second.

    Only the base template's layout is kept: its per-trace-type defaults (colour scales,
    bar outlines, ...) are unused here, and its axes' ``automargin`` makes Plotly.js lay a
    figure out again after measuring the tick labels. The figures set their own margins;
    without the two, every figure drew in about half the time in Chromium (e.g. the
    confidence diagram 150 -> 80 ms).
    """
    t = THEME
    template = go.layout.Template(layout=pio.templates[t["template"]].layout)
    axis = {**_axis_style(t), "automargin": False}
    ternary_axis = {
        k: v for k, v in axis.items() if k not in ("zerolinecolor", "showline", "automargin")
    }
    template.layout.update(
        xaxis=axis,
        yaxis=axis,
        ternary={
            "bgcolor": t["plot"],
            "aaxis": ternary_axis,
            "baxis": ternary_axis,
            "caxis": ternary_axis,
        },
        annotationdefaults={"font": {"size": FONT_SIZE, "color": t["ink"]}},
        title={"font": {"size": TITLE_SIZE, "color": t["ink"]}},
        legend={"font": {"size": TICK_SIZE, "color": t["ink"]}, "bgcolor": "rgba(0,0,0,0)"},
        hoverlabel={"font": {"size": TICK_SIZE}, "bgcolor": t["hover_bg"]},
    )
    return template


def apply_theme(fig: go.Figure) -> go.Figure:
    """Apply the theme to ``fig`` in place and return it.

    Sets the template (axes, ternary axes, annotations, legend and hover styled in it),
    paper and plot backgrounds, a font of at least 14 px, and gridlines visible on a
    projector.
    """
    t = THEME
    fig.update_layout(
        template=_template(),
        paper_bgcolor=t["paper"],
        plot_bgcolor=t["plot"],
        font={"size": FONT_SIZE, "color": t["ink"]},
        title_font={"size": TITLE_SIZE, "color": t["ink"]},
        title_subtitle_font={"size": FONT_SIZE, "color": t["ink"]},
    )
    return fig

"""Light and dark themes sized for a projector.

Traces whose colour follows the theme (the diagonal, reference curves) carry
``meta="ink"``, hand-drawn panel frames and gridlines ``meta="grid"``; :func:`apply_theme`
recolours them, so re-theming a finished figure needs no rebuild.
"""

from __future__ import annotations

import functools

import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["THEMES", "INK", "GRID", "apply_theme", "ink", "check_theme"]

INK = "ink"  # the meta tag of theme-coloured traces
GRID = "grid"  # the meta tag of drawn frames and gridlines

THEMES = {
    "light": {
        "template": "plotly_white",
        "paper": "#FFFFFF",
        "plot": "#FFFFFF",
        "ink": "#1A1A1A",
        "grid": "#D0D0D0",
        "line": "#5A5A5A",
        "hover_bg": "#FFFFFF",
    },
    "dark": {
        # Streamlit's dark background, so a chart does not show as a box on the page.
        "template": "plotly_dark",
        "paper": "#0E1117",
        "plot": "#0E1117",
        "ink": "#E8E8E8",
        "grid": "#3A404C",
        "line": "#9AA0AA",
        "hover_bg": "#262730",
    },
}

FONT_SIZE = 15  # body text; never below 14 px anywhere (projector)
TICK_SIZE = 14
TITLE_SIZE = 19


def check_theme(theme: str) -> dict:
    """The theme's colours; ``ValueError`` for anything but "light" or "dark"."""
    try:
        return THEMES[theme]
    except (KeyError, TypeError):
        raise ValueError(f"theme must be 'light' or 'dark'; got {theme!r}.") from None


def ink(theme: str) -> str:
    """Foreground colour of ``theme`` (text, diagonal)."""
    return check_theme(theme)["ink"]


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
def _template(theme: str) -> go.layout.Template:
    """Plotly's base template with this theme's colours and sizes, built once per theme.

    Styling every axis, ternary and annotation through the template costs one assignment;
    ``update_xaxes`` and friends on a 20-panel grid took over a second.

    Only the base template's layout is kept: its per-trace-type defaults (colour scales,
    bar outlines, ...) are unused here, and its axes' ``automargin`` makes Plotly.js lay a
    figure out again after measuring the tick labels. The figures set their own margins;
    without the two, every figure drew in about half the time in Chromium (e.g. the
    confidence diagram 150 -> 80 ms).
    """
    t = check_theme(theme)
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


def apply_theme(fig: go.Figure, theme: str) -> go.Figure:
    """Apply the "light" or "dark" theme to ``fig`` in place and return it.

    Sets the template (axes, ternary axes, annotations, legend and hover styled in it),
    paper and plot backgrounds, a font of at least 14 px, gridlines visible on a
    projector, and the colour of ``meta="ink"`` traces.

    Raises
    ------
    ValueError
        ``theme`` is neither "light" nor "dark".
    """
    t = check_theme(theme)
    fig.update_layout(
        template=_template(theme),
        paper_bgcolor=t["paper"],
        plot_bgcolor=t["plot"],
        font={"size": FONT_SIZE, "color": t["ink"]},
        title_font={"size": TITLE_SIZE, "color": t["ink"]},
        title_subtitle_font={"size": FONT_SIZE, "color": t["ink"]},
    )
    for trace in fig.select_traces(selector={"meta": INK}):
        trace.line.color = t["ink"]
        if "markers" in (trace.mode or ""):
            trace.marker.color = t["ink"]
            trace.marker.line.color = t["ink"]
    for trace in fig.select_traces(selector={"meta": GRID}):
        trace.line.color = t["grid"]
        if "text" in (trace.mode or ""):  # tick labels drawn as text
            trace.textfont.color = t["ink"]
    return fig

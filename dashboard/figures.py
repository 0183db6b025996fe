"""Plotly figures drawn from calcore's result objects.

Nothing here computes a metric or re-bins data: every number on a figure is a field of
the calcore result it was given (bin positions, accuracies, counts, interval ends, the
ECE). The only arithmetic is what Plotly's encodings need (an interval as distances from
the point for error bars, a bin width for a bar).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = ["OKABE_ITO", "reliability_figure"]

# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common
# colour-vision deficiencies.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "bluish_green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish_purple": "#CC79A7",
}

VIEW_LABELS = {
    "confidence": ("confidence (max probability)", "accuracy"),
    "top-label": ("top-label probability", "frequency of the predicted class"),
    "class-wise": ("class probability", "frequency of the class"),
}


def reliability_figure(diagram, *, title: str | None = None, height: int = 620) -> go.Figure:
    """Reliability diagram with a bin-count histogram below it.

    Parameters
    ----------
    diagram : calcore.ReliabilityDiagram
        Per-bin ``confidence``, ``accuracy``, ``count``, ``ci_lower``, ``ci_upper`` (NaN
        for empty bins), ``lower_edge``/``upper_edge`` (or ``bin_edges``, length B + 1),
        and ``ece``, ``view``, ``n``.
    title : str, optional
        Figure title; HTML-escaped, so it may hold user text such as a file name.
        Defaults to a title naming the view and the ECE.
    height : int
        Figure height in pixels.

    Returns
    -------
    plotly.graph_objects.Figure
        Traces, by ``name``: ``"perfect calibration"`` (the diagonal), ``"accuracy"``
        (one point per non-empty bin at ``(confidence, accuracy)`` with Wilson-interval
        error bars; ``customdata`` columns: count, ci_lower, ci_upper, lower edge, upper
        edge) and ``"count"`` (one bar per bin from its lower edge, as wide as the bin, in
        the lower panel).
    """
    count = np.asarray(diagram.count)
    if hasattr(diagram, "lower_edge"):  # exact per-bin intervals (also for data-driven bins)
        left = np.asarray(diagram.lower_edge, dtype=float)
        right = np.asarray(diagram.upper_edge, dtype=float)
    else:
        edges = np.asarray(diagram.bin_edges, dtype=float)
        left, right = edges[:-1], edges[1:]
    filled = count > 0  # empty bins have no point (their fields are NaN)
    conf = np.asarray(diagram.confidence, dtype=float)[filled]
    acc = np.asarray(diagram.accuracy, dtype=float)[filled]
    lo = np.asarray(diagram.ci_lower, dtype=float)[filled]
    hi = np.asarray(diagram.ci_upper, dtype=float)[filled]
    x_label, y_label = VIEW_LABELS.get(str(diagram.view), ("score", "observed frequency"))

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26],
                        vertical_spacing=0.05)  # fmt: skip
    fig.add_trace(
        go.Scatter(x=[0.0, 1.0], y=[0.0, 1.0], mode="lines", name="perfect calibration",
                   line={"color": OKABE_ITO["black"], "dash": "dash", "width": 1},
                   hoverinfo="skip"),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=conf,
            y=acc,
            mode="lines+markers",
            name="accuracy",
            line={"color": OKABE_ITO["blue"], "width": 1.5},
            marker={"color": OKABE_ITO["blue"], "size": 8},
            error_y={"type": "data", "symmetric": False, "array": hi - acc,
                     "arrayminus": acc - lo, "color": OKABE_ITO["blue"], "thickness": 1.2},
            customdata=np.column_stack([count[filled], lo, hi, left[filled], right[filled]]),
            hovertemplate=(
                "bin [%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>"
                f"mean {x_label}: %{{x:.4f}}<br>"
                f"{y_label}: %{{y:.4f}}<br>"
                "Wilson interval: %{customdata[1]:.4f} to %{customdata[2]:.4f}<br>"
                "%{customdata[0]:,} rows<extra></extra>"
            ),
        ),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Bar(
            x=left,
            y=count,
            width=right - left,
            offset=0,
            name="count",
            marker={
                "color": OKABE_ITO["sky_blue"],
                "line": {"color": OKABE_ITO["blue"], "width": 0.5},
            },
            customdata=np.column_stack([left, right]),
            hovertemplate="bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<br>"
            "%{y:,} rows<extra></extra>",
        ),
        row=2, col=1,
    )  # fmt: skip
    if title is None:
        title = f"{diagram.view} reliability diagram · ECE = {diagram.ece:.4f} · n = {diagram.n:,}"
    fig.update_layout(
        title={"text": html.escape(title), "x": 0.0, "xanchor": "left"},
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        bargap=0,
        hovermode="closest",
    )
    fig.update_xaxes(range=[0.0, 1.0], row=1, col=1)
    fig.update_xaxes(range=[0.0, 1.0], title_text=x_label, row=2, col=1)
    fig.update_yaxes(range=[-0.02, 1.02], title_text=y_label, row=1, col=1)
    fig.update_yaxes(title_text="rows per bin", rangemode="tozero", row=2, col=1)
    return fig

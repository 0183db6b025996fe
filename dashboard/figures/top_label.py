"""Top-label reliability diagram with the Delta_b construction (Gupta & Ramdas 2022, Fig. 1).

For each bin ``b`` of the confidence ``h``, ``(conf_b, acc_b)`` is the confidence
diagram's point and ``(conf_b, signed_point_b)`` with ``signed_point_b = conf_b +- Delta_b``
the top-label point: ``Delta_b`` averages the per-class gaps inside the bin, so it is at
least ``|acc_b - conf_b|``. The vertical segment from the diagonal to the top-label point
(through the confidence point) shows the miscalibration the confidence diagram hides.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import (
    LINE_WIDTH,
    MARKER_SIZE,
    diagonal,
    esc,
    finish,
    ordered,
    reliability_points,
    segments,
)
from dashboard.figures._style import method_style
from dashboard.figures.reliability import count_bars

__all__ = ["top_label_figure"]


def _method_traces(diagram, *, label: str, style: dict) -> list[go.Scatter]:
    conf_d = diagram.confidence_diagram
    filled = np.asarray(conf_d.count) > 0  # empty bins (NaN fields) are skipped
    conf = np.asarray(conf_d.confidence, dtype=float)[filled]
    signed = np.asarray(diagram.signed_point, dtype=float)[filled]
    xs, ys = segments(conf, conf, conf, signed)  # from the diagonal to the top-label point
    delta = go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        name=f"{label} (Δ_b)",
        legendgroup=label,
        showlegend=False,
        line={"color": style["color"], "width": LINE_WIDTH},
        opacity=0.55,
        hoverinfo="skip",
    )
    confidence = reliability_points(
        conf_d,
        name=f"{label} (confidence)",
        group=label,
        style={**style, "symbol": f"{style['symbol']}-open"},
        show_intervals=False,
        mode="markers",
    )
    confidence.marker.line = {"width": 2, "color": style["color"]}
    custom = np.column_stack(
        [
            np.asarray(conf_d.count, dtype=float)[filled],
            np.asarray(diagram.delta, dtype=float)[filled],
            np.asarray(conf_d.accuracy, dtype=float)[filled],
            np.asarray(conf_d.lower_edge, dtype=float)[filled],
            np.asarray(conf_d.upper_edge, dtype=float)[filled],
        ]
    )
    top_label = go.Scatter(
        x=conf,
        y=signed,
        mode="lines+markers",
        name=label,
        legendgroup=label,
        line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
        marker={"color": style["color"], "size": MARKER_SIZE + 2, "symbol": style["symbol"]},
        customdata=custom,
        hovertemplate=(
            "bin [%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>"
            "mean confidence: %{x:.4f}<br>"
            "top-label point conf ± Δ_b: %{y:.4f}<br>"
            "Δ_b: %{customdata[1]:.4f}<br>"
            "accuracy: %{customdata[2]:.4f}<br>"
            "%{customdata[0]:,} rows"
        ),
    )
    return [delta, confidence, top_label]


def top_label_figure(diagrams, *, height: int = 620) -> go.Figure:
    """Confidence and top-label points per method, bin counts below.

    Parameters
    ----------
    diagrams : Mapping[str, calcore.TopLabelReliabilityDiagram]
        Method name -> diagram, in display order.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (labels HTML-escaped), over the non-empty bins:
        ``<method>``: top-label points ``(conf_b, signed_point_b)``, ``customdata``
        columns count, delta, accuracy, lower edge, upper edge;
        ``"<method> (confidence)"``: ``(conf_b, acc_b)`` (open markers);
        ``"<method> (Δ_b)"``: segments ``(conf_b, conf_b) -> (conf_b, signed_point_b)``
        separated by ``None``; ``"<method> (count)"``: bars of the confidence bins;
        ``"perfect calibration"``.
    """
    diagrams = ordered(diagrams, "diagrams")
    styles = method_style(list(diagrams))
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.05
    )
    fig.add_trace(diagonal(), row=1, col=1)
    for k, (method, diagram) in enumerate(diagrams.items()):
        label = esc(method)
        for trace in _method_traces(diagram, label=label, style=styles[method]):
            fig.add_trace(trace, row=1, col=1)
        bars = count_bars(
            diagram.confidence_diagram,
            name=f"{label} (count)",
            group=label,
            color=styles[method]["color"],
            slot=k,
            slots=len(diagrams),
        )
        fig.add_trace(bars, row=2, col=1)
    first = next(iter(diagrams.values())).confidence_diagram
    eces = " · ".join(
        f"{esc(m)} {d.confidence_diagram.ece:.4f} / {d.top_label_ece:.4f}"
        for m, d in diagrams.items()
    )
    title = f"Top-label reliability diagram · {esc(first.binning)} · n = {int(first.n):,}"
    fig.update_layout(bargap=0, barmode="overlay")
    fig.update_xaxes(range=[0.0, 1.0], row=1, col=1)
    fig.update_xaxes(range=[0.0, 1.0], title_text="confidence (max probability)", row=2, col=1)
    fig.update_yaxes(
        range=[-0.02, 1.02], title_text="accuracy (open) · conf ± Δ_b (filled)", row=1, col=1
    )
    fig.update_yaxes(title_text="rows per bin", rangemode="tozero", row=2, col=1)
    subtitle = f"conf-ECE / TL-ECE: {eces}"
    return finish(fig, title=title, subtitle=subtitle, height=height)

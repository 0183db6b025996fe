"""Top-label reliability diagram: plain by default, the Delta_b construction on request.

The plain diagram (the default) is what a newcomer reads without a key: one line per method
through the points ``(conf_b, acc_b)`` of the bins of the confidence ``h``, and the rows per
bin in a strip below. The detail (Gupta & Ramdas 2022, Fig. 1) adds, per bin, the top-label
point ``(conf_b, signed_point_b)`` with ``signed_point_b = conf_b +- Delta_b``: ``Delta_b``
averages the per-class gaps inside the bin, so it is at least ``|acc_b - conf_b|``, and the
vertical segment from the diagonal to it (through the accuracy point) shows the
miscalibration that averaging over classes hides.
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

__all__ = ["top_label_figure", "X_TITLE", "Y_TITLE"]

X_TITLE = "confidence (top probability)"
Y_TITLE = "accuracy (share of top labels correct)"
Y_TITLE_DETAIL = "accuracy (open) and conf ± Δ_b (filled)"


def _method_traces(diagram, *, label: str, style: dict) -> list[go.Scatter]:
    conf_d = diagram.confidence_diagram
    filled = np.asarray(conf_d.count) > 0  # empty bins (NaN fields) are skipped
    conf = np.asarray(conf_d.confidence, dtype=float)[filled]
    signed = np.asarray(diagram.signed_point, dtype=float)[filled]
    # conf_b - Delta_b can fall below 0 (and conf_b + Delta_b above 1) when the classes of a
    # bin err both ways: drawn at the axis edge, its true value in the hover
    drawn = np.clip(signed, 0.0, 1.0)
    xs, ys = segments(conf, conf, conf, drawn)  # from the diagonal to the top-label point
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
        name=label,
        group=label,
        style={**style, "symbol": f"{style['symbol']}-open"},
        show_intervals=False,
        mode="markers",
        x_label="mean confidence",
    )
    confidence.marker.line = {"width": 2, "color": style["color"]}
    custom = np.column_stack(
        [
            np.asarray(conf_d.count, dtype=float)[filled],
            np.asarray(diagram.delta, dtype=float)[filled],
            np.asarray(conf_d.accuracy, dtype=float)[filled],
            np.asarray(conf_d.lower_edge, dtype=float)[filled],
            np.asarray(conf_d.upper_edge, dtype=float)[filled],
            signed,
        ]
    )
    top_label = go.Scatter(
        x=conf,
        y=drawn,
        mode="lines+markers",
        name=f"{label} (conf ± Δ_b)",
        legendgroup=label,
        line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
        marker={"color": style["color"], "size": MARKER_SIZE + 2, "symbol": style["symbol"]},
        customdata=custom,
        hovertemplate=(
            "bin [%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>"
            "mean confidence: %{x:.4f}<br>"
            "top-label point conf ± Δ_b: %{customdata[5]:.4f}<br>"
            "Δ_b: %{customdata[1]:.4f}<br>"
            "accuracy: %{customdata[2]:.4f}<br>"
            "%{customdata[0]:,} rows"
        ),
    )
    return [delta, confidence, top_label]


def _plain_trace(diagram, *, label: str, style: dict) -> go.Scatter:
    """One method's line through ``(conf_b, acc_b)`` of its non-empty bins."""
    return reliability_points(
        diagram.confidence_diagram, name=label, group=label, style=style, show_intervals=False
    )


def top_label_figure(diagrams, *, detail: bool = False, height: int = 620) -> go.Figure:
    """Accuracy against confidence per method, rows per bin in a strip below.

    Parameters
    ----------
    diagrams : Mapping[str, calcore.TopLabelReliabilityDiagram]
        Method name -> diagram, in display order.
    detail : bool
        Also draw the top-label construction: the per-class gap ``Delta_b`` of every bin.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (labels HTML-escaped), over the non-empty bins:
        ``<method>``: ``(conf_b, acc_b)`` (a line; open markers only with ``detail``),
        ``customdata`` columns count, ci_lower, ci_upper, lower edge, upper edge;
        ``"<method> (count)"``: bars of the confidence bins; ``"perfect calibration"``.
        With ``detail`` also ``"<method> (conf ± Δ_b)"``: top-label points
        ``(conf_b, signed_point_b)`` clipped to [0, 1], ``customdata`` columns count,
        delta, accuracy, lower edge, upper edge, the unclipped signed point; and
        ``"<method> (Δ_b)"``: segments ``(conf_b, conf_b) -> (conf_b, signed_point_b)``
        separated by ``None``.
    """
    diagrams = ordered(diagrams, "diagrams")
    styles = method_style(list(diagrams))
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.76, 0.24], vertical_spacing=0.06
    )
    fig.add_trace(diagonal(), row=1, col=1)
    for k, (method, diagram) in enumerate(diagrams.items()):
        label = esc(method)
        if detail:
            traces = _method_traces(diagram, label=label, style=styles[method])
        else:
            traces = [_plain_trace(diagram, label=label, style=styles[method])]
        for trace in traces:
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
    eces = " · ".join(f"{esc(m)} {d.top_label_ece:.4f}" for m, d in diagrams.items())
    title = f"Top-label reliability · {esc(first.binning)} · n = {int(first.n):,}"
    fig.update_layout(bargap=0, barmode="overlay")
    fig.update_xaxes(range=[0.0, 1.0], row=1, col=1)
    fig.update_xaxes(range=[0.0, 1.0], title_text=X_TITLE, row=2, col=1)
    fig.update_yaxes(
        range=[-0.02, 1.02], title_text=Y_TITLE_DETAIL if detail else Y_TITLE, row=1, col=1
    )
    fig.update_yaxes(title_text="test rows", rangemode="tozero", nticks=4, row=2, col=1)
    subtitle = f"TL-ECE: {eces}"
    return finish(fig, title=title, subtitle=subtitle, height=height)

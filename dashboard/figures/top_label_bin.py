"""Drill-down of one top-label bin: its per-class points (Gupta & Ramdas 2022, Fig. 1b).

Inside bin ``b`` every predicted class ``l`` has its own point ``(conf_{b,l}, acc_{b,l})``
and gap ``Delta_{b,l}``; ``Delta_b`` is their count-weighted mean. The confidence point
``(conf_b, acc_b)`` can sit on the diagonal while the class points do not.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._common import (
    LINE_WIDTH,
    MARKER_SIZE,
    diagonal,
    esc,
    finish,
    segments,
    sized_marker,
    styles_for,
)
from dashboard.figures._theme import INK, ink

__all__ = ["top_label_bin_figure"]


def _bin_points(diagram, b: int) -> go.Scatter:
    """The bin's confidence point (open circle) and top-label point (x) over all classes."""
    cd = diagram.confidence_diagram
    conf = float(cd.confidence[b])
    return go.Scatter(
        x=[conf, conf],
        y=[float(cd.accuracy[b]), float(diagram.signed_point[b])],
        mode="markers",
        meta=INK,
        name="bin: confidence and top-label points",
        marker={
            "color": ink(),
            "size": MARKER_SIZE + 4,
            "symbol": ["circle-open", "x"],
            "line": {"width": 2, "color": ink()},
        },
        customdata=[[float(diagram.delta[b])]] * 2,
        hovertemplate="bin mean confidence: %{x:.4f}<br>accuracy (open) / conf ± Δ_b (x): "
        "%{y:.4f}<br>Δ_b: %{customdata[0]:.4f}<extra></extra>",
    )


#: Classes whose names are written beside their points (the others: on hover).
LABELLED_CLASSES = 12


def top_label_bin_figure(
    diagram,
    bin_index: int,
    *,
    method: str | None = None,
    methods=None,
    height: int = 560,
) -> go.Figure:
    """Per-class points inside one bin of a top-label diagram.

    Parameters
    ----------
    diagram : calcore.TopLabelReliabilityDiagram
    bin_index : int
        Bin ``b`` (0-based, as in the diagram's arrays).
    method, methods : str and sequence of str, optional
        The diagram's method and the app's ordered method list: the points take that
        method's colour and the title names it.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name``: ``"classes"`` with ``x``, ``y``, ``marker.size`` and
        ``customdata`` columns (count, gap) equal to ``diagram.bin_breakdown(b)``'s
        confidence, accuracy, count and gap, ``hovertext`` the HTML-escaped class names,
        ``text`` the same for the ``LABELLED_CLASSES`` classes with the most rows and
        ``""`` for the others;
        ``"class gaps"``: segments ``(conf, conf) -> (conf, acc)`` per class broken by
        ``None``; ``"bin: confidence and top-label points"``: ``(conf_b, acc_b)`` and
        ``(conf_b, signed_point_b)``; ``"perfect calibration"``.

    Raises
    ------
    ValueError
        ``bin_index`` outside the diagram's bins.
    """
    cd = diagram.confidence_diagram
    n_bins = len(cd.count)
    if isinstance(bin_index, bool) or not 0 <= int(bin_index) < n_bins:
        raise ValueError(f"bin_index must be in 0..{n_bins - 1}; got {bin_index!r}.")
    b = int(bin_index)
    color = styles_for([method or "method"], methods)[method or "method"]["color"]
    part = diagram.bin_breakdown(b)
    lo, hi = float(cd.lower_edge[b]), float(cd.upper_edge[b])
    # Zoom on the bin: the class points share its confidence range.
    pad = max(hi - lo, 0.02) / 2
    x0, x1 = max(0.0, lo - pad), min(1.0, hi + pad)

    names = [esc(c) for c in part["class"]]
    # On the points, only the classes with the most rows: a hundred labels overlap into an
    # unreadable blot; every point names its class on hover.
    order = np.argsort(-np.asarray(part["count"], dtype=float), kind="stable")
    labelled = {int(i) for i in order[:LABELLED_CLASSES]}

    fig = go.Figure()
    fig.add_vrect(x0=lo, x1=hi, fillcolor="rgba(128,128,128,0.15)", line_width=0, layer="below")
    fig.add_trace(diagonal(lo=x0, hi=x1))
    xs, ys = segments(part["confidence"], part["confidence"], part["confidence"], part["accuracy"])
    fig.add_trace(
        go.Scatter(x=xs, y=ys, mode="lines", name="class gaps", hoverinfo="skip",
                   line={"color": color, "width": LINE_WIDTH}, opacity=0.5, showlegend=False)
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=np.asarray(part["confidence"], dtype=float),
            y=np.asarray(part["accuracy"], dtype=float),
            mode="markers+text",
            name="classes",
            hovertext=names,
            text=[n if i in labelled else "" for i, n in enumerate(names)],
            textposition="top center",
            marker=sized_marker(part["count"], color=color),
            customdata=np.column_stack(
                [np.asarray(part["count"], dtype=float), np.asarray(part["gap"], dtype=float)]
            ),
            hovertemplate="predicted class: %{hovertext}<br>mean confidence: %{x:.4f}<br>"
            "accuracy: %{y:.4f}<br>gap |acc − conf|: %{customdata[1]:.4f}<br>"
            "%{customdata[0]:,} rows<extra></extra>",
        )
    )
    count = int(cd.count[b])
    if count:
        fig.add_trace(_bin_points(diagram, b))
        detail = (
            f"{count:,} rows · conf_b = {cd.confidence[b]:.4f} · acc_b = {cd.accuracy[b]:.4f}"
            f" · Δ_b = {diagram.delta[b]:.4f}"
        )
    else:
        detail = "empty bin: no rows"
        fig.add_annotation(text="no rows in this bin", x=(lo + hi) / 2, y=0.5, showarrow=False)
    who = f" · {esc(method)}" if method is not None else ""
    fig.update_xaxes(range=[x0, x1], title_text="confidence of the predicted class")
    fig.update_yaxes(range=[-0.02, 1.02], title_text="accuracy within the class")
    title = f"Bin {b} [{lo:.3f}, {hi:.3f}]{who}"
    return finish(fig, title=title, subtitle=detail, height=height)

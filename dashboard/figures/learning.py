"""Learning curves: a metric and accuracy against the calibration-set size (Mix-n-Match Fig. 6)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import LINE_WIDTH, band, esc, finish
from dashboard.figures._style import UNCALIBRATED, method_style

__all__ = ["learning_curve_figure"]

METRIC_LABELS = {
    "top_label_ece": "TL-ECE",
    "confidence_ece": "conf-ECE",
    "classwise_ece": "CW-ECE",
    "nll": "NLL",
    "brier": "Brier score",
}


def _line(x, y, *, name: str, group: str, style: dict, showlegend: bool, what: str):
    return go.Scatter(
        x=x,
        y=y,
        mode="lines+markers",
        name=name,
        legendgroup=group,
        showlegend=showlegend,
        line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
        marker={"color": style["color"], "size": 9, "symbol": style["symbol"]},
        hovertemplate=f"%{{x:,}} calibration rows<br>{what}: %{{y:.4f}}",
    )


def _accuracy_range(curve) -> list[float]:
    """Axis range around the accuracy bands.

    Accuracy barely moves under calibration, and Plotly's autorange of a nearly flat line
    spans [0, 2 * value]; a range fitted to the bands (within [0, 1]) shows the changes.
    """
    lo = float(np.nanmin(np.asarray(curve.accuracy_mean) - np.asarray(curve.accuracy_std)))
    hi = float(np.nanmax(np.asarray(curve.accuracy_mean) + np.asarray(curve.accuracy_std)))
    pad = max(0.01, 0.1 * (hi - lo))
    return [max(0.0, lo - pad), min(1.0, hi + pad)]


def learning_curve_figure(curve, *, height: int = 520) -> go.Figure:
    """The metric (left) and accuracy (right) against the calibration-set size.

    Parameters
    ----------
    curve : calcore.LearningCurve
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (escaped), for method ``i`` of ``curve.methods``: ``<method>``
        (``x = sizes``, ``y = mean[i]``), ``"<method> (± sd)"`` (polygon over ``x = [sizes,
        reversed sizes]``, ``y = [mean + std, reversed mean - std]``), ``"<method>
        (accuracy)"`` and ``"<method> (accuracy ± sd)"`` likewise from ``accuracy_mean``
        and ``accuracy_std``; ``"uncalibrated"``: ``y = [uncalibrated, uncalibrated]``
        over the size range, in the left panel.
    """
    sizes = np.asarray(curve.sizes)
    methods = list(curve.methods)
    styles = method_style([UNCALIBRATED, *methods])
    metric = METRIC_LABELS.get(curve.metric, esc(curve.metric))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1)
    ref = styles[UNCALIBRATED]
    fig.add_trace(
        go.Scatter(x=[sizes[0], sizes[-1]], y=[curve.uncalibrated] * 2, mode="lines",
                   name=UNCALIBRATED, legendgroup=UNCALIBRATED,
                   line={"color": ref["color"], "width": LINE_WIDTH, "dash": "dash"},
                   hovertemplate=f"uncalibrated {esc(metric)}: %{{y:.4f}}<extra></extra>"),
        row=1, col=1,
    )  # fmt: skip
    for i, method in enumerate(methods):
        label, style = esc(method), styles[method]
        panels = (
            (1, curve.mean[i], curve.std[i], label, f"{label} (± sd)", metric),
            (2, curve.accuracy_mean[i], curve.accuracy_std[i], f"{label} (accuracy)",
             f"{label} (accuracy ± sd)", "accuracy"),
        )  # fmt: skip
        for col, mean, std, name, band_name, what in panels:
            mean, std = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
            shade = band(sizes, mean - std, mean + std, color=style["color"],
                         name=band_name, group=label)  # fmt: skip
            fig.add_trace(shade, row=1, col=col)
            line = _line(sizes, mean, name=name, group=label, style=style,
                         showlegend=col == 1, what=esc(what))  # fmt: skip
            fig.add_trace(line, row=1, col=col)
    log = sizes.min() > 0 and sizes.max() / sizes.min() >= 10  # sizes usually grow geometrically
    fig.update_xaxes(
        type="log" if log else "linear",
        tickvals=sizes,  # the sizes themselves, not log-axis minor labels
        tickformat=",d",
        title_text="calibration-set size (rows)",
    )
    fig.update_yaxes(title_text=esc(metric), rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="accuracy", range=_accuracy_range(curve), row=1, col=2)
    title = f"Learning curves: {esc(metric)} and accuracy against calibration-set size"
    subtitle = f"mean ± sd over {int(curve.n_repeats)} repetitions · evaluated on the test set"
    return finish(fig, title=title, subtitle=subtitle, height=height)

"""The calibration errors of every method side by side, with their bootstrap intervals."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._common import MARKER_SIZE, esc, finish, ordered
from dashboard.figures._style import method_style

__all__ = ["metric_intervals_figure"]

GROUP_WIDTH = 0.7  # share of a metric's slot taken by its methods' markers


def metric_intervals_figure(values, *, metrics, height: int = 440) -> go.Figure:
    """One marker per (metric, method) at the estimate, with its interval as an error bar.

    Parameters
    ----------
    values : Mapping[str, Mapping[str, calcore.Interval | None]]
        Method -> metric key -> interval (``low``/``high`` NaN: no interval yet; an
        interval with a ``caveat`` is drawn without its bar), in display order; a missing
        or None entry leaves a gap.
    metrics : Sequence[tuple[str, str]]
        ``(metric key, label)`` in x order (errors on a common scale, e.g. the ECEs).
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per method named ``<method>`` (escaped): ``y`` the estimates in the order
        of ``metrics`` (NaN where missing), at ``x = metric index + the method's offset``;
        ``customdata`` columns low, high; ``error_y`` the distances to them.
    """
    values = ordered(values, "values")
    metrics = list(metrics)
    if not metrics:
        raise ValueError("metrics must name at least one (key, label) pair.")
    styles = method_style(list(values))
    k = len(values)
    step = GROUP_WIDTH / k
    fig = go.Figure()
    for j, (method, row) in enumerate(values.items()):
        est, low, high = (np.full(len(metrics), np.nan) for _ in range(3))
        for i, (key, _) in enumerate(metrics):
            iv = row.get(key)
            if iv is not None and math.isfinite(iv.estimate):
                est[i] = iv.estimate
                if not getattr(iv, "caveat", None):  # no bar that reads as a range for the truth
                    low[i], high[i] = iv.low, iv.high
        label, style = esc(method), styles[method]
        fig.add_trace(
            go.Scatter(
                x=np.arange(len(metrics)) + (j - (k - 1) / 2) * step,
                y=est,
                mode="markers",
                name=label,
                marker={
                    "color": style["color"],
                    "size": MARKER_SIZE + 2,
                    "symbol": style["symbol"],
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": high - est,
                    "arrayminus": est - low,
                    "color": style["color"],
                    "thickness": 2,
                    "width": 6,
                },  # fmt: skip
                customdata=np.column_stack([low, high]),
                text=[esc(t) for _, t in metrics],
                hovertemplate=(
                    f"{label}<br>%{{text}}: %{{y:.4f}}"
                    "<br>95% interval: %{customdata[0]:.4f} to %{customdata[1]:.4f}"
                    "<extra></extra>"
                ),
            )
        )
    fig.update_xaxes(
        tickvals=list(range(len(metrics))),
        ticktext=[esc(t) for _, t in metrics],
        range=[-0.5, len(metrics) - 0.5],
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(title_text="error (lower is better)", rangemode="tozero")
    return finish(
        fig, title="Calibration errors", height=height,
        subtitle="estimate and bias-corrected 95% bootstrap interval (no bar: not computed)",
    )  # fmt: skip

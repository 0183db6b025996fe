"""Canonical-calibration arrows on the probability simplex (3 classes).

Each non-empty bin of a fitted canonical calibrator (``sierpinski``, ``grid``,
``projection-hb``) gets an arrow from the mean prediction of its rows to their mean
recalibrated prediction; the tail's area is proportional to the bin's row count.
The summary object is only read through its attributes (``bins``, ``counts``,
``mean_prediction``, ``recalibrated``, ``calibration_counts``, ``fallback``, ``method``,
``n_bins``), so nothing is imported from the module that builds it.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._common import LINE_WIDTH, esc, finish, sized_marker, styles_for

__all__ = ["simplex_figure"]


def _vector(names: list[str], values) -> str:
    return ", ".join(f"{n} {v:.3f}" for n, v in zip(names, values, strict=True))


def _hover(summary, names: list[str]) -> list[str]:
    """Hover text per bin, built here because it mixes class names (escaped) and numbers."""
    out = []
    fallback = np.asarray(summary.fallback, dtype=bool)
    for i, b in enumerate(np.asarray(summary.bins).tolist()):
        note = "<br>too few calibration rows: identity fallback" if fallback[i] else ""
        out.append(
            f"bin {b}: {int(summary.counts[i]):,} rows "
            f"({int(summary.calibration_counts[i]):,} calibration rows)<br>"
            f"mean prediction: {_vector(names, summary.mean_prediction[i])}<br>"
            f"recalibrated: {_vector(names, summary.recalibrated[i])}{note}"
        )
    return out


def simplex_figure(
    summary,
    *,
    class_names,
    title: str | None = None,
    methods=None,
    height: int = 640,
) -> go.Figure:
    """Ternary plot of a canonical calibrator's bins: mean prediction -> recalibrated.

    Parameters
    ----------
    summary : calcore.calibrators.canonical.CanonicalBins
        From ``canonical_bin_summary(calibrator, preds)``; 3 classes.
    class_names : sequence of str
        The three class names (ternary corners a, b, c = classes 0, 1, 2).
    title : str, optional
        HTML-escaped.
    methods : sequence of str, optional
        The app's ordered method list, so the arrows take ``summary.method``'s colour.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name``: ``"mean prediction"``: ``a, b, c`` the columns of
        ``mean_prediction``, ``marker.size == counts``, ``hovertext`` per bin;
        ``"recalibration arrows"``: per bin ``[tail, head, None]`` in ``a, b, c`` with an
        arrow marker at the head only (``marker.size`` 0 elsewhere).

    Raises
    ------
    ValueError
        Not 3 classes.
    """
    mean = np.asarray(summary.mean_prediction, dtype=float)
    head = np.asarray(summary.recalibrated, dtype=float)
    names = [esc(n) for n in class_names]
    if mean.ndim != 2 or mean.shape[1] != 3 or len(names) != 3:
        raise ValueError(
            f"the simplex view needs 3 classes; got {mean.shape[-1]} columns and "
            f"{len(names)} class names."
        )
    method = str(summary.method)
    color = styles_for([method], methods)[method]["color"]
    hover = _hover(summary, names)
    fallback = np.asarray(summary.fallback, dtype=bool)

    n = len(hover)
    arrows = {axis: [] for axis in "abc"}
    for i in range(n):
        for k, axis in enumerate("abc"):
            arrows[axis] += [mean[i, k], head[i, k], None]
    fig = go.Figure()
    tails = sized_marker(summary.counts, color=color, max_px=40)
    tails["symbol"] = np.where(fallback, "circle-open", "circle").tolist()
    fig.add_trace(
        go.Scatterternary(a=mean[:, 0], b=mean[:, 1], c=mean[:, 2], mode="markers",
                          name="mean prediction", marker=tails, hovertext=hover,
                          hoverinfo="text")
    )  # fmt: skip
    fig.add_trace(
        go.Scatterternary(
            **arrows,
            mode="lines+markers",
            name="recalibration arrows",
            line={"color": color, "width": LINE_WIDTH},
            # One marker per point; only the heads are visible, turned along the segment.
            marker={"symbol": "arrow", "angleref": "previous", "color": color,
                    "size": [0, 16, 0] * n, "line": {"width": 0}},
            hovertext=[h for h in hover for _ in range(3)],
            hoverinfo="text",
        )
    )  # fmt: skip
    axis = {"min": 0.0, "ticks": "outside", "tickformat": ".1f", "linewidth": 2}
    fig.update_layout(
        ternary={
            "sum": 1.0,
            "aaxis": {**axis, "title": {"text": names[0]}},
            "baxis": {**axis, "title": {"text": names[1]}},
            "caxis": {**axis, "title": {"text": names[2]}},
        }
    )
    default = f"Canonical calibration on the simplex · {esc(method)}"
    subtitle = (
        f"{len(hover):,} non-empty of {int(summary.n_bins):,} bins · arrow: mean prediction → "
        "recalibrated · open: identity fallback"
    )
    title = default if title is None else esc(title)
    return finish(fig, title=title, subtitle=subtitle, height=height)

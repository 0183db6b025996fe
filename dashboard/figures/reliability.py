"""Confidence reliability diagram: methods overlaid, bin counts below.

Nothing here computes a metric or re-bins data: every number on the figure is a field of
the calcore result it was given (bin positions, accuracies, counts, interval ends, the
ECE). The only arithmetic is what Plotly's encodings need (an interval as distances from
the point for error bars, a bin width for a bar).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import band, diagonal, esc, finish, ordered, reliability_points
from dashboard.figures._style import method_style, rgba

__all__ = ["reliability_figure", "count_bars", "VIEW_LABELS"]

VIEW_LABELS = {
    "confidence": ("confidence (max probability)", "accuracy"),
    "positive": ("predicted probability of {group}", "observed frequency of {group}"),
    "top-label": ("top-label probability", "frequency of the predicted class"),
    "class-wise": ("class probability", "frequency of the class"),
}


def count_bars(diagram, *, name: str, group: str, color: str, slot: int = 0, slots: int = 1):
    """Rows per bin as bars; with ``slots`` methods each takes a 1/slots slice of its bins.

    Every bin with known edges gets a bar (an empty equal-width bin is a bar of height 0),
    at ``x = lower_edge``. Empty data-dependent bins have no score range (NaN edges) and
    are left out.
    """
    left = np.asarray(diagram.lower_edge, dtype=float)
    right = np.asarray(diagram.upper_edge, dtype=float)
    known = np.isfinite(left) & np.isfinite(right)
    left, right = left[known], right[known]
    width = (right - left) / slots  # side by side inside the bin, so methods never overlap
    return go.Bar(
        x=left,
        y=np.asarray(diagram.count)[known],
        width=width,
        offset=slot * width,
        name=name,
        legendgroup=group,
        showlegend=False,
        marker={"color": rgba(color, 0.75), "line": {"color": color, "width": 1}},
        customdata=np.column_stack([left, right]),
        hovertemplate="bin [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<br>%{y:,} rows",
    )


def _titles(diagrams: dict) -> tuple[str, str]:
    first = next(iter(diagrams.values()))
    n = int(first.n)
    eces = " · ".join(f"{esc(m)} {d.ece:.4f}" for m, d in diagrams.items())
    what = (
        f"Reliability of P({esc(first.group)})"
        if first.view == "positive"
        else f"{esc(first.view).capitalize()} reliability diagram"
    )
    return f"{what} · {esc(first.binning)} · n = {n:,}", f"ECE: {eces}"


def _zoomed_range(diagrams: dict) -> tuple[float, float]:
    """An axis range around every non-empty bin's point and interval (with a margin): rare
    events' probabilities drawn across the whole [0, 1] sit in one corner. Bin edges are
    left out: the last equal-mass bin of a rare event reaches the largest score."""
    values = []
    for d in diagrams.values():
        ok = np.asarray(d.count) > 0
        for arr in (d.confidence, d.ci_lower, d.ci_upper, d.accuracy):
            v = np.asarray(arr, dtype=float)[ok]
            values.extend(v[np.isfinite(v)])
    if not values:
        return 0.0, 1.0
    lo, hi = max(min(values), 0.0), min(max(values), 1.0)
    pad = 0.08 * max(hi - lo, 1e-3)
    return max(lo - pad, 0.0), min(hi + pad, 1.0)


def reliability_figure(
    diagrams,
    *,
    bands=None,
    show_intervals: bool = True,
    title: str | None = None,
    height: int = 620,
    zoom: bool = False,
) -> go.Figure:
    """Reliability diagrams of several methods overlaid, with bin counts below.

    Parameters
    ----------
    diagrams : Mapping[str, calcore.ReliabilityDiagram]
        Method name -> diagram, in display order ("uncalibrated" first).
    bands : Mapping[str, calcore.ConsistencyBands], optional
        Consistency bands to shade, per method (give only the first method's for one
        band). A single ``ConsistencyBands`` goes with the first method.
    show_intervals : bool
        Draw the 95% Wilson interval of each bin's accuracy as error bars.
    title : str, optional
        HTML-escaped. By default the view, binning and n; the subtitle lists each
        method's ECE.
    height : int
        Pixels.
    zoom : bool
        Both axes span the bins' scores and intervals instead of [0, 1] (rare events).

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (method labels HTML-escaped): ``"perfect calibration"``;
        ``<method>``: one point per non-empty bin at ``(confidence, accuracy)``,
        ``customdata`` columns count, ci_lower, ci_upper, lower edge, upper edge;
        ``"<method> (count)"``: one bar per bin at ``lower_edge`` in the lower panel;
        ``"<method> (consistency band)"``: a closed polygon over the band's non-empty
        bins, ``x = [confidence, reversed confidence]``, ``y = [upper, reversed lower]``.
    """
    diagrams = ordered(diagrams, "diagrams")
    if bands is not None and not isinstance(bands, Mapping):
        bands = {next(iter(diagrams)): bands}
    bands = dict(bands or {})
    styles = method_style(list(diagrams))
    first = next(iter(diagrams.values()))
    x_label, y_label = VIEW_LABELS.get(str(first.view), ("score", "observed frequency"))
    x_label, y_label = (t.format(group=esc(first.group)) for t in (x_label, y_label))

    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.74, 0.26], vertical_spacing=0.05
    )
    fig.add_trace(diagonal(), row=1, col=1)
    unknown = [m for m in bands if m not in diagrams]
    if unknown:
        raise ValueError(f"bands given for methods without a diagram: {unknown!r}.")
    for method in diagrams:  # bands first, so every method's points are drawn over them
        if method in bands:
            label, b = esc(method), bands[method]
            shade = band(
                b.confidence,
                b.lower,
                b.upper,
                color=styles[method]["color"],
                name=f"{label} (consistency band)",
                group=label,
                showlegend=True,
            )
            fig.add_trace(shade, row=1, col=1)
    for k, (method, diagram) in enumerate(diagrams.items()):
        label = esc(method)
        style = styles[method]
        points = reliability_points(
            diagram,
            name=label,
            group=label,
            style=style,
            show_intervals=show_intervals,
            x_label=f"mean {x_label}",
            y_label=y_label,
        )
        fig.add_trace(points, row=1, col=1)
        bars = count_bars(
            diagram,
            name=f"{label} (count)",
            group=label,
            color=style["color"],
            slot=k,
            slots=len(diagrams),
        )
        fig.add_trace(bars, row=2, col=1)
    fig.update_layout(bargap=0, barmode="overlay")
    lo, hi = _zoomed_range(diagrams) if zoom else (0.0, 1.0)
    fig.update_xaxes(range=[lo, hi], row=1, col=1)
    fig.update_xaxes(range=[lo, hi], title_text=x_label, row=2, col=1)
    pad = 0.02 * (hi - lo)
    fig.update_yaxes(range=[lo - pad, hi + pad], title_text=y_label, row=1, col=1)
    fig.update_yaxes(title_text="rows per bin", rangemode="tozero", row=2, col=1)
    default, subtitle = _titles(diagrams)
    title = default if title is None else esc(title)
    return finish(fig, title=title, subtitle=subtitle, height=height)

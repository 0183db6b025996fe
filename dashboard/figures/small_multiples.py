"""Small multiples: the class-wise grid and the slices grid.

One panel per class, in the order given, at most 20 (the app picks the top classes by
support beyond that); 4 panels per row, 5 from 13 panels on.

The grid is drawn in one coordinate system, not with Plotly subplots: panel ``i`` is the
unit square shifted to its cell, and each method is one trace across all panels, its
panels separated by a NaN point (a gap in the line). Plotly draws a full pair of axes per
subplot; a 20-panel, 3-method grid built with ``make_subplots`` took 0.3-0.5 s to build
and 0.4-0.6 s to draw in Chromium, against about 0.15 s to draw this way
(``benchmarks/bench_dashboard.py`` measures the page). Hover text shows each point's own
values (``customdata``), not the shifted coordinates; frames, gridlines and tick labels
are drawn as traces tagged ``meta="grid"``.

Figure contract (what tests and the report read): a method's trace has, per panel in
order, the panel's bins with at least :data:`FEW_ROWS` rows followed by one all-NaN row;
``customdata`` columns are count, ci_lower, ci_upper, lower edge, upper edge, then the
point's own x and y. The bins with fewer rows (but some) are in a second trace,
``"<method> (few rows)"``, with the same layout: faded markers, not joined by the line,
because one or two rows make an accuracy of 0 or 1 that the line would run to (issue 34:
"one row draws a line to (0.2, 1)").
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._common import (
    LINE_WIDTH,
    MARKER_SIZE,
    bin_points,
    error_bars,
    esc,
    finish,
    ordered,
    shown_length,
    wrap,
)
from dashboard.figures._style import method_style, rgba
from dashboard.figures._theme import GRID, INK, THEME, ink

__all__ = [
    "FEW_ROWS",
    "classwise_grid_figure",
    "slice_grid_figure",
    "MAX_PANELS",
]

MAX_PANELS = 20
STEP_X = 1.12  # panel width 1 plus the gap, in data units
STEP_Y = 1.30  # panel height 1 plus room for the next panel's title
TICKS = (0.0, 0.5, 1.0)
#: Bins with fewer rows are drawn faded and off the line (a 95% Wilson interval on 10 rows
#: at accuracy 0.5 is about +-0.3 wide: too noisy to read a gap from).
FEW_ROWS = 20


class _Grid:
    """Where each of ``n`` panels sits: ``cols`` per row, offsets in data units."""

    def __init__(self, n: int):
        if not 1 <= n <= MAX_PANELS:
            raise ValueError(f"need 1..{MAX_PANELS} classes for the small multiples; got {n}.")
        self.n = n
        self.cols = min(n, 5 if n > 12 else 4)
        self.rows = math.ceil(n / self.cols)

    def origin(self, i: int) -> tuple[float, float]:
        row, col = divmod(i, self.cols)
        return col * STEP_X, -row * STEP_Y

    def bottom_of_column(self, i: int) -> bool:
        return i + self.cols >= self.n


def _frames(grid: _Grid) -> list[go.Scatter]:
    """Panel frames, a mid gridline each way, and tick labels (left column, bottom row)."""
    xs: list = []
    ys: list = []
    for i in range(grid.n):
        ox, oy = grid.origin(i)
        xs += [ox, ox + 1, ox + 1, ox, ox, None, ox + 0.5, ox + 0.5, None, ox, ox + 1, None]
        ys += [oy, oy, oy + 1, oy + 1, oy, None, oy, oy + 1, None, oy + 0.5, oy + 0.5, None]
    frame = go.Scatter(
        x=xs, y=ys, mode="lines", line={"color": THEME["grid"], "width": 1},
        hoverinfo="skip", showlegend=False, meta=GRID,
    )  # fmt: skip
    tx, ty, text, position = [], [], [], []
    for i in range(grid.n):
        ox, oy = grid.origin(i)
        if i % grid.cols == 0:
            for t in TICKS:
                tx.append(ox - 0.03)
                ty.append(oy + t)
                text.append(f"{t:g}")
                position.append("middle left")
        if grid.bottom_of_column(i):
            for t in TICKS:
                tx.append(ox + t)
                ty.append(oy - 0.03)
                text.append(f"{t:g}")
                position.append("bottom center")
    ticks = go.Scatter(
        x=tx, y=ty, text=text, mode="text", textposition=position, hoverinfo="skip",
        showlegend=False, cliponaxis=False, textfont={"color": ink()}, meta=GRID,
    )  # fmt: skip
    return [frame, ticks]


def _diagonals(grid: _Grid) -> go.Scatter:
    xs: list = []
    ys: list = []
    for i in range(grid.n):
        ox, oy = grid.origin(i)
        xs += [ox, ox + 1, None]
        ys += [oy, oy + 1, None]
    return go.Scatter(
        x=xs, y=ys, mode="lines", name="perfect calibration", hoverinfo="skip", meta=INK,
        line={"color": ink(), "dash": "dash", "width": 2},
    )  # fmt: skip


def _method_traces(
    grid: _Grid, diagrams, *, titles, name: str, style: dict, intervals: bool, x_label: str
) -> list[go.Scatter]:
    """One method's points in every panel: the line through the bins with enough rows, and
    the faded bins with few (see the module's figure contract)."""
    parts = {
        few: {"x": [], "y": [], "low": [], "high": [], "custom": [], "text": []}
        for few in (False, True)
    }
    gap = np.full(1, np.nan)
    for i, (diagram, title) in enumerate(zip(diagrams, titles, strict=True)):
        ox, oy = grid.origin(i)
        p = bin_points(diagram)
        own = np.column_stack([p["custom"], p["x"], p["y"]])
        for few, part in parts.items():
            keep = (p["custom"][:, 0] < FEW_ROWS) == few
            part["x"] += [p["x"][keep] + ox, gap]
            part["y"] += [p["y"][keep] + oy, gap]
            part["low"] += [p["low"][keep] + oy, gap]
            part["high"] += [p["high"][keep] + oy, gap]
            part["custom"] += [own[keep], np.full((1, own.shape[1]), np.nan)]
            part["text"] += [title] * (int(keep.sum()) + 1)
    hover = (
        "%{text}<br>bin [%{customdata[3]:.3f}, %{customdata[4]:.3f}]<br>"
        f"{x_label}: %{{customdata[5]:.4f}}<br>"
        "frequency: %{customdata[6]:.4f}<br>"
        "95% Wilson interval: %{customdata[1]:.4f} to %{customdata[2]:.4f}<br>"
        "%{customdata[0]:,} rows"
    )
    traces = []
    for few, part in parts.items():
        joined = {k: np.concatenate(v) for k, v in part.items() if k != "text"}
        color = rgba(style["color"], 0.3) if few else style["color"]
        traces.append(
            go.Scatter(
                x=joined["x"],
                y=joined["y"],
                mode="markers" if few else "lines+markers",
                name=f"{name} (few rows)" if few else name,
                legendgroup=name,
                showlegend=not few,
                line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
                marker={"color": color, "size": MARKER_SIZE, "symbol": style["symbol"]},
                error_y=error_bars(joined, style["color"]) if intervals and not few else None,
                customdata=joined["custom"],
                text=part["text"],  # already escaped panel titles
                hovertemplate=hover,
            )
        )
    return traces


def _figure(grid: _Grid, traces: list, *, titles, x_title, y_title, title, subtitle,
            legend_items: int) -> go.Figure:  # fmt: skip
    annotations = []
    # A panel is about 860 px / columns wide (200 px at 4 a row): a longer title would run
    # into its neighbours', so it goes on lines at its " · " parts, then at spaces (15 px
    # font, ~8.5 px a character); the gap between rows holds three lines.
    chars = max(16, int(860 / grid.cols / 8.5))
    for i, text in enumerate(titles):
        if shown_length(text) > chars:
            lines = [w for part in text.split(" · ") for w in wrap(part, chars)]
            text = "<br>".join(lines[:3])
        ox, oy = grid.origin(i)
        annotations.append(
            {
                "text": text,
                "x": ox + 0.5,
                "y": oy + 1.02,
                "xref": "x",
                "yref": "y",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
            }  # fmt: skip
        )
    hidden = {"showgrid": False, "zeroline": False, "showticklabels": False, "showline": False}
    bottom = -(grid.rows - 1) * STEP_Y
    fig = go.Figure(
        data=traces,
        layout={
            "annotations": annotations,
            # the titles stand off by the size of the drawn tick labels ("0.5" at 14 px)
            "xaxis": {
                **hidden,
                "range": [-0.04, (grid.cols - 1) * STEP_X + 1.04],
                "title": {"text": x_title, "standoff": 26},
            },
            "yaxis": {
                **hidden,
                "range": [bottom - 0.04, 1.2],
                "title": {"text": y_title, "standoff": 34},
            },
        },
    )
    headroom = 30 * math.ceil(legend_items / 5)  # legend rows of ~5 entries
    return finish(
        fig, title=title, subtitle=subtitle, height=200 + 260 * grid.rows,
        headroom=headroom,
    )  # fmt: skip


def classwise_grid_figure(diagrams, *, class_names, class_counts=None) -> go.Figure:
    """Class-wise reliability diagrams, one panel per class, methods overlaid.

    Parameters
    ----------
    diagrams : Mapping[str, Sequence[calcore.ReliabilityDiagram]]
        Method -> one class-wise diagram per class, aligned with ``class_names``.
    class_names : sequence of str
        Panel titles (1..20), in panel order.
    class_counts : sequence of int, optional
        The test rows labelled with each class, in panel order: shown in the panel titles
        (how much data stands behind a panel).

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per method named ``<method>`` (escaped) holding every panel's non-empty
        bins of that class's diagram (module docstring: figure contract); Wilson bars
        only for up to two methods (more would hide the points); panel titles (the first
        annotations): the escaped class names, with ``class_counts`` if given.
    """
    diagrams, names = _aligned(diagrams, class_names, "class")
    first = next(iter(diagrams.values()))[0]
    titles = [esc(n) for n in names]
    if class_counts is not None:
        counts = [int(c) for c in class_counts]
        if len(counts) != len(titles):
            raise ValueError(f"{len(counts)} class counts for {len(titles)} classes.")
        titles = [f"{t} · {c:,} labelled" for t, c in zip(titles, counts, strict=True)]
    bars = "; bars: 95% Wilson intervals" if len(diagrams) <= 2 else ""
    return _overlaid_grid(
        diagrams, titles, x_title="class probability",
        y_title="frequency of the class", title="Class-wise reliability diagrams",
        subtitle=(
            f"{esc(first.binning)} · n = {int(first.n):,} · one panel per class · faded: "
            f"bins with fewer than {FEW_ROWS} rows{bars}"
        ),
        x_label="mean class probability",
    )  # fmt: skip


def slice_grid_figure(diagrams, *, slice_names) -> go.Figure:
    """Confidence reliability diagrams of several slices, one panel each, methods overlaid.

    Parameters
    ----------
    diagrams : Mapping[str, Sequence[calcore.ReliabilityDiagram]]
        Method -> one confidence diagram per slice, aligned with ``slice_names``.
    slice_names : sequence of str
        Panel titles (1..20; data, escaped here), in panel order.

    Returns
    -------
    plotly.graph_objects.Figure
        As :func:`classwise_grid_figure`; panel titles: the escaped slice names with
        each slice's row count.
    """
    diagrams, names = _aligned(diagrams, slice_names, "slice")
    first = next(iter(diagrams.values()))
    titles = [f"{esc(n)} · n = {int(d.n):,}" for n, d in zip(names, first, strict=True)]
    return _overlaid_grid(
        diagrams, titles, x_title="confidence (max probability)",
        y_title="accuracy", title="Confidence reliability of the top slices",
        subtitle=f"{esc(first[0].binning)} · one panel per slice, most miscalibrated first",
        x_label="mean confidence",
    )  # fmt: skip


def _aligned(diagrams, names, what: str) -> tuple[dict, list]:
    """``diagrams`` as a dict and ``names`` as a list, with one diagram per name."""
    diagrams, names = ordered(diagrams, "diagrams"), list(names)
    for method, ds in diagrams.items():
        if len(ds) != len(names):
            raise ValueError(
                f"{len(ds)} diagrams for method {method!r} but {len(names)} {what} names; "
                f"give one diagram per {what}."
            )
    return diagrams, names


def _overlaid_grid(diagrams: dict, titles: list[str], *, x_title, y_title, title,
                   subtitle, x_label) -> go.Figure:  # fmt: skip
    """One panel per title, every method's diagrams overlaid (Wilson bars for up to two)."""
    grid = _Grid(len(titles))
    styles = method_style(list(diagrams))
    traces = [*_frames(grid), _diagonals(grid)]
    for method, ds in diagrams.items():
        traces.extend(
            _method_traces(
                grid,
                ds,
                titles=titles,
                name=esc(method),
                style=styles[method],
                intervals=len(diagrams) <= 2,
                x_label=x_label,
            )  # fmt: skip
        )
    return _figure(
        grid, traces, titles=titles, x_title=x_title, y_title=y_title,
        title=title, subtitle=subtitle, legend_items=1 + len(diagrams),
    )  # fmt: skip

"""Small multiples: per-class top-label diagrams and the class-wise grid.

One panel per class, in the order given, at most 20 (the app picks the top classes by
support beyond that); 4 panels per row, 5 from 13 panels on. Axis titles are shared by
the whole grid (one x title, one y title) rather than repeated on every panel.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import diagonal, esc, finish, ordered, reliability_points
from dashboard.figures._style import method_style

__all__ = ["per_class_top_label_figure", "classwise_grid_figure", "MAX_PANELS"]

MAX_PANELS = 20


def _grid(titles: list[str], *, x_title: str, y_title: str):
    """Empty grid of ``len(titles)`` square-ish panels; returns (figure, cells, rows)."""
    n = len(titles)
    if not 1 <= n <= MAX_PANELS:
        raise ValueError(f"need 1..{MAX_PANELS} classes for the small multiples; got {n}.")
    cols = min(n, 5 if n > 12 else 4)
    rows = math.ceil(n / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.03,
        vertical_spacing=0.22 / rows,  # room for the panel titles
        x_title=x_title,
        y_title=y_title,
    )
    cells = [(1 + i // cols, 1 + i % cols) for i in range(n)]
    # Tick labels on every panel: a last row that is not full leaves columns without any.
    fig.update_xaxes(range=[0.0, 1.0], tickvals=[0, 0.5, 1], showticklabels=True)
    fig.update_yaxes(range=[-0.02, 1.02], tickvals=[0, 0.5, 1])
    return fig, cells, rows


def _add(fig: go.Figure, traces: list, where: list) -> None:
    fig.add_traces(traces, rows=[r for r, _ in where], cols=[c for _, c in where])


def _height(rows: int) -> int:
    return 200 + 260 * rows


def _headroom(n_legend_items: int) -> int:
    """Pixels above the panels for the legend rows (~5 entries a row) and panel titles."""
    return 30 * math.ceil(n_legend_items / 5) + 34


def per_class_top_label_figure(
    diagram, *, classes, method: str, theme: str = "light", methods=None
) -> go.Figure:
    """Top-label reliability diagram of each chosen predicted class (Gupta & Ramdas, Fig. 4).

    Parameters
    ----------
    diagram : calcore.TopLabelReliabilityDiagram
    classes : sequence of int
        Class indices, one panel each, in this order (1..20).
    method : str
        The method the diagram belongs to (legend, colour, title).
    theme : {"light", "dark"}
    methods : sequence of str, optional
        The app's ordered method list, so ``method`` keeps its colour from the other figures.

    Returns
    -------
    plotly.graph_objects.Figure
        One trace named ``<method>`` (escaped) per panel, in the order of ``classes``: the
        non-empty bins of ``diagram.per_class[c]`` as in :func:`reliability_figure`;
        panel titles: class name and class ratio ``count.sum() / n``.
    """
    chosen = [int(c) for c in classes]
    n_classes = len(diagram.per_class)
    if any(not 0 <= c < n_classes for c in chosen):
        raise ValueError(f"classes must be indices in 0..{n_classes - 1}; got {list(classes)!r}.")
    titles = []
    for c in chosen:
        d = diagram.per_class[c]
        ratio = d.count.sum() / d.n  # the class ratio, as the brief and the paper define it
        titles.append(f"{esc(diagram.class_names[c])} · ratio {ratio:.3f}")
    fig, cells, rows = _grid(
        titles, x_title="top-label probability", y_title="frequency of the predicted class"
    )
    full = list(methods) if methods is not None else []
    style = method_style([*full, *([method] if method not in full else [])])[method]
    label = esc(method)
    traces, where = [], []  # added in one call: per-trace add_trace is slow on big grids
    for i, (c, cell) in enumerate(zip(chosen, cells, strict=True)):
        traces.append(diagonal(theme, showlegend=i == 0))
        traces.append(
            reliability_points(
                diagram.per_class[c],
                name=label,
                group=label,
                style=style,
                showlegend=i == 0,
                x_label="mean top-label probability",
                y_label="frequency",
            )
        )
        where += [cell, cell]
    _add(fig, traces, where)
    title = f"Per-class top-label reliability · {label}"
    return finish(fig, theme=theme, title=title, height=_height(rows), headroom=_headroom(2))


def classwise_grid_figure(diagrams, *, class_names, theme: str = "light") -> go.Figure:
    """Class-wise reliability diagrams, one panel per class, methods overlaid.

    Parameters
    ----------
    diagrams : Mapping[str, Sequence[calcore.ReliabilityDiagram]]
        Method -> one class-wise diagram per class, aligned with ``class_names``.
    class_names : sequence of str
        Panel titles (1..20), in panel order.
    theme : {"light", "dark"}

    Returns
    -------
    plotly.graph_objects.Figure
        Per panel (in order) the diagonal then one trace per method named ``<method>``
        (escaped; in the legend once), the non-empty bins of that class's diagram as
        in :func:`reliability_figure`.
    """
    diagrams = ordered(diagrams, "diagrams")
    names = list(class_names)
    for method, ds in diagrams.items():
        if len(ds) != len(names):
            raise ValueError(
                f"{len(ds)} class-wise diagrams for method {method!r} but "
                f"{len(names)} class names; give one diagram per class."
            )
    styles = method_style(list(diagrams))
    fig, cells, rows = _grid(
        [esc(n) for n in names], x_title="class probability", y_title="frequency of the class"
    )
    traces, where = [], []
    for i, cell in enumerate(cells):
        traces.append(diagonal(theme, showlegend=i == 0))
        where.append(cell)
        for method, ds in diagrams.items():
            label = esc(method)
            traces.append(
                reliability_points(
                    ds[i],
                    name=label,
                    group=label,
                    style=styles[method],
                    showlegend=i == 0,
                    show_intervals=len(diagrams) <= 2,  # more error bars would hide the points
                    x_label="mean class probability",
                    y_label="frequency",
                )
            )
            where.append(cell)
    _add(fig, traces, where)
    title = "Class-wise reliability diagrams"
    first = next(iter(diagrams.values()))[0]
    subtitle = f"{esc(first.binning)} · n = {int(first.n):,} · one panel per class"
    return finish(
        fig,
        theme=theme,
        title=title,
        subtitle=subtitle,
        height=_height(rows),
        headroom=_headroom(1 + len(diagrams)),
    )

"""Calibration per slice: error against slice size, per method, and over time.

Every number is a field of a :class:`calcore.SlicedReport` (a slice's metric, interval,
p- and q-value, the quantile of its test's null distribution); slice names are data and
are HTML-escaped before they reach a name, tick or hover text.

Figure contract (what tests and the report read):

* :func:`slice_funnel_figure`: traces ``"miscalibrated (q ≤ 0.05)"``, ``"no evidence"``
  and ``"not tested"`` with one point per slice at ``(n, metric)``, ``customdata``
  columns low, high, p, q; ``"95% of calibrated draws"``: per tested slice, sorted by
  ``n``, the 0.95 quantile of its test's null values; ``"overall"``: the overall value.
* :func:`slices_by_method_figure`: one trace per method, one point per slice (``y`` the
  escaped slice names, top slice first), ``customdata`` low, high, q.
* :func:`slices_in_order_figure`: one trace per method over the slices in their
  natural order (periods, ranges), ``customdata`` low, high, n.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

import calcore
from dashboard.figures._common import LINE_WIDTH, MARKER_SIZE, esc, finish, ordered
from dashboard.figures._style import method_style
from dashboard.figures._theme import ink

__all__ = ["slice_funnel_figure", "slices_by_method_figure", "slices_in_order_figure"]

#: The q-value at which a slice is drawn as miscalibrated (a 5% false discovery rate).
DISCOVERY_LEVEL = 0.05
#: Slices in the per-method figure (the top ones by evidence); more is unreadable.
MAX_SLICES_SHOWN = 30
_MISCALIBRATED = "#C0392B"
_NO_EVIDENCE = "#2E86C1"


def _metric_label(key: str) -> str:
    return calcore.METRICS[key].label


def _interval(report, key: str) -> tuple[float, float, float]:
    """(estimate, low, high) of ``key`` in a slice's report; NaN where absent."""
    if report is None or report.metrics.get(key) is None:
        return math.nan, math.nan, math.nan
    iv = report.intervals.get(key)
    value = float(report.metrics[key])
    return (value, iv.low, iv.high) if iv is not None else (value, math.nan, math.nan)


def _intervals(reports, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimates, lows and highs of ``key`` over a list of slice reports (None allowed)."""
    table = np.array([_interval(r, key) for r in reports], dtype=float).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2]


def _error(values: np.ndarray, low: np.ndarray, high: np.ndarray, color: str) -> dict:
    return {
        "type": "data",
        "symmetric": False,
        "array": high - values,
        "arrayminus": values - low,
        "color": color,
        "thickness": 1.5,
        "width": 4,
    }


def slice_funnel_figure(sliced, *, method: str, height: int = 520) -> go.Figure:
    """Each slice's error against its size, beside what calibrated slices would show.

    Small slices scatter widely by noise alone, so their errors form a funnel that
    narrows with size; the line marks, per tested slice, the error that 95% of label
    sets redrawn from its own predictions (a calibrated model) stay below. A slice is
    red when its Benjamini-Hochberg q-value is at most 0.05.

    Parameters
    ----------
    sliced : calcore.SlicedReport
    method : str
        Whose predictions (title only).
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        See the module docstring.
    """
    key = sliced.rank_metric
    label = _metric_label(key)
    groups = {"miscalibrated": [], "no evidence": [], "not tested": []}
    for s in sliced.slices:
        if s.report is None:
            continue
        if not s.tested:
            groups["not tested"].append(s)
        elif s.q_value <= DISCOVERY_LEVEL:
            groups["miscalibrated"].append(s)
        else:
            groups["no evidence"].append(s)
    fig = go.Figure()
    names = {
        "miscalibrated": f"miscalibrated (q ≤ {DISCOVERY_LEVEL:g})",
        "no evidence": "no evidence",
        "not tested": f"not tested (< {sliced.min_slice_rows} rows)",
    }
    colors = {"miscalibrated": _MISCALIBRATED, "no evidence": _NO_EVIDENCE}
    for group, members in groups.items():
        if not members:
            continue
        color = colors.get(group, ink())
        n = np.array([s.n for s in members], dtype=float)
        est, low, high = _intervals([s.report for s in members], key)
        p = np.array([s.p_value for s in members])
        q = np.array([s.q_value for s in members])
        fig.add_trace(
            go.Scatter(
                x=n,
                y=est,
                mode="markers",
                name=names[group],
                marker={
                    "color": color if group != "not tested" else "rgba(0,0,0,0)",
                    "size": MARKER_SIZE,
                    "line": {"color": color, "width": 1.5},
                },
                error_y=_error(est, low, high, color),
                customdata=np.column_stack([low, high, p, q]),
                text=[esc(s.label) for s in members],
                hovertemplate=(
                    "%{text}<br>%{x:,} rows<br>" + label + ": %{y:.4f}"
                    " (95% interval %{customdata[0]:.4f} to %{customdata[1]:.4f})"
                    "<br>p = %{customdata[2]:.3g}, q = %{customdata[3]:.3g}<extra></extra>"
                ),
            )
        )
    tested = sorted((s for s in sliced.slices if s.tested and s.test is not None), key=_size)
    if tested:
        fig.add_trace(
            go.Scatter(
                x=[s.n for s in tested],
                y=[s.test.null_quantile(key, 0.95) for s in tested],
                mode="lines+markers",
                name="95% of calibrated draws",
                line={"color": ink(), "dash": "dot", "width": LINE_WIDTH - 1},
                marker={"symbol": "line-ew-open", "size": MARKER_SIZE, "color": ink()},
                text=[esc(s.label) for s in tested],
                hovertemplate=(
                    "%{text}: a calibrated model's " + label + " stays below %{y:.4f} "
                    "in 95% of redrawn label sets<extra></extra>"
                ),
            )
        )
    overall = sliced.overall.metrics.get(key)
    if overall is not None and math.isfinite(overall):
        sizes = [s.n for s in sliced.slices if s.n > 0]
        fig.add_trace(
            go.Scatter(
                x=[min(sizes), max(sizes)],
                y=[overall, overall],
                mode="lines",
                name="overall",
                line={"color": ink(), "width": 1},
                hovertemplate=f"overall {label}: {overall:.4f}<extra></extra>",
            )
        )
    fig.update_xaxes(
        type="log", title_text="rows in the slice (log scale)",
        **size_ticks([sl.n for sl in sliced.slices if sl.n > 0]),
    )  # fmt: skip
    fig.update_yaxes(title_text=f"{label} (lower is better)", rangemode="tozero")
    found = len(groups["miscalibrated"])
    tested_n = len(groups["miscalibrated"]) + len(groups["no evidence"])
    return finish(
        fig,
        title=f"{label} of each slice against its size · {esc(method)}",
        subtitle=(
            f"{found} of {tested_n} tested slices miscalibrated at a {DISCOVERY_LEVEL:.0%} "
            "false discovery rate · bars: 95% bootstrap intervals"
        ),
        height=height,
    )


def _size(s) -> int:
    return s.n


def size_ticks(sizes) -> dict:
    """Tick values and labels for a log axis of row counts: 1-2-5 steps written out in full
    ("20,000"), so no tick reads as a bare digit. Plotly's own log ticks label the minor
    steps "2 3 ... 10k 2 3" (issue 34). Over less than a 1-2-5 step, five even steps."""
    sizes = np.asarray(sizes, dtype=float)
    if sizes.size == 0:
        return {}
    lo, hi = float(sizes.min()), float(sizes.max())
    decades = range(int(math.floor(math.log10(lo))) - 1, int(math.ceil(math.log10(hi))) + 1)
    values = [m * 10.0**k for k in decades for m in (1, 2, 5)]
    values = [v for v in values if lo / 1.15 <= v <= hi * 1.15]
    if hi - lo < 5:  # one size, or nearly: the sizes themselves
        values = sorted({lo, hi})
    elif len(values) < 3:  # a narrow range: about five steps of 1, 2 or 5 times a power of 10
        raw = max((hi - lo) / 5, 1.0)
        power = 10.0 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
        start = math.ceil(lo / 1.15 / step) * step
        values = [float(v) for v in np.arange(start, hi * 1.15, step)]
    return {"tickvals": values, "ticktext": [f"{v:,.0f}" for v in values]}


def _period_prefix(labels: list[str]) -> str:
    """The words every label starts with ("week of "), if any: said once in the axis title
    rather than on every tick, so the dates themselves fit in full."""
    if len(labels) < 2:
        return ""
    first = labels[0].split(" ")
    common = 0
    while common < len(first) - 1 and all(
        lab.split(" ")[: common + 1] == first[: common + 1] for lab in labels
    ):
        common += 1
    return " ".join(first[:common]) + " " if common else ""


def slices_by_method_figure(reports, *, max_slices: int = MAX_SLICES_SHOWN) -> go.Figure:
    """The ranking metric of every method within each slice: does one calibrator fix all?

    Parameters
    ----------
    reports : Mapping[str, calcore.SlicedReport]
        Method -> its sliced report (same rows, same slicing), in display order; the
        first's ranking orders the slices (most miscalibrated on top).
    max_slices : int
        The top slices shown.

    Returns
    -------
    plotly.graph_objects.Figure
        See the module docstring. Filled markers: q ≤ 0.05 for that method.
    """
    reports = ordered(reports, "reports")
    first = next(iter(reports.values()))
    key = first.rank_metric
    label = _metric_label(key)
    shown = [s.values for s in first.slices[:max_slices]]
    names = [esc(" | ".join(v)) for v in shown]
    styles = method_style(list(reports))
    fig = go.Figure()
    k = len(reports)
    for j, (method, sliced) in enumerate(reports.items()):
        by_values = {s.values: s for s in sliced.slices}
        rows = [by_values.get(v) for v in shown]
        est, low, high = _intervals([s.report if s else None for s in rows], key)
        q = np.array([s.q_value if s else math.nan for s in rows])
        style = styles[method]
        found = np.nan_to_num(q, nan=1.0) <= DISCOVERY_LEVEL
        fig.add_trace(
            go.Scatter(
                x=est,
                y=np.arange(len(shown)) + (j - (k - 1) / 2) * (0.6 / k),
                mode="markers",
                name=esc(method),
                marker={
                    "color": [style["color"] if f else "rgba(0,0,0,0)" for f in found],
                    "symbol": style["symbol"],
                    "size": MARKER_SIZE,
                    "line": {"color": style["color"], "width": 2},
                },
                error_x=_error(est, low, high, style["color"]),
                customdata=np.column_stack([low, high, q]),
                text=names,
                hovertemplate=(
                    f"{esc(method)} · %{{text}}<br>{label}: %{{x:.4f}} (95% interval "
                    "%{customdata[0]:.4f} to %{customdata[1]:.4f}), q = %{customdata[2]:.3g}"
                    "<extra></extra>"
                ),
            )
        )
    fig.update_yaxes(
        tickvals=list(range(len(shown))),
        ticktext=names,
        autorange="reversed",
        automargin=True,  # room for the slice names on the left
        showgrid=False,
        zeroline=False,
    )
    fig.update_xaxes(title_text=f"{label} (lower is better)", rangemode="tozero")
    more = len(first.slices) - len(shown)
    return finish(
        fig,
        title=f"{label} within each slice, by method",
        subtitle=(
            "filled: miscalibrated at a 5% false discovery rate for that method · bars: 95% "
            "bootstrap intervals" + (f" · {more} more slices not shown" if more > 0 else "")
        ),
        height=220 + 34 * max(len(shown), 4),
    )


def slices_in_order_figure(reports, *, height: int = 460) -> go.Figure:
    """The ranking metric over slices in their natural order: periods, or value ranges.

    Parameters
    ----------
    reports : Mapping[str, calcore.SlicedReport]
        Method -> sliced report of an ordered slicing (``sliced.ordered``), display order.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        See the module docstring. The subtitle gives the first method's change between
        the first and the last period, when calcore tested it.
    """
    reports = ordered(reports, "reports")
    first = next(iter(reports.values()))
    key = first.rank_metric
    label = _metric_label(key)
    styles = method_style(list(reports))
    fig = go.Figure()
    ticks = [esc(s.label) for s in first.in_order()]
    for method, sliced in reports.items():
        rows = sliced.in_order()
        est, low, high = _intervals([s.report for s in rows], key)
        style = styles[method]
        fig.add_trace(
            go.Scatter(
                x=np.arange(len(rows)),
                y=est,
                mode="lines+markers",
                name=esc(method),
                line={"color": style["color"], "dash": style["dash"], "width": LINE_WIDTH},
                marker={"symbol": style["symbol"], "size": MARKER_SIZE, "color": style["color"]},
                error_y=_error(est, low, high, style["color"]),
                customdata=np.column_stack([low, high, [s.n for s in rows]]),
                text=[esc(s.label) for s in rows],
                hovertemplate=(
                    f"{esc(method)} · %{{text}} (%{{customdata[2]:,}} rows)<br>{label}: "
                    "%{y:.4f} (95% interval %{customdata[0]:.4f} to %{customdata[1]:.4f})"
                    "<extra></extra>"
                ),
            )
        )
    over = " × ".join(esc(c) for c in first.columns)
    prefix = _period_prefix(ticks)
    ticks = [t[len(prefix) :] for t in ticks]
    # Labels side by side when they fit the plot area (~880 px at 1440 px, ~8 px a
    # character at 14 px), else turned 45 degrees with the bottom margin to hold them.
    longest = max((len(t) for t in ticks), default=1)
    turned = len(ticks) * (8 * longest + 16) > 880
    fig.update_xaxes(
        tickvals=list(range(len(ticks))), ticktext=ticks, showgrid=False,
        tickangle=-45 if turned else 0,
        title_text=f"{over} ({prefix.strip()} the date shown)" if prefix else over,
    )  # fmt: skip
    fig.update_yaxes(title_text=f"{label} (lower is better)", rangemode="tozero")
    subtitle = "bars: 95% bootstrap intervals"
    if first.change is not None:
        subtitle = f"{esc(next(iter(reports)))}: {esc(first.change.verdict())} · " + subtitle
    fig = finish(fig, title=f"{label} by {over}", subtitle=subtitle, height=height)
    if turned:  # room for the turned labels (sin 45° of their length) and the axis title
        below = int(0.71 * 8 * longest) + 56
        fig.update_layout(margin_b=below, height=height + below - fig.layout.margin.b)
    return fig

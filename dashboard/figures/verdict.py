"""The calibrator verdict as a chart: each method's paired difference to the best."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from dashboard.figures._common import MARKER_SIZE, esc, finish
from dashboard.figures._style import method_style
from dashboard.figures._theme import ink

__all__ = ["verdict_figure"]

#: Row height of one method in the chart (pixels): labels stay legible on a projector.
ROW_PX = 44


def verdict_figure(verdict, *, metric_label: str) -> go.Figure:
    """One row per candidate: ``metric(method) - metric(best)`` with its paired interval.

    A method whose bar reaches 0 is tied with the best; the recommended one is marked.
    Rows run from the recommended method (top) to the worst.

    Parameters
    ----------
    verdict : calcore.Verdict
    metric_label : str
        The primary metric's label (e.g. ``"TL-ECE"``).

    Returns
    -------
    plotly.graph_objects.Figure
        One trace per method named ``<method>`` (escaped), ``x`` the difference and
        ``error_x`` the distances to its interval (none without resamples); a vertical
        line at 0.
    """
    methods = sorted(
        verdict.paired,
        key=lambda m: (m != verdict.recommended, verdict.paired[m].estimate, m),
    )
    styles = method_style(list(verdict.paired))
    fig = go.Figure()
    for method in methods:
        d = verdict.paired[method]
        has_bar = math.isfinite(d.low) and math.isfinite(d.high)
        if method == verdict.recommended:
            status = "recommended"
        elif method in verdict.tied_with_best:
            status = "tied with the best"
        else:
            status = "worse than the best"
        label = esc(method)
        fig.add_trace(
            go.Scatter(
                x=[d.estimate],
                y=[label],
                mode="markers",
                name=label,
                showlegend=False,
                marker={
                    "color": styles[method]["color"],
                    "size": MARKER_SIZE + (6 if status == "recommended" else 2),
                    "symbol": "star" if status == "recommended" else styles[method]["symbol"],
                },
                error_x=(
                    {
                        "type": "data",
                        "symmetric": False,
                        "array": [d.high - d.estimate],
                        "arrayminus": [d.estimate - d.low],
                        "color": styles[method]["color"],
                        "thickness": 2,
                        "width": 6,
                    }
                    if has_bar
                    else {"visible": False}
                ),
                customdata=[[d.low, d.high, status]],
                hovertemplate=(
                    f"{label}: {esc(metric_label)} minus the best's %{{x:+.4f}}"
                    + (
                        "<br>interval %{customdata[0]:+.4f} to %{customdata[1]:+.4f}"
                        if has_bar
                        else ""
                    )
                    + "<br>%{customdata[2]}<extra></extra>"
                ),
            )
        )
    fig.add_vline(x=0.0, line={"color": ink(), "width": 1, "dash": "dot"})
    fig.update_yaxes(autorange="reversed", automargin=True, title_text=None)
    fig.update_xaxes(
        title_text=f"{esc(metric_label)} minus the best method's (lower is better)",
        zeroline=False,
        tickformat="+.3f",
    )
    level = next(iter(verdict.paired.values())).confidence_level
    subtitle = (
        f"paired {100 * level:.1f}% intervals on the same resamples (Bonferroni over "
        f"{max(len(methods) - 1, 1)} method(s))<br>a bar that reaches 0: tied with the best · "
        "★ recommended"
        if verdict.n_resamples
        else "no resamples: estimates only, ties cannot be told"
    )
    return finish(
        fig,
        title=f"Which calibrator: {esc(metric_label)} against the best",
        subtitle=subtitle,
        height=170 + ROW_PX * len(methods),
        legend=False,
        headroom=20,  # the subtitle's second line
    )

"""Simulation-lab figures: the truth of a fake classifier against what the estimators see.

Three builders, each drawing calcore results only (``calcore.simulate``'s true curve and
estimator study, calcore's diagrams and ECE values): the true reliability curve against
binned and KDE estimates of one draw; estimator error against the sample size; and the
ECE of recalibrated outputs beside the uncalibrated model's truth. Estimators keep one
colour in every figure because each builder styles them from :data:`ESTIMATOR_LABELS`' order.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import LINE_WIDTH, diagonal, esc, finish, reliability_points
from dashboard.figures._style import UNCALIBRATED, method_style
from dashboard.figures._theme import INK, ink

__all__ = [
    "ECE_LABELS",
    "ESTIMATOR_LABELS",
    "TRUE_CURVE",
    "TRUE_DENSITY",
    "TRUE_UNCALIBRATED",
    "estimator_error_figure",
    "recovery_figure",
    "truth_reliability_figure",
]

#: Estimator key (``calcore.simulate.ESTIMATORS``) -> legend label, in colour order.
ESTIMATOR_LABELS = {
    "equal-width": "15 equal-width bins",
    "equal-mass": "15 equal-mass bins",
    "kde": "KDE",
    "sturges": "Sturges equal-width bins",
}
ECE_LABELS = {"conf_ece": "conf-ECE", "top_label_ece": "TL-ECE", "classwise_ece": "CW-ECE"}
TRUE_CURVE = "true reliability curve"
TRUE_DENSITY = "true density of confidence"
TRUE_UNCALIBRATED = "true value (uncalibrated)"


def _estimator_styles() -> dict[str, dict]:
    return method_style(list(ESTIMATOR_LABELS.values()))


def _truth_line(x, y, *, name: str, showlegend: bool = True) -> go.Scatter:
    """The truth in the foreground colour."""
    return go.Scatter(
        x=np.asarray(x, dtype=float), y=np.asarray(y, dtype=float), mode="lines", name=name,
        line={"color": ink(), "width": LINE_WIDTH + 1.5}, meta=INK, showlegend=showlegend,
        hovertemplate="confidence %{x:.3f}<br>" + name + ": %{y:.4f}<extra></extra>",
    )  # fmt: skip


def truth_reliability_figure(
    curve, diagrams, kde, *, height: int = 640, subtitle: str = ""
) -> go.Figure:
    """True confidence reliability curve against estimates from one draw; densities below.

    Parameters
    ----------
    curve : calcore.simulate.TrueReliabilityCurve
    diagrams : Mapping[str, calcore.ReliabilityDiagram]
        Estimator key (``"equal-width"``, ``"equal-mass"``) -> confidence diagram.
    kde : calcore.KDEReliabilityCurve
        The draw's KDE confidence curve.
    height : int
    subtitle : str
        Trusted text (numbers and fixed words from the page).

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name``: :data:`TRUE_CURVE` (``x = curve.confidence``, ``y =
        curve.accuracy``), one per diagram labelled by :data:`ESTIMATOR_LABELS` (non-empty
        bins), ``"KDE"`` (``x = kde.grid``, ``y = kde.accuracy``); lower panel
        :data:`TRUE_DENSITY` (``y = curve.density``) and ``"KDE (density)"``.
    """
    styles = _estimator_styles()
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28], vertical_spacing=0.05
    )
    fig.add_trace(diagonal(), row=1, col=1)
    fig.add_trace(_truth_line(curve.confidence, curve.accuracy, name=TRUE_CURVE), row=1, col=1)
    for key, diagram in diagrams.items():
        label = ESTIMATOR_LABELS[key]
        fig.add_trace(
            reliability_points(diagram, name=label, group=label, style=styles[label],
                               show_intervals=False, mode="markers"),
            row=1, col=1,
        )  # fmt: skip
    kde_style = styles[ESTIMATOR_LABELS["kde"]]
    line = {"color": kde_style["color"], "width": LINE_WIDTH, "dash": kde_style["dash"]}
    grid = np.asarray(kde.grid, dtype=float)
    fig.add_trace(
        go.Scatter(x=grid, y=np.asarray(kde.accuracy, dtype=float), mode="lines", name="KDE",
                   legendgroup="KDE", line=line,
                   hovertemplate="confidence %{x:.3f}<br>KDE accuracy: %{y:.4f}<extra></extra>"),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        _truth_line(curve.confidence, curve.density, name=TRUE_DENSITY,
                    showlegend=False),
        row=2, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=grid, y=np.asarray(kde.density, dtype=float), mode="lines",
                   name="KDE (density)", legendgroup="KDE", showlegend=False, line=line,
                   hovertemplate="confidence %{x:.3f}<br>KDE density: %{y:.3f}<extra></extra>"),
        row=2, col=1,
    )  # fmt: skip
    lo = float(np.min(curve.confidence))
    lo = max(0.0, lo - 0.02)
    fig.update_xaxes(range=[lo, 1.0])
    fig.update_xaxes(title_text="confidence (max p)", row=2, col=1)
    fig.update_yaxes(title_text="P(correct | confidence)", range=[0.0, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="density", rangemode="tozero", row=2, col=1)
    return finish(
        fig, title="True reliability curve vs estimates from one draw",
        subtitle=subtitle, height=height,
    )  # fmt: skip


def estimator_error_figure(errors, *, tolerance: float, height: int = 520):
    """Mean absolute error (left) and bias (right) of each estimator against ``n``.

    Parameters
    ----------
    errors : calcore.simulate.EstimatorErrors
    tolerance : float
        The mean absolute error the user accepts (a dashed line on the left panel;
        :func:`calcore.simulate.samples_needed`'s ``tolerance``).
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name``: per estimator ``<label>`` (``x = sizes``, ``y =
        mean_abs_error[i]``) and ``"<label> (bias)"`` (``y = bias[i]``); ``"error tolerance"``.
    """
    styles = _estimator_styles()
    sizes = np.asarray(errors.sizes)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1)
    for i, key in enumerate(errors.estimators):
        label = ESTIMATOR_LABELS[key]
        style = styles[label]
        common = {
            "mode": "lines+markers",
            "legendgroup": label,
            "line": {"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
            "marker": {"color": style["color"], "size": 9, "symbol": style["symbol"]},
        }
        fig.add_trace(
            go.Scatter(x=sizes, y=np.asarray(errors.mean_abs_error[i], dtype=float), name=label,
                       hovertemplate="n = %{x:,}<br>mean |error|: %{y:.4f}<extra></extra>",
                       **common),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(x=sizes, y=np.asarray(errors.bias[i], dtype=float), name=f"{label} (bias)",
                       showlegend=False,
                       hovertemplate="n = %{x:,}<br>bias: %{y:+.4f}<extra></extra>", **common),
            row=1, col=2,
        )  # fmt: skip
    fig.add_trace(
        go.Scatter(x=[sizes[0], sizes[-1]], y=[tolerance, tolerance], mode="lines",
                   name="error tolerance", meta=INK,
                   line={"color": ink(), "dash": "dash", "width": 2},
                   hovertemplate="error tolerance: %{y:.4f}<extra></extra>"),
        row=1, col=1,
    )  # fmt: skip
    fig.add_hline(y=0.0, line={"color": ink(), "width": 1}, row=1, col=2)
    fig.update_xaxes(type="log", tickvals=sizes, tickformat=",d", title_text="sample size n")
    fig.update_yaxes(title_text="mean |estimate − truth|", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="bias (estimate − truth)", row=1, col=2)
    subtitle = (
        f"{esc(errors.view)} ECE, truth {errors.truth:.4f} · "
        f"{int(errors.n_repeats)} repetitions per n"
    )
    return finish(fig, title="Estimator error against sample size",
                  subtitle=subtitle, height=height)  # fmt: skip


def recovery_figure(ece, truth: dict, *, height: int = 480, subtitle=""):
    """ECE of each method's recalibrated test draw, with the uncalibrated model's truth.

    Parameters
    ----------
    ece : Mapping[str, Mapping[str, float]]
        Method (``"uncalibrated"`` first) -> ``{ece key of ECE_LABELS: value}``.
    truth : Mapping[str, float]
        The uncalibrated model's true value per ECE key.
    height : int
    subtitle : str
        Trusted text.

    Returns
    -------
    plotly.graph_objects.Figure
        Bar traces: :data:`TRUE_UNCALIBRATED` (hollow, ``y`` = ``truth``) first, then one
        per method (``name`` escaped; ``x`` = ECE labels, ``y`` = values).
    """
    methods = list(ece)
    styles = method_style([UNCALIBRATED, *methods])
    keys = list(ECE_LABELS)
    x = [ECE_LABELS[k] for k in keys]
    fig = go.Figure()
    # The truth as a hollow bar first in each group, so it stands beside the bar it is the
    # truth of; hollow in the foreground colour.
    fig.add_trace(
        go.Bar(x=x, y=[float(truth[k]) for k in keys], name=TRUE_UNCALIBRATED,
               marker={"color": "rgba(0,0,0,0)", "line": {"color": ink(), "width": 2.5}},
               hovertemplate="true %{x}: %{y:.4f}<extra></extra>")
    )  # fmt: skip
    for method in methods:
        label = esc(method)
        fig.add_trace(
            go.Bar(x=x, y=[float(ece[method][k]) for k in keys], name=label,
                   marker={"color": styles[method]["color"]},
                   hovertemplate=f"{label}<br>%{{x}}: %{{y:.4f}}<extra></extra>")
        )  # fmt: skip
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="ECE on the test draw", rangemode="tozero")
    return finish(fig, title="How calibrators recover the truth",
                  subtitle=subtitle, height=height)  # fmt: skip

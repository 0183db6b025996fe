"""KDE-ECE beside binned ECE (Zhang, Kailkhura, Han 2020, Sec. 4.1; Gupta & Ramdas, Fig. 2).

The smooth KDE reliability curve is drawn over the binned points of the same method, and
the binned ECE against the number of bins beside the KDE-ECE as a flat line: the binned
estimate moves with the bins, the KDE-ECE has none.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures._common import (
    LINE_WIDTH,
    diagonal,
    esc,
    finish,
    ordered,
    reliability_points,
)
from dashboard.figures._style import method_style

__all__ = ["kde_figure", "ece_by_bins_figure", "ECE_FIELDS"]

ECE_FIELDS = {
    "confidence_ece": "conf-ECE",
    "top_label_ece": "TL-ECE",
    "classwise_ece": "CW-ECE",
}


def kde_figure(curves, diagrams, *, kde_ece, height: int = 620) -> go.Figure:
    """KDE reliability curve per method over its binned points, score density below.

    Parameters
    ----------
    curves : Mapping[str, calcore.KDEReliabilityCurve]
        Method -> curve (e.g. :func:`calcore.kde_confidence_curve`), in display order.
    diagrams : Mapping[str, calcore.ReliabilityDiagram]
        The same methods' binned diagrams.
    kde_ece : Mapping[str, float]
        Each method's KDE-ECE (shown in the subtitle; methods without one are left out).
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (escaped): ``<method>``: ``x = grid``, ``y = accuracy`` where
        the curve rests on at least
        :data:`calcore.foundation.kernel_density.KDE_MIN_EFFECTIVE_ROWS` effective
        rows (NaN elsewhere: a gap); ``"<method> (few rows)"``: the rest of the curve,
        dotted and thin; ``"<method> (band)"``: accuracy -+ 1.96 standard errors where
        supported (a closed shape: the upper edge, then the lower edge reversed);
        ``"<method> (binned)"``: the diagram's non-empty bins; ``"<method> (density)"``:
        ``x = grid``, ``y = density`` in the lower panel.
    """
    curves = ordered(curves, "curves")
    missing = [m for m in curves if m not in diagrams]
    if missing:
        raise ValueError(f"no binned diagram for methods {missing!r}.")
    styles = method_style(list(curves))
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.72, 0.28], vertical_spacing=0.05
    )
    fig.add_trace(diagonal(), row=1, col=1)
    for method, curve in curves.items():
        label, style = esc(method), styles[method]
        points = reliability_points(
            diagrams[method],
            name=f"{label} (binned)",
            group=label,
            style={**style, "symbol": f"{style['symbol']}-open"},
            show_intervals=False,
            showlegend=False,
            mode="markers",
        )
        points.marker.line = {"width": 2, "color": style["color"]}
        fig.add_trace(points, row=1, col=1)
        line = {"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]}
        grid = np.asarray(curve.grid, dtype=float)
        accuracy = np.asarray(curve.accuracy, dtype=float)
        supported = curve.supported()
        # Where few rows are near, the curve is noise: dotted and thin, and no band, so
        # that a swing over an empty stretch of the axis does not read as a finding.
        sparse = np.where(_with_neighbours(~supported), accuracy, np.nan)
        fig.add_trace(
            go.Scatter(x=grid, y=sparse, mode="lines", name=f"{label} (few rows)",
                       legendgroup=label, showlegend=False,
                       line={"color": style["color"], "width": 1, "dash": "dot"},
                       customdata=np.asarray(curve.effective_count, dtype=float),
                       hovertemplate="score: %{x:.3f}<br>KDE accuracy: %{y:.4f}"
                       "<br>only %{customdata:.1f} effective rows<extra></extra>"),
            row=1, col=1,
        )  # fmt: skip
        half = 1.96 * np.asarray(curve.standard_error, dtype=float)
        upper = np.where(supported, np.minimum(accuracy + half, 1.0), np.nan)
        lower = np.where(supported, np.maximum(accuracy - half, 0.0), np.nan)
        fig.add_trace(
            go.Scatter(x=np.concatenate([grid, grid[::-1]]),
                       y=np.concatenate([upper, lower[::-1]]), mode="lines",
                       name=f"{label} (band)", legendgroup=label, showlegend=False,
                       fill="toself", fillcolor=style["color"], opacity=0.15,
                       line={"width": 0}, hoverinfo="skip"),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(x=grid, y=np.where(supported, accuracy, np.nan), mode="lines",
                       name=label, legendgroup=label, line=line,
                       hovertemplate="score: %{x:.3f}<br>KDE accuracy: %{y:.4f}"),
            row=1, col=1,
        )  # fmt: skip
        fig.add_trace(
            go.Scatter(x=grid, y=np.asarray(curve.density, dtype=float), mode="lines",
                       name=f"{label} (density)", legendgroup=label, showlegend=False,
                       line=line, hovertemplate="score: %{x:.3f}<br>density: %{y:.3f}"),
            row=2, col=1,
        )  # fmt: skip
    parts = [
        f"{esc(m)} {float(kde_ece[m]):.4f} (binned {diagrams[m].ece:.4f})"
        for m in curves
        if m in kde_ece
    ]
    first = next(iter(curves.values()))
    fig.update_xaxes(range=[0.0, 1.0], row=1, col=1)
    fig.update_xaxes(range=[0.0, 1.0], title_text="score (confidence)", row=2, col=1)
    fig.update_yaxes(range=[-0.02, 1.02], title_text="accuracy", row=1, col=1)
    fig.update_yaxes(title_text="density", rangemode="tozero", row=2, col=1)
    title = (
        f"KDE reliability curve over the binned points · bandwidth {first.bandwidth:.3f} · "
        "dotted: fewer than 20 effective rows, band: 95% pointwise"
    )
    subtitle = "KDE-ECE: " + " · ".join(parts) if parts else None
    return finish(fig, title=title, subtitle=subtitle, height=height)


def _with_neighbours(mask: np.ndarray) -> np.ndarray:
    """``mask`` widened by one point each way, so the dotted part meets the solid one."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    return out


def ece_by_bins_figure(
    sweeps,
    *,
    kde_ece=None,
    field: str = "confidence_ece",
    height: int = 520,
) -> go.Figure:
    """Binned ECE against the number of bins per method, KDE-ECE as a flat dashed line.

    Parameters
    ----------
    sweeps : Mapping[str, calcore.EceByBins]
        Method -> sweep, in display order.
    kde_ece : Mapping[str, float], optional
        Each method's KDE-ECE, drawn flat over the sweep's bin range in the method's colour.
    field : {"confidence_ece", "top_label_ece", "classwise_ece"}
        Which binned estimate to draw.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (escaped): ``<method>`` with ``x = bins``, ``y = <field>``;
        ``"<method> (KDE-ECE)"`` with ``x = [bins[0], bins[-1]]``, ``y = [kde, kde]``.
    """
    if field not in ECE_FIELDS:
        raise ValueError(f"field must be one of {sorted(ECE_FIELDS)}; got {field!r}.")
    sweeps = ordered(sweeps, "sweeps")
    missing = [m for m, sweep in sweeps.items() if getattr(sweep, field) is None]
    if missing:
        raise ValueError(f"{field} was not computed for {missing!r} (ece_by_bins views=).")
    kde_ece = dict(kde_ece or {})
    styles = method_style(list(sweeps))
    fig = go.Figure()
    for method, sweep in sweeps.items():
        label, style = esc(method), styles[method]
        bins = np.asarray(sweep.bins)
        fig.add_trace(
            go.Scatter(
                x=bins,
                y=np.asarray(getattr(sweep, field), dtype=float),
                mode="lines+markers",
                name=label,
                legendgroup=label,
                line={"color": style["color"], "width": LINE_WIDTH, "dash": style["dash"]},
                marker={"color": style["color"], "size": 9, "symbol": style["symbol"]},
                hovertemplate=f"%{{x:d}} bins<br>{ECE_FIELDS[field]}: %{{y:.4f}}",
            )
        )
        if method in kde_ece:
            k = float(kde_ece[method])
            fig.add_trace(
                go.Scatter(x=[bins[0], bins[-1]], y=[k, k], mode="lines",
                           name=f"{label} (KDE-ECE)", legendgroup=label,
                           line={"color": style["color"], "width": LINE_WIDTH, "dash": "dash"},
                           hovertemplate="KDE-ECE: %{y:.4f} (no bins)")
            )  # fmt: skip
    first = next(iter(sweeps.values()))
    fig.update_xaxes(title_text="number of bins", dtick=5)
    fig.update_yaxes(title_text=ECE_FIELDS[field], rangemode="tozero")
    title = f"Binned {ECE_FIELDS[field]} against the number of bins"
    subtitle = f"{esc(first.binning)} bins · dashed: KDE-ECE, which uses no bins"
    return finish(fig, title=title, subtitle=subtitle, height=height)

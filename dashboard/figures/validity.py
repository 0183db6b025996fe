"""Validity and conditional-validity plots (Gupta & Ramdas 2021, Sec. 2.1 and 4, Fig. 3)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dashboard.figures._common import LINE_WIDTH, band, esc, finish, ordered
from dashboard.figures._style import method_style
from dashboard.figures._theme import INK, ink

__all__ = ["validity_figure"]


def validity_figure(
    curves,
    *,
    theory=None,
    conditional: bool = False,
    title: str | None = None,
    height: int = 560,
) -> go.Figure:
    """``V(eps)`` (or the conditional indicator) against ``eps``, one curve per method.

    Parameters
    ----------
    curves : Mapping[str, calcore.ValidityCurve]
        Method -> curve, in display order.
    theory : tuple of (ndarray, ndarray), optional
        ``(epsilon, bound)``, e.g. from :func:`calcore.umd_validity_bound`; drawn dashed.
    conditional : bool
        Draw ``conditional`` (the mean of ``1{max_b |E_b - h_b| <= eps}``) instead of
        ``validity``.
    title : str, optional
        HTML-escaped.
    height : int

    Returns
    -------
    plotly.graph_objects.Figure
        Traces by ``name`` (escaped): ``<method>`` with ``x = epsilon`` and ``y`` the mean
        curve; ``"<method> (± s.e.m.)"``, the band ``mean +- std of the mean`` as a closed
        polygon (``x = [eps, reversed eps]``, ``y = [mean + sem, reversed mean - sem]``);
        ``"theory (UMD bound)"`` if given.
    """
    curves = ordered(curves, "curves")
    styles = method_style(list(curves))
    field = "conditional" if conditional else "validity"
    fig = go.Figure()
    for method, curve in curves.items():
        label, color = esc(method), styles[method]["color"]
        eps = np.asarray(curve.epsilon, dtype=float)
        mean = np.asarray(getattr(curve, field), dtype=float)
        sem = np.asarray(getattr(curve, f"{field}_sem"), dtype=float)
        fig.add_trace(
            band(eps, mean - sem, mean + sem, color=color, name=f"{label} (± s.e.m.)", group=label)
        )
        fig.add_trace(
            go.Scatter(
                x=eps,
                y=mean,
                mode="lines",
                name=label,
                legendgroup=label,
                line={"color": color, "width": LINE_WIDTH, "dash": styles[method]["dash"]},
                customdata=sem,
                hovertemplate="ε = %{x:.4f}<br>mean: %{y:.4f}<br>std of the mean: "
                "%{customdata:.4f}",
            )
        )
    if theory is not None:
        eps, bound = (np.asarray(a, dtype=float) for a in theory)
        fig.add_trace(
            go.Scatter(x=eps, y=bound, mode="lines", name="theory (UMD bound)", meta=INK,
                       line={"color": ink(), "width": LINE_WIDTH, "dash": "dash"},
                       hovertemplate="ε = %{x:.4f}<br>bound: %{y:.4f}<extra></extra>")
        )  # fmt: skip
    first = next(iter(curves.values()))
    if conditional:
        y_title = "P(every bin within ε)"
        default = "Conditional validity: max_b |E_b − h_b| ≤ ε"
    else:
        y_title = "V(ε): fraction of test points"
        default = "Validity: fraction of test points whose bin has |E_b − h_b| ≤ ε"
    subtitle = (
        f"{esc(first.view)} view · mean ± std of the mean over {int(first.n_resamples):,} resamples"
    )
    eps_max = max(float(np.max(c.epsilon)) for c in curves.values())
    fig.update_xaxes(range=[0.0, eps_max], title_text="ε (tolerance on |E_b − h_b|)")
    fig.update_yaxes(range=[-0.02, 1.02], title_text=y_title)
    title = default if title is None else esc(title)
    return finish(fig, title=title, subtitle=subtitle, height=height)

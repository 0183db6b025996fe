"""View 6: KDE-ECE beside binned ECE, and binned ECE against the number of bins."""

from __future__ import annotations

import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import ece_by_bins_figure, kde_figure


def kde_eces(ctx) -> dict[str, float]:
    """KDE-ECE uses no bins: the metrics view's bin-free point estimates, whatever the
    binning."""
    reports = ctx.per_output(compute.bin_free_report, 0)
    return {label: rep.metrics["kde_ece"] for label, rep in reports.items()}


def figures(ctx):
    s = ctx.settings
    curves = ctx.per_output(compute.kde_curve)
    diagrams = ctx.per_output(compute.confidence_diagram, s.binning, s.bins)
    kde_ece = kde_eces(ctx)
    sweeps = ctx.per_output(compute.ece_sweep, s.binning)
    return (
        kde_figure(curves, diagrams, kde_ece=kde_ece),
        ece_by_bins_figure(sweeps, kde_ece=kde_ece),
    )


def render(ctx) -> None:
    st.subheader("KDE-ECE beside binned ECE")
    sweeps = ctx.per_output(compute.ece_sweep, ctx.settings.binning)
    answer(calcore.kde_summary(kde_eces(ctx), sweeps))
    explain("kde")
    # stacked at full width: titles and legends stay readable on a projector
    curve_fig, sweep_fig = ctx.figure("kde", lambda: figures(ctx))
    chart(curve_fig, "figure.kde")
    chart(sweep_fig, "figure.ece_by_bins")
    note = compute.weights_note(ctx.split.test)
    if note:
        st.caption(f"KDE curve and bin sweep: {note}")

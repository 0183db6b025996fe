"""View 2: the confidence reliability diagram of every method, with bin counts."""

from __future__ import annotations

import streamlit as st

from dashboard.calibration import compute
from dashboard.calibration.views._common import chart, explain
from dashboard.figures import reliability_figure

KEY_BANDS = "view.confidence.bands"
KEY_INTERVALS = "view.confidence.intervals"


def figure(ctx, *, bands: bool = False, intervals: bool = True):
    s = ctx.settings
    diagrams = ctx.per_output(compute.confidence_diagram, s.binning, s.bins)
    band_results = ctx.per_output(compute.confidence_bands, s.binning, s.bins) if bands else None
    return reliability_figure(
        diagrams, bands=band_results, show_intervals=intervals, theme=ctx.theme
    )


def render(ctx) -> None:
    st.subheader("Confidence reliability diagram")
    explain("confidence")
    diagram_with_options(ctx)


@st.fragment
def diagram_with_options(ctx) -> None:
    """The toggles and the figure; a fragment, so a toggle reruns only this part."""
    left, right = st.columns(2)
    intervals = left.toggle("Wilson interval bars", value=True, key=KEY_INTERVALS)
    bands = right.toggle(
        "Consistency bands (resampled under perfect calibration)", value=False, key=KEY_BANDS
    )
    fig = ctx.figure(
        "confidence", lambda: figure(ctx, bands=bands, intervals=intervals), bands, intervals
    )
    chart(fig, "figure.confidence")
    note = compute.weights_note(ctx.split.test) if bands else None
    if note:
        st.caption(f"Consistency bands: {note}")

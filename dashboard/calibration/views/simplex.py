"""View 8: for 3 classes, the probability simplex with canonical-binning arrows."""

from __future__ import annotations

import streamlit as st

from dashboard.calibration import compute
from dashboard.calibration.views._common import chart, explain
from dashboard.figures import simplex_figure

KEY_METHOD = "view.simplex.method"
CANONICAL = {
    "sierpinski": "Sierpinski binning",
    "grid": "grid binning",
    "projection-hb": "projection-based histogram binning",
}


def figure(ctx, name: str):
    split = ctx.split
    summary = compute.simplex_summary(f"{split.key}|{name}", name, (), split.calib, split.test)
    return simplex_figure(summary, class_names=list(ctx.test.class_names))


def render(ctx) -> None:
    st.subheader("Simplex view (canonical calibration)")
    explain("simplex")
    if ctx.test.n_classes != 3:
        st.info(
            f"The simplex view needs exactly 3 classes; this data has {ctx.test.n_classes}. "
            "Pick the 3-class synthetic sample to see it."
        )
        return
    if ctx.split.calib is None:
        st.info("The canonical calibrators need calibration rows; choose a split.")
        return
    name = st.radio(
        "Canonical calibrator", list(CANONICAL), format_func=CANONICAL.get, horizontal=True,
        key=KEY_METHOD,
    )  # fmt: skip
    chart(figure(ctx, name), "figure.simplex")

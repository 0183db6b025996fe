"""View 5: validity and conditional validity over calibration/test resamples."""

from __future__ import annotations

import numpy as np
import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import validity_figure
from dashboard.text import escape_markdown as esc

KEY_RESAMPLES = "view.validity.resamples"
KEY_VIEW = "view.validity.view"
KEY_CLASS = "view.validity.class"
RESAMPLE_CHOICES = (10, 20, 50, 100)


def curves(ctx, *, view: str, n_resamples: int, group: int | None = None) -> dict:
    """Each fitted method's curves (the uncalibrated model has nothing to resample)."""
    return ctx.per_method(compute.validity, view, n_resamples, group)


def theory(ctx) -> tuple[np.ndarray, np.ndarray, str] | None:
    """UMD's guarantee for the first histogram-binning method with a bin count, if any."""
    for choice in ctx.methods.values():
        if calcore.CALIBRATORS[choice.name].binary_method == "hb":  # UMD: histogram binning
            params = calcore.CALIBRATORS[choice.name].defaults | choice.kwargs
            if params.get("points_per_bin") is None and params.get("bins"):
                data_rows = ctx.split.calib.n_samples + (
                    0 if ctx.split.calib is ctx.split.test else ctx.split.test.n_samples
                )
                n_calib = min(data_rows, compute.RESAMPLING_MAX_ROWS) // 2
                bins = int(params["bins"])
                eps = np.linspace(0.0, 0.2, 201)
                return eps, (n_calib, bins), choice.label
    return None


def render(ctx) -> None:
    st.subheader("Validity plots")
    if not ctx.methods:
        st.info("Choose at least one calibrator in the sidebar: validity is a property of one.")
        explain("validity")
        return
    # the answer depends on the choices below, but is read first
    sentence = st.empty()
    explain("validity")
    left, right = st.columns(2)
    n_resamples = left.selectbox(
        "Resamples (half calibration, half test)", RESAMPLE_CHOICES, index=1, key=KEY_RESAMPLES
    )
    view = right.radio("Scores", ["confidence", "top-label"], horizontal=True, key=KEY_VIEW)
    group = None
    if view == "top-label":
        names = ctx.test.class_names
        group = st.selectbox(
            "Predicted class (top-label per-class validity)",
            [None, *range(len(names))],
            format_func=lambda c: "all classes" if c is None else names[c],
            key=KEY_CLASS,
        )
    with st.spinner(f"Fitting each method {n_resamples} times…"):
        results = curves(ctx, view=view, n_resamples=int(n_resamples), group=group)
    if not results:
        return  # every method refused (each named in a warning)
    answer(calcore.validity_summary(results), sentence)
    th = theory(ctx)
    bound, bound_c = None, None
    if th is not None:
        eps, (n_calib, bins), label = th
        bound = (eps, calcore.umd_validity_bound(eps, n_calib=n_calib, n_bins=bins))
        bound_c = (eps, calcore.umd_validity_bound(eps, n_calib=n_calib, n_bins=bins,
                                                    conditional=True))  # fmt: skip
    chart(validity_figure(results, theory=bound), "figure.validity")
    chart(
        validity_figure(results, theory=bound_c, conditional=True),
        "figure.validity_conditional",
    )
    rows = ctx.split.calib.n_samples + (
        0 if ctx.split.calib is ctx.split.test else ctx.split.test.n_samples
    )
    note = compute.sample_note(rows)
    if note:
        st.caption(note)
    note = compute.weights_note(ctx.split.calib, ctx.split.test)
    if note:
        st.caption(note)
    if th is not None:
        st.caption(
            f"Dashed: UMD's guarantee with {th[1][1]} bins and {th[1][0]:,} calibration rows "
            f"(the setting of {esc(th[2])}); it holds for binary uniform-mass binning."
        )

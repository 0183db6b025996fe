"""View 7: metric and accuracy against the calibration-set size."""

from __future__ import annotations

import dataclasses

import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import learning_curve_figure

KEY_METRIC = "view.learning.metric"
KEY_REPEATS = "view.learning.repeats"
METRIC_CHOICES = ("top_label_ece", "conf_ece", "classwise_ece", "nll", "brier")


def curve(ctx, *, metric: str, n_repeats: int) -> calcore.LearningCurve | None:
    """All methods' curves in one LearningCurve, from per-method cached pieces.

    calcore draws the same subsets for every method (same seed), so curves computed one
    method at a time are the curves of one joint call; caching per method means adding a
    method does not refit the others.
    """
    s = ctx.settings
    sizes = compute.learning_sizes(ctx.split.calib.n_samples)
    by_method = ctx.per_method(compute.learning, metric, sizes, n_repeats, s.binning, s.bins)
    if not by_method:
        return None  # every method refused (each named in a warning)
    combined = calcore.LearningCurve.combine(by_method.values())
    return dataclasses.replace(combined, methods=tuple(by_method))  # the page's labels


def render(ctx) -> None:
    st.subheader("Learning curves")
    if not ctx.methods:
        st.info("Choose at least one calibrator in the sidebar.")
        explain("learning")
        return
    # the answer depends on the choices below, but is read first
    sentence = st.empty()
    explain("learning")
    left, right = st.columns(2)
    metric = left.selectbox(
        "Metric", METRIC_CHOICES, format_func=lambda k: calcore.METRICS[k].label, key=KEY_METRIC
    )
    n_repeats = right.selectbox("Repetitions", (3, 5, 10), index=0, key=KEY_REPEATS)
    with st.spinner("Fitting every method on subsets of the calibration rows…"):
        result = curve(ctx, metric=metric, n_repeats=int(n_repeats))
    if result is not None:
        label = calcore.METRICS[metric].label
        answer(calcore.learning_summary(result, metric_label=label), sentence)
        chart(learning_curve_figure(result), "figure.learning")
        for which, preds in (("calibration", ctx.split.calib), ("test", ctx.split.test)):
            note = compute.sample_note(preds.n_samples)
            if note:
                st.caption(f"{which.capitalize()} rows: {note}")
        note = compute.weights_note(ctx.split.calib, ctx.split.test)
        if note:
            st.caption(note)

"""View 3: top-label reliability (the Delta_b construction), one bin's classes, per class."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard.calibration import compute
from dashboard.calibration.views._common import chart, explain
from dashboard.figures import (
    per_class_top_label_figure,
    top_label_bin_figure,
    top_label_figure,
)
from dashboard.guard import bugs_as_messages
from dashboard.text import escape_markdown as esc

KEY_METHOD = "view.top_label.method"
KEY_BIN = "view.top_label.bin"
MAX_PANELS = 20


def figure(ctx):
    s = ctx.settings
    return top_label_figure(
        ctx.per_output(compute.top_label_diagram, s.binning, s.bins)
    )


def render(ctx) -> None:
    st.subheader("Top-label reliability diagram")
    explain("top-label")
    s = ctx.settings
    diagrams = ctx.per_output(compute.top_label_diagram, s.binning, s.bins)
    fig = ctx.figure("top_label", lambda: top_label_figure(diagrams))
    chart(fig, "figure.top_label")

    drill_down(ctx, diagrams)


@st.fragment
@bugs_as_messages
def drill_down(ctx, diagrams: dict) -> None:
    """One bin's classes and the per-class diagrams of one method.

    A fragment: changing the method or the bin reruns only this part of the page.
    """
    st.markdown("**Drill into one bin**")
    left, right = st.columns(2)
    method = left.selectbox("Method", list(diagrams), key=KEY_METHOD)
    diagram = diagrams[method]
    count = diagram.confidence_diagram.count
    filled = [int(b) for b in np.flatnonzero(count > 0)]
    lower, upper = diagram.confidence_diagram.lower_edge, diagram.confidence_diagram.upper_edge
    b = right.selectbox(
        "Bin",
        filled,
        index=int(np.argmax(count[filled])),  # the fullest bin first
        format_func=lambda i: f"[{lower[i]:.3f}, {upper[i]:.3f}] · {count[i]:,} rows",
        key=KEY_BIN,
    )
    methods = list(diagrams)
    fig = ctx.figure(
        "top_label_bin",
        lambda: top_label_bin_figure(diagram, b, method=method, methods=methods),
        method,
        b,
    )
    chart(fig, "figure.top_label_bin")

    st.markdown("**Per predicted class** (bins formed within each class)")
    ratios = np.array([d.count.sum() for d in diagram.per_class])
    order = [int(c) for c in np.argsort(-ratios, kind="stable")[:MAX_PANELS]]
    if len(diagram.per_class) > MAX_PANELS:
        st.caption(f"The {MAX_PANELS} most-predicted of {len(diagram.per_class)} classes.")
    fig = ctx.figure(
        "top_label_per_class",
        lambda: per_class_top_label_figure(
            diagram, classes=order, method=method, methods=methods
        ),
        method,
    )
    chart(fig, "figure.top_label_per_class")
    st.caption(f"Method shown: {esc(method)}.")

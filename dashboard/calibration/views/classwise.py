"""View 4: class-wise reliability, a small multiple per class (top classes by support)."""

from __future__ import annotations

import numpy as np
import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import classwise_grid_figure
from dashboard.guard import bugs_as_messages

KEY_CLASSES = "view.classwise.classes"
MAX_PANELS = 20


def default_classes(ctx) -> list[int]:
    """Every class up to 20, else the 20 with the most test labels."""
    counts = ctx.test.class_counts
    if counts.size <= MAX_PANELS:
        return list(range(counts.size))
    return sorted(int(c) for c in np.argsort(-counts, kind="stable")[:MAX_PANELS])


def figure(ctx, classes: list[int]):
    s = ctx.settings
    names = ctx.test.class_names
    diagrams = ctx.per_output(compute.classwise_diagrams, s.binning, s.bins, tuple(classes))
    counts = ctx.test.class_counts  # rows labelled with each class: the data behind a panel
    return classwise_grid_figure(
        diagrams,
        class_names=[names[c] for c in classes],
        class_counts=[int(counts[c]) for c in classes],
    )


def render(ctx) -> None:
    st.subheader("Class-wise reliability")
    grid(ctx)


@st.fragment
@bugs_as_messages
def grid(ctx) -> None:
    """Class choice and the grid; a fragment, so a new choice reruns only this part."""
    names = ctx.test.class_names
    # the answer depends on the classes chosen below, but is read first
    sentence = st.empty()
    explain("class-wise")
    classes = st.multiselect(
        f"Classes (up to {MAX_PANELS}; default: the most frequent)",
        list(range(len(names))),
        default=default_classes(ctx),
        format_func=lambda c: names[c],
        max_selections=MAX_PANELS,
        key=KEY_CLASSES,
    )
    if not classes:
        st.info("Pick at least one class.")
        return
    chosen = tuple(sorted(classes))
    s = ctx.settings
    diagrams = ctx.per_output(compute.classwise_diagrams, s.binning, s.bins, chosen)
    answer(calcore.classwise_summary(diagrams), sentence)
    chart(ctx.figure("classwise", lambda: figure(ctx, list(chosen)), chosen), "figure.classwise")

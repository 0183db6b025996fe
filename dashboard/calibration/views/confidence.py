"""View 2: the reliability diagram of every method, with bin counts.

For several classes the confidence (max-probability) diagram. For a binary model its one
probability, ``P(class 1)`` (calcore's positive-class diagram), by default: the confidence
view folds a binary model's scores at 0.5 and piles a rare event's rows into its last bin.
"""

from __future__ import annotations

import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.views import metrics
from dashboard.calibration.views._common import answer, chart, explain
from dashboard.figures import reliability_figure
from dashboard.guard import bugs_as_messages
from dashboard.text import escape_markdown as esc

KEY_BANDS = "view.confidence.bands"
KEY_INTERVALS = "view.confidence.intervals"
KEY_BINARY_VIEW = "view.confidence.binary_view"
KEY_ZOOM = "view.confidence.zoom"
KEY_SIDEBAR_BINS = "view.confidence.sidebar_bins"
#: Share of the rows in one equal-width bin above which the positive-class diagram takes
#: equal-mass bins instead (its scores crowd: a 3% event on 15 equal-width bins puts most
#: rows in the first bin and draws one point).
CROWDED_SHARE = 0.5
POSITIVE, CONFIDENCE = "positive", "confidence"


def figure(ctx, *, bands: bool = False, intervals: bool = True):
    s = ctx.settings
    diagrams = ctx.per_output(compute.confidence_diagram, s.binning, s.bins)
    band_results = ctx.per_output(compute.confidence_bands, s.binning, s.bins) if bands else None
    return reliability_figure(diagrams, bands=band_results, show_intervals=intervals)


def render(ctx) -> None:
    if ctx.test.n_classes == 2:
        positive(ctx)
        return
    st.subheader("Confidence reliability diagram")
    s = ctx.settings
    answer(
        calcore.reliability_summary(ctx.per_output(compute.confidence_diagram, s.binning, s.bins))
    )
    explain("confidence")
    diagram_with_options(ctx)


def positive_binning(ctx) -> tuple[str, int, str]:
    """The (binning, bins) of the positive-class diagram and what the page says about it:
    the sidebar's, or equal-mass bins of the same number when equal-width bins would put
    more than :data:`CROWDED_SHARE` of the rows in one bin (unless the user keeps them)."""
    s = ctx.settings
    if s.binning != "equal-width" or st.session_state.get(KEY_SIDEBAR_BINS):
        return s.binning, s.bins, ""
    base = compute.positive_diagram(
        ctx.keys[calcore.UNCALIBRATED], s.binning, s.bins, ctx.outputs[calcore.UNCALIBRATED]
    )
    share = base.largest_bin_share
    if not share > CROWDED_SHARE:
        return s.binning, s.bins, ""
    return (
        "equal-mass",
        s.bins,
        f"The scores crowd: {share:.0%} of the rows fall in one of {s.bins} equal-width bins, "
        f"so this diagram uses {s.bins} equal-mass bins (the same number of rows each).",
    )


def positive(ctx) -> None:
    """A binary model: its one probability against the observed frequency, answer first."""
    name = ctx.test.class_names[1]
    st.subheader(f"Reliability of P({esc(name)})")
    # the Metrics view's report (cached): with its intervals, unless that view defers them
    # on large data (they would cost the same here, on a view switch)
    boot = 0 if metrics.intervals_deferred(ctx) else ctx.settings.n_resamples
    report = compute.report(
        ctx.keys[calcore.UNCALIBRATED],
        ctx.settings.binning,
        ctx.settings.bins,
        boot,
        ctx.outputs[calcore.UNCALIBRATED],
    )
    words = calcore.binary_summary(report, positive=name)
    if words:
        st.info(esc(words))
    explain("positive")
    binary_diagram_with_options(ctx)


@st.fragment
@bugs_as_messages
def binary_diagram_with_options(ctx) -> None:
    """The binary view's toggles and figure (a fragment: a toggle reruns only this part)."""
    left, middle, right = st.columns(3)
    shown = left.radio(
        "Probability",
        (POSITIVE, CONFIDENCE),
        format_func=lambda v: (
            f"P({ctx.test.class_names[1]})" if v == POSITIVE else "confidence (max probability)"
        ),
        key=KEY_BINARY_VIEW,
        horizontal=True,
        help="A binary model states one probability per row: P(class 1). The confidence "
        "view folds it at 0.5 (max(p, 1 - p)), as for several classes.",
    )
    zoom = middle.toggle(
        "Zoom to the scores",
        value=True,
        key=KEY_ZOOM,
        help="Axes around the bins' scores instead of [0, 1]: rare events sit in a corner.",
    )
    right.toggle(
        "Keep the sidebar's binning",
        value=False,
        key=KEY_SIDEBAR_BINS,
        help="By default crowded scores get equal-mass bins in this diagram.",
    )
    intervals = True
    if shown == CONFIDENCE:
        fig = ctx.figure("confidence", lambda: figure(ctx, intervals=intervals), False, True)
        chart(fig, "figure.confidence")
        return
    binning, bins, why = positive_binning(ctx)
    diagrams = ctx.per_output(compute.positive_diagram, binning, bins)
    fig = ctx.figure(
        "positive",
        lambda: reliability_figure(diagrams, show_intervals=intervals, zoom=zoom),
        binning,
        bins,
        zoom,
    )
    chart(fig, "figure.positive")
    if why:
        st.caption(esc(why))


@st.fragment
@bugs_as_messages
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

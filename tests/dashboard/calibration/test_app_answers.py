"""Every diagnostic view opens with its answer: right under the view's title, before any
control or chart, calcore's sentence for the results the view draws (computed here from
the sample's rows, not read back from the page), in a box coloured by its severity."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import run_app, small_csv, splits_of, upload

import calcore
from calcore.predictions import concat
from dashboard.calibration import compute
from dashboard.calibration.samples import DEFAULT_SAMPLE

METHODS = ("ts", "conf-hb")
TITLES = {
    "confidence": "Confidence reliability diagram",
    "top-label": "Top-label reliability diagram",
    "class-wise": "Class-wise reliability",
    "validity": "Validity plots",
    "kde": "KDE-ECE beside binned ECE",
    "learning": "Learning curves",
}


def _walk(node):
    for child in getattr(node, "children", {}).values():
        yield child
        yield from _walk(child)


def first_under_title(at, title: str):
    """The first element drawn after the view's subheader (containers skipped)."""
    elements = [e for e in _walk(at.main) if getattr(e, "type", None) != "flex_container"]
    (start,) = [i for i, e in enumerate(elements) if e.type == "subheader" and e.value == title]
    return elements[start + 1]


def outputs(methods=METHODS) -> dict[str, calcore.Predictions]:
    s = splits_of(DEFAULT_SAMPLE)
    out = {calcore.UNCALIBRATED: s["test"]}
    for m in methods:
        out[m] = calcore.make_calibrator(m).fit(s["calib"]).transform(s["test"])
    return out


def expected(view: str) -> calcore.ViewSummary:
    preds = outputs()
    if view == "confidence":
        return calcore.reliability_summary(
            {k: calcore.reliability_diagram(p, bins=15) for k, p in preds.items()}
        )
    if view == "top-label":
        return calcore.top_label_summary(
            {k: calcore.top_label_reliability_diagram(p, bins=15) for k, p in preds.items()}
        )
    if view == "class-wise":  # ten classes: every one is shown
        return calcore.classwise_summary(
            {k: calcore.classwise_reliability_diagrams(p, bins=15) for k, p in preds.items()}
        )
    assert view == "kde"
    kde = {
        k: calcore.evaluate(p, metrics=("kde_ece",)).metrics["kde_ece"] for k, p in preds.items()
    }
    sweeps = {
        k: calcore.ece_by_bins(p, bins=range(5, 26), views=("confidence",))
        for k, p in preds.items()
    }
    return calcore.kde_summary(kde, sweeps)


def assert_answer(element, want: calcore.ViewSummary) -> None:
    assert type(element).__name__.lower() == want.severity  # st.success, st.info, st.warning
    assert unescape_markdown(element.value) == want.sentence


@pytest.mark.parametrize("view", ["confidence", "top-label", "class-wise", "kde"])
def test_the_view_opens_with_calcores_sentence(view):
    at = run_app({"view": view, "m": list(METHODS)})
    want = expected(view)
    assert want.sentence
    assert_answer(first_under_title(at, TITLES[view]), want)


def test_validity_opens_with_its_sentence_above_its_controls():
    at = run_app({"view": "validity", "m": "tl-hb"})
    s = splits_of(DEFAULT_SAMPLE)
    data = concat([s["calib"], s["test"]])
    curve = calcore.calibrator_validity(
        data, ("tl-hb", {}), n_calib=data.n_samples // 2,
        n_test=data.n_samples - data.n_samples // 2, n_resamples=20, view="confidence",
        binning="unique", seed=0,
    )  # fmt: skip
    assert_answer(
        first_under_title(at, TITLES["validity"]), calcore.validity_summary({"tl-hb": curve})
    )


def test_learning_opens_with_its_sentence_above_its_controls():
    at = run_app({"view": "learning", "m": "ts"})
    s = splits_of(DEFAULT_SAMPLE)
    sizes = list(compute.learning_sizes(s["calib"].n_samples))
    curve = calcore.learning_curve(
        s["calib"], s["test"], [("ts", {})], sizes=sizes,
        metric="top_label_ece", n_repeats=3, bins=15, binning="equal-width", seed=0,
    )  # fmt: skip
    want = calcore.learning_summary(curve, metric_label=calcore.METRICS["top_label_ece"].label)
    assert_answer(first_under_title(at, TITLES["learning"]), want)


def test_a_hostile_class_name_in_the_sentence_is_text():
    hostile = ("[x](https://evil.example)", "<img src=x onerror=alert(1)>", "**bold**")
    at = upload(run_app({"m": "ts", "view": "class-wise"}), "h.csv", small_csv(names=hostile))
    assert_clean(at)
    answer = first_under_title(at, TITLES["class-wise"])
    shown = unescape_markdown(answer.value)
    named = [n for n in hostile if f"worst calibrated on {n} (" in shown]
    assert len(named) == 1, shown
    assert named[0] not in answer.value  # escaped on the page, not Markdown or HTML

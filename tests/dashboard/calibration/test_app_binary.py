"""A binary model on the page: its one probability's diagram and the sentence that says
which way it is off, both calcore's numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from _plotly_json import plotly_array
from test_app import new_app, splits_of

import calcore
from dashboard.calibration import controls
from dashboard.calibration.views import confidence

CREDIT = "credit-default-logreg"


def _chart(at, key: str) -> dict:
    (spec,) = [json.loads(e.proto.spec) for e in at.get("plotly_chart") if e.proto.id.endswith(key)]
    return spec


def test_binary_reliability_view_draws_p_of_class_one_with_the_direction_sentence():
    at = new_app({"sample": CREDIT, "view": "confidence", "m": "platt", "boot": "50"})
    at.run()
    assert_clean(at)
    s = splits_of(CREDIT)
    test = s["test"]
    name = test.class_names[1]
    assert at.subheader[0].value == f"Reliability of P({name})"
    report = calcore.evaluate(test, n_resamples=50, seed=0)
    words = calcore.binary_summary(report, positive=name)
    assert words and words in [unescape_markdown(i.value) for i in at.info]
    spec = _chart(at, "-figure.positive")
    base = calcore.positive_class_reliability_diagram(test, bins=15)
    assert base.largest_bin_share <= confidence.CROWDED_SHARE  # not crowded: sidebar bins
    (points,) = [
        t for t in spec["data"] if t.get("name") == "uncalibrated" and t["type"] == "scatter"
    ]
    ok = base.count > 0
    np.testing.assert_allclose(plotly_array(points["y"]), base.accuracy[ok], rtol=1e-12)
    np.testing.assert_allclose(plotly_array(points["x"]), base.confidence[ok], rtol=1e-12)
    # the view is named for the positive class in the selector
    labels = at.radio(key=controls.KEY_VIEW).options
    assert "Reliability (positive class)" in labels


def test_crowded_scores_get_equal_mass_bins_and_the_page_says_so():
    rng = np.random.default_rng(3)
    p = np.clip(rng.beta(0.6, 18.0, 3000), 1e-4, 0.9)  # a rare event: most rows below 1/15
    y = (rng.random(3000) < p).astype(int)
    lines = ["label,p_no,p_yes"] + [
        f"{v},{float(1 - q)!r},{float(q)!r}" for v, q in zip(y, p, strict=True)
    ]
    at = new_app({"view": "confidence", "m": "none", "boot": "0", "split": "same"})
    at.run()
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    at.file_uploader(key=controls.KEY_UPLOAD).upload(
        "rare.csv", ("\n".join(lines) + "\n").encode(), "text/csv"
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y, ("no", "yes"))
    share = calcore.positive_class_reliability_diagram(preds, bins=15).largest_bin_share
    assert share > confidence.CROWDED_SHARE
    assert any(
        f"{share:.0%} of the rows fall in one of 15 equal-width bins" in unescape_markdown(c.value)
        for c in at.caption
    )
    spec = _chart(at, "-figure.positive")
    assert "equal-mass, 15 bins" in spec["layout"]["title"]["text"]
    want = calcore.positive_class_reliability_diagram(preds, bins=15, binning="equal-mass")
    (points,) = [
        t for t in spec["data"] if t.get("name") == "uncalibrated" and t["type"] == "scatter"
    ]
    np.testing.assert_allclose(plotly_array(points["y"]), want.accuracy[want.count > 0], rtol=1e-12)


def test_errors_that_are_the_same_number_share_one_row_and_binary_rows_only_for_two_classes():
    from test_app import metrics_table, run_app

    rng = np.random.default_rng(7)
    p = rng.uniform(0.01, 0.2, 2000)  # a rare event: every row predicts class 0
    y = (rng.random(2000) < p).astype(int)
    preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    values = calcore.Comparison.from_reports({"uncalibrated": calcore.evaluate(preds)}, {}).values
    from dashboard.calibration.views import metrics as metrics_view

    titles = metrics_view.row_titles(values)
    assert titles["conf_ece"] == "conf-ECE = TL-ECE = CW-ECE = ECE (class 1)"
    assert "top_label_ece" not in titles and "positive_class_ece" not in titles
    m = values["uncalibrated"]
    assert m["conf_ece"].estimate == pytest.approx(m["positive_class_ece"].estimate, abs=1e-12)
    assert "shown once" in metrics_view.merged_note(values)
    assert metrics_view.better_words("calibration_slope") == "→ 1"
    # several classes: no row for the binary measures
    table = metrics_table(run_app({"m": "ts"}))
    assert "O/E" not in table.columns and "TL-ECE" in table.columns

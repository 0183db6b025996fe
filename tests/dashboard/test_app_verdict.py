"""The verdict at the top of the metrics view: calcore's sentence, chart and warnings."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import run_app, splits_of

import calcore
from dashboard.calibration.samples import DEFAULT_SAMPLE
from dashboard.calibration.views import metrics as metrics_view


def _texts(at) -> list[str]:
    return [unescape_markdown(e.value) for e in [*at.success, *at.info]]


def test_the_page_opens_on_calcores_verdict_sentence_and_chart():
    at = run_app({"m": ["ts", "tl-hb"]}, bootstrap=50)
    s = splits_of(DEFAULT_SAMPLE)
    wanted = ["top_label_ece", *calcore.BIN_FREE_METRICS]
    expected = calcore.compare(
        s["calib"], s["test"], ["ts", "tl-hb"], n_bootstrap=50, metrics=wanted
    ).verdict()
    assert expected.sentence() in _texts(at)
    (chart,) = [
        json.loads(e.proto.spec)
        for e in at.get("plotly_chart")
        if e.proto.id.endswith("-" + metrics_view.VERDICT_CHART_KEY)
    ]
    drawn = {t["name"]: t["x"][0] for t in chart["data"]}
    for method, d in expected.paired.items():
        assert drawn[method] == pytest.approx(d.estimate, abs=1e-12)
    # the subheader of the verdict comes before the metrics table's
    heads = [h.value for h in at.subheader]
    assert heads.index("Which calibrator to ship") < heads.index("Metrics on the test rows")


def test_without_calibrators_the_page_says_how_to_get_a_verdict():
    at = run_app({"m": "none"}, bootstrap=50)
    assert any("Choose calibrators in the sidebar" in t for t in _texts(at))


def test_the_primary_metric_can_be_changed_and_only_applicable_ones_are_offered():
    at = run_app({"m": "ts"}, bootstrap=50)
    box = at.selectbox(key=metrics_view.KEY_PRIMARY)
    assert "accuracy" not in box.options and "NLL" not in box.options
    box.select("conf_ece").run()
    assert_clean(at)
    s = splits_of(DEFAULT_SAMPLE)
    wanted = ["conf_ece", *calcore.BIN_FREE_METRICS]
    v = calcore.compare(s["calib"], s["test"], ["ts"], n_bootstrap=50, metrics=wanted).verdict(
        primary="conf_ece"
    )
    assert v.sentence() in _texts(at)

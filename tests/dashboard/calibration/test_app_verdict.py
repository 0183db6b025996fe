"""The verdict at the top of the metrics view: calcore's sentence, chart and warnings."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from test_app import metrics_table, run_app, splits_of

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
        s["calib"], s["test"], ["ts", "tl-hb"], n_resamples=50, metrics=wanted
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
    box = at.selectbox(key=metrics_view.primary_key(10))
    assert "accuracy" not in box.options and "NLL" not in box.options
    box.select("conf_ece").run()
    assert_clean(at)
    s = splits_of(DEFAULT_SAMPLE)
    wanted = ["conf_ece", *calcore.BIN_FREE_METRICS]
    v = calcore.compare(s["calib"], s["test"], ["ts"], n_resamples=50, metrics=wanted).verdict(
        primary="conf_ece"
    )
    assert v.sentence() in _texts(at)


def test_words_under_the_table_name_exactly_the_intervals_that_need_them():
    s = splits_of(DEFAULT_SAMPLE)
    c = calcore.compare(s["calib"], s["test"], ["ts", "tl-hb"], n_resamples=50)
    words = " ".join(metrics_view.interval_and_test_words(c))
    # on this sample TS's TL-ECE interval ends at its estimate (0.0223 [0.0141, 0.0223])
    assert "TL-ECE of ts" in words.split(": the interval ends at the estimate")[0]
    for m in c.methods:
        for key in metrics_view.TEST_ROWS:
            iv, p = c.values[m][key], c.calibration_tests[m].p_values[key]
            where = f"{calcore.METRICS[key].label} of {m}"
            if iv.low <= 1e-12 and p <= 0.05:
                assert where in words.split(": the interval reaches 0")[0]
            ends_at = iv.high == iv.estimate and iv.low < iv.estimate
            if ends_at:
                assert where in words.split(": the interval ends at the estimate")[0]


def test_a_verdict_by_the_classwise_kde_ece_reads_its_paired_replicates():
    # the table shows no interval for the class-wise KDE-ECE, so its replicates are
    # computed only for a verdict ranked by it
    at = run_app({"m": "ts"}, bootstrap=50)
    cell = metrics_table(at).loc["ts", "KDE-ECE (CW)"]
    assert cell.endswith(metrics_view.UNRELIABLE)  # marked as before: no interval
    box = at.selectbox(key=metrics_view.primary_key(10))
    box.select("kde_ece_classwise").run()
    assert_clean(at)
    s = splits_of(DEFAULT_SAMPLE)
    wanted = ["kde_ece_classwise", *calcore.BIN_FREE_METRICS]
    v = calcore.compare(s["calib"], s["test"], ["ts"], n_resamples=50, metrics=wanted).verdict(
        primary="kde_ece_classwise"
    )
    assert v.n_resamples == 50
    assert v.sentence() in _texts(at)


def _before_shipping(at):
    """The verdict's warnings expander (its label and its list), the only one on the page."""
    (panel,) = [e for e in at.expander if e.label.startswith("Before shipping")]
    return unescape_markdown(panel.label), [unescape_markdown(m.value) for m in panel.markdown]


def test_the_warnings_read_in_one_line_under_the_sentence_with_the_list_behind_it():
    # issue 34: a bullet per method and warning pushed the table below the fold; the page
    # now says how many warnings and whose in one line, the words one click away
    methods = ["ts", "tl-hb", "irm", "n-iso"]
    at = run_app({"m": methods})
    s = splits_of(DEFAULT_SAMPLE)
    wanted = ["top_label_ece", *calcore.BIN_FREE_METRICS]
    expected = calcore.compare(
        s["calib"], s["test"], methods, n_resamples=0, metrics=wanted
    ).verdict()
    warned = [(m, w) for m in expected.paired for w in expected.warnings.get(m, ())]
    whose = list(dict.fromkeys(m for m, _ in warned))
    assert len(warned) >= 2 and len(whose) >= 2  # tl-hb's bins, n-iso's accuracy on this sample
    label, (words,) = _before_shipping(at)
    assert label == f"Before shipping: {len(warned)} warnings ({', '.join(whose)})"
    assert words.splitlines() == [f"- **{m}**: {w}" for m, w in warned]  # all, in order
    assert "ts" not in whose and "(ts" not in label  # a method without warnings is not named
    # one line, not a list, between the sentence and the table: no markdown list on the page
    assert not any("Before shipping" in m.value for m in at.markdown)
    # the sentence stays as it was, in its own box
    assert expected.sentence() in _texts(at)


def test_without_warnings_there_is_no_before_shipping_line():
    at = run_app({"m": "ts"})
    assert not [e for e in at.expander if e.label.startswith("Before shipping")]


def test_the_warnings_line_counts_once_per_method_and_escapes_names():
    label = metrics_view.before_shipping_label([("irm", "a"), ("[x](y)*", "b"), ("irm", "c")])
    assert label.startswith("Before shipping: 3 warnings (irm, ")
    assert "[x](y)" not in label and unescape_markdown(label).endswith("(irm, [x](y)*)")
    assert metrics_view.before_shipping_label([("ts", "a")]) == "Before shipping: 1 warning (ts)"

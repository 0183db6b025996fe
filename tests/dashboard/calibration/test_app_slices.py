"""The Slices view in-process (AppTest): calcore's per-slice numbers on the page, the link.

The reference numbers come from ``calcore.evaluate_by`` on the sample's test rows loaded
independently of the app; the page must show exactly them, in calcore's order.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import APP, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from _plotly_json import plotly_array
from streamlit.testing.v1 import AppTest

import calcore
from dashboard.calibration import compute, controls
from dashboard.calibration.samples import SAMPLES
from dashboard.calibration.views import slices as slices_view

CREDIT = "credit-default-logreg"


def run(query: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180)
    for key, value in {"boot": "0", "view": "slices", **query}.items():
        at.query_params[key] = value
    at.run()
    return at


def credit_test_rows() -> calcore.Predictions:
    return calcore.load_predictions(SAMPLES[CREDIT].path, split="test")


def slices_table(at: AppTest):
    (frame,) = [d.value for d in at.dataframe if "q-value" in d.value.columns]
    return frame


def chart(at: AppTest, name: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(name)]
    assert len(found) == 1, [c.proto.id for c in at.get("plotly_chart")]
    return found[0]


def query(at: AppTest, key: str) -> list[str]:
    """Every value of a query parameter after the run (AppTest gives a str for one value)."""
    value = at.query_params.get(key, [])
    return value if isinstance(value, list) else [value]


def test_table_and_size_chart_carry_calcore_numbers_by_evidence():
    at = run({"sample": CREDIT, "m": "none", "by": "education"})
    assert_clean(at)
    expected = calcore.evaluate_by(
        credit_test_rows(), "education", n_resamples=compute.SLICE_TEST_RESAMPLES,
        metrics=compute.SLICE_METRICS, seed=0,
    )  # fmt: skip
    frame = slices_table(at)
    assert list(frame["slice"]) == [s.label for s in expected.slices]
    assert list(frame["rows"]) == [s.n for s in expected.slices]
    np.testing.assert_array_equal(frame["q-value"], [s.q_value for s in expected.slices])
    # the calibration test rejects the uncalibrated logistic regression on the large slices
    assert frame["verdict"].iloc[0] == "miscalibrated"
    assert set(frame["slice"]) == {"university", "graduate school", "high school", "other",
                                   "unknown"}  # fmt: skip
    funnel = chart(at, "figure.slices.funnel")
    (red,) = [t for t in funnel["data"] if t["name"].startswith("miscalibrated")]
    found = expected.discoveries(alpha=0.05)
    assert sorted(plotly_array(red["x"])) == sorted(s.n for s in found)
    key = expected.rank_metric  # two classes: the ECE of class 1 by default
    assert key == "positive_class_ece"
    assert sorted(plotly_array(red["y"])) == pytest.approx(
        sorted(s.report.metrics[key] for s in found), abs=1e-15
    )
    (null,) = [t for t in funnel["data"] if t["name"] == "95% of calibrated draws"]
    tested = sorted((s for s in expected.slices if s.tested), key=lambda s: s.n)
    want = [float(np.quantile(s.test.null_values[key], 0.95)) for s in tested]
    assert list(plotly_array(null["y"])) == pytest.approx(want, abs=1e-15)
    assert query(at, "by") == ["education"]


def test_each_calibrator_is_evaluated_within_each_slice():
    at = run({"sample": CREDIT, "m": "platt", "by": "sex"})
    assert_clean(at)
    methods = chart(at, "figure.slices.methods")
    (platt,) = [t for t in methods["data"] if t["name"] == "platt"]
    rows = credit_test_rows()
    calib = calcore.load_predictions(SAMPLES[CREDIT].path, split="calib")
    out = calcore.make_calibrator("platt").fit(calib).transform(rows)
    expected = calcore.evaluate_by(out, "sex", n_resamples=5, metrics=["top_label_ece"])
    want = {s.label: s.report.metrics["top_label_ece"] for s in expected.slices}
    shown = zip(methods["layout"]["yaxis"]["ticktext"], plotly_array(platt["x"]), strict=True)
    assert dict(shown) == (pytest.approx(want, abs=1e-12))


def test_calibrators_fitted_per_slice_join_the_comparison():
    at = run({"sample": CREDIT, "m": "platt", "by": "sex"})
    assert_clean(at)
    assert "platt per slice" not in at.selectbox(key=slices_view.KEY_METHOD).options
    at.checkbox(key=slices_view.KEY_PER_SLICE).check().run()
    assert_clean(at)
    rows = credit_test_rows()
    calib = calcore.load_predictions(SAMPLES[CREDIT].path, split="calib")
    fit = calcore.fit_per_slice("platt", calib, rows, "sex")
    assert all(s.own for s in fit.slices)
    captions = unescape_markdown(" ".join(c.value for c in at.caption))
    assert "platt fitted per slice of sex: 2 of 2 slices have their own fit." in captions
    expected = calcore.evaluate_by(fit.output, "sex", n_resamples=5, metrics=["top_label_ece"])
    want = {s.label: s.report.metrics["top_label_ece"] for s in expected.slices}
    methods = chart(at, "figure.slices.methods")
    (per_slice,) = [t for t in methods["data"] if t["name"] == "platt per slice"]
    shown = zip(methods["layout"]["yaxis"]["ticktext"], plotly_array(per_slice["x"]), strict=True)
    assert dict(shown) == pytest.approx(want, abs=1e-12)
    assert "platt per slice" in at.selectbox(key=slices_view.KEY_METHOD).options
    at.selectbox(key=slices_view.KEY_METHOD).set_value("platt per slice").run()
    assert_clean(at)
    frame = slices_table(at)
    ranked = calcore.evaluate_by(
        fit.output, "sex", n_resamples=compute.SLICE_TEST_RESAMPLES,
        metrics=compute.SLICE_METRICS, seed=0,
    )  # fmt: skip
    np.testing.assert_array_equal(frame["q-value"], [s.q_value for s in ranked.slices])
    chosen = chart(at, "figure.slices.chosen")
    assert "platt per slice" in {t["name"] for t in chosen["data"]}


def test_fitting_per_slice_goes_into_the_link_and_the_fits_download():
    at = run({"sample": CREDIT, "m": "platt", "by": "sex"})
    at.checkbox(key=slices_view.KEY_PER_SLICE).check().run()
    assert_clean(at)
    assert query(at, "fit") == ["slice"]
    buttons = [b for b in at.get("download_button") if "per_slice" in b.proto.id]
    assert len(buttons) == 1 and "platt per slice (JSON)" in buttons[0].proto.label
    # the link reopens the view with the per-slice fits, after a view switch too
    again = run({"sample": CREDIT, "m": "platt", "by": "sex", "fit": "slice"})
    assert_clean(again)
    assert again.checkbox(key=slices_view.KEY_PER_SLICE).value is True
    assert "platt per slice" in again.selectbox(key=slices_view.KEY_METHOD).options
    again.radio(key=controls.KEY_VIEW).set_value("metrics").run()
    assert query(again, "fit") == ["slice"]
    again.radio(key=controls.KEY_VIEW).set_value("slices").run()
    assert again.checkbox(key=slices_view.KEY_PER_SLICE).value is True
    # a wrong value is reported, not obeyed
    wrong = run({"sample": CREDIT, "m": "platt", "by": "sex", "fit": "everything"})
    assert wrong.checkbox(key=slices_view.KEY_PER_SLICE).value is False
    assert "fit 'everything'" in unescape_markdown(" ".join(w.value for w in wrong.warning))


def test_choosing_two_columns_crosses_them_and_goes_into_the_link():
    at = run({"sample": CREDIT, "m": "none"})
    assert_clean(at)
    assert any("Choose one or two columns" in i.value for i in at.info)
    at.multiselect(key=controls.KEY_SLICE_COLUMNS).set_value(["sex", "age"]).run()
    assert_clean(at)
    assert at.selectbox(key=controls.grouping_key("age")).value == "q4"  # 53 ages: quartiles
    assert query(at, "by") == ["sex", "age:q4"]
    frame = slices_table(at)
    assert frame["slice"].str.contains(r"^(?:male|female) \| [\[(]").all()
    assert len(frame) == 8
    # a view switch keeps the slicing in the link, and coming back restores the widgets
    at.radio(key=controls.KEY_VIEW).set_value("metrics").run()
    assert_clean(at)
    assert query(at, "by") == ["sex", "age:q4"] and query(at, "view") == []
    at.radio(key=controls.KEY_VIEW).set_value("slices").run()
    assert at.multiselect(key=controls.KEY_SLICE_COLUMNS).value == ["sex", "age"]
    assert query(at, "by") == ["sex", "age:q4"]


def test_a_sample_without_metadata_says_what_to_do():
    at = run({"m": "none"})
    assert_clean(at)
    assert any("no metadata columns to slice by" in i.value for i in at.info)


def test_link_with_an_unknown_or_a_third_column_is_reported_not_obeyed():
    at = run({"sample": CREDIT, "m": "none", "by": ["nope", "sex", "age"]})
    assert not at.exception
    words = unescape_markdown(" ".join(w.value for w in at.warning))
    assert "by 'age' (at most 2 slice columns)" in words
    assert "Not a column of this file that can be sliced by: 'nope'" in words
    assert at.multiselect(key=controls.KEY_SLICE_COLUMNS).value == ["sex"]


def _dated_csv(n_per_week: int = 800) -> bytes:
    """Binary predictions over four weeks, calibrated in the first and over-confident in
    the last (labels drawn from a flattened probability)."""
    rng = np.random.default_rng(3)
    lines = ["label,p_1,day,segment"]
    for week in range(4):
        p = rng.uniform(0.02, 0.98, n_per_week)
        truth = p if week < 3 else 0.5 + (p - 0.5) * 0.4
        y = (rng.random(n_per_week) < truth).astype(int)
        for i in range(n_per_week):
            day = np.datetime64("2026-11-02") + 7 * week + int(i % 7)
            segment = "<b>vip</b>" if i % 5 == 0 else "=cmd|' /C calc'!A0"
            lines.append(f'{y[i]},{p[i]:.6f},{day},"{segment}"')
    return ("\n".join(lines) + "\n").encode()


def test_weeks_in_order_with_the_change_and_hostile_slice_names_stay_text():
    at = run({"m": "none", "by": "day:week", "split": "same"})
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    at.file_uploader(key=controls.KEY_UPLOAD).upload("dated.csv", _dated_csv(), "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    order = chart(at, "figure.slices.order")
    # the dates in full on the ticks, "week of" said once in the axis title
    assert order["layout"]["xaxis"]["ticktext"] == [
        "2026-11-02", "2026-11-09", "2026-11-16", "2026-11-23"
    ]  # fmt: skip
    assert order["layout"]["xaxis"]["title"]["text"] == "day:week (week of the date shown)"
    subtitle = order["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")  # wrapped
    assert "a change" in subtitle
    assert any("Over time: ECE (class 1) rose" in unescape_markdown(c.value) for c in at.caption)
    # names as data: escaped in figures, plain text in the table, inert in the CSV
    at.multiselect(key=controls.KEY_SLICE_COLUMNS).set_value(["segment"]).run()
    assert not at.exception
    methods_or_funnel = chart(at, "figure.slices.funnel")
    texts = [t for trace in methods_or_funnel["data"] for t in trace.get("text", [])]
    assert "&lt;b&gt;vip&lt;/b&gt;" in texts and "<b>vip</b>" not in texts
    assert set(slices_table(at)["slice"]) == {"<b>vip</b>", "=cmd|' /C calc'!A0"}
    rows = slices_view.slice_rows(
        calcore.evaluate_by(
            calcore.load_predictions(_as_file(_dated_csv())), "segment", n_resamples=5
        )
    )
    from dashboard.calibration.exports import table_csv

    assert "'=cmd|" in table_csv(rows)


def _as_file(data: bytes):
    import io

    buffer = io.BytesIO(data)
    buffer.name = "dated.csv"
    return buffer


@pytest.mark.parametrize(
    "spec, shown, said",
    [
        ("age:q0", "q4", "q0 asks for 0 quantile ranges; use 2 to 100"),
        ("age:q101", "q4", "q101 asks for 101 quantile ranges; use 2 to 100"),
        ("age:day", "q4", "column 'age' is not grouped by 'day' here; choose 4 quantile ranges"),
        ("age:q7", "q7", None),  # any count calcore takes joins the menu
    ],
)
def test_a_linked_grouping_the_menu_lacks_is_taken_or_refused_with_the_range(spec, shown, said):
    """``by=age:q0`` used to become ``age:q4`` without a word."""
    at = run({"sample": CREDIT, "m": "none", "by": spec})
    assert_clean(at)
    assert at.selectbox(key=controls.grouping_key("age")).value == shown
    words = unescape_markdown(" ".join(w.value for w in at.warning))
    if said is None:
        assert words == "" and len(slices_table(at)) == 7
    else:
        assert said in words and "Ignored in the link" in words


def test_hashed_ids_beyond_2_53_are_offered_by_value_not_in_quantile_ranges():
    """Quantile ranges of such integers cannot be cut exactly (calcore refuses them), so
    the page offers the values only, instead of opening on that refusal."""
    rng = np.random.default_rng(4)
    ids = 2**60 + rng.integers(0, 20, 600)  # 20 hashed ids, differing in their last bits
    p = rng.uniform(0.05, 0.95, 600)
    y = (rng.random(600) < p).astype(int)
    lines = ["label,p_1,account"] + [f"{y[i]},{p[i]:.6f},{ids[i]}" for i in range(600)]
    at = run({"m": "none", "by": "account", "split": "same"})
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    data = ("\n".join(lines) + "\n").encode()
    at.file_uploader(key=controls.KEY_UPLOAD).upload("ids.csv", data, "text/csv").run()
    assert_clean(at)
    assert at.selectbox(key=controls.grouping_key("account")).options == ["each value"]
    values = set(slices_table(at)["slice"])
    assert values == {str(v) for v in np.unique(ids)}  # exact: two ids never merge

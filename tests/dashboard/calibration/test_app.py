"""The dashboard in-process with Streamlit's AppTest (no browser).

Figures and tables are checked as data: the Plotly JSON and the table cells the app
sends must carry exactly the numbers calcore computes for the same rows, independently
of the app's own code path.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

pytest.importorskip("streamlit")  # the calcore-only install has no dashboard extra

from _apptest import APP, assert_clean, fresh_streamlit_caches, unescape_markdown  # noqa: F401
from _plotly_json import panel_runs, plotly_array
from streamlit.testing.v1 import AppTest

import calcore
import calcore.io
from dashboard.calibration import compute, controls
from dashboard.calibration.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.calibration.state import VIEWS
from dashboard.figures import small_multiples

TIMEOUT = 120


def new_app(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    return at


def run_app(query: dict | None = None, *, bootstrap: int = 0) -> AppTest:
    """The app on the default sample; bootstrap off unless asked (speed)."""
    at = new_app({"boot": str(bootstrap), **(query or {})})
    at.run()
    assert_clean(at)
    return at


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page by their element key (``figure.*``)."""
    out = {}
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        out[element.proto.id] = spec
    return out


def only_chart(at: AppTest, name: str) -> dict:
    found = [spec for key, spec in charts(at).items() if key.endswith("-" + name)]
    assert len(found) == 1, list(charts(at))
    return found[0]


def query(at: AppTest, key: str) -> list[str]:
    """Every value of a query parameter after the run (AppTest gives a str for one value)."""
    value = at.query_params[key]
    return value if isinstance(value, list) else [value]


def splits_of(key: str) -> dict:
    return calcore.io.load_splits(SAMPLES[key].path)


def small_csv(rng_seed: int = 0, n: int = 400, names=("cat", "dog", "rabbit")) -> bytes:
    """A prediction CSV without a split column: label + one probability column per class."""
    rng = np.random.default_rng(rng_seed)
    probs = rng.dirichlet(np.full(len(names), 0.7), size=n)
    labels = np.array([rng.choice(len(names), p=p) for p in probs])
    lines = ["label," + ",".join(f"p_{c}" for c in names)]
    for y, p in zip(labels, probs, strict=True):
        lines.append(f"{y}," + ",".join(f"{v:.6f}" for v in p / p.sum()))
    return ("\n".join(lines) + "\n").encode()


def metrics_table(at: AppTest):
    """The metrics table transposed back to one row per method, one column per metric."""
    (table,) = [t.value for t in at.table if "metric" in t.value.columns]
    return table.drop(columns="better").set_index("metric").T


def cell_estimate(cell: str) -> float:
    return float(cell.split(" ")[0])


# -- first minute ----------------------------------------------------------------------------
def test_default_page_compares_default_methods_with_calcore_numbers():
    at = run_app()
    assert at.selectbox(key=controls.KEY_SAMPLE).value == DEFAULT_SAMPLE
    table = metrics_table(at)
    # the recommended set for 10 classes x ~500 calibration rows each (too few a class for
    # tl-hb's 15 bins at 50 rows a bin): one binning over all rows
    assert list(table.index) == ["uncalibrated", "ts", "conf-hb"]
    s = splits_of(DEFAULT_SAMPLE)
    base = calcore.evaluate(s["test"], bins=15).metrics
    ts_out = calcore.make_calibrator("ts").fit(s["calib"]).transform(s["test"])
    ts = calcore.evaluate(ts_out, bins=15).metrics
    for key, label in (("top_label_ece", "TL-ECE"), ("nll", "NLL"), ("classwise_ece", "CW-ECE")):
        assert table.loc["uncalibrated", label] == f"{base[key]:.4f}"
        assert table.loc["ts", label] == f"{ts[key]:.4f}"
    gain = calcore.calibration_gain(s["test"], ts_out, injective_accuracy_preserving=True)
    assert table.loc["ts", "Calibration gain"] == f"{gain.value:.4f}"
    assert table.loc["uncalibrated", "Calibration gain"] == "0.0000"
    # temperature scaling lowers the NLL of this over-confident ResNet (paper: T ~ 1.17)
    assert cell_estimate(table.loc["ts", "NLL"]) < cell_estimate(table.loc["uncalibrated", "NLL"])
    assert query(at, "sample") == [DEFAULT_SAMPLE]
    assert query(at, "m") == ["ts", "conf-hb"]


def test_bootstrap_intervals_are_shown_and_match_calcore():
    at = run_app({"m": "none"}, bootstrap=50)
    table = metrics_table(at)
    test = splits_of(DEFAULT_SAMPLE)["test"]
    rep = calcore.evaluate(test, bins=15, n_resamples=50, seed=0)
    for key in ("conf_ece", "nll", "kde_ece", "ace"):  # binned and bin-free halves
        iv = rep.intervals[key]
        assert table.loc["uncalibrated", calcore.METRICS[key].label] == (
            f"{iv.estimate:.4f} [{iv.low:.4f}, {iv.high:.4f}]"
        )


def test_the_table_tests_calibration_and_gives_no_bracket_to_an_mce():
    at = run_app({"m": "ts"}, bootstrap=50)
    table = metrics_table(at)
    s = splits_of(DEFAULT_SAMPLE)
    rep = calcore.evaluate(s["test"], bins=15, n_resamples=50, seed=0)
    title = "calibrated? (TL-ECE test)"
    assert table.loc["uncalibrated", title] == rep.calibration_test.verdict("top_label_ece")
    # 10,000 CIFAR-10 test rows of an over-confident ResNet: the smallest p-value possible.
    assert table.loc["uncalibrated", title] == "miscalibrated (p = 0.02)"
    mce = rep.metrics["top_label_mce"]
    assert table.loc["uncalibrated", "TL-MCE"] == f"{mce:.4f} †"
    captions = " ".join(c.value for c in at.caption)
    assert "† conf-MCE, TL-MCE, CW-MCE, KDE-ECE (CW): no interval shown" in captions
    assert "bias-corrected" in captions


def test_a_bins_change_reuses_the_metrics_that_use_no_bins(monkeypatch):
    calls = []
    real = calcore.evaluate

    def counting(preds, **kwargs):
        calls.append(tuple(kwargs.get("metrics") or ()))
        return real(preds, **kwargs)

    monkeypatch.setattr(calcore, "evaluate", counting)
    at = run_app({"m": "none"})
    free, cw = compute._BIN_FREE, (compute.KDE_CLASSWISE,)
    assert calls.count(free) == 1 and calls.count(cw) == 1
    before = len(calls)
    at.number_input(key=controls.KEY_BINS).set_value(9).run()
    assert_clean(at)
    assert calls.count(free) == 1 and calls.count(cw) == 1  # NLL, Brier, KDE-ECEs kept
    assert len(calls) == before + 2  # the two binned parts again (ACE/TACE, the others)
    test = splits_of(DEFAULT_SAMPLE)["test"]
    expected = real(test, bins=9).metrics
    table = metrics_table(at)
    for key in ("top_label_ece", "kde_ece", "nll"):
        assert table.loc["uncalibrated", calcore.METRICS[key].label] == f"{expected[key]:.4f}"


def test_metrics_chart_draws_the_errors_and_intervals_of_calcore():
    at = run_app({"m": "ts"}, bootstrap=50)
    spec = only_chart(at, "figure.metric_intervals")
    s = splits_of(DEFAULT_SAMPLE)
    ts_out = calcore.make_calibrator("ts").fit(s["calib"]).transform(s["test"])
    keys = ("conf_ece", "top_label_ece", "classwise_ece", "kde_ece")
    for name, preds in (("uncalibrated", s["test"]), ("ts", ts_out)):
        rep = calcore.evaluate(preds, bins=15, n_resamples=50, seed=0)
        (points,) = [t for t in spec["data"] if t.get("name") == name]
        np.testing.assert_allclose(plotly_array(points["y"]), [rep.metrics[k] for k in keys])
        bounds = plotly_array(points["customdata"])
        np.testing.assert_allclose(bounds[:, 0], [rep.intervals[k].low for k in keys])
        np.testing.assert_allclose(bounds[:, 1], [rep.intervals[k].high for k in keys])
        # Every bar is drawn around its own marker (the percentile intervals were not:
        # ts TL-ECE 0.0223 [0.0229, 0.0293] on this sample).
        y = plotly_array(points["y"])
        assert (bounds[:, 0] <= y).all() and (y <= bounds[:, 1]).all(), name
    ticks = spec["layout"]["xaxis"]["ticktext"]
    assert ticks == ["conf-ECE", "TL-ECE", "CW-ECE", "KDE-ECE"]


#: The figure of each view that overlays every method (validity has no "uncalibrated"
#: curve: there is nothing to fit).
MAIN_FIGURE = {
    "confidence": ("figure.confidence", True),
    "top-label": ("figure.top_label", True),
    "class-wise": ("figure.classwise", True),
    "validity": ("figure.validity", False),
    "kde": ("figure.kde", True),
    "learning": ("figure.learning", True),  # a flat reference line
}


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_draws_on_the_default_sample(view):
    at = run_app({"view": view, "m": ["ts", "tl-hb"]})
    if view == "simplex":
        # 10 classes: not offered; a sentence says why, and the Metrics view is shown instead
        radio = at.radio(key=controls.KEY_VIEW)
        assert radio.value == "metrics" and VIEWS["simplex"] not in radio.options
        said = "The Simplex (3 classes) view needs 3 classes; this data has 10, so the Metrics"
        assert [i.value for i in at.info] == [said + " view is shown."]
        assert not any(key.endswith("figure.simplex") for key in charts(at))
        assert list(metrics_table(at).index) == ["uncalibrated", "ts", "tl-hb"]
        assert_simplex_page_of_the_three_class_sample()
        return
    assert at.radio(key=controls.KEY_VIEW).value == view
    if view == "metrics":
        assert list(metrics_table(at).index) == ["uncalibrated", "ts", "tl-hb"]
        return
    if view == "slices":  # CIFAR-10 has no metadata: said (calibration/test_app_slices.py)
        assert any("no metadata columns" in i.value for i in at.info)
        return
    name, with_base = MAIN_FIGURE[view]
    names = {t.get("name") for t in only_chart(at, name)["data"]}
    assert {"ts", "tl-hb"} <= names
    assert ("uncalibrated" in names) == with_base


def assert_simplex_page_of_the_three_class_sample():
    """The simplex view on the 3-class sample: its title, the canonical calibrator picked
    (Sierpinski binning, the default), and one figure whose traces are calcore's summary of
    that calibrator fitted on the calibration rows and applied to the test rows: every bin's
    mean prediction (marker area = rows) and an arrow to its recalibrated prediction, all
    inside the triangle (barycentric coordinates: non-negative, summing to 1). The view has
    no answer sentence (tests/dashboard/calibration/test_app_answers.py lists the views that do)."""
    at = run_app({"sample": "synthetic-overconfident", "view": "simplex", "m": ["ts", "tl-hb"]})
    radio = at.radio(key=controls.KEY_VIEW)
    assert radio.value == "simplex" and VIEWS["simplex"] in radio.options
    assert "Simplex view (canonical calibration)" in [h.value for h in at.subheader]
    assert at.radio(key="view.simplex.method").value == "sierpinski"
    assert not at.info and not at.warning
    spec = only_chart(at, "figure.simplex")
    assert [(t["type"], t["name"]) for t in spec["data"]] == [
        ("scatterternary", "mean prediction"),
        ("scatterternary", "recalibration arrows"),
    ]
    s = splits_of("synthetic-overconfident")
    test = s["test"]
    from calcore.calibrators.canonical import canonical_bin_summary

    want = canonical_bin_summary(calcore.make_calibrator("sierpinski").fit(s["calib"]), test)
    tails, arrows = spec["data"]
    tail = np.column_stack([plotly_array(tails[axis]) for axis in "abc"])
    np.testing.assert_allclose(tail, want.mean_prediction, rtol=1e-12)
    np.testing.assert_array_equal(plotly_array(tails["marker"]["size"]), want.counts)
    assert want.counts.sum() == test.n_samples  # every test row in one bin
    points = np.column_stack([plotly_array(arrows[axis]) for axis in "abc"]).reshape(-1, 3, 3)
    assert np.isnan(points[:, 2]).all()  # [tail, head, gap] per bin
    np.testing.assert_allclose(points[:, 0], want.mean_prediction, rtol=1e-12)
    np.testing.assert_allclose(points[:, 1], want.recalibrated, rtol=1e-12)
    for xyz in (tail, points[:, 1]):  # inside the triangle
        assert (xyz >= 0).all()
        np.testing.assert_allclose(xyz.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    layout = spec["layout"]
    assert layout["ternary"]["sum"] == 1.0
    corners = [layout["ternary"][f"{axis}axis"]["title"]["text"] for axis in "abc"]
    assert corners == list(test.class_names) == ["cat", "dog", "rabbit"]
    assert layout["title"]["text"] == "Canonical calibration on the simplex · sierpinski"
    n = len(want.counts)
    assert layout["title"]["subtitle"]["text"].startswith(
        f"{n} non-empty of {int(want.n_bins)} bins · arrow: mean prediction → recalibrated"
    )


def test_confidence_view_figure_carries_calcore_diagrams():
    at = run_app({"view": "confidence", "bins": "10"})
    s = splits_of(DEFAULT_SAMPLE)
    spec = only_chart(at, "figure.confidence")
    base = calcore.reliability_diagram(s["test"], bins=10)
    out = calcore.make_calibrator("ts").fit(s["calib"]).transform(s["test"])
    ts = calcore.reliability_diagram(out, bins=10)
    for name, diagram in (("uncalibrated", base), ("ts", ts)):
        points = [t for t in spec["data"] if t.get("name") == name and t.get("mode")]
        filled = diagram.count > 0
        ys = [plotly_array(t["y"]) for t in points]
        assert any(
            y.shape == diagram.accuracy[filled].shape and np.allclose(y, diagram.accuracy[filled])
            for y in ys
        ), name


def test_simplex_view_on_the_three_class_sample():
    at = run_app({"sample": "synthetic-overconfident", "view": "simplex", "m": "ts"})
    spec = only_chart(at, "figure.simplex")
    assert any(t["type"] == "scatterternary" for t in spec["data"])


def test_the_simplex_view_is_offered_for_three_classes_only():
    """A view that cannot apply is not offered (it took 6.6 s to say so on 100 classes); a
    link that names it says why the Metrics view is shown instead."""
    at = run_app({"view": "simplex"})  # CIFAR-10: 10 classes
    assert "Simplex (3 classes)" not in at.radio(key=controls.KEY_VIEW).options
    assert at.radio(key=controls.KEY_VIEW).value == "metrics"
    assert any("needs 3 classes; this data has 10" in i.value for i in at.info)
    assert not at.get("plotly_chart") or "figure.simplex" not in charts(at)
    three = run_app({"sample": "synthetic-overconfident", "view": "metrics"})
    assert "Simplex (3 classes)" in three.radio(key=controls.KEY_VIEW).options


# -- controls ----------------------------------------------------------------------------
def test_choosing_methods_and_parameters_updates_table_and_url():
    at = run_app({"m": "ts"})
    at.multiselect(key=controls.KEY_METHODS).set_value(["ts", "tl-hb"]).run()
    assert_clean(at)
    at.number_input(key=controls.param_key("tl-hb", "bins")).set_value(10).run()
    assert_clean(at)
    table = metrics_table(at)
    assert list(table.index) == ["uncalibrated", "ts", "tl-hb(bins=10)"]
    s = splits_of(DEFAULT_SAMPLE)
    out = calcore.make_calibrator("tl-hb", bins=10).fit(s["calib"]).transform(s["test"])
    expected = calcore.evaluate(out, bins=15).metrics["top_label_ece"]
    assert table.loc["tl-hb(bins=10)", "TL-ECE"] == f"{expected:.4f}"
    assert query(at, "m") == ["ts", "tl-hb:bins=10"]


def test_binning_scheme_applies_to_the_table():
    at = run_app({"m": "none", "binning": "equal-mass", "bins": "20"})
    test = splits_of(DEFAULT_SAMPLE)["test"]
    expected = calcore.evaluate(test, bins=20, binning="equal-mass").metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{expected:.4f}"


def test_query_string_restores_every_setting():
    link = {
        "sample": "credit-default-logreg",
        "m": ["platt", "hb:bins=10;randomized=false"],
        "view": "confidence",
        "binning": "equal-mass",
        "bins": "12",
        "theme": "dark",
    }
    at = run_app(link)
    assert at.selectbox(key=controls.KEY_SAMPLE).value == "credit-default-logreg"
    assert at.multiselect(key=controls.KEY_METHODS).value == ["platt", "hb"]
    assert at.number_input(key=controls.param_key("hb", "bins")).value == 10
    assert at.checkbox(key=controls.param_key("hb", "randomized")).value is False
    assert at.selectbox(key=controls.KEY_BINNING).value == "equal-mass"
    assert at.number_input(key=controls.KEY_BINS).value == 12
    assert at.radio(key=controls.KEY_VIEW).value == "confidence"
    spec = only_chart(at, "figure.positive")  # a binary model: the diagram of P(class 1)
    assert "equal-mass, 12 bins" in spec["layout"]["title"]["text"]
    # the dark figure theme is gone: an old link's theme is ignored, without a warning
    assert spec["layout"]["paper_bgcolor"] == "#FFFFFF"
    assert not at.warning
    assert query(at, "m") == ["platt", "hb:bins=10;randomized=false"]


def test_bad_query_parts_are_ignored_with_a_warning():
    at = run_app({"m": ["nonsense", "ts:bogus=1"], "bins": "-3", "view": "nope"})
    message = unescape_markdown(" ".join(w.value for w in at.warning))
    assert "nonsense" in message and "bogus" in message and "bins" in message
    assert list(metrics_table(at).index) == ["uncalibrated"]


def test_a_link_takes_the_same_bins_and_bootstrap_counts_as_the_sidebar():
    from dashboard.calibration.state import BINS_RANGE, BOOTSTRAP_CHOICES

    at = run_app({"bins": str(BINS_RANGE[1]), "boot": str(BOOTSTRAP_CHOICES[1])})
    assert at.number_input(key=controls.KEY_BINS).value == BINS_RANGE[1]
    assert at.selectbox(key=controls.KEY_BOOTSTRAP).value == BOOTSTRAP_CHOICES[1]
    at = new_app({"bins": str(BINS_RANGE[1] + 1), "boot": "2000"})
    at.run()
    message = unescape_markdown(" ".join(w.value for w in at.warning))
    assert f"bins '{BINS_RANGE[1] + 1}' (outside 2..{BINS_RANGE[1]})" in message
    assert "boot '2000' (one of 0, 50, 200, 1000)" in message  # said, not silently bent


# -- data ----------------------------------------------------------------------------------
def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    at.file_uploader(key=controls.KEY_UPLOAD).upload(name, data, "text/csv").run()
    return at


def test_upload_without_split_uses_a_seeded_random_split():
    data = small_csv()
    at = upload(run_app({"m": "ts"}), "my predictions.csv", data)
    assert_clean(at)
    assert at.selectbox(key=controls.KEY_SPLIT).value == "random"
    preds = calcore.load_predictions(io.BytesIO(data), name="my predictions.csv")
    from calcore.evaluation import random_split

    calib, test = random_split(preds, test_fraction=0.5, seed=0)
    expected = calcore.evaluate(test, bins=15).metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{expected:.4f}"
    assert query(at, "upload") == ["my predictions.csv"]
    assert any("my predictions.csv" in unescape_markdown(c.value) for c in at.caption)


def test_an_upload_is_hashed_once_not_on_every_rerun(monkeypatch):
    import hashlib

    hashed = []
    real = controls.content_digest
    monkeypatch.setattr(controls, "content_digest", lambda b: hashed.append(len(b)) or real(b))
    data = small_csv()
    at = upload(run_app({"m": "none"}), "p.csv", data)
    at.number_input(key=controls.KEY_BINS).set_value(8).run()
    at.radio(key=controls.KEY_VIEW).set_value("confidence").run()
    assert_clean(at)
    assert hashed.count(len(data)) == 1
    digest = hashlib.blake2b(data, digest_size=32).hexdigest()
    assert any(f"BLAKE2b {digest[:12]}" in c.value for c in at.caption)


def test_a_wide_file_previews_its_first_columns():
    rng = np.random.default_rng(0)
    buf = io.BytesIO()
    np.savez(buf, logits=rng.normal(size=(400, 30)), labels=rng.integers(0, 30, 400))
    at = upload(run_app({"m": "none"}), "wide.npz", buf.getvalue())
    assert_clean(at)
    (preview,) = [d.value for d in at.dataframe]  # the only grid (no fitted methods)
    assert preview.shape == (5, 12)  # label + the first 11 of 30 score columns
    assert any("The first 12 of 31 columns" in c.value for c in at.caption)


def test_percentages_are_refused_until_the_percent_box_is_ticked():
    rng = np.random.default_rng(3)
    probs = np.round(rng.dirichlet([1, 1, 1], size=200) * 100, 1)
    probs[:, 2] = np.round(100 - probs[:, :2].sum(axis=1), 1)
    probs = probs[(probs >= 0).all(axis=1)]
    lines = ["label,cat,dog,eel"] + [
        f"{i % 3}," + ",".join(f"{v:.1f}" for v in row) for i, row in enumerate(probs)
    ]
    data = ("\n".join(lines) + "\n").encode()
    at = upload(run_app({"m": "none"}), "percent.csv", data)
    assert not at.exception
    (error,) = [unescape_markdown(e.value) for e in at.error]
    assert "look like percentages" in error and "percent=True" not in error
    assert "Tick “Scores are percentages (divide by 100)” under Data" in error
    import hashlib

    digest = hashlib.blake2b(data, digest_size=32).hexdigest()
    at.checkbox(key=f"data.{digest[:16]}.percent").check().run()
    assert_clean(at)
    from calcore.evaluation import random_split

    loaded = calcore.load_predictions(io.BytesIO(data), name="percent.csv", percent=True)
    _, test = random_split(loaded, test_fraction=0.5, seed=0)
    expected = calcore.evaluate(test, bins=15).metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{expected:.4f}"


def test_in_sample_evaluation_is_warned_about():
    at = run_app({"split": "same", "m": "tl-hb"})
    assert any("SAME rows" in w.value for w in at.warning)


def test_upload_bad_csv_shows_calcore_error_not_a_traceback():
    lines = small_csv(n=20).decode().splitlines()
    cells = lines[5].split(",")
    cells[2] = "oops"  # a non-numeric probability on file line 6
    lines[5] = ",".join(cells)
    data = ("\n".join(lines) + "\n").encode()
    with pytest.raises(calcore.CalcoreError) as excinfo:
        calcore.io.load_splits(io.BytesIO(data), name="bad.csv")
    at = upload(run_app(), "bad.csv", data)
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1
    shown = unescape_markdown(at.error[0].value)
    assert str(excinfo.value) in shown and "p_dog" in shown and "6" in shown
    assert not at.get("plotly_chart")


def test_hostile_names_are_text_everywhere():
    name = "[click](https://evil.example) :red[x] $y$.csv"
    hostile = ("<img src=x onerror=alert(1)>", "=HYPERLINK(1)", "%{x}")
    at = upload(run_app({"m": "ts", "view": "class-wise"}), name, small_csv(names=hostile))
    assert_clean(at)
    (caption,) = [c.value for c in at.caption if c.value.startswith("uploaded file:")]
    assert "[click](" not in caption and ":red[" not in caption and "$y$" not in caption
    assert name in unescape_markdown(caption)
    for spec in charts(at).values():
        text = json.dumps(spec)
        assert "<img" not in text and "onerror=alert(1)>" not in text


def test_warnings_of_the_loader_are_shown():
    # class "rabbit" never occurs as a label: a calcore warning the page must show
    rng = np.random.default_rng(1)
    probs = rng.dirichlet([1, 1, 1], size=60)
    lines = ["label,p_cat,p_dog,p_rabbit"]
    for i, p in enumerate(probs):
        lines.append(f"{i % 2}," + ",".join(f"{v:.6f}" for v in p / p.sum()))
    at = upload(run_app({"m": "none"}), "x.csv", ("\n".join(lines) + "\n").encode())
    assert any("rabbit" in unescape_markdown(w.value) for w in at.warning)


@pytest.mark.parametrize("key", list(SAMPLES))
def test_every_sample_loads_with_calib_and_test_splits(key):
    splits = calcore.io.load_splits(SAMPLES[key].path)
    assert set(splits) == {"calib", "test"}
    assert SAMPLES[key].path.stat().st_size < 3 * 1024 * 1024


# -- view-local controls -----------------------------------------------------------------
def test_top_label_plain_by_default_detail_on_request_and_the_worst_cells_table():
    at = run_app({"view": "top-label", "m": "ts"})
    test = splits_of(DEFAULT_SAMPLE)
    out = calcore.make_calibrator("ts").fit(test["calib"]).transform(test["test"])
    diagram = calcore.top_label_reliability_diagram(out, bins=15)
    filled = diagram.confidence_diagram.count > 0

    # plain: one line per method, accuracy against confidence
    spec = only_chart(at, "figure.top_label")
    lines = [
        t for t in spec["data"] if t["type"] == "scatter" and t["name"] != "perfect calibration"
    ]
    assert [t["name"] for t in lines] == ["uncalibrated", "ts"]
    np.testing.assert_allclose(
        plotly_array(lines[1]["y"]), diagram.confidence_diagram.accuracy[filled]
    )

    # the per-class gap behind a switch
    at.toggle(key="view.top_label.detail").set_value(True).run()
    assert_clean(at)
    names = {t["name"] for t in only_chart(at, "figure.top_label")["data"]}
    assert {"ts (conf ± Δ_b)", "ts (Δ_b)"} <= names

    # the worst (class, bin) cells of the chosen method: every non-empty cell, worst first,
    # their shares summing to the TL-ECE
    at.selectbox(key="view.top_label.method").set_value("ts").run()
    assert_clean(at)
    (frame,) = [d.value for d in at.dataframe if "adds to TL-ECE" in d.value.columns]
    assert len(frame) == int((diagram.class_count > 0).sum())
    adds = frame["adds to TL-ECE"].to_numpy()
    assert np.all(np.diff(adds) <= 0)
    np.testing.assert_allclose(adds.sum(), diagram.top_label_ece, rtol=1e-10)
    worst = frame.iloc[0]
    b, c = np.unravel_index(
        np.argmax(
            diagram.class_count / diagram.class_count.sum() * np.nan_to_num(diagram.class_gap)
        ),
        diagram.class_gap.shape,
    )
    assert worst["class"] == diagram.class_names[c] and worst["rows"] == diagram.class_count[b, c]

    # the small chart: the worst class first, then any class chosen
    assert at.selectbox(key="view.top_label.class").value == int(c)
    at.selectbox(key="view.top_label.class").set_value(0).run()
    assert_clean(at)
    small = only_chart(at, "figure.top_label_class")
    assert diagram.class_names[0] in small["layout"]["title"]["text"]
    (bars,) = [t for t in small["data"] if t["name"] == "ts (rows)"]
    np.testing.assert_array_equal(
        plotly_array(bars["y"]), diagram.class_count[:, 0][diagram.class_count[:, 0] > 0]
    )


def test_a_view_switch_sends_the_scroll_script_once():
    at = run_app({"m": "none"})
    scripts = lambda: [h for h in at.get("html") if "scrollIntoView" in h.proto.body]  # noqa: E731
    assert not scripts()  # the first view: no scroll
    at.radio(key=controls.KEY_VIEW).set_value("confidence").run()
    assert_clean(at)
    (first,) = scripts()
    assert ".st-key-view-top" in first.proto.body
    at.number_input(key=controls.KEY_BINS).set_value(12).run()  # same view: no scroll
    assert not scripts()
    at.radio(key=controls.KEY_VIEW).set_value("metrics").run()
    (second,) = scripts()
    assert second.proto.body != first.proto.body  # new text, so the browser runs it again


def test_the_first_page_opens_with_an_introduction():
    at = run_app({"m": "none"})
    assert at.title[0].value == "calibration-lens"
    assert at.markdown[0].value.startswith("Does a model's confidence match how often it is right?")
    assert not any("theme" in r.label.lower() for r in at.sidebar.radio)


def test_classwise_class_choice_and_confidence_bands():
    at = run_app({"view": "class-wise", "m": "none"})
    at.multiselect(key="view.classwise.classes").set_value([3, 0]).run()
    assert_clean(at)
    spec = only_chart(at, "figure.classwise")
    test = splits_of(DEFAULT_SAMPLE)["test"]
    cat, airplane = calcore.classwise_reliability_diagrams(test, bins=15, classes=[3, 0])
    (points,) = [t for t in spec["data"] if t.get("name") == "uncalibrated"]
    runs = panel_runs(points["customdata"])
    assert len(runs) == 2  # one panel per class, in class order: airplane then cat
    enough = small_multiples.FEW_ROWS  # fewer rows: faded, off the line
    np.testing.assert_allclose(runs[0][:, 6], airplane.accuracy[airplane.count >= enough])
    np.testing.assert_allclose(runs[1][:, 6], cat.accuracy[cat.count >= enough])
    titles = [a["text"] for a in spec["layout"]["annotations"][:2]]
    counts = test.class_counts
    assert titles == [f"airplane · {counts[0]:,} labelled", f"cat · {counts[3]:,} labelled"]

    at.radio(key=controls.KEY_VIEW).set_value("confidence").run()
    at.toggle(key="view.confidence.bands").set_value(True).run()
    assert_clean(at)
    names = {t.get("name") for t in only_chart(at, "figure.confidence")["data"]}
    assert any("consistency band" in str(n) for n in names)


def test_bootstrap_waits_for_a_click_on_large_data(monkeypatch):
    from dashboard.calibration.views import metrics as metrics_view

    # the CIFAR test split has 100,000 cells; pretend that is "large"
    monkeypatch.setattr(metrics_view, "AUTO_BOOTSTRAP_CELLS", 50_000)
    at = run_app({"m": "none"}, bootstrap=50)
    assert any("not computed automatically" in i.value for i in at.info)
    assert "[" not in metrics_table(at).loc["uncalibrated", "conf-ECE"]
    at.button(key="view.metrics.bootstrap_button").click().run()
    assert_clean(at)
    assert "[" in metrics_table(at).loc["uncalibrated", "conf-ECE"]


def test_bootstrap_waits_for_a_click_on_many_rows(monkeypatch):
    from dashboard.calibration.views import metrics as metrics_view

    # 10,000 CIFAR test rows x 50 resamples = 500,000 pairs; pretend that is "many"
    monkeypatch.setattr(metrics_view, "AUTO_BOOTSTRAP_ROW_RESAMPLES", 400_000)
    at = run_app({"m": "none"}, bootstrap=50)
    assert any("not computed automatically" in i.value for i in at.info)
    monkeypatch.setattr(metrics_view, "AUTO_BOOTSTRAP_ROW_RESAMPLES", 600_000)
    at = run_app({"m": "none"}, bootstrap=50)
    assert not any("not computed automatically" in i.value for i in at.info)
    assert "[" in metrics_table(at).loc["uncalibrated", "conf-ECE"]


def test_top_label_per_class_validity_matches_calcore():
    at = run_app({"view": "validity", "m": "tl-hb"})
    at.selectbox(key="view.validity.resamples").set_value(10)
    at.radio(key="view.validity.view").set_value("top-label").run()
    at.selectbox(key="view.validity.class").set_value(3).run()
    assert_clean(at)
    s = splits_of(DEFAULT_SAMPLE)
    data = calcore.predictions.concat([s["calib"], s["test"]])
    expected = calcore.calibrator_validity(
        data, ("tl-hb", {}), n_calib=data.n_samples // 2,
        n_test=data.n_samples - data.n_samples // 2, n_resamples=10, view="top-label",
        group=3, binning="unique", seed=0,
    )  # fmt: skip
    spec = only_chart(at, "figure.validity")
    (curve,) = [t for t in spec["data"] if t.get("name") == "tl-hb"]
    np.testing.assert_allclose(plotly_array(curve["y"]), expected.validity, rtol=0, atol=1e-12)


def test_figures_are_reused_until_something_they_show_changes(monkeypatch):
    from dashboard.calibration.views import top_label as top_label_view

    built = []
    real = top_label_view.top_label_figure

    def counting(*args, **kwargs):
        built.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(top_label_view, "top_label_figure", counting)
    at = run_app({"view": "top-label", "m": "ts"})
    at.radio(key=controls.KEY_VIEW).set_value("metrics").run()
    at.radio(key=controls.KEY_VIEW).set_value("top-label").run()
    assert_clean(at)
    assert len(built) == 1  # the second visit reused the figure
    at.number_input(key=controls.KEY_BINS).set_value(7).run()
    assert_clean(at)
    assert len(built) == 2  # new bins: new diagrams, new figure


def test_a_weight_column_weights_the_metrics_and_can_be_turned_off():
    rng = np.random.default_rng(7)
    n = 300
    p = rng.beta(2, 2, n)
    y = (rng.random(n) < p).astype(int)
    w = rng.integers(1, 4, n)
    lines = ["label,p_yes,weight"] + [f"{y[i]},{p[i]:.6f},{w[i]}" for i in range(n)]
    data = ("\n".join(lines) + "\n").encode()
    at = upload(run_app({"m": "none"}), "weighted.csv", data)
    assert_clean(at)
    assert any("weighted by column weight" in unescape_markdown(c.value) for c in at.caption)
    # the app's random split of the rows; each test row repeated as often as its weight
    from calcore.evaluation import random_split

    loaded = calcore.load_predictions(io.BytesIO(data), name="weighted.csv")
    _, test = random_split(loaded, test_fraction=0.5, seed=0)
    counts = test.sample_weight.astype(int)
    repeated = test.with_sample_weight(None).subset(np.repeat(np.arange(test.n_samples), counts))
    expected = calcore.evaluate(repeated, bins=15).metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{expected:.4f}"
    (weight_box,) = [k for k in at.session_state if str(k).endswith(".weight")]
    at.selectbox(key=weight_box).set_value("(none)").run()
    assert_clean(at)
    unweighted = calcore.evaluate(test.with_sample_weight(None), bins=15).metrics["conf_ece"]
    assert metrics_table(at).loc["uncalibrated", "conf-ECE"] == f"{unweighted:.4f}"
    assert f"{unweighted:.4f}" != f"{expected:.4f}"


def test_a_link_for_many_bins_and_resamples_waits_for_a_click():
    """``boot=1000&bins=5000&binning=equal-mass`` held the server 101 s with no click:
    5000 bins x 10 classes x 1000 resamples x 3 methods is far above the page's budget."""
    at = run_app({"bins": "5000", "binning": "equal-mass"}, bootstrap=1000)
    (info,) = [i.value for i in at.info if "not computed automatically" in i.value]
    assert "3 methods and 5000 bins" in unescape_markdown(info)
    assert "[" not in metrics_table(at).loc["uncalibrated", "conf-ECE"]  # point estimates only


def test_a_link_compares_at_most_max_methods_calibrators_and_says_which_it_left():
    from dashboard.calibration.state import MAX_METHODS

    names = [
        "ts",
        "tl-hb",
        "tl-iso",
        "conf-iso",
        "cw-hb",
        "conf-hb",
        "tl-platt",
        "ets",
        "vs",
        "n-hb",
    ]
    assert MAX_METHODS == 8 < len(names)
    at = new_app({"m": names, "boot": "0", "view": "confidence"})
    at.run()
    assert_clean(at)
    assert at.multiselect(key=controls.KEY_METHODS).value == names[:MAX_METHODS]
    message = unescape_markdown(" ".join(w.value for w in at.warning))
    assert "vs: at most 8 calibrators at once" in message
    assert "n-hb: at most 8 calibrators at once" in message


def test_a_bug_in_a_view_is_a_message_with_a_reference_not_a_traceback(monkeypatch):
    """Without CALCORE_DEBUG (a served page), an exception the page did not mean to raise
    shows one sentence naming it a bug, and the rest of the page stays usable."""
    from dashboard.calibration.views import metrics as metrics_view

    def broken(*args, **kwargs):
        raise KeyError("/srv/secret/path.py")

    monkeypatch.setattr(metrics_view, "show_verdict", broken)
    monkeypatch.delenv("CALCORE_DEBUG")
    at = new_app({"m": "none", "boot": "0"})
    at.run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "Something went wrong on the server (KeyError): a bug in calibration-lens" in error
    assert re.search(r"reference [0-9a-f]{8}", error) and "/srv/secret" not in error
    assert at.radio(key=controls.KEY_VIEW).value == "metrics"  # the sidebar and views remain
    monkeypatch.setenv("CALCORE_DEBUG", "1")
    at = new_app({"m": "none", "boot": "0"})
    at.run()
    assert at.exception  # the test suite's setting: a bug fails the test that meets it


def test_the_data_panel_stays_shut_on_a_clean_load_and_opens_when_the_file_needs_the_user():
    """After an upload the results come first; a file with something to fix (here a class
    that never occurs as a label) opens its Data panel, with the controls that fix it."""

    def data_panel(at):
        (panel,) = [e for e in at.expander if e.label.startswith("Data: ")]
        return panel

    at = upload(run_app({"m": "none"}), "clean.csv", small_csv())
    assert_clean(at)
    assert data_panel(at).proto.expanded is False
    rng = np.random.default_rng(1)
    probs = rng.dirichlet([1, 1, 1], size=60)
    lines = ["label,p_cat,p_dog,p_rabbit"]
    lines += [f"{i % 2}," + ",".join(f"{v:.6f}" for v in p / p.sum()) for i, p in enumerate(probs)]
    at = upload(run_app({"m": "none"}), "rabbit.csv", ("\n".join(lines) + "\n").encode())
    assert_clean(at)
    assert data_panel(at).proto.expanded is True
    assert any("rabbit" in unescape_markdown(w.value) for w in at.warning)

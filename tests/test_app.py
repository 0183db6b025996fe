"""The dashboard in-process with Streamlit's AppTest (no browser).

Figures are checked as data: the Plotly JSON the app sends must carry exactly the numbers
of calcore's ReliabilityDiagram for the same rows.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")  # the calcore-only install has no dashboard extra

import streamlit as st
from streamlit.testing.v1 import AppTest

import calcore
import calcore.io
from dashboard.samples import DEFAULT_SAMPLE, SAMPLES

APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
TIMEOUT = 60
KEY_SAMPLE = "sidebar.sample"
KEY_BINS = "sidebar.bins"


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """st.cache_data outlives an AppTest instance within one process."""
    st.cache_data.clear()
    yield
    st.cache_data.clear()


def run_app() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# -- helpers ---------------------------------------------------------------------------------
def plotly_array(value) -> np.ndarray:
    """A Plotly JSON array: a list, or a typed array {"dtype", "bdata"[, "shape"]}."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
        return arr
    return np.asarray(value, dtype=float)


def figure_spec(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    return json.loads(charts[0].proto.spec)


def trace(spec: dict, name: str) -> dict:
    (found,) = [t for t in spec["data"] if t.get("name") == name]
    return found


def test_split(path_or_buffer, name: str | None = None) -> calcore.Predictions:
    splits = calcore.io.load_splits(path_or_buffer, name=name)
    return splits["test"] if "test" in splits else next(iter(splits.values()))


test_split.__test__ = False  # a helper, not a test


def metric_value(at: AppTest, label: str) -> str:
    (m,) = [m for m in at.metric if m.label == label]
    return m.value


def unescape_markdown(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def assert_figure_matches(spec: dict, diagram) -> None:
    filled = diagram.count > 0
    acc = trace(spec, "accuracy")
    np.testing.assert_allclose(plotly_array(acc["x"]), diagram.confidence[filled], rtol=0, atol=0)
    np.testing.assert_allclose(plotly_array(acc["y"]), diagram.accuracy[filled], rtol=0, atol=0)
    custom = plotly_array(acc["customdata"])
    np.testing.assert_array_equal(custom[:, 0], diagram.count[filled])
    np.testing.assert_allclose(custom[:, 1], diagram.ci_lower[filled], rtol=1e-15)
    np.testing.assert_allclose(custom[:, 2], diagram.ci_upper[filled], rtol=1e-15)
    err = acc["error_y"]
    np.testing.assert_allclose(plotly_array(err["array"]),
                               diagram.ci_upper[filled] - diagram.accuracy[filled])  # fmt: skip
    np.testing.assert_allclose(plotly_array(err["arrayminus"]),
                               diagram.accuracy[filled] - diagram.ci_lower[filled])  # fmt: skip
    bars = trace(spec, "count")
    np.testing.assert_array_equal(plotly_array(bars["y"]), diagram.count)
    np.testing.assert_allclose(plotly_array(bars["x"]), diagram.bin_edges[:-1])
    assert f"{diagram.ece:.4f}" in spec["layout"]["title"]["text"]


def small_csv(rng_seed: int = 0, n: int = 400) -> bytes:
    """A 3-class prediction CSV: label column + one probability column per class."""
    rng = np.random.default_rng(rng_seed)
    probs = rng.dirichlet([0.7, 0.7, 0.7], size=n)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    names = ["cat", "dog", "rabbit"]
    lines = ["label," + ",".join(names)]
    for y, p in zip(labels, probs, strict=True):
        lines.append(f"{names[y]}," + ",".join(f"{v:.6f}" for v in p / p.sum()))
    return ("\n".join(lines) + "\n").encode()


# -- tests -----------------------------------------------------------------------------------
def test_default_sample_renders_metrics_and_reliability_diagram():
    at = run_app()
    assert at.selectbox(key=KEY_SAMPLE).value == DEFAULT_SAMPLE
    preds = test_split(SAMPLES[DEFAULT_SAMPLE].path)
    expected = calcore.evaluate(preds, bins=15, binning="equal-width").as_dict()

    (table,) = [df for df in (d.value for d in at.dataframe) if "metric" in df.columns]
    shown = dict(zip(table["key"], table["value"], strict=True))
    assert {"accuracy", "nll", "brier", "conf_ece", "top_label_ece", "classwise_ece"} <= set(shown)
    for key, value in shown.items():
        assert value == pytest.approx(expected[key], rel=1e-12, abs=1e-15), key
    assert metric_value(at, "accuracy") == f"{expected['accuracy']:.4f}"
    assert expected["n"] == 10_000

    diagram = calcore.reliability_diagram(preds, view="confidence", bins=15, binning="equal-width")
    assert_figure_matches(figure_spec(at), diagram)
    assert not at.error


def test_switching_sample_and_bins_updates_everything():
    at = run_app()
    at.selectbox(key=KEY_SAMPLE).set_value("credit-default-logreg").run()
    assert not at.exception
    preds = test_split(SAMPLES["credit-default-logreg"].path)
    assert preds.class_names == ("no default", "default")
    expected = calcore.evaluate(preds, bins=15).as_dict()
    assert metric_value(at, "accuracy") == f"{expected['accuracy']:.4f}"
    assert_figure_matches(figure_spec(at), calcore.reliability_diagram(preds, bins=15))

    at.selectbox(key=KEY_SAMPLE).set_value("synthetic-overconfident").run()
    at.slider(key=KEY_BINS).set_value(10).run()
    assert not at.exception
    preds = test_split(SAMPLES["synthetic-overconfident"].path)
    diagram = calcore.reliability_diagram(preds, bins=10)
    spec = figure_spec(at)
    assert_figure_matches(spec, diagram)
    assert len(plotly_array(trace(spec, "count")["y"])) == 10


@pytest.mark.parametrize("key", list(SAMPLES))
def test_every_sample_loads_with_calib_and_test_splits(key):
    splits = calcore.io.load_splits(SAMPLES[key].path)
    assert set(splits) == {"calib", "test"}
    assert SAMPLES[key].path.stat().st_size < 3 * 1024 * 1024


def test_upload_valid_csv():
    data = small_csv()
    at = run_app()
    at.file_uploader[0].upload("my predictions.csv", data, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    preds = test_split(io.BytesIO(data), name="my predictions.csv")
    assert preds.n_samples == 400
    expected = calcore.evaluate(preds, bins=15).as_dict()
    assert metric_value(at, "accuracy") == f"{expected['accuracy']:.4f}"
    assert_figure_matches(figure_spec(at), calcore.reliability_diagram(preds, bins=15))
    assert any("my predictions.csv" in unescape_markdown(c.value) for c in at.caption)


def test_upload_bad_csv_shows_calcore_error_not_a_traceback():
    good = small_csv(n=20).decode().splitlines()
    cells = good[5].split(",")
    cells[2] = "oops"  # a non-numeric probability
    good[5] = ",".join(cells)
    data = ("\n".join(good) + "\n").encode()
    with pytest.raises(calcore.CalcoreError) as excinfo:
        calcore.io.load_splits(io.BytesIO(data), name="bad.csv")

    at = run_app()
    at.file_uploader[0].upload("bad.csv", data, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1
    assert str(excinfo.value) in unescape_markdown(at.error[0].value)
    assert not at.get("plotly_chart")


def test_untrusted_file_name_is_shown_literally():
    name = "[click](https://evil.example) :red[x] $y$.csv"
    at = run_app()
    at.file_uploader[0].upload(name, small_csv(n=50), "text/csv").run()
    assert not at.exception
    (caption,) = [c.value for c in at.caption if c.value.startswith("uploaded file:")]
    assert "[click](" not in caption and ":red[" not in caption and "$y$" not in caption
    assert name in unescape_markdown(caption)

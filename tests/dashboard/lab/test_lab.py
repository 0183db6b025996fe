"""The Simulation lab page in-process with AppTest (no browser).

The page is driven through ``tests/dashboard/lab/lab_app_entry.py`` (a script calling
``render_lab()``).
Expected numbers are recomputed here from ``calcore.simulate`` directly, with the settings
the page states, so a wrong cache key or a mixed-up argument in the page shows up.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")

from _apptest import assert_clean, fresh_streamlit_caches  # noqa: F401
from _plotly_json import plotly_array, trace
from streamlit.testing.v1 import AppTest

from calcore import simulate
from dashboard.figures import lab as figures
from dashboard.lab import compute, controls

ENTRY = Path(__file__).resolve().parent / "lab_app_entry.py"
TIMEOUT = 120


def run_lab() -> AppTest:
    at = AppTest.from_file(str(ENTRY), default_timeout=TIMEOUT)
    at.run()
    assert_clean(at)
    return at


def chart(at: AppTest, name: str) -> dict:
    """The figure with element key ``lab.figure.<name>``."""
    found = [
        json.loads(e.proto.spec)
        for e in at.get("plotly_chart")
        if e.proto.id.endswith("-lab.figure." + name)
    ]
    assert len(found) == 1, [e.proto.id for e in at.get("plotly_chart")]
    return found[0]


def tables(at: AppTest) -> list:
    return [t.value for t in at.table]


def truth_table(at: AppTest):
    (table,) = [t for t in tables(at) if "true value" in t.columns]
    return table


def readout_table(at: AppTest):
    (table,) = [t for t in tables(at) if "samples needed" in t.columns]
    return table


def dirichlet(kind="overconfident", n_classes=10, accuracy=0.8, strength=1.0):
    """The page's simulator for these knobs, built here from calcore.simulate."""
    true_map = simulate.true_calibration_map(n_classes, kind=kind, strength=strength)
    c = simulate.concentration_for_accuracy(
        accuracy, true_map, n_samples=compute.CONCENTRATION_SAMPLES
    )
    return simulate.dirichlet_simulator(n_classes, true_map=true_map, concentration=c)


def assert_true_curve(at: AppTest, sim) -> None:
    expected = simulate.true_reliability_curve(sim, seed=0, **compute.CURVE_SETTINGS)
    spec = chart(at, "truth")
    curve = trace(spec, figures.TRUE_CURVE)
    np.testing.assert_array_equal(plotly_array(curve["x"]), expected.confidence)
    np.testing.assert_array_equal(plotly_array(curve["y"]), expected.accuracy)
    density = trace(spec, figures.TRUE_DENSITY)
    np.testing.assert_array_equal(plotly_array(density["y"]), expected.density)


def expected_needed(sim, truth, *, view="confidence", repeats=20, seed=0, level=0.01) -> dict:
    errors = simulate.estimator_errors(
        sim, sizes=compute.SIZES, view=view, estimators=compute.VIEW_ESTIMATORS[view],
        n_repeats=repeats, truth=truth, seed=seed,
    )  # fmt: skip
    return errors, simulate.samples_needed(errors, level)


def assert_readout(at: AppTest, needed: dict) -> None:
    table = readout_table(at)
    largest = compute.SIZES[-1]
    want = {
        figures.ESTIMATOR_LABELS[k]: (f"{n:,}" if n is not None else f"more than {largest:,}")
        for k, n in needed.items()
    }
    assert table["samples needed"].to_dict() == want


def test_default_page_shows_the_truth_the_estimators_and_the_readout():
    at = run_lab()
    sim = dirichlet()
    assert_true_curve(at, sim)

    truth = simulate.true_calibration_errors(
        sim, seed=0, **compute.truth_settings("overconfident", 10)
    )
    table = truth_table(at)
    assert table.loc["conf-ECE", "true value"] == f"{truth.conf_ece:.4f}"
    assert table.loc["TL-ECE", "true value"] == f"{truth.top_label_ece:.4f}"
    assert table.loc["CW-ECE", "true value"] == f"{truth.classwise_ece:.4f}"
    assert table.loc["canonical ECE (l1)", "true value"] == f"{truth.canonical_ece_l1:.4f}"
    assert table.loc["conf-ECE", "± s.e."] == f"{truth.standard_errors['conf_ece']:.1e}"

    # the readout and the error curves are calcore.simulate's, at two levels
    errors, needed = expected_needed(sim, truth.conf_ece)
    assert_readout(at, needed)
    spec = chart(at, "estimators")
    for i, key in enumerate(errors.estimators):
        line = trace(spec, figures.ESTIMATOR_LABELS[key])
        np.testing.assert_allclose(plotly_array(line["y"]), errors.mean_abs_error[i], rtol=1e-12)
    assert "20 repetitions per n" in spec["layout"]["title"]["subtitle"]["text"]
    at.number_input(key=controls.KEY_LEVEL).set_value(0.004).run()
    assert_clean(at)
    assert_readout(at, simulate.samples_needed(errors, 0.004))
    level = trace(chart(at, "estimators"), "error tolerance")
    assert plotly_array(level["y"]).tolist() == [0.004, 0.004]

    # calibrators: the uncalibrated test draw's estimate is near its truth, TS finds T = 2
    bars = {t["name"]: t for t in chart(at, "recovery")["data"]}
    assert list(bars) == [figures.TRUE_UNCALIBRATED, "uncalibrated", "ts", "tl-hb", "irm"]
    true_bar = plotly_array(bars[figures.TRUE_UNCALIBRATED]["y"])
    np.testing.assert_array_equal(
        true_bar, [truth.conf_ece, truth.top_label_ece, truth.classwise_ece]
    )
    unc = plotly_array(bars["uncalibrated"]["y"])
    assert abs(unc[0] - truth.conf_ece) < 0.01
    assert plotly_array(bars["ts"]["y"])[0] < unc[0] / 2
    (note,) = [c.value for c in at.caption if "Temperature scaling found" in c.value]
    found = float(note.split("T = ")[1].split(";")[0])
    assert abs(found - 2.0) < 0.3


def test_each_knob_changes_the_page():
    at = run_lab()

    # classes: the true curve lives on (1/L, 1)
    at.number_input(key=controls.KEY_CLASSES).set_value(3).run()
    assert_clean(at)
    x = plotly_array(trace(chart(at, "truth"), figures.TRUE_CURVE)["x"])
    assert 1 / 3 < x[0] < 1 / 3 + 0.02
    assert_true_curve(at, dirichlet(n_classes=3))

    # generator: class-specific maps separate TL-ECE from conf-ECE
    at.selectbox(key=controls.KEY_GENERATOR).set_value("class-specific").run()
    assert_clean(at)
    sim = dirichlet("class-specific", n_classes=3)
    assert_true_curve(at, sim)
    truth = simulate.true_calibration_errors(
        sim, seed=0, **compute.truth_settings("class-specific", 3)
    )
    assert truth_table(at).loc["TL-ECE", "true value"] == f"{truth.top_label_ece:.4f}"

    # accuracy and strength (one run: every run recomputes the truth)
    at.slider(key=controls.KEY_ACCURACY).set_value(0.7)
    at.slider(key=controls.KEY_STRENGTH).set_value(2.0).run()
    assert_clean(at)
    assert any("(target 0.70)" in c.value for c in at.caption)
    sim = dirichlet("class-specific", n_classes=3, accuracy=0.7, strength=2.0)
    assert_true_curve(at, sim)

    # n: the binned points count n rows; seed: the subtitle and the study change
    at.select_slider(key=controls.KEY_N).set_value(5000).run()
    assert_clean(at)
    points = trace(chart(at, "truth"), figures.ESTIMATOR_LABELS["equal-mass"])
    assert plotly_array(points["customdata"])[:, 0].sum() == 5000
    before = trace(chart(at, "estimators"), figures.ESTIMATOR_LABELS["kde"])["y"]
    at.number_input(key=controls.KEY_SEED).set_value(3).run()
    assert_clean(at)
    assert "n = 5,000, seed 3" in chart(at, "truth")["layout"]["title"]["subtitle"]["text"]
    assert trace(chart(at, "estimators"), figures.ESTIMATOR_LABELS["kde"])["y"] != before

    # view and repetitions of the estimator study, checked against calcore.simulate
    at.selectbox(key=controls.KEY_VIEW).set_value("top-label")
    at.selectbox(key=controls.KEY_REPEATS).set_value(10).run()
    assert_clean(at)
    truth = simulate.true_calibration_errors(
        sim, seed=0, **compute.truth_settings("class-specific", 3)
    )
    _, needed = expected_needed(sim, truth.top_label_ece, view="top-label", repeats=10, seed=3)
    assert_readout(at, needed)
    assert "KDE" not in readout_table(at).index  # calcore has no top-label KDE-ECE

    # calibrators
    at.multiselect(key=controls.KEY_METHODS).set_value(["vs", "tl-hb"]).run()
    assert_clean(at)
    names = [t["name"] for t in chart(at, "recovery")["data"]]
    assert names == [figures.TRUE_UNCALIBRATED, "uncalibrated", "vs", "tl-hb"]
    assert chart(at, "recovery")["layout"]["paper_bgcolor"] == "#FFFFFF"  # the one theme

    # an accuracy the map cannot reach is explained, not raised
    at.selectbox(key=controls.KEY_GENERATOR).set_value("calibrated")
    at.number_input(key=controls.KEY_CLASSES).set_value(2)
    at.slider(key=controls.KEY_ACCURACY).set_value(0.3).run()  # below chance for two classes
    assert not at.exception
    (error,) = at.error
    assert "cannot be built" in error.value and "reachable range" in error.value
    assert not at.get("plotly_chart")

    # Mix-n-Match: closed-form truth; the Dirichlet knobs are disabled
    at.selectbox(key=controls.KEY_GENERATOR).set_value("mnm-2").run()
    assert_clean(at)
    assert at.number_input(key=controls.KEY_CLASSES).disabled
    assert_true_curve(at, simulate.mix_n_match_simulator(2))
    exact = simulate.true_calibration_errors(simulate.mix_n_match_simulator(2))
    assert truth_table(at).loc["TL-ECE", "true value"] == f"{exact.top_label_ece:.4f}"
    assert truth_table(at).loc["TL-ECE", "± s.e."] == "0 (exact)"


TWO_PAGES = """
import streamlit as st
from dashboard.lab.page import render_lab

if st.session_state.get("show_lab", True):
    render_lab()
else:
    st.write("another page")
"""


def test_knobs_survive_a_visit_to_the_other_page(tmp_path):
    """Streamlit drops the state of widgets a run does not draw (a run of the main page)."""
    script = tmp_path / "two_pages.py"
    script.write_text(TWO_PAGES)
    at = AppTest.from_file(str(script), default_timeout=TIMEOUT)
    at.run()
    at.selectbox(key=controls.KEY_GENERATOR).set_value("mnm-1")
    at.number_input(key=controls.KEY_SEED).set_value(7)
    at.number_input(key=controls.KEY_LEVEL).set_value(0.02)
    at.multiselect(key=controls.KEY_METHODS).set_value(["vs"]).run()
    at.session_state["show_lab"] = False
    at.run()
    assert not at.selectbox and not at.number_input  # the lab's widgets were not drawn
    at.session_state["show_lab"] = True
    at.run()
    assert_clean(at)
    assert at.selectbox(key=controls.KEY_GENERATOR).value == "mnm-1"
    assert at.number_input(key=controls.KEY_SEED).value == 7
    assert at.number_input(key=controls.KEY_LEVEL).value == 0.02
    assert at.multiselect(key=controls.KEY_METHODS).value == ["vs"]

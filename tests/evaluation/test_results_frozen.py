"""Results frozen for real: the dashboard shares them across sessions (st.cache_resource).

A report's fields, dicts (at every depth) and arrays refuse every change; the results
still compare, pickle, copy and export to JSON as plain dicts did; a report's metrics
are declared properties (no ``__getattr__``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle

import numpy as np
import pytest

import calcore
from calcore.evaluation import CalibrationReport, compare, learning_curve
from calcore.foundation.validation import ReadOnlyDict
from calcore.metrics.registry import METRICS


@pytest.fixture(scope="module")
def preds():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 3)) * 2.0
    y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z * 0.6])
    return calcore.Predictions.from_logits(z, y)


@pytest.fixture(scope="module")
def report(preds):
    return calcore.evaluate(preds, n_resamples=20, interval_method="bca", seed=1)


def _assert_dict_refuses(d):
    assert isinstance(d, ReadOnlyDict)
    key = next(iter(d), "k")
    for change in (
        lambda: d.__setitem__(key, 0),
        lambda: d.__delitem__(key),
        lambda: d.update({key: 0}),
        lambda: d.setdefault("new", 0),
        lambda: d.pop(key),
        lambda: d.popitem(),
        lambda: d.clear(),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    with pytest.raises(TypeError, match="read-only"):
        d |= {"x": 1}


def _assert_array_refuses(a):
    assert isinstance(a, np.ndarray) and not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[...] = 0


def test_a_reports_fields_dicts_and_arrays_refuse_changes(report):
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.metrics = {}
    for name in ("metrics", "intervals", "replicates", "jackknife", "double_replicates"):
        _assert_dict_refuses(getattr(report, name))
    assert report.replicates and report.jackknife
    for arrays in (report.replicates, report.jackknife):
        for a in arrays.values():
            _assert_array_refuses(a)
    test = report.calibration_test
    for name in ("observed", "p_values", "null_values"):
        _assert_dict_refuses(getattr(test, name))
    for a in test.null_values.values():
        _assert_array_refuses(a)


def test_a_reports_metrics_are_declared_properties(report):
    assert "__getattr__" not in vars(CalibrationReport)
    for key in METRICS:
        assert isinstance(vars(CalibrationReport)[key], property), key
        if key in report.metrics:
            assert getattr(report, key) == report.metrics[key] or (
                report.metrics[key] is None or np.isnan(report.metrics[key])
            )
    assert report.accuracy == report.metrics["accuracy"]
    with pytest.raises(AttributeError):
        report.not_a_metric  # noqa: B018
    partial = dataclasses.replace(report, metrics={"accuracy": 0.5})
    with pytest.raises(AttributeError, match="no metric 'nll'"):
        partial.nll  # noqa: B018
    assert getattr(partial, "nll", None) is None


def test_a_report_pickles_copies_and_exports_as_before(report):
    again = pickle.loads(pickle.dumps(report))
    assert again == report and isinstance(again.metrics, ReadOnlyDict)
    for a in again.replicates.values():
        _assert_array_refuses(a)
    assert copy.deepcopy(report) == report and copy.copy(report) == report
    exported = json.loads(json.dumps(report.as_dict()))
    assert exported["accuracy"] == report.accuracy
    assert dict(report.metrics) == report.metrics  # equal to a plain dict of the same items
    both = report.combined_with(report)  # built whole from the two, never changed after
    assert both == report and isinstance(both.intervals, ReadOnlyDict)


def test_a_comparison_and_a_learning_curve_refuse_changes(preds):
    calib, test = preds.subset(np.arange(200)), preds.subset(np.arange(200, 400))
    comparison = compare(calib, test, ["ts"], n_resamples=10, seed=0)
    for name in ("values", "calibrated", "calibrators", "fit_seconds", "notes"):
        _assert_dict_refuses(getattr(comparison, name))
    inner = next(iter(comparison.values.values()))
    if isinstance(inner, dict):
        _assert_dict_refuses(inner)
    with pytest.raises(dataclasses.FrozenInstanceError):
        comparison.methods = ()
    pickle.loads(pickle.dumps(comparison))
    curve = learning_curve(calib, test, ["ts"], sizes=[50, 100], n_repeats=2, seed=0)
    for a in (curve.sizes, curve.mean, curve.std, curve.accuracy_mean, curve.accuracy_std):
        _assert_array_refuses(a)


def test_diagrams_and_tests_refuse_changes(preds):
    diagram = calcore.reliability_diagram(preds, bins=5)
    for a in (diagram.confidence, diagram.accuracy, diagram.count, diagram.ci_lower):
        _assert_array_refuses(a)
    calib, test = preds.subset(np.arange(200)), preds.subset(np.arange(200, 400))
    verdict = compare(calib, test, ["ts", "tl-hb"], n_resamples=20, seed=0).verdict()
    for name in ("paired", "guards", "warnings", "estimates"):
        _assert_dict_refuses(getattr(verdict, name))


def test_results_built_with_plain_dicts_are_frozen_too():
    report = CalibrationReport(2, 2, {"accuracy": 0.5}, 10, "equal-width", 0)
    _assert_dict_refuses(report.metrics)
    assert report.accuracy == 0.5


def _assert_arrays_refuse(result, names):
    for name in names:
        _assert_array_refuses(getattr(result, name))


def test_canonical_bins_refuse_changes_and_leave_the_calibrator_as_it_was():
    from calcore.calibrators import make_calibrator
    from calcore.calibrators.canonical import canonical_bin_summary

    p = calcore.Predictions.from_probs(
        [[0.8, 0.1, 0.1], [0.7, 0.2, 0.1], [0.2, 0.3, 0.5]], [0, 1, 2]
    )
    calibrator = make_calibrator("sierpinski", depth=1).fit(p)
    s = canonical_bin_summary(calibrator, p)
    _assert_arrays_refuse(
        s,
        ("bin_of_row", "bins", "counts", "mean_prediction", "recalibrated",
         "calibration_counts", "fallback"),
    )  # fmt: skip
    # the values are those of before (the docstring's example)
    assert (s.bins.tolist(), s.counts.tolist()) == ([0, 1], [1, 2])
    assert s.recalibrated[1].tolist() == [0.5, 0.5, 0.0]
    np.testing.assert_allclose(s.mean_prediction[1], [0.75, 0.15, 0.1], rtol=0, atol=1e-15)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.bins = np.arange(2)
    again = canonical_bin_summary(calibrator, p)  # the fitted state was not frozen under it
    np.testing.assert_array_equal(again.recalibrated, s.recalibrated)


def test_simulation_truths_and_estimator_errors_refuse_changes():
    from calcore.simulate import estimator_errors

    sim = calcore.mix_n_match_simulator(1)
    curve = calcore.true_reliability_curve(sim, n_points=3)
    _assert_arrays_refuse(curve, ("confidence", "accuracy", "density"))
    assert curve.confidence.tolist() == [0.625, 0.75, 0.875]
    assert curve.accuracy.round(4).tolist() == [0.6476, 0.7876, 0.9114]
    truth = calcore.true_calibration_errors(sim)
    for name in ("standard_errors", "methods"):
        _assert_dict_refuses(getattr(truth, name))
    assert round(truth.top_label_ece, 4) == 0.0744 and truth.standard_errors["conf_ece"] == 0.0
    assert json.loads(json.dumps(truth.as_dict()))["conf_ece_se"] == 0.0
    errors = estimator_errors(sim, sizes=(100, 400), estimators=("equal-width", "kde"), n_repeats=3)
    _assert_arrays_refuse(errors, ("sizes", "mean_abs_error", "bias", "std"))
    assert errors.sizes.tolist() == [100, 400]
    assert errors.mean_abs_error.round(4).tolist() == [[0.0445, 0.006], [0.0457, 0.0149]]
    assert calcore.simulate.samples_needed(errors, 0.05) == {"equal-width": 100, "kde": 100}


def test_simulators_recommendations_and_bin_assignments_refuse_changes():
    bias = np.array([0.1, -0.2, 0.0])
    m = calcore.true_calibration_map(3, kind="class-specific", class_bias=bias)
    _assert_arrays_refuse(m, ("class_temperatures", "class_bias"))
    assert bias.flags.writeable  # the caller's own array: copied, never frozen under them
    assert m.class_bias.tolist() == [0.1, -0.2, 0.0]
    concentration = np.array([0.5, 1.0, 2.0])
    sim = calcore.dirichlet_simulator(3, true_map=m, concentration=concentration)
    _assert_array_refuses(sim.alpha)
    assert concentration.flags.writeable and sim.alpha.tolist() == [0.5, 1.0, 2.0]
    advice = calcore.recommend_calibrators(2, 150)
    _assert_dict_refuses(advice.reasons)
    assert advice.reasons["platt"] == "two parameters: fits 150 calibration rows"
    scores = np.array([0.1, 0.2, 0.2, 0.9])
    a = calcore.assign_bins(scores, binning="equal-mass", bins=2)
    _assert_arrays_refuse(a, ("point_bin", "bin_group", "bin_index", "lower_edge", "upper_edge"))
    assert scores.flags.writeable  # the caller's scores are not frozen
    assert (a.point_bin.tolist(), a.upper_edge.tolist()) == ([0, 0, 0, 1], [0.2, 0.9])


def test_predictions_metadata_is_read_only_and_kept_by_take_and_concat(preds):
    with_device = preds.with_metadata({"device": np.repeat(["mobile", "desktop"], 200)})
    for p in (
        preds,
        with_device,
        with_device.subset(np.arange(10)),
        calcore.predictions.concat([with_device, with_device]),
        calcore.Predictions(preds.probs, preds.labels, preds.class_names),  # made directly
    ):
        _assert_dict_refuses(p.metadata)
    assert list(with_device.metadata) == ["device"]
    assert with_device.metadata["device"].categories == ("desktop", "mobile")
    assert pickle.loads(pickle.dumps(with_device)).metadata.keys() == {"device"}

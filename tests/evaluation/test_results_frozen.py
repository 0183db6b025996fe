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

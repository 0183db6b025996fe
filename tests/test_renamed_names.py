"""Names renamed by issue 36 (item 6) still work for one release, with a DeprecationWarning.

The old names appear here and in the deprecation shims only: calcore, the dashboard, the
other tests and the benchmarks use the new ones.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import calcore
import calcore.evaluation
from calcore.evaluation import significance


# -- calcore.evaluation.calibration_test (the module) -> calcore.evaluation.significance --
def test_the_function_keeps_its_public_paths():
    assert calcore.calibration_test is significance.calibration_test
    assert calcore.evaluation.calibration_test is significance.calibration_test
    assert calcore.CalibrationTest is significance.CalibrationTest


def test_the_old_module_path_imports_its_names_with_a_warning():
    with pytest.warns(DeprecationWarning, match="calcore.evaluation.significance"):
        from calcore.evaluation.calibration_test import TESTABLE_METRICS
    assert TESTABLE_METRICS is significance.TESTABLE_METRICS
    with pytest.warns(DeprecationWarning, match="test_from_null is now p_values_from_null"):
        from calcore.evaluation.calibration_test import test_from_null
    assert test_from_null is significance.p_values_from_null
    # importing the old path does not replace the function by a module
    importlib.import_module("calcore.evaluation.calibration_test")
    assert calcore.evaluation.calibration_test is significance.calibration_test


def test_the_old_module_path_refuses_names_it_never_had_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ImportError):
            from calcore.evaluation.calibration_test import no_such_name  # noqa: F401


# -- MetricSpec.binned -> MetricSpec.takes_binning_scheme ------------------------------------
def test_spec_binned_reads_takes_binning_scheme_with_a_warning():
    for spec in calcore.METRICS.values():
        with pytest.warns(DeprecationWarning, match="takes_binning_scheme"):
            assert spec.binned is spec.takes_binning_scheme
    # ACE and TACE bin by equal mass whatever the scheme: they take a number of bins only
    assert not calcore.METRICS["ace"].takes_binning_scheme
    assert calcore.METRICS["top_label_ece"].takes_binning_scheme


# -- n_bootstrap -> n_resamples, level -> confidence_level (SciPy's names) ---------------------
def _preds(n=300, seed=0):
    sim = calcore.dirichlet_simulator(3, miscalibration="overconfident")
    return calcore.simulate_predictions(sim, n, seed=seed).preds


def _same_report(a, b):
    assert a.metrics == b.metrics
    assert set(a.intervals) == set(b.intervals)
    for k, iv in a.intervals.items():
        assert (iv.low, iv.high) == (b.intervals[k].low, b.intervals[k].high), k
    assert a.calibration_test.p_values == b.calibration_test.p_values


def test_evaluate_takes_n_bootstrap_as_n_resamples_with_a_warning():
    preds = _preds()
    new = calcore.evaluate(preds, n_resamples=20, seed=3, metrics=["conf_ece", "accuracy"])
    with pytest.warns(DeprecationWarning, match=r"n_bootstrap=.*n_resamples="):
        old = calcore.evaluate(preds, n_bootstrap=20, seed=3, metrics=["conf_ece", "accuracy"])
    _same_report(old, new)
    assert new.n_resamples == 20
    with pytest.warns(DeprecationWarning, match=r"CalibrationReport\.n_bootstrap.*n_resamples"):
        assert new.n_bootstrap == 20
    assert new.as_dict()["n_bootstrap"] == 20  # the published --json key keeps its name


def test_evaluate_refuses_both_names():
    with pytest.raises(TypeError, match="both n_resamples and its deprecated name n_bootstrap"):
        calcore.evaluate(_preds(), n_resamples=20, n_bootstrap=20)


def test_compare_takes_n_bootstrap_as_n_resamples_with_a_warning():
    calib, test = _preds(seed=1), _preds(seed=2)
    new = calcore.compare(calib, test, ["ts"], n_resamples=20, seed=1, metrics=["conf_ece"])
    with pytest.warns(DeprecationWarning, match=r"compare\(n_bootstrap=.*n_resamples="):
        old = calcore.compare(calib, test, ["ts"], n_bootstrap=20, seed=1, metrics=["conf_ece"])
    assert old.values == new.values
    with pytest.raises(TypeError, match="both n_resamples and its deprecated name n_bootstrap"):
        calcore.compare(calib, test, ["ts"], n_resamples=20, n_bootstrap=20)


def test_consistency_bands_take_level_as_confidence_level_with_a_warning():
    preds = _preds()
    new = calcore.consistency_bands(preds, n_resamples=50, confidence_level=0.8, seed=2)
    with pytest.warns(DeprecationWarning, match=r"level=.*confidence_level="):
        old = calcore.consistency_bands(preds, n_resamples=50, level=0.8, seed=2)
    np.testing.assert_array_equal(old.lower, new.lower)
    np.testing.assert_array_equal(old.upper, new.upper)
    assert new.confidence_level == 0.8
    with pytest.warns(DeprecationWarning, match=r"ConsistencyBands\.level.*confidence_level"):
        assert new.level == 0.8
    with pytest.raises(TypeError, match="both confidence_level and its deprecated name level"):
        calcore.consistency_bands(preds, confidence_level=0.8, level=0.8)


def test_the_new_names_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        report = calcore.evaluate(_preds(), n_resamples=5, metrics=["accuracy"])
        assert report.n_resamples == 5
        calcore.consistency_bands(_preds(), n_resamples=5, confidence_level=0.9)


# -- calcore.io.stream.concatenate_batches -> calcore.predictions.concat (issue 36, item 3) --
def test_concatenate_batches_joins_as_concat_with_a_warning():
    from calcore.io.stream import concatenate_batches
    from calcore.predictions import concat

    preds = _preds()
    parts = [
        calcore.predictions.take(preds, slice(0, 7)),
        calcore.predictions.take(preds, slice(7, None)),
    ]
    with pytest.warns(DeprecationWarning, match="calcore.predictions.concat"):
        joined = concatenate_batches(parts)
    np.testing.assert_array_equal(joined.probs, preds.probs)
    np.testing.assert_array_equal(joined.labels, preds.labels)
    np.testing.assert_array_equal(concat(parts).probs, joined.probs)


# -- calcore.evaluation.concatenate -> calcore.predictions.concat, the one public join --
def test_evaluation_concatenate_joins_as_concat_with_a_warning():
    from calcore.predictions import concat, take

    z = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0], [-2.0, 1.0, 0.0]])
    preds = calcore.Predictions.from_logits(z, [0, 2, 1], class_names=("a", "b", "c"))
    parts = [take(preds, slice(0, 2)), take(preds, slice(2, None))]
    with pytest.warns(
        DeprecationWarning, match=r"evaluation\.concatenate.*calcore\.predictions\.concat"
    ):
        joined = calcore.evaluation.concatenate(parts)
    np.testing.assert_array_equal(joined.logits, z)  # logits kept: every part has them
    np.testing.assert_array_equal(joined.labels, [0, 2, 1])
    np.testing.assert_array_equal(joined.probs, concat(parts).probs)
    other = calcore.Predictions.from_probs(preds.probs[:1], [1], class_names=("x", "y", "z"))
    with pytest.warns(DeprecationWarning):  # other classes: concat's own check and message
        with pytest.raises(calcore.CalcoreError, match="^concat: the parts have different classes"):
            calcore.evaluation.concatenate([preds, other])
    assert "concatenate" not in calcore.__all__ and not hasattr(calcore, "concatenate")


# -- calcore.simulate.samples_needed(level=) -> samples_needed(tolerance=) --
def _estimator_errors():
    from calcore.simulate import EstimatorErrors

    mean_abs_error = np.array([[0.05, 0.02, 0.008], [0.03, 0.012, 0.02]])
    return EstimatorErrors(
        "confidence", ("kde", "equal-width"), np.array([64, 256, 1024]), 0.02,
        mean_abs_error, mean_abs_error, mean_abs_error, 3,
    )  # fmt: skip


def test_samples_needed_takes_level_as_tolerance_with_a_warning():
    from calcore.simulate import samples_needed

    errors = _estimator_errors()
    new = samples_needed(errors, tolerance=0.015)
    assert new == {"kde": 1024, "equal-width": None}  # equal-width is above it again at 1024
    with pytest.warns(DeprecationWarning, match=r"samples_needed\(level=.*tolerance="):
        assert samples_needed(errors, level=0.015) == new
    with pytest.raises(TypeError, match="both tolerance and its deprecated name level"):
        samples_needed(errors, tolerance=0.015, level=0.015)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert samples_needed(errors, 0.015) == new  # positional: no warning

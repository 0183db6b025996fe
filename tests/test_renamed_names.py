"""Names renamed by issue 36 (item 6) still work for one release, with a DeprecationWarning.

The old names appear here and in the deprecation shims only: calcore, the dashboard, the
other tests and the benchmarks use the new ones.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import pytest

import calcore
import calcore.evaluation
from calcore.evaluation import significance


# -- calcore.evaluation.calibration_test (the module) -> calcore.evaluation.significance --
def test_the_function_keeps_its_public_paths():
    assert calcore.calibration_test is significance.calibration_test
    assert calcore.CalibrationTest is significance.CalibrationTest
    assert calcore.evaluation.CalibrationTest is significance.CalibrationTest


def test_the_old_module_path_imports_its_names_with_a_warning():
    with pytest.warns(DeprecationWarning, match="calcore.evaluation.significance"):
        from calcore.evaluation.calibration_test import TESTABLE_METRICS
    assert TESTABLE_METRICS is significance.TESTABLE_METRICS
    with pytest.warns(DeprecationWarning, match="test_from_null is now p_values_from_null"):
        from calcore.evaluation.calibration_test import test_from_null
    assert test_from_null is significance.p_values_from_null


def test_import_the_old_module_path_as_a_name_gives_the_deprecated_module():
    """``import a.b.c as m`` and ``a.b.c.name`` read the attribute ``c`` of ``a.b``, not
    ``sys.modules``: for one release that attribute is the old module, as until 0.1 (the
    function is ``calcore.calibration_test``), so every form of the old import works."""
    import calcore.evaluation.calibration_test as old

    assert old is sys.modules["calcore.evaluation.calibration_test"]
    assert old is importlib.import_module("calcore.evaluation.calibration_test")
    assert calcore.evaluation.calibration_test is old
    with pytest.warns(DeprecationWarning, match="import calcore.evaluation.significance"):
        assert old.TESTABLE_METRICS is significance.TESTABLE_METRICS
    with pytest.warns(DeprecationWarning, match="test_from_null is now p_values_from_null"):
        assert old.test_from_null is significance.p_values_from_null
    with pytest.warns(DeprecationWarning):
        assert calcore.evaluation.calibration_test.calibration_test is calcore.calibration_test


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


# -- evaluate_by(n_bootstrap=) -> evaluate_by(interval_resamples=) -----------------------------
def test_evaluate_by_takes_n_bootstrap_as_interval_resamples_with_a_warning():
    preds = _preds().with_metadata({"half": np.repeat(["a", "b"], 150)})
    options = dict(n_resamples=19, metrics=["conf_ece"], beyond_model=False, seed=1)
    new = calcore.evaluate_by(preds, "half", interval_resamples=20, **options)
    with pytest.warns(DeprecationWarning, match=r"n_bootstrap=.*interval_resamples="):
        old = calcore.evaluate_by(preds, "half", n_bootstrap=20, **options)
    _same_report(old.overall, new.overall)
    assert new.overall.n_resamples == 20 and "conf_ece" in new.overall.intervals
    for a, b in zip(old.slices, new.slices, strict=True):
        assert a.report.metrics == b.report.metrics and a.p_value == b.p_value
        assert a.report.intervals["conf_ece"] == b.report.intervals["conf_ece"]
    with pytest.raises(TypeError, match="both interval_resamples and its deprecated name"):
        calcore.evaluate_by(preds, "half", interval_resamples=20, n_bootstrap=20, **options)


# -- level -> alpha where it is a significance level (statsmodels' and SciPy's name) --------
def test_calibration_test_verdict_takes_level_as_alpha_with_a_warning():
    test = significance.CalibrationTest({"conf_ece": 0.1}, {"conf_ece": 0.03}, 99, 0)
    assert test.verdict("conf_ece", alpha=0.05).startswith("miscalibrated")
    assert test.verdict("conf_ece", alpha=0.01).startswith("consistent with calibrated")
    for alpha in (0.05, 0.01):
        with pytest.warns(DeprecationWarning, match=r"CalibrationTest\.verdict\(level=.*alpha="):
            old = test.verdict("conf_ece", level=alpha)
        assert old == test.verdict("conf_ece", alpha=alpha)
    with pytest.raises(TypeError, match="both alpha and its deprecated name level"):
        test.verdict("conf_ece", alpha=0.05, level=0.05)


def test_period_change_verdict_takes_level_as_alpha_with_a_warning():
    from calcore.evaluation.slice_results import PeriodChange

    change = PeriodChange("conf_ece", "2026-11-02", "2026-11-09", 0.02, 0.05, 0.03, 99)
    assert ": a change" in change.verdict(alpha=0.05)
    assert "no evidence of a change" in change.verdict(alpha=0.01)
    for alpha in (0.05, 0.01):
        with pytest.warns(DeprecationWarning, match=r"PeriodChange\.verdict\(level=.*alpha="):
            assert change.verdict(level=alpha) == change.verdict(alpha=alpha)
    with pytest.raises(TypeError, match="both alpha and its deprecated name level"):
        change.verdict(alpha=0.05, level=0.05)


def _sliced():
    """Four slices of 300 rows, the second over-confident."""
    parts = [
        calcore.simulate_predictions(
            calcore.dirichlet_simulator(
                3, miscalibration="overconfident" if k == 1 else "calibrated", strength=2.0
            ),
            300,
            seed=k,
        ).preds
        for k in range(4)
    ]
    preds = calcore.predictions.concat(parts)
    preds = preds.with_metadata({"segment": np.repeat(["a", "b", "c", "d"], 300)})
    return calcore.evaluate_by(preds, "segment", n_resamples=49, seed=0)


def test_sliced_report_takes_level_as_alpha_with_a_warning():
    sliced = _sliced()
    tested = tuple(s for s in sliced.slices if s.tested)
    assert tested and sliced.discoveries(alpha=1.0) == tested  # every q-value is <= 1
    assert sliced.discoveries(alpha=0.0) == ()  # q-values are at least 1 / (R + 1)
    for method in ("discoveries", "standouts", "headline"):
        new = getattr(sliced, method)
        for alpha in (0.0, 0.05, 1.0):
            with pytest.warns(DeprecationWarning, match=rf"SlicedReport\.{method}\(level="):
                assert new(level=alpha) == new(alpha=alpha), (method, alpha)
        with pytest.raises(TypeError, match="both alpha and its deprecated name level"):
            new(alpha=0.05, level=0.05)
    assert sliced.headline(alpha=0.0) != sliced.headline(alpha=1.0)


def test_binary_summary_takes_level_as_alpha_with_a_warning():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.5, 2000)
    y = (rng.random(2000) < p).astype(int)
    report = calcore.evaluate(calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y))
    assert 0 < report.metrics["hosmer_lemeshow_p"] < 1
    # Hosmer-Lemeshow is named where its p-value is at most alpha: always at 1, never at 0
    assert "Hosmer-Lemeshow" in calcore.binary_summary(report, alpha=1.0)
    assert "Hosmer-Lemeshow" not in calcore.binary_summary(report, alpha=0.0)
    for alpha in (0.0, 1.0):
        with pytest.warns(DeprecationWarning, match=r"binary_summary\(level=.*alpha="):
            old = calcore.binary_summary(report, level=alpha)
        assert old == calcore.binary_summary(report, alpha=alpha)
    with pytest.raises(TypeError, match="both alpha and its deprecated name level"):
        calcore.binary_summary(report, alpha=0.05, level=0.05)


def test_alpha_gives_no_warning():
    sliced = _sliced()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        sliced.discoveries(alpha=0.05)
        sliced.standouts(alpha=0.05)
        sliced.headline(alpha=0.05)
        sliced.discoveries()
        significance.CalibrationTest({"k": 0.1}, {"k": 0.5}, 9, 0).verdict("k", alpha=0.05)
        calcore.binary_summary(sliced.overall, alpha=0.05)


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

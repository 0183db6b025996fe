"""Evaluation: reports of predictions and the protocols that compare calibrators.

Modules
-------
evaluator
    ``evaluate`` and ``CalibrationReport``: every metric of in-memory or streamed
    predictions from one statistics pass, with bootstrap intervals.
bootstrap
    Percentile bootstrap intervals of any metric (``bootstrap_interval``) and ``Interval``.
protocols
    ``compare`` (calibrators side by side), ``learning_curve``, ``calibrator_validity``,
    and the data helper ``random_split`` (``concatenate``, deprecated for one release, is
    :func:`calcore.predictions.concat`).
significance
    ``calibration_test`` and ``CalibrationTest``: p-values of "the model is calibrated"
    by consistency resampling (until 0.1 the module ``calibration_test``, a name that
    pytest collects as a test file). For one release ``calcore.evaluation.calibration_test``
    is still that module, deprecated (each name read from it warns); the function is
    ``calcore.calibration_test``.
verdict
    ``Verdict``: which calibrator to ship, from paired differences on a comparison's
    common resamples (``Comparison.verdict``).
slices, slices_stream, slice_results
    ``evaluate_by``: calibration per slice, in memory and streamed, and what it returns
    (``SlicedReport``, ``SliceResult``, ``PeriodChange``).
"""

from calcore.evaluation import significance
from calcore.evaluation.bootstrap import Interval, bootstrap_interval, bootstrap_intervals
from calcore.evaluation.evaluator import CalibrationReport, evaluate
from calcore.evaluation.protocols import (
    UNCALIBRATED,
    Comparison,
    LearningCurve,
    calibrator_validity,
    compare,
    concatenate,
    exact_gain,
    learning_curve,
    random_split,
)
from calcore.evaluation.significance import CalibrationTest
from calcore.evaluation.verdict import PairedDifference, Verdict, verdict_of
from calcore.foundation.deprecation import renamed_module
from calcore.metrics.registry import default_primary

__all__ = [
    "CalibrationReport",
    "evaluate",
    "Interval",
    "bootstrap_interval",
    "bootstrap_intervals",
    "UNCALIBRATED",
    "Comparison",
    "LearningCurve",
    "compare",
    "exact_gain",
    "learning_curve",
    "calibrator_validity",
    "random_split",
    "concatenate",
    "CalibrationTest",
    "Verdict",
    "PairedDifference",
    "verdict_of",
    "default_primary",
]

# The old module path, without a file of its own (it would be called calibration_test.py
# again: pytest's *_test.py pattern). It is also this package's attribute calibration_test,
# as it was until 0.1: `import calcore.evaluation.calibration_test as m` and
# `calcore.evaluation.calibration_test.TESTABLE_METRICS` read that attribute, so while the
# old path lives, the function is calcore.calibration_test and significance.calibration_test
# only (a package attribute cannot be both the function and the module).
calibration_test = renamed_module(
    "calcore.evaluation.calibration_test", significance, {"test_from_null": "p_values_from_null"}
)

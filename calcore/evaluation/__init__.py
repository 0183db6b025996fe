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
    pytest collects as a test file; that path still imports, deprecated, one release).
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
from calcore.evaluation.significance import CalibrationTest, calibration_test
from calcore.evaluation.verdict import PairedDifference, Verdict, verdict_of
from calcore.foundation.validation import renamed_module
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
    "calibration_test",
    "CalibrationTest",
    "Verdict",
    "PairedDifference",
    "verdict_of",
    "default_primary",
]

# The old module path, without a file of its own: a file would be called
# calibration_test.py again (pytest's *_test.py pattern), and importing it would replace
# the function calcore.evaluation.calibration_test by the module.
renamed_module(
    "calcore.evaluation.calibration_test", significance, {"test_from_null": "p_values_from_null"}
)

"""calcore: calibration evaluation for probabilistic classifiers.

Stable entry points: :class:`Predictions`, :func:`load_predictions`,
:func:`evaluate`. Everything listed in ``__all__`` is public.

Quick start::

    import calcore
    preds = calcore.load_predictions("preds.csv")       # or Predictions.from_logits(z, y)
    report = calcore.evaluate(preds, bins=15)
    print(report.top_label_ece, report.classwise_ece)

    # Parquet larger than memory (a file, a directory or a glob), streamed in batches:
    report = calcore.evaluate(calcore.scan("logs/*.parquet"), bins=15)
"""

from calcore._errors import CalcoreError, CalcoreWarning
from calcore.binned import BinStatistics, bin_statistics, classwise_bin_statistics, statistics_for
from calcore.binning import BINNING_SCHEMES, BinningScheme, resolve_binning
from calcore.bootstrap import Interval, bootstrap_interval, bootstrap_intervals
from calcore.calibrators import CALIBRATORS, Calibrator, CalibratorInfo, Param, make_calibrator
from calcore.consistency import ConsistencyBands, consistency_bands
from calcore.evaluation import (
    UNCALIBRATED,
    Comparison,
    LearningCurve,
    calibrator_validity,
    compare,
    learning_curve,
)
from calcore.io import LoadReport, TableSchema, inspect_table, load_predictions, load_splits
from calcore.io.stream import PredictionStream, scan
from calcore.kde import KDEReliabilityCurve, kde_bandwidth, kde_ece, kde_reliability_curve
from calcore.metrics_binned import (
    adaptive_ece,
    calibration_error_from_bins,
    classwise_ece,
    classwise_mce,
    confidence_ece,
    confidence_mce,
    debiased_ece,
    thresholded_adaptive_ece,
    top_k_confidence_ece,
    top_k_label_ece,
    top_label_ece,
    top_label_mce,
)
from calcore.metrics_kde import kde_confidence_curve, kde_ece_classwise, kde_ece_confidence
from calcore.metrics_scoring import (
    CalibrationGain,
    accuracy,
    brier_score,
    calibration_gain,
    negative_log_likelihood,
)
from calcore.predictions import Predictions
from calcore.registry import BIN_FREE_METRICS, METRICS, MetricSpec, compute_metric
from calcore.reliability import (
    ReliabilityDiagram,
    TopLabelReliabilityDiagram,
    classwise_reliability_diagrams,
    reliability_diagram,
    top_label_reliability_diagram,
    wilson_interval,
)
from calcore.report import CalibrationReport, evaluate
from calcore.simulate import (
    DirichletSimulator,
    EstimatorErrors,
    MixNMatchSimulator,
    Simulation,
    TrueCalibrationErrors,
    TrueCalibrationMap,
    TrueReliabilityCurve,
    dirichlet_simulator,
    estimator_errors,
    mix_n_match_simulator,
    simulate_predictions,
    true_calibration_errors,
    true_calibration_map,
    true_reliability_curve,
)
from calcore.statistics.edges import BinAssignment, assign_bins
from calcore.sweep import EceByBins, ece_by_bins
from calcore.validity import ValidityCurve, umd_validity_bound, validity_curve
from calcore.views import (
    BinaryView,
    binary_view,
    classwise_view,
    confidence_view,
    top_k_confidence_view,
    top_k_label_view,
    top_label_view,
)

__all__ = [
    "BINNING_SCHEMES",
    "CALIBRATORS",
    "UNCALIBRATED",
    "Calibrator",
    "CalibratorInfo",
    "Comparison",
    "LearningCurve",
    "Param",
    "calibrator_validity",
    "compare",
    "learning_curve",
    "make_calibrator",
    "METRICS",
    "BIN_FREE_METRICS",
    "BinAssignment",
    "BinStatistics",
    "BinaryView",
    "BinningScheme",
    "CalcoreError",
    "CalcoreWarning",
    "CalibrationGain",
    "CalibrationReport",
    "ConsistencyBands",
    "EceByBins",
    "Interval",
    "KDEReliabilityCurve",
    "MetricSpec",
    "Predictions",
    "ReliabilityDiagram",
    "TopLabelReliabilityDiagram",
    "ValidityCurve",
    "accuracy",
    "adaptive_ece",
    "assign_bins",
    "bin_statistics",
    "binary_view",
    "bootstrap_interval",
    "bootstrap_intervals",
    "brier_score",
    "calibration_error_from_bins",
    "calibration_gain",
    "classwise_bin_statistics",
    "classwise_ece",
    "classwise_mce",
    "classwise_reliability_diagrams",
    "classwise_view",
    "compute_metric",
    "confidence_ece",
    "confidence_mce",
    "confidence_view",
    "consistency_bands",
    "debiased_ece",
    "ece_by_bins",
    "evaluate",
    "kde_bandwidth",
    "kde_confidence_curve",
    "kde_ece",
    "kde_ece_classwise",
    "kde_ece_confidence",
    "kde_reliability_curve",
    "negative_log_likelihood",
    "reliability_diagram",
    "resolve_binning",
    "statistics_for",
    "thresholded_adaptive_ece",
    "top_k_confidence_ece",
    "top_k_label_ece",
    "top_k_confidence_view",
    "top_k_label_view",
    "top_label_ece",
    "top_label_mce",
    "top_label_reliability_diagram",
    "top_label_view",
    "umd_validity_bound",
    "validity_curve",
    "wilson_interval",
    "LoadReport",
    "TableSchema",
    "inspect_table",
    "load_predictions",
    "load_splits",
    "PredictionStream",
    "scan",
    "DirichletSimulator",
    "EstimatorErrors",
    "MixNMatchSimulator",
    "Simulation",
    "TrueCalibrationErrors",
    "TrueCalibrationMap",
    "TrueReliabilityCurve",
    "dirichlet_simulator",
    "estimator_errors",
    "mix_n_match_simulator",
    "simulate_predictions",
    "true_calibration_errors",
    "true_calibration_map",
    "true_reliability_curve",
]
__version__ = "0.1.0"

"""calcore: calibration evaluation for probabilistic classifiers.

Quick start::

    import calcore
    preds = calcore.load_predictions("preds.csv")       # or Predictions.from_logits(z, y)
    report = calcore.evaluate(preds, bins=15)
    print(report.top_label_ece, report.classwise_ece)

    # larger than memory (a file, a directory or a glob), streamed in batches:
    report = calcore.evaluate(calcore.scan("logs/*.parquet"), bins=15)

Everything below is public (``__all__`` lists it in this order). The layers under it, one
package each, lowest first (a package imports only from its own and lower layers):
``calcore.foundation`` (errors, validation, limits, binning schemes, kernel density,
keyed random numbers, exact ranks), ``calcore.predictions`` (``Predictions``, metadata,
slices, binary views), ``calcore.calibrators``, ``calcore.io`` (sources),
``calcore.statistics`` (mergeable sums), ``calcore.metrics``, ``calcore.diagnostics``,
``calcore.simulate``, ``calcore.evaluation``, ``calcore.spark`` and ``calcore.cli`` (the
command line).

Predictions and data sources
============================

Predictions in memory, files loaded whole, sources streamed.

.. autosummary::
   :toctree: generated/

   Predictions       -- probabilities (or logits) with labels and optional row weights
   load_predictions  -- a CSV, Parquet or NPZ file, checked, as Predictions
   load_splits       -- a file's calibration and test rows, loaded once
   LoadOptions       -- how to read a source's columns, for every loader and scan
   inspect_table     -- what loading would detect, from the header and first rows
   LoadReport        -- what the loader detected and did
   TableSchema       -- what inspect_table found
   scan              -- Parquet, Arrow IPC, CSV or NPZ files streamed at bounded memory
   PredictionStream  -- a streamed source (what scan returns)
   from_spark        -- a Spark DataFrame as a source: evaluate's passes run as Spark jobs

Evaluation
==========

Every metric at once, and calibrators compared.

.. autosummary::
   :toctree: generated/

   evaluate             -- every metric of predictions or a stream, with bootstrap intervals
   CalibrationReport    -- what evaluate returns
   compare              -- calibrators side by side on calibration and test rows
   Comparison           -- what compare returns
   Verdict              -- which calibrator to ship (Comparison.verdict): paired, with warnings
   PairedDifference     -- a metric's difference between two methods on common resamples
   binary_summary       -- a binary report's calibration in one sentence (direction, slope)
   UNCALIBRATED         -- the row label of the predictions before recalibration
   learning_curve       -- a metric against the number of calibration rows
   LearningCurve        -- what learning_curve returns
   calibrator_validity  -- the validity protocol of Gupta & Ramdas for a calibrator
   bootstrap_interval   -- a percentile bootstrap interval of any metric
   bootstrap_intervals  -- intervals of several statistics from the same resamples
   Interval             -- an estimate with its interval
   interval_bounds      -- an interval from bootstrap replicates (percentile, basic, BCa, ...)
   INTERVAL_METHODS     -- the interval methods
   calibration_test     -- p-values of "the model is calibrated" (consistency resampling)
   CalibrationTest      -- what calibration_test returns

Slices
======

Calibration per slice of metadata columns (country, device, day...), ranked by evidence.

.. autosummary::
   :toctree: generated/

   evaluate_by     -- the overall report and one per slice, tested, with q-values
   SlicedReport    -- what evaluate_by returns
   SliceResult     -- one slice of a SlicedReport
   PeriodChange    -- a metric's change between the first and the last period (over time)
   fit_per_slice   -- a calibrator fitted on each slice's calibration rows, for its test rows
   PerSliceCalibration -- what fit_per_slice returns
   PerSliceCalibrator -- a method fitted per slice (and globally), saved and applied like any
   slicing_of      -- the slices of rows by column specifications ("age:q4", "date:week")
   Slicing         -- what slicing_of returns
   MetadataColumn  -- an extra column of the rows, kept for slicing

Metric registry
===============

The one table of reported metrics.

.. autosummary::
   :toctree: generated/

   METRICS           -- key -> MetricSpec of every reported metric
   BIN_FREE_METRICS  -- the metrics that do not depend on the binning
   MetricSpec        -- label, direction, range and computation of a metric
   compute_metric    -- one metric by key

Binned calibration errors
=========================

.. autosummary::
   :toctree: generated/

   confidence_ece               -- ECE of the confidence (max-probability) view
   confidence_mce               -- its maximum over bins
   top_label_ece                -- top-label ECE (bins per predicted class)
   top_label_mce                -- its maximum over bins
   classwise_ece                -- class-wise ECE (mean over classes)
   classwise_mce                -- its maximum over bins and classes
   top_k_confidence_ece         -- ECE of the k-th largest probability
   top_k_label_ece              -- top-label ECE of the k-th ranked class
   adaptive_ece                 -- ACE: class-wise ECE on equal-mass bins
   thresholded_adaptive_ece     -- TACE: ACE of the probabilities above a threshold
   debiased_ece                 -- the debiased squared-error estimator of Kumar et al.
   calibration_error_from_bins  -- a binned error from per-bin statistics

Binary models
=============

The measures that binary classifiers report (two classes; class 1 is the positive one).

.. autosummary::
   :toctree: generated/

   oe_ratio               -- observed / expected events (calibration-in-the-large, 1 ideal)
   observed_expected      -- the observed rate and the mean predicted probability
   calibration_slope      -- logistic recalibration slope on the logit (1 ideal)
   calibration_intercept  -- calibration-in-the-large intercept, logit as offset (0 ideal)
   logistic_calibration   -- both fits, with why one is NaN
   LogisticCalibration    -- what logistic_calibration returns
   spiegelhalter_z        -- Spiegelhalter's Z test of calibration (0 ideal)
   spiegelhalter_p        -- its two-sided p-value
   hosmer_lemeshow        -- Hosmer-Lemeshow statistic on deciles of risk
   hosmer_lemeshow_p      -- its chi-square p-value
   positive_class_ece     -- binned ECE of the positive class's probability

KDE-ECE
=======

Calibration error without bins.

.. autosummary::
   :toctree: generated/

   kde_ece_confidence  -- KDE-ECE of the confidence view
   kde_ece_classwise   -- class-wise KDE-ECE
   kde_ece             -- KDE-ECE of any scores and outcomes
   kde_bandwidth       -- the rule-of-thumb kernel half-width

Scoring rules
=============

.. autosummary::
   :toctree: generated/

   accuracy                 -- fraction of rows whose argmax is the label
   negative_log_likelihood  -- mean NLL of the label
   brier_score              -- mean squared error to the one-hot label
   calibration_gain         -- the Brier reduction of a recalibration map
   CalibrationGain          -- what calibration_gain returns

Diagnostics
===========

Reliability diagrams, bands and validity.

.. autosummary::
   :toctree: generated/

   reliability_diagram             -- per-bin accuracy against confidence, with Wilson intervals
   top_label_reliability_diagram   -- one diagram per predicted class
   classwise_reliability_diagrams  -- one diagram per class
   positive_class_reliability_diagram -- a binary model's P(class 1) against its frequency
   ReliabilityDiagram              -- what reliability_diagram returns
   TopLabelReliabilityDiagram      -- what top_label_reliability_diagram returns
   wilson_interval                 -- Wilson score interval of binomial proportions
   consistency_bands               -- reliability curves resampled under perfect calibration
   ConsistencyBands                -- what consistency_bands returns
   validity_curve                  -- validity plot of a binning (Gupta & Ramdas)
   ValidityCurve                   -- what validity_curve returns
   umd_validity_bound              -- the distribution-free bound of uniform-mass binning
   ece_by_bins                     -- binned ECE against the number of bins
   EceByBins                       -- what ece_by_bins returns
   kde_confidence_curve            -- the KDE reliability curve of the confidence view
   kde_reliability_curve           -- the KDE reliability curve of any scores
   KDEReliabilityCurve             -- what the KDE curves return
   reliability_summary             -- the confidence diagrams' answer in a sentence
   top_label_summary               -- which predicted classes carry the TL-ECE, how sure
   classwise_summary               -- the worst calibrated class shown, with its rows
   validity_summary                -- the epsilon at which each method's bins are valid
   kde_summary                     -- whether KDE-ECE and binned ECE agree
   learning_summary                -- whether more calibration rows would still help
   ViewSummary                     -- what the view summaries return

Bins and binary views
=====================

.. autosummary::
   :toctree: generated/

   BINNING_SCHEMES           -- the binning scheme names
   BinningScheme             -- a scheme and its number of bins
   resolve_binning           -- a checked BinningScheme from (binning, bins)
   bin_statistics            -- per-bin counts, mean scores and accuracies
   classwise_bin_statistics  -- the same, one group per class
   statistics_for            -- the bin statistics of a named view
   BinStatistics             -- what the bin statistics functions return
   assign_bins               -- which bin each score falls in
   BinAssignment             -- what assign_bins returns
   BinaryView                -- a multiclass problem reduced to binary (scores, outcomes, groups)
   binary_view               -- a view by name
   confidence_view           -- max probability and whether the argmax is right
   top_label_view            -- the same, grouped by predicted class
   classwise_view            -- every class's probability and indicator
   top_k_confidence_view     -- the k-th largest probability
   top_k_label_view          -- the k-th ranked class, grouped by class

Calibrators
===========

Post-hoc recalibration maps.

.. autosummary::
   :toctree: generated/

   CALIBRATORS            -- name -> CalibratorInfo of every method
   CALIBRATOR_ALIASES     -- old name -> the name its method is listed under
   CALIBRATOR_FAMILIES    -- family -> (name for people, what it does)
   make_calibrator        -- a calibrator by name, with checked parameters
   recommend_calibrators  -- a default set of calibrators for a data shape
   Recommendation         -- what recommend_calibrators returns
   Calibrator             -- the protocol: fit, transform, to_dict
   CalibratorInfo         -- what the dashboard lists about a method
   Param                  -- a calibrator parameter and its limits

Simulation with a known truth
=============================

.. autosummary::
   :toctree: generated/

   simulate_predictions     -- predictions drawn from a simulator
   dirichlet_simulator      -- Dirichlet-generated miscalibrated models
   mix_n_match_simulator    -- the simulator of Zhang et al. (2020)
   DirichletSimulator       -- what dirichlet_simulator returns
   MixNMatchSimulator       -- what mix_n_match_simulator returns
   Simulation               -- simulated predictions with their truth
   true_calibration_errors  -- the true ECEs of a simulator
   TrueCalibrationErrors    -- what true_calibration_errors returns
   true_calibration_map     -- the true recalibration map
   TrueCalibrationMap       -- what true_calibration_map returns
   true_reliability_curve   -- the true reliability curve
   TrueReliabilityCurve     -- what true_reliability_curve returns
   estimator_errors         -- estimator bias and spread against the truth
   EstimatorErrors          -- what estimator_errors returns

Errors
======

.. autosummary::
   :toctree: generated/

   CalcoreError    -- bad input or options, with a message that says how to fix it
   CalcoreWarning  -- something the caller should know (renormalised rows, ...)
"""

from calcore._deprecated_paths import install as _install_deprecated_paths
from calcore._deprecated_paths import moved_attribute as __getattr__  # noqa: F401
from calcore.calibrators import ALIASES as CALIBRATOR_ALIASES
from calcore.calibrators import (
    CALIBRATORS,
    Calibrator,
    CalibratorInfo,
    Param,
    Recommendation,
    make_calibrator,
    recommend_calibrators,
)
from calcore.calibrators import FAMILIES as CALIBRATOR_FAMILIES
from calcore.calibrators.per_slice import PerSliceCalibrator
from calcore.diagnostics.bin_sweep import EceByBins, ece_by_bins
from calcore.diagnostics.consistency import ConsistencyBands, consistency_bands
from calcore.diagnostics.reliability import (
    ReliabilityDiagram,
    TopLabelReliabilityDiagram,
    classwise_reliability_diagrams,
    positive_class_reliability_diagram,
    reliability_diagram,
    top_label_reliability_diagram,
    wilson_interval,
)
from calcore.diagnostics.summaries import (
    ViewSummary,
    classwise_summary,
    kde_summary,
    learning_summary,
    reliability_summary,
    top_label_summary,
    validity_summary,
)
from calcore.diagnostics.validity import ValidityCurve, umd_validity_bound, validity_curve
from calcore.evaluation import (
    UNCALIBRATED,
    Comparison,
    LearningCurve,
    PairedDifference,
    Verdict,
    calibrator_validity,
    compare,
    learning_curve,
)
from calcore.evaluation.binary_summary import binary_summary
from calcore.evaluation.bootstrap import Interval, bootstrap_interval, bootstrap_intervals
from calcore.evaluation.evaluator import CalibrationReport, evaluate
from calcore.evaluation.intervals import INTERVAL_METHODS, interval_bounds
from calcore.evaluation.significance import CalibrationTest, calibration_test
from calcore.evaluation.slice_fits import PerSliceCalibration, fit_per_slice
from calcore.evaluation.slices import PeriodChange, SlicedReport, SliceResult, evaluate_by
from calcore.foundation.binning import BINNING_SCHEMES, BinningScheme, resolve_binning
from calcore.foundation.errors import CalcoreError, CalcoreWarning
from calcore.foundation.kernel_density import (
    KDEReliabilityCurve,
    kde_bandwidth,
    kde_ece,
    kde_reliability_curve,
)
from calcore.foundation.version import __version__ as __version__
from calcore.io import (
    LoadOptions,
    LoadReport,
    TableSchema,
    inspect_table,
    load_predictions,
    load_splits,
)
from calcore.io.stream import PredictionStream, scan
from calcore.metrics.binary import (
    hosmer_lemeshow,
    hosmer_lemeshow_p,
    observed_expected,
    oe_ratio,
    positive_class_ece,
    spiegelhalter_p,
    spiegelhalter_z,
)
from calcore.metrics.binary_fit import (
    LogisticCalibration,
    calibration_intercept,
    calibration_slope,
    logistic_calibration,
)
from calcore.metrics.binned import (
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
from calcore.metrics.kde_ece import kde_confidence_curve, kde_ece_classwise, kde_ece_confidence
from calcore.metrics.registry import BIN_FREE_METRICS, METRICS, MetricSpec, compute_metric
from calcore.predictions import Predictions
from calcore.predictions.metadata import MetadataColumn
from calcore.predictions.reductions import (
    BinaryView,
    binary_view,
    classwise_view,
    confidence_view,
    top_k_confidence_view,
    top_k_label_view,
    top_label_view,
)
from calcore.predictions.slicing import Slicing, slicing_of
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
from calcore.spark._evaluate import from_spark
from calcore.statistics.bin_statistics import (
    BinStatistics,
    bin_statistics,
    classwise_bin_statistics,
    statistics_for,
)
from calcore.statistics.edges import BinAssignment, assign_bins
from calcore.statistics.scoring import (
    CalibrationGain,
    accuracy,
    brier_score,
    calibration_gain,
    negative_log_likelihood,
)

# The old paths of moved modules (calcore._deprecated_paths.MOVED) for one release.
_install_deprecated_paths()

__all__ = [
    # Predictions and data sources
    "Predictions",
    "load_predictions",
    "load_splits",
    "LoadOptions",
    "inspect_table",
    "LoadReport",
    "TableSchema",
    "scan",
    "PredictionStream",
    "from_spark",
    # Evaluation
    "evaluate",
    "CalibrationReport",
    "compare",
    "Comparison",
    "Verdict",
    "PairedDifference",
    "binary_summary",
    "UNCALIBRATED",
    "learning_curve",
    "LearningCurve",
    "calibrator_validity",
    "bootstrap_interval",
    "bootstrap_intervals",
    "Interval",
    "interval_bounds",
    "INTERVAL_METHODS",
    "calibration_test",
    "CalibrationTest",
    "evaluate_by",
    "SlicedReport",
    "SliceResult",
    "PeriodChange",
    "fit_per_slice",
    "PerSliceCalibration",
    "PerSliceCalibrator",
    "slicing_of",
    "Slicing",
    "MetadataColumn",
    # Metric registry
    "METRICS",
    "BIN_FREE_METRICS",
    "MetricSpec",
    "compute_metric",
    # Binned calibration errors
    "confidence_ece",
    "confidence_mce",
    "top_label_ece",
    "top_label_mce",
    "classwise_ece",
    "classwise_mce",
    "top_k_confidence_ece",
    "top_k_label_ece",
    "adaptive_ece",
    "thresholded_adaptive_ece",
    "debiased_ece",
    "calibration_error_from_bins",
    # Binary models
    "oe_ratio",
    "observed_expected",
    "calibration_slope",
    "calibration_intercept",
    "logistic_calibration",
    "LogisticCalibration",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "positive_class_ece",
    # KDE-ECE
    "kde_ece_confidence",
    "kde_ece_classwise",
    "kde_ece",
    "kde_bandwidth",
    # Scoring rules
    "accuracy",
    "negative_log_likelihood",
    "brier_score",
    "calibration_gain",
    "CalibrationGain",
    # Diagnostics
    "reliability_diagram",
    "top_label_reliability_diagram",
    "classwise_reliability_diagrams",
    "positive_class_reliability_diagram",
    "ReliabilityDiagram",
    "TopLabelReliabilityDiagram",
    "wilson_interval",
    "consistency_bands",
    "ConsistencyBands",
    "validity_curve",
    "ValidityCurve",
    "umd_validity_bound",
    "ece_by_bins",
    "EceByBins",
    "kde_confidence_curve",
    "kde_reliability_curve",
    "KDEReliabilityCurve",
    "reliability_summary",
    "top_label_summary",
    "classwise_summary",
    "validity_summary",
    "kde_summary",
    "learning_summary",
    "ViewSummary",
    # Bins and binary views
    "BINNING_SCHEMES",
    "BinningScheme",
    "resolve_binning",
    "bin_statistics",
    "classwise_bin_statistics",
    "statistics_for",
    "BinStatistics",
    "assign_bins",
    "BinAssignment",
    "BinaryView",
    "binary_view",
    "confidence_view",
    "top_label_view",
    "classwise_view",
    "top_k_confidence_view",
    "top_k_label_view",
    # Calibrators
    "CALIBRATORS",
    "CALIBRATOR_ALIASES",
    "CALIBRATOR_FAMILIES",
    "make_calibrator",
    "recommend_calibrators",
    "Recommendation",
    "Calibrator",
    "CalibratorInfo",
    "Param",
    # Simulation with a known truth
    "simulate_predictions",
    "dirichlet_simulator",
    "mix_n_match_simulator",
    "DirichletSimulator",
    "MixNMatchSimulator",
    "Simulation",
    "true_calibration_errors",
    "TrueCalibrationErrors",
    "true_calibration_map",
    "TrueCalibrationMap",
    "true_reliability_curve",
    "TrueReliabilityCurve",
    "estimator_errors",
    "EstimatorErrors",
    # Errors
    "CalcoreError",
    "CalcoreWarning",
]

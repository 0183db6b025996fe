"""Metrics: scalar scores of predictions, each a pure function of a ``Predictions``.

The layer above the statistics engine (:mod:`calcore.statistics`, whose bin statistics
and per-row scores they read) and below diagnostics and evaluation.

Modules
-------
binned
    Binned calibration errors: confidence, top-label and class-wise ECE/MCE (any norm),
    top-K, ACE/TACE, the debiased ECE.
binary, binary_fit
    The measures of binary models: observed/expected, calibration slope and intercept,
    Spiegelhalter's Z, Hosmer-Lemeshow.
kde_ece
    KDE-ECE (confidence and class-wise), from the statistics engine's kernel moments and
    the estimators of :mod:`calcore.foundation.kernel_density`.
registry
    ``METRICS``: the one table of every reported metric (label, direction, range, the
    cells it reads) that drives ``evaluate``, the bootstrap, the CLI and the dashboard.

Accuracy, negative log-likelihood and the Brier score are per-row scores of
:mod:`calcore.statistics.scoring`. The public names are exported from :mod:`calcore`;
this package imports nothing itself, so one module loads without the others.
"""

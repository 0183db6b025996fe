"""Metrics: scalar scores of predictions, each a pure function of a ``Predictions``.

Modules
-------
binned
    Binned calibration errors: confidence, top-label and class-wise ECE/MCE (any norm),
    top-K, ACE/TACE, the debiased ECE.
kde
    KDE-ECE (confidence and class-wise), from the statistics engine's kernel moments.
scoring
    Accuracy, negative log-likelihood, Brier score, and the calibration gain of a map.
registry
    ``METRICS``: the one table of every reported metric (label, direction, range, the
    cells it reads) that drives ``evaluate``, the bootstrap, the CLI and the dashboard.

The public names are exported from :mod:`calcore`; this package imports nothing itself,
so that the lower layers (the statistics engine uses the per-row scoring terms) can
import one module without loading the others.
"""

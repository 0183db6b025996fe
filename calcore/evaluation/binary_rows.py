"""The binary measures that :func:`calcore.evaluate` computes from the rows in memory.

O/E, Hosmer-Lemeshow and the ECE of class 1 are read off the statistics engine's cells
(:mod:`calcore.evaluation.report_statistics`), on a stream too. The calibration slope and
intercept (logistic fits) and Spiegelhalter's Z need every row: here they are computed for
the point estimate and, with the resample counts times the row weights as weights, for
every bootstrap replicate at once (:mod:`calcore.metrics._logistic_fit`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr

from calcore.metrics import _logistic_fit as fit
from calcore.metrics.binary import binary_rows, model_logits
from calcore.metrics.binary_fit import logistic_calibration
from calcore.metrics.registry import BINARY_METRICS, IN_MEMORY_METRICS, METRICS
from calcore.predictions import Predictions

__all__ = [
    "binary_row_values",
    "binary_row_replicates",
    "multiclass_note",
    "streamed_note",
]


def binary_row_values(preds: Predictions, *, weights, wanted) -> tuple[dict, list[str]]:
    """The wanted metrics of :data:`IN_MEMORY_METRICS` for binary ``preds``, and a note for
    each fit that has no maximum (its reason)."""
    keys = [k for k in IN_MEMORY_METRICS if k in wanted]
    if preds.n_classes != 2 or not keys:
        return {}, []
    out, notes = {}, []
    if {"calibration_slope", "calibration_intercept"} & set(keys):
        found = logistic_calibration(preds, sample_weight=weights)
        out["calibration_slope"] = found.slope
        out["calibration_intercept"] = found.intercept
        for key, reason in (
            ("calibration_slope", found.slope_reason),
            ("calibration_intercept", found.intercept_reason),
        ):
            if reason and key in keys:
                notes.append(f"{key} is NaN: {reason}.")
    if {"spiegelhalter_z", "spiegelhalter_p"} & set(keys):
        z = _spiegelhalter(preds, weights[None, :] if weights is not None else None)[0]
        out["spiegelhalter_z"] = float(z)
        out["spiegelhalter_p"] = float(2.0 * ndtr(-abs(z)))  # norm.sf, without scipy.stats
    return {k: out[k] for k in keys}, notes


def _spiegelhalter(preds: Predictions, weights) -> np.ndarray:
    """Spiegelhalter's Z for each row of ``weights`` (shape (R, n); None: unit weights)."""
    p, y, _ = binary_rows(preds, None, "spiegelhalter_z")
    c = 1.0 - 2.0 * p
    terms = np.stack([(y - p) * c, c * c * p * (1.0 - p)])  # numerator, variance
    sums = terms.sum(axis=1)[:, None] if weights is None else terms @ np.atleast_2d(weights).T
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sums[1] > 0, sums[0] / np.sqrt(sums[1]), np.nan)


def binary_row_replicates(preds: Predictions, weights, keys) -> dict:
    """Replicates of the ``keys`` among :data:`IN_MEMORY_METRICS` (p-values excepted: they
    get no interval) for every row of ``weights`` (shape (R, n): resample counts times
    the row weights). A replicate whose fit has no maximum is NaN."""
    keys = [k for k in keys if k in IN_MEMORY_METRICS and not METRICS[k].p_value]
    if preds.n_classes != 2 or not keys:
        return {}
    weights = np.asarray(weights, dtype=np.float64)
    out = {}
    if "spiegelhalter_z" in keys:
        out["spiegelhalter_z"] = _spiegelhalter(preds, weights)
    _, y, _ = binary_rows(preds, None, "calibration_slope")
    z = model_logits(preds)  # once for both fits (10M rows: 0.7 s)
    if "calibration_slope" in keys:
        out["calibration_slope"] = fit.fit_slope(z, y, weights)[1]
    if "calibration_intercept" in keys:
        out["calibration_intercept"] = fit.fit_intercept(z, y, weights)
    return out


def multiclass_note(n_classes: int, wanted) -> list[str]:
    """The one note of a report of more than two classes whose binary measures are None."""
    if n_classes == 2 or not set(BINARY_METRICS) & set(wanted):
        return []
    return [
        f"The binary measures ({', '.join(k for k in BINARY_METRICS if k in wanted)}) apply "
        f"to binary models (2 classes, class 1 positive); these predictions have {n_classes} "
        "classes, so they are not computed (one-vs-rest is not offered)."
    ]


def streamed_note(n_classes: int, wanted) -> list[str]:
    """The one note of a streamed binary report whose in-memory measures are None."""
    missing = [k for k in IN_MEMORY_METRICS if k in wanted]
    if n_classes != 2 or not missing:
        return []
    return [
        f"{', '.join(missing)} need the rows in memory (a logistic fit, or sums a stream does "
        "not keep), so a streamed source leaves them out: load the rows with "
        "calcore.load_predictions and evaluate those (the CLI loads a CSV or NPZ file whole "
        "when it fits under --max-decoded-bytes: raise it to include them)."
    ]

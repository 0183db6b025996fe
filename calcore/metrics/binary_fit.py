"""The calibration slope and intercept of a binary model: logistic recalibration of the
outcomes on the model's logits (the fits themselves: :mod:`calcore.metrics._logistic_fit`).

Binary predictions only (:func:`calcore.metrics.binary.check_binary`); the positive class
is class index 1. Row weights are frequency weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.metrics import _logistic_fit as fit
from calcore.metrics.binary import binary_rows, model_logits
from calcore.predictions import Predictions

__all__ = [
    "LogisticCalibration",
    "logistic_calibration",
    "calibration_slope",
    "calibration_intercept",
]


@dataclass(frozen=True)
class LogisticCalibration:
    """The logistic recalibration of a binary model (Cox 1958; Van Calster et al. 2016).

    Attributes
    ----------
    slope : float
        ``b`` of ``logit P(y = 1) = a + b z``: 1 ideal, below 1 over-confident (predictions
        too extreme), above 1 under-confident. NaN when the fit has no maximum.
    intercept : float
        ``a`` of ``logit P(y = 1) = a + z`` (``z`` an offset): the calibration-in-the-large
        intercept, 0 ideal, positive when the model under-predicts. NaN when it has no
        maximum.
    slope_reason, intercept_reason : str or None
        Why the value is NaN (None when it is not).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [0, 1])
    >>> fit = calcore.logistic_calibration(preds)
    >>> fit.slope, fit.slope_reason
    (nan, 'the outcomes are separated by the scores: ...')
    """

    slope: float
    intercept: float
    slope_reason: str | None = None
    intercept_reason: str | None = None


def logistic_calibration(preds: Predictions, *, sample_weight=None) -> LogisticCalibration:
    """Calibration slope and intercept: weighted logistic regressions of ``y`` on the
    model's logit ``z`` (:func:`model_logits`).

    The slope is ``b`` of the maximum-likelihood fit ``logit P(y = 1) = a + b z``; the
    intercept is ``a`` of ``logit P(y = 1) = a + z`` with ``z`` as an offset (Van Calster's
    calibration-in-the-large), both by Newton's method with a line search on the exact
    log-likelihood. When the maximum does not exist the value is NaN and the reason says
    why: one outcome only (both NaN), or, for the slope, scores that separate the outcomes
    (every event scored at least as high as every non-event, or the reverse) or that are
    all equal. A fit is never reported as the large number an iteration would stop at.

    Parameters
    ----------
    preds : Predictions
        Two classes.
    sample_weight : array_like of shape (n,), optional
        Frequency weights (default ``preds.sample_weight``).

    Returns
    -------
    LogisticCalibration

    Raises
    ------
    CalcoreError
        Not two classes (the message lists the metrics of several classes).

    References
    ----------
    Cox (1958); Van Calster et al. (2016), Sec. 2 ("weak calibration"); Van Calster et al.
    (2019).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.7, 0.3], [0.4, 0.6], [0.2, 0.8]]
    >>> fit = calcore.logistic_calibration(calcore.Predictions.from_probs(probs, [0, 1, 0, 1]))
    >>> round(fit.slope, 4), round(fit.intercept, 4)
    (0.7235, 0.2856)
    """
    _, y, w = binary_rows(preds, sample_weight, "logistic_calibration")
    z = model_logits(preds)
    a = float(fit.fit_intercept(z, y, w)[0])
    b = float(fit.fit_slope(z, y, w)[1][0])
    return LogisticCalibration(b, a, _slope_reason(z, y, w, b), _intercept_reason(y, w, a))


def _intercept_reason(y, w, a) -> str | None:
    if not np.isnan(a):
        return None
    if not ((w > 0) & (y == 1)).any() or not ((w > 0) & (y == 0)).any():
        return "every row (of positive weight) has the same outcome, so no fit has a maximum"
    return f"Newton's method did not converge in {fit.MAX_ITERATIONS} steps"


def _slope_reason(z, y, w, b) -> str | None:
    if not np.isnan(b):
        return None
    kept = w > 0
    if np.unique(y[kept]).size < 2:
        return "every row (of positive weight) has the same outcome, so no fit has a maximum"
    if np.ptp(z[kept]) == 0:
        return "every row has the same score, so no slope can be fitted"
    if fit.separated(z, y, w[None, :])[0]:
        return (
            "the outcomes are separated by the scores: every event is scored at least as high "
            "as every non-event (or the reverse), so the likelihood grows without bound with "
            "the slope"
        )
    return f"Newton's method did not converge in {fit.MAX_ITERATIONS} steps"


def calibration_slope(preds: Predictions, *, sample_weight=None) -> float:
    """The calibration slope (ideal 1; see :func:`logistic_calibration`).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.7, 0.3], [0.4, 0.6], [0.2, 0.8]]
    >>> round(calcore.calibration_slope(calcore.Predictions.from_probs(probs, [0, 1, 0, 1])), 4)
    0.7235
    """
    return logistic_calibration(preds, sample_weight=sample_weight).slope


def calibration_intercept(preds: Predictions, *, sample_weight=None) -> float:
    """The calibration-in-the-large intercept (ideal 0; see :func:`logistic_calibration`).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.5, 0.5]] * 4, [0, 1, 1, 1])
    >>> round(calcore.calibration_intercept(preds), 4)  # logit(3/4) - logit(1/2) = log 3
    1.0986
    """
    _, y, w = binary_rows(preds, sample_weight, "calibration_intercept")
    return float(fit.fit_intercept(model_logits(preds), y, w)[0])

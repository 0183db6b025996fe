"""Accuracy, proper scoring rules (NLL, Brier) and the calibration gain."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax

from calcore.foundation.errors import CalcoreError
from calcore.foundation.tuning import SCORING_ROW_BLOCK_VALUES as _ROW_BLOCK_VALUES
from calcore.foundation.validation import row_weights
from calcore.predictions import Predictions

__all__ = [
    "accuracy",
    "negative_log_likelihood",
    "brier_score",
    "CalibrationGain",
    "calibration_gain",
]


#: Default floor on the probability of the true class in the NLL (see ``negative_log_likelihood``).
NLL_CLIP = np.finfo(np.float64).eps


def _weights(preds: Predictions, sample_weight):
    return row_weights(preds, sample_weight)


def accuracy(preds: Predictions, *, sample_weight=None) -> float:
    """Fraction of rows whose predicted class (argmax, ties to the lowest index) is the label.

    ``sample_weight``: row weights (frequency weights), as every metric takes.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> calcore.accuracy(preds)  # the second row is wrong
    0.75
    >>> calcore.accuracy(preds, sample_weight=[1, 3, 1, 1])  # 3 of 6
    0.5
    """
    w = _weights(preds, sample_weight)
    return float(np.average(preds.correct, weights=w))


def negative_log_likelihood(
    preds: Predictions, *, clip: float = NLL_CLIP, sample_weight=None
) -> float:
    """Mean negative log-likelihood of the labels, ``-mean log p_{i, y_i}``.

    When the predictions carry logits, ``log p`` is taken as ``log_softmax(z)``
    and is exact for any logit magnitude (no clipping). Otherwise ``p_{i,y_i}``
    is floored at ``clip`` (default float64 eps, about 2.2e-16, so one row
    contributes at most ~36.04 nats) to keep a single zero probability from
    making the mean infinite; set ``clip=0`` to get ``inf`` in that case.

    References
    ----------
    Guo et al. (2017), Sec. 2; Gneiting & Raftery (2007).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> round(calcore.negative_log_likelihood(preds), 4)  # -(log 0.9 + log 0.7) / 2
    0.231
    >>> logits = calcore.Predictions.from_logits([[0.0, 0.0], [1000.0, 0.0]], [0, 0])
    >>> round(calcore.negative_log_likelihood(logits), 4)  # log(2) / 2, exact from logits
    0.3466
    """
    if not 0 <= clip < 1:
        raise CalcoreError(f"clip must be in [0, 1); got {clip!r}.")
    w = _weights(preds, sample_weight)
    if w is not None:
        return float(np.average(nll_per_row(preds, clip=clip), weights=w)) + 0.0
    rows = np.arange(preds.n_samples)
    if preds.logits is not None:
        step = max(1, _ROW_BLOCK_VALUES // preds.n_classes)
        total = 0.0
        for start in range(0, preds.n_samples, step):
            block = log_softmax(preds.logits[start : start + step], axis=1)
            total += float(
                -block[np.arange(block.shape[0]), preds.labels[start : start + step]].sum()
            )
        return total / preds.n_samples
    p_true = preds.probs[rows, preds.labels]
    with np.errstate(divide="ignore"):
        # + 0.0: every p_true = 1 gives -(0.0) = -0.0, shown as "-0.0000"; make it 0.0
        return float(-np.mean(np.log(np.maximum(p_true, clip)))) + 0.0


def _row_sq_norms(probs: np.ndarray) -> np.ndarray:
    if probs.shape[1] == 2:  # elementwise: a row reduction over 2 columns is ~10x slower
        return probs[:, 0] * probs[:, 0] + probs[:, 1] * probs[:, 1]
    step = max(1, _ROW_BLOCK_VALUES // probs.shape[1])
    out = np.empty(probs.shape[0])
    for start in range(0, probs.shape[0], step):
        block = probs[start : start + step]
        out[start : start + step] = np.einsum("ij,ij->i", block, block)
    return out


def brier_per_row(preds: Predictions) -> np.ndarray:
    """Per-row terms ``||p_i - e_{y_i}||^2`` whose mean is :func:`brier_score`."""
    # ||p - e_y||^2 = ||p||^2 - 2 p_y + 1, without building the one-hot matrix.
    return _row_sq_norms(preds.probs) - 2.0 * preds.label_probability + 1.0


def brier_score(preds: Predictions, *, sample_weight=None) -> float:
    """Multiclass Brier score, ``mean_i sum_j (p_ij - 1{y_i = j})^2``, in [0, 2].

    This is the convention of Brier (1950) and of the Mix-n-Match paper (sum
    over classes, not divided by L). For two classes it is twice the binary
    ``mean (p_1 - y)^2``.

    References
    ----------
    Brier (1950); Zhang et al. (2020), Eq. 7.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> round(calcore.brier_score(preds), 4)  # (0.01 + 0.01 + 0.09 + 0.09) / 2
    0.1
    """
    return float(np.average(brier_per_row(preds), weights=_weights(preds, sample_weight)))


@dataclass(frozen=True)
class CalibrationGain:
    """Brier reduction from a recalibration map (Mix-n-Match Eq. 7-8).

    Attributes
    ----------
    value : float
        ``Brier(before) - Brier(after)``.
    is_exact : bool
        True when the gain equals the reduction in canonical squared ECE:
        the map was declared injective and accuracy-preserving, and argmax was
        indeed unchanged on every row. Otherwise ``value`` is only a lower bound.
    note : str
        Why the gain is or is not exact, in words.

    Examples
    --------
    >>> import calcore
    >>> before = calcore.Predictions.from_probs([[0.9, 0.1], [0.8, 0.2]], [0, 1])
    >>> after = calcore.Predictions.from_probs([[0.7, 0.3], [0.6, 0.4]], [0, 1])
    >>> gain = calcore.calibration_gain(before, after)
    >>> round(gain.value, 4), gain.is_exact, gain.note
    (0.2, False, 'lower bound on the canonical ECE^2 reduction (map not known to be ...)')
    """

    value: float
    is_exact: bool
    note: str


def calibration_gain(
    before: Predictions, after: Predictions, *, injective_accuracy_preserving: bool = False
) -> CalibrationGain:
    """Calibration gain of a map ``T``: ``mean ||p - e_y||^2 - mean ||T(p) - e_y||^2``.

    Parameters
    ----------
    before, after : Predictions
        The same rows before and after recalibration (same labels). Row weights of
        ``before`` (``sample_weight``), if any, weight the means.
    injective_accuracy_preserving : bool, default False
        Whether the map is known to be injective and to preserve the argmax
        (e.g. temperature scaling). Only then is the gain the exact reduction
        in canonical ``ECE^2``.

    Returns
    -------
    CalibrationGain

    Raises
    ------
    CalcoreError
        Different shapes or labels.

    References
    ----------
    Zhang, Kailkhura, Han (2020), "Mix-n-Match", Eq. 7-8 and Prop. 4.1.

    Examples
    --------
    >>> import calcore
    >>> before = calcore.Predictions.from_probs([[0.9, 0.1], [0.8, 0.2]], [0, 1])
    >>> after = calcore.Predictions.from_probs([[0.7, 0.3], [0.6, 0.4]], [0, 1])
    >>> gain = calcore.calibration_gain(before, after, injective_accuracy_preserving=True)
    >>> round(gain.value, 4), gain.is_exact  # Brier 0.65 -> 0.45
    (0.2, True)
    """
    if before.probs.shape != after.probs.shape or not np.array_equal(before.labels, after.labels):
        raise CalcoreError(
            "calibration_gain needs the same rows before and after recalibration "
            f"(got shapes {before.probs.shape} and {after.probs.shape}, or different labels)."
        )
    w = row_weights(before, None)  # rows weighted as ``before`` is (a calibrator keeps them)
    value = float(np.average(brier_per_row(before) - brier_per_row(after), weights=w))
    same_argmax = bool(np.array_equal(before.predicted, after.predicted))
    exact = injective_accuracy_preserving and same_argmax
    if exact:
        note = "exact: the map is injective and accuracy-preserving"
    elif injective_accuracy_preserving:
        note = "lower bound: the map was declared accuracy-preserving but changed some argmax"
    else:
        note = (
            "lower bound on the canonical ECE^2 reduction "
            "(map not known to be injective and accuracy-preserving)"
        )
    return CalibrationGain(value, exact, note)


def nll_per_row(preds: Predictions, *, clip: float = NLL_CLIP) -> np.ndarray:
    """Per-row terms whose mean is :func:`calcore.negative_log_likelihood` (same clip, logits)."""
    if preds.logits is not None:
        out = np.empty(preds.n_samples)
        step = max(1, _ROW_BLOCK_VALUES // preds.n_classes)
        for start in range(0, preds.n_samples, step):
            block = log_softmax(preds.logits[start : start + step], axis=1)
            out[start : start + step] = -block[
                np.arange(block.shape[0]), preds.labels[start : start + step]
            ]
        return out
    with np.errstate(divide="ignore"):
        return -np.log(np.maximum(preds.label_probability, clip))

"""A slice's signed truth: what was observed against what the model expected, and which way.

A calibration error says how far a slice is from calibrated, not which way. Its sign is
in two numbers of the slice's rows (weighted):

* **binary** (two classes, view ``"positive"``): the observed rate of the positive class
  (label index 1) and the mean predicted probability of it. Observed above expected:
  the model **under-predicts** the slice; below: it **over-predicts** it.
* **several classes** (view ``"confidence"``): the accuracy and the mean confidence (the
  largest probability). Accuracy below confidence: **overconfident**; above:
  **underconfident**.

A difference is called a direction only when it exceeds :data:`NOISE_STANDARD_ERRORS`
binomial standard errors ``sqrt(e (1 - e) / n)`` of the expected value ``e`` over the
slice's ``n`` rows: the spread of an observed rate of ``n`` labels drawn with mean
probability ``e``. Under calibration each label is drawn from its own probability
``p_i``, whose rate has variance ``sum p_i (1 - p_i) / n^2 <= e (1 - e) / n`` (Jensen), so
the rule errs towards "" (no direction). With weights, ``n`` is still the number of rows
(a stream keeps no sum of squared weights to find an effective size).

On streams the two numbers come from one set of one-bin cells (:func:`signed_request`,
always requested, whatever ``metrics=`` asks): their score and outcome sums are the
weighted sums of the probability (or confidence) and of the outcome.

References
----------
Murphy & Winkler (1977), "Reliability of subjective probability forecasts of precipitation
and temperature", JRSS C 26 (calibration-in-the-large: mean forecast against observed
frequency).
"""

from __future__ import annotations

import math

import numpy as np

from calcore.foundation.binning import resolve_binning
from calcore.statistics.passes import CellRequest

__all__ = [
    "NOISE_STANDARD_ERRORS",
    "SIGNED_CELLS",
    "signed_truth",
    "signed_truth_from",
    "signed_request",
    "direction_of",
]

#: Standard errors a slice's observed-minus-expected must exceed to get a direction.
NOISE_STANDARD_ERRORS = 2.0
#: The key of the one-bin cells a stream's slices keep for their signed truth.
SIGNED_CELLS = "signed"
_WORDS = {"positive": ("under-predicted", "over-predicted"),
          "confidence": ("underconfident", "overconfident")}  # fmt: skip


def signed_truth(preds, weights=None) -> tuple[float, float, str]:
    """``(observed, expected, view)`` of rows in memory (see the module's docstring).

    Parameters
    ----------
    preds : Predictions
    weights : ndarray of shape (n,), optional
        Row weights (None: unit).

    Returns
    -------
    tuple of (float, float, str)
        NaN and NaN when the rows weigh nothing.

    Examples
    --------
    >>> import calcore
    >>> p = calcore.Predictions.from_probs([[0.8, 0.2], [0.6, 0.4], [0.5, 0.5]], [1, 1, 0])
    >>> signed_truth(p)  # 2 of 3 positive, 0.2 + 0.4 + 0.5 = 1.1 expected
    (0.6666666666666666, 0.3666666666666667, 'positive')
    """
    w = np.ones(preds.n_samples) if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if total <= 0:
        return math.nan, math.nan, _view(preds.n_classes)
    if preds.n_classes == 2:
        observed = float(w @ (preds.labels == 1)) / total
        expected = float(w @ preds.probs[:, 1]) / total
        return observed, expected, "positive"
    correct = preds.probs.argmax(axis=1) == preds.labels
    return float(w @ correct) / total, float(w @ preds.probs.max(axis=1)) / total, "confidence"


def signed_request(n_classes: int) -> CellRequest:
    """The one-bin cells that hold a stream slice's signed truth: class-wise for two
    classes (the cell of class 1), confidence otherwise. Equal-width with one bin is
    fixed, so it costs no pass over the data."""
    one = resolve_binning("equal-width", 1)
    return CellRequest("class-wise" if n_classes == 2 else "confidence", one)


def signed_truth_from(stats) -> tuple[float, float, str]:
    """``(observed, expected, view)`` from a stream's statistics with the
    :data:`SIGNED_CELLS` cells of :func:`signed_request`.

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics.accumulator import CalibrationStatistics, CellSpec
    >>> from calcore.statistics.edges import edges_for
    >>> p = calcore.Predictions.from_probs([[0.8, 0.2], [0.6, 0.4], [0.5, 0.5]], [1, 1, 0])
    >>> e = edges_for(np.column_stack([p.probs[:, 0], p.probs[:, 1]]).ravel(),
    ...               groups=np.tile([0, 1], 3), n_groups=2, binning="equal-width", bins=1)
    >>> specs = {SIGNED_CELLS: CellSpec("class-wise", e)}
    >>> stats = CalibrationStatistics.empty(p.class_names, specs)
    >>> stats.update(p)
    >>> tuple(round(v, 4) if isinstance(v, float) else v for v in signed_truth_from(stats))
    (0.6667, 0.3667, 'positive')
    """
    cells = stats.cells[SIGNED_CELLS]
    if stats.specs[SIGNED_CELLS].reduction == "class-wise":  # the cell of class 1
        weight, score, outcome = cells.weight[1], cells.score[1], cells.outcome[1]
    else:
        weight, score, outcome = cells.weight.sum(), cells.score.sum(), cells.outcome.sum()
    if weight <= 0:
        return math.nan, math.nan, _view(len(stats.class_names))
    return float(outcome / weight), float(score / weight), _view(len(stats.class_names))


def direction_of(observed: float, expected: float, n: int, view: str) -> str:
    """``"under-predicted"`` / ``"over-predicted"`` (view ``"positive"``),
    ``"underconfident"`` / ``"overconfident"`` (view ``"confidence"``), or ``""`` when
    ``|observed - expected|`` is within :data:`NOISE_STANDARD_ERRORS` standard errors
    ``sqrt(e (1 - e) / n)``.

    Examples
    --------
    >>> direction_of(0.15, 0.10, 1000, "positive")  # 0.05 > 2 x 0.0095
    'under-predicted'
    >>> direction_of(0.11, 0.10, 1000, "positive"), direction_of(0.7, 0.9, 500, "confidence")
    ('', 'overconfident')
    """
    if not (n > 0 and math.isfinite(observed) and math.isfinite(expected)):
        return ""
    noise = NOISE_STANDARD_ERRORS * math.sqrt(max(expected * (1.0 - expected), 0.0) / n)
    gap = observed - expected
    if abs(gap) <= noise:
        return ""
    above, below = _WORDS[view]
    return above if gap > 0 else below


def _view(n_classes: int) -> str:
    return "positive" if n_classes == 2 else "confidence"

"""Isotonic-regression calibrators: binary [iso] (wrapped: ``n-iso`` is IROvA) and IRM [irm].

References
----------
Zadrozny & Elkan (2002), "Transforming classifier scores into accurate
multiclass probability estimates", KDD.
Zhang, Kailkhura & Han (2020), "Mix-n-Match: ensemble and compositional methods
for uncertainty calibration in deep learning", ICML, Sec. 3.2 (IRM, IROvA).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from calcore._errors import CalcoreError
from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register
from calcore.calibrators.binning import BinaryCalibrator
from calcore.predictions import Predictions

__all__ = ["IsotonicRegression", "IsotonicRegressionMultiClass", "fit_isotonic_steps"]


def fit_isotonic_steps(scores: np.ndarray, outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-decreasing least-squares fit of ``outcomes`` on ``scores``, as a step function.

    Equal scores are pooled first (weighted by their count), so they always get
    one value; ``scipy.optimize.isotonic_regression`` (PAVA) then fits the
    distinct scores. Returns the fitted blocks as ``(starts, values)``: the
    smallest calibration score of each block and its value (strictly increasing).
    """
    xs, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=outcomes, minlength=xs.size) / counts
    fitted = isotonic_regression(means, weights=counts.astype(np.float64)).x
    first = np.r_[True, fitted[1:] != fitted[:-1]]
    return xs[first], fitted[first]


def apply_isotonic_steps(starts: np.ndarray, values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Value of the last block starting at or below each score (the first block below all)."""
    idx = np.searchsorted(starts, scores, side="right") - 1
    return values[np.maximum(idx, 0)]


@register
class IsotonicRegression(BinaryCalibrator):
    """Binary isotonic regression with ``scipy.optimize.isotonic_regression``.

    The fit is the non-decreasing least-squares fit of the outcomes on the
    scores (ties pooled). A new score ``s`` gets the value of the last fitted
    block whose smallest calibration score is ``<= s`` (scores below every block
    get the first block's value): a right-continuous, piecewise-constant map,
    so outputs take finitely many values and can be evaluated with
    ``binning="unique"``. Scores between two blocks keep the lower block's value
    (no linear interpolation).
    """

    name = "iso"
    family = "isotonic"
    description = "Isotonic regression (PAVA), piecewise-constant prediction"
    parameters = ()

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        outcomes = np.asarray(outcomes, dtype=np.float64).reshape(-1)
        if scores.shape != outcomes.shape or scores.size == 0:
            raise CalcoreError(
                f"iso: needs equally long, non-empty scores and outcomes; got {scores.size} "
                f"and {outcomes.size}."
            )
        starts, values = fit_isotonic_steps(scores, outcomes)
        return {"starts": starts, "values": values}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        starts, values = np.asarray(state["starts"], float), np.asarray(state["values"], float)
        return apply_isotonic_steps(starts, values, scores)


@register
class IsotonicRegressionMultiClass(Calibrator):
    """IRM (Mix-n-Match, Sec. 3.2): one isotonic map for all classes, accuracy preserving.

    All ``n L`` pairs ``(p_ij, 1{y_i = j})`` are pooled into one isotonic fit
    ``g``; ``g`` is made strictly increasing as ``g(a) + eps a`` and the rows
    are normalised, ``q_ij = g(p_ij) / sum_k g(p_ik)``. A strictly increasing
    map keeps the order of each row, hence the argmax (ties in ``p`` stay ties; where
    rounding would create a tie, the predicted entry is raised by one ulp).
    ``g`` is the piecewise-constant step map of :class:`IsotonicRegression`.
    """

    name = "irm"
    family = "isotonic"
    description = "Multi-class isotonic regression (one map for all classes, then normalise)"
    accuracy_preserving = True
    parameters = (
        Param(
            "eps",
            1e-9,
            "float",
            "Slope added to make the map strictly increasing.",
            minimum=1e-15,
            maximum=1e-3,
        ),  # fmt: skip
    )

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        onehot = np.zeros(preds.probs.shape)
        onehot[np.arange(preds.n_samples), preds.labels] = 1.0
        starts, values = fit_isotonic_steps(preds.probs.ravel(), onehot.ravel())
        return {"starts": starts, "values": values}, {"n_blocks": int(starts.size)}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        starts, values = np.asarray(state["starts"], float), np.asarray(state["values"], float)
        g = apply_isotonic_steps(starts, values, preds.probs) + self._params["eps"] * preds.probs
        q = g / g.sum(axis=1, keepdims=True)
        # eps * (p_a - p_b) can vanish in rounding when two entries of a row are within ~1e-7 of
        # each other; lift the predicted entry by one ulp there so the argmax is kept exactly.
        pred = preds.predicted
        rows = np.flatnonzero(q.argmax(axis=1) != pred)
        if rows.size:
            q[rows, pred[rows]] = np.nextafter(q[rows].max(axis=1), 2.0)
        return q, None

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

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._binary import BinaryCalibrator
from calcore.calibrators._registry import register
from calcore.calibrators._state import Array
from calcore.foundation.errors import CalcoreError
from calcore.foundation.threads import in_threads
from calcore.predictions import Predictions

__all__ = ["IsotonicRegression", "IsotonicRegressionMultiClass", "fit_isotonic_steps"]


def fit_isotonic_steps(
    scores: np.ndarray, outcomes: np.ndarray, weights=None
) -> tuple[np.ndarray, np.ndarray]:
    """Non-decreasing least-squares fit of ``outcomes`` on ``scores``, as a step function.

    Equal scores are pooled first (weighted by their count, or by their total weight
    with positive row ``weights``), so they always get one value;
    ``scipy.optimize.isotonic_regression`` (PAVA) then fits the distinct scores.
    Returns the fitted blocks as ``(starts, values)``: the smallest calibration score
    of each block and its value (strictly increasing).
    """
    xs, inverse = np.unique(scores, return_inverse=True)
    if weights is None:
        mass = np.bincount(inverse, minlength=xs.size).astype(np.float64)
        hits = np.bincount(inverse, weights=outcomes, minlength=xs.size)
    else:
        w = np.asarray(weights, dtype=np.float64)
        mass = np.bincount(inverse, weights=w, minlength=xs.size)
        hits = np.bincount(inverse, weights=w * outcomes, minlength=xs.size)
    fitted = isotonic_regression(hits / mass, weights=mass).x
    first = np.r_[True, fitted[1:] != fitted[:-1]]
    return xs[first], fitted[first]


def apply_isotonic_steps(starts: np.ndarray, values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Value of the last block starting at or below each score (the first block below all)."""
    idx = np.searchsorted(starts, scores, side="right") - 1
    return values[np.maximum(idx, 0)]


#: The saved steps of an isotonic map: the first score of each block (strictly increasing,
#: finite) and its value (non-decreasing, in [0, 1]).
STEPS_STATE = {
    "starts": Array(("M",), order="increasing", nonempty=True),
    "values": Array(("M",), minimum=0.0, maximum=1.0, order="non-decreasing"),
}

_CELL_SHIFT = 42  # cells of 2**42 consecutive float64 bit patterns (10 mantissa bits)
_N_CELLS = int(np.float64(1.0).view(np.uint64) >> np.uint64(_CELL_SHIFT)) + 1  # cells of [0, 1]


class _StepIndex:
    """``np.searchsorted(starts, scores, side="right")`` for many scores in ``[0, 1]``, exactly.

    Non-negative float64 values sort like their bit patterns, so a score's cell
    (its top bits) locates it among the starts: in a cell that holds no start,
    every score has the same count of starts below it (a table look-up); only
    scores in a cell that holds a start (or outside ``[0, 1]``, or ``-0.0``) take
    the binary search.
    """

    def __init__(self, starts: np.ndarray):
        self.starts = starts
        self.fast = bool(starts.size) and not (np.signbit(starts).any() or starts[-1] > 1.0)
        if self.fast:
            cells = self._cells(starts)
            per_cell = np.bincount(cells, minlength=_N_CELLS + 1)
            self.below = np.concatenate([[0], np.cumsum(per_cell)[:-1]]).astype(np.intp)
            self.exact = per_cell > 0
            self.exact[_N_CELLS] = True  # scores above 1 or with the sign bit set

    @staticmethod
    def _cells(scores: np.ndarray) -> np.ndarray:
        cells = scores.view(np.uint64) >> np.uint64(_CELL_SHIFT)
        return np.minimum(cells, _N_CELLS, out=cells).view(np.int64)

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        """Counts for a C-contiguous float64 array (any shape)."""
        if not self.fast:
            return np.searchsorted(self.starts, scores, side="right")
        cells = self._cells(np.ascontiguousarray(scores))
        count = self.below.take(cells)
        slow = np.flatnonzero(self.exact.take(cells))
        if slow.size:
            flat = count.reshape(-1)
            flat[slow] = np.searchsorted(self.starts, scores.reshape(-1)[slow], side="right")
        return count


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
    title = "Isotonic regression"
    use = "no bins to choose: flexible, needs many rows"
    parameters = ()
    weighted = True  # distinct scores pooled by their total weight
    state_fields = STEPS_STATE

    @classmethod
    def fit_binary(cls, scores, outcomes, params, weights=None) -> dict:
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        outcomes = np.asarray(outcomes, dtype=np.float64).reshape(-1)
        if scores.shape != outcomes.shape or scores.size == 0:
            raise CalcoreError(
                f"iso: needs equally long, non-empty scores and outcomes; got {scores.size} "
                f"and {outcomes.size}."
            )
        starts, values = fit_isotonic_steps(scores, outcomes, weights)
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
    title = "Multi-class isotonic regression (IRM)"
    use = "one isotonic map for all classes: keeps accuracy, no bins to choose"
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
    state_fields = STEPS_STATE

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        starts, values = _fit_one_hot_steps(preds.probs, preds.labels)
        return {"starts": starts, "values": values}, {"n_blocks": int(starts.size)}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        starts, values = np.asarray(state["starts"], float), np.asarray(state["values"], float)
        eps, probs, pred = self._params["eps"], preds.probs, preds.predicted
        index = _StepIndex(starts)
        n, n_classes = probs.shape
        q = np.empty((n, n_classes))
        moved = np.zeros(n, dtype=bool)
        step = max(1, 65_536 // max(n_classes, 1))

        def run(begin: int, end: int) -> None:
            for start in range(begin, end, step):  # row blocks: the same operations, row by row
                stop = min(start + step, end)
                p, g = probs[start:stop], q[start:stop]
                idx = index(p)
                idx -= 1
                np.maximum(idx, 0, out=idx)
                values.take(idx, out=g)
                g += eps * p
                g /= g.sum(axis=1, keepdims=True)
                moved[start:stop] = g.argmax(axis=1) != pred[start:stop]

        in_threads(run, n, n * n_classes)
        # eps * (p_a - p_b) can vanish in rounding when two entries of a row are within ~1e-7 of
        # each other; lift the predicted entry by one ulp there so the argmax is kept exactly.
        rows = np.flatnonzero(moved)
        if rows.size:
            q[rows, pred[rows]] = np.nextafter(q[rows].max(axis=1), 2.0)
        return q, None


def _fit_one_hot_steps(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fit_isotonic_steps(probs.ravel(), one_hot(labels).ravel())`` without sorting pairs.

    The fit is constant on every run of equal consecutive outcomes (pooling a run
    at its mean keeps the order and lowers the loss), and each row has a single
    positive. So the distinct scores are grouped into at most ``2 n + 1`` points:
    each distinct score of a positive (its positives over its count), and each
    stretch of negative-only scores between them (mean 0, weighted by its
    count). One sort of the scores gives all counts by binary search; no
    ``argsort`` of the ``n L`` pairs is needed.
    """
    n = probs.shape[0]
    ranked = np.sort(probs, axis=None)
    total = ranked.size
    pos = probs[np.arange(n), labels]
    hits, where = np.unique(pos, return_inverse=True)  # distinct scores of the positives
    positives = np.bincount(where.reshape(-1), minlength=hits.size).astype(np.float64)
    lo = ranked.searchsorted(hits, side="left")
    hi = ranked.searchsorted(hits, side="right")
    after = np.concatenate([[0], hi])  # first rank after the previous positive score
    m = hits.size
    weights = np.empty(2 * m + 1, dtype=np.int64)
    weights[0:-1:2] = lo - after[:-1]  # negative-only stretches
    weights[-1] = total - hi[-1]
    weights[1::2] = hi - lo
    means = np.zeros(2 * m + 1)
    means[1::2] = positives / weights[1::2]
    firsts = np.empty(2 * m + 1)  # smallest score of each point
    firsts[0::2] = ranked[np.minimum(after, total - 1)]
    firsts[1::2] = hits
    keep = weights > 0
    weights, means, firsts = weights[keep], means[keep], firsts[keep]
    fitted = isotonic_regression(means, weights=weights.astype(np.float64)).x
    first = np.r_[True, fitted[1:] != fitted[:-1]]
    return firsts[first], fitted[first]

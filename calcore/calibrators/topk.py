"""Top-K M2B wrappers of any binary calibrator: top-K-label [tkl-*], top-K-confidence [tkc-*].

For each row, rank ``r = 1..k`` holds its r-th largest probability ``p_(r)`` and
that class ``c_(r)`` (ties ordered by class index, as the argmax and
:func:`calcore.top_k_label_view` order them). The parameter ``k`` (default 2,
at most the number of classes) sets how many ranks are calibrated:

======  ====================================================================
``tkc``  top-K-confidence (Alg. 7): one binary calibrator per rank r on
         ``(p_(r), 1{y = c_(r)})`` over all rows. Fewer calibration rows than
         the binary method needs is an error, as for ``cw-*``.
``tkl``  top-K-label (Alg. 6): one binary calibrator per (rank r, class l) on
         the rows with ``c_(r) = l``. A group with fewer rows than the binary
         method needs (``min_points``) keeps its probabilities and is listed in
         ``fit_info["unchanged_groups"]``; rows whose k groups are all unchanged
         keep their rows exactly.
======  ====================================================================

``k = 1`` gives exactly ``conf-*`` (tkc) and ``tl-*`` (tkl).

Full rows (:func:`top_k_rows`), from the calibrated values ``h_1..h_k``:

1. ``h_1`` is kept, floored at ``1/L + 1e-9`` as in
   :func:`~calcore.calibrators._m2b_base.top_label_rows`.
2. Order across ranks is enforced by a running minimum, ``h_r <- min(h_r, h_{r-1})``:
   the calibrated values are non-increasing in rank, and the higher rank wins
   a conflict (rank 1, the top-label claim, is never lowered by the others).
   Clipping can tie two ranks, so the order of ranks 2..k is kept weakly.
3. The classes outside the top k share the remaining mass ``1 - sum_r h_r`` in
   proportion to their original probabilities (equally if those are all 0).
   If ``sum_r h_r > 1``, they get 0 and ranks 2..k are scaled down
   proportionally to ``1 - h_1`` (``h_1`` itself is never renormalised); with
   ``k = L`` ranks 2..k are scaled to exactly ``1 - h_1``.
4. Where an entry other than rank 1 would reach ``h_1``, all non-top entries
   are mixed with the uniform share as in ``top_label_rows`` (which does steps
   3-4), so rank 1 stays the strict maximum: **the argmax is preserved
   exactly** (``accuracy_preserving = True``). Classes outside the top k are not
   forced below rank k: a low calibrated ``h_k`` with much remaining mass may
   leave them above it.

``fit_info`` counts, on the calibration split, the rows where step 2 changed a
value (``rows_rank_order_clipped``) and where ``sum_r h_r > 1``
(``rows_top_k_sum_above_one``).

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Eq. 6-7 and App. A, Alg. 6-7.
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import Param
from calcore.calibrators._m2b_base import H_FLOOR, M2BWrapper, top_label_rows
from calcore.calibrators._registry import register_wrapper
from calcore.calibrators._state import Items, StateError
from calcore.foundation.errors import CalcoreError
from calcore.foundation.tuning import TOPK_ITERATIVE_MAX_K as _ITERATIVE_MAX_K
from calcore.predictions import Predictions

__all__ = ["top_k_classes", "top_k_rows"]

# k ranks: k binary fits (tkc) or k passes over the rows' groups (tkl), and a full row sort
# beyond 8; 100 ranks cover any top-K metric in use and keep a fit to k passes of the data.
_K = Param(
    "k", 2, "int", "Number of ranks K calibrated (the K largest probabilities).", minimum=1,
    maximum=100,
)  # fmt: skip


def top_k_classes(
    probs: np.ndarray, predicted: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Classes and probabilities of the ``k`` largest entries of each row, ties by class index.

    Parameters
    ----------
    probs : ndarray of shape (n_samples, n_classes)
    predicted : ndarray of shape (n_samples,)
        ``argmax probs`` (lowest index on ties), the rank-1 classes.
    k : int
        ``1 <= k <= n_classes``.

    Returns
    -------
    classes : ndarray of shape (n_samples, k)
    values : ndarray of shape (n_samples, k)
        ``probs[i, classes[i, r]]``, non-increasing along each row.
    """
    n = probs.shape[0]
    rows = np.arange(n)
    if k <= _ITERATIVE_MAX_K:
        classes = np.empty((n, k), dtype=np.intp)
        classes[:, 0] = predicted
        work = probs.copy() if k > 1 else None
        for r in range(1, k):
            work[rows, classes[:, r - 1]] = -np.inf
            classes[:, r] = work.argmax(axis=1)  # first maximum: lowest index on ties
    else:
        classes = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    return classes, probs[rows[:, None], classes]


def _ordered(h: np.ndarray, n_classes: int) -> np.ndarray:
    """Steps 1-2 of the module doc: ``h_1`` floored, then a running minimum over ranks."""
    h = h.copy()
    h[:, 0] = np.clip(h[:, 0], 1.0 / n_classes + H_FLOOR, 1.0)
    return np.minimum.accumulate(h, axis=1)


def top_k_rows(probs: np.ndarray, classes: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Rows with calibrated top-k values ``h`` and the argmax kept (see the module doc).

    Parameters
    ----------
    probs : ndarray of shape (n_samples, n_classes)
    classes : ndarray of shape (n_samples, k)
        Rank-r classes from :func:`top_k_classes`.
    h : ndarray of shape (n_samples, k)
        Calibrated probabilities of those classes, in [0, 1].

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Rows on the simplex whose (first) argmax is ``classes[:, 0]``.
    """
    n, n_classes = probs.shape
    k = classes.shape[1]
    if k == 1:
        return top_label_rows(probs, classes[:, 0], h[:, 0])
    rows = np.arange(n)[:, None]
    h = _ordered(h, n_classes)
    target = probs.copy()
    target[rows, classes] = 0.0
    others = target.sum(axis=1)
    remaining = np.maximum(1.0 - h.sum(axis=1), 0.0)
    target *= np.divide(remaining, others, out=np.zeros(n), where=others > 0)[:, None]
    if k < n_classes:  # others all zero: they share the remaining mass equally
        spread = np.flatnonzero((others <= 0) & (remaining > 0))
        target[spread] = (remaining[spread] / (n_classes - k))[:, None]
        target[rows[spread], classes[spread]] = 0.0
    target[rows, classes[:, 1:]] = h[:, 1:]
    return top_label_rows(target, classes[:, 0], h[:, 0])


def _row_facts(h: np.ndarray, n_classes: int) -> dict:
    ordered = _ordered(h, n_classes)
    return {
        "rows_rank_order_clipped": int((ordered[:, 1:] != h[:, 1:]).any(axis=1).sum()),
        "rows_top_k_sum_above_one": int((ordered.sum(axis=1) > 1.0).sum()),
    }


class _TopK(M2BWrapper):
    own_parameters = (_K,)
    accuracy_preserving = True

    def state_sizes(self, n_classes: int, *, path: str) -> dict[str, int]:
        if self._params["k"] > n_classes:
            raise StateError(
                path, f"cannot hold k = {self._params['k']} ranks of {n_classes} classes"
            )
        return {"K": self._params["k"]}  # one entry per calibrated rank

    def _k(self, preds: Predictions) -> int:
        k, n_classes = self._params["k"], preds.n_classes
        if k > n_classes:
            raise CalcoreError(
                f"{self.name}: parameter 'k' must be at most the number of classes "
                f"({n_classes}); got {k}. Use k <= {n_classes}."
            )
        return k

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        classes, values = top_k_classes(preds.probs, preds.predicted, self._k(preds))
        outcomes = (classes == preds.labels[:, None]).astype(np.float64)
        states, info = self._fit_ranks(values, outcomes, classes, preds)
        h = self._apply_ranks(states, values, classes)
        info |= {"k": classes.shape[1], "min_points": self._min_points()}
        return {"ranks": states}, info | _row_facts(h, preds.n_classes)

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        classes, values = top_k_classes(preds.probs, preds.predicted, len(state["ranks"]))
        out = top_k_rows(preds.probs, classes, self._apply_ranks(state["ranks"], values, classes))
        keep = self._unchanged_rows(state["ranks"], classes)
        out[keep] = preds.probs[keep]
        return out, None

    def _unchanged_rows(self, states, classes) -> np.ndarray:
        return np.zeros(classes.shape[0], dtype=bool)


@register_wrapper("tkc")
class TopKConfidenceCalibrator(_TopK):
    label = "Top-K-confidence calibration (Alg. 7)"
    title = "Top-K confidence"
    use = "one map per rank of the K largest probabilities: keeps accuracy"

    def _reduction_state(self, binary):
        return {"ranks": Items("K", binary)}

    def _fit_ranks(self, values, outcomes, classes, preds):
        if preds.n_samples < self._min_points():
            raise CalcoreError(
                f"{self.name}: needs at least {self._min_points()} calibration rows with "
                f"{self._binary_params}; got {preds.n_samples}."
            )
        w = preds.sample_weight
        states = [self._fit_binary(values[:, r], outcomes[:, r], w) for r in range(len(values[0]))]
        return states, {"n_calibration": preds.n_samples}

    def _apply_ranks(self, states, values, classes) -> np.ndarray:
        h = np.empty_like(values)
        for r, state in enumerate(states):
            h[:, r] = self.binary_cls.apply_binary(state, values[:, r], self._binary_params)
        return h


@register_wrapper("tkl")
class TopKLabelCalibrator(_TopK):
    label = "Top-K-label calibration (Alg. 6)"
    title = "Top-K label"
    use = "one map per rank and class: keeps accuracy, needs many rows"

    def _reduction_state(self, binary):
        # per rank, one binary state per class (null: a group left unchanged)
        return {"ranks": Items("K", Items("L", binary, optional=True))}

    def _fit_ranks(self, values, outcomes, classes, preds):
        states, sizes, unchanged = [], [], []
        for r in range(classes.shape[1]):
            rank_states, rank_sizes = self._fit_groups(
                values[:, r], outcomes[:, r], classes[:, r], preds.n_classes, preds.sample_weight
            )
            states.append(rank_states)
            sizes.append(rank_sizes)
            unchanged += [
                {"rank": r + 1, "class": preds.class_names[g]}
                for g, s in enumerate(rank_states)
                if s is None
            ]
        return states, {"points_per_group": sizes, "unchanged_groups": unchanged}

    def _apply_ranks(self, states, values, classes) -> np.ndarray:
        h = np.empty_like(values)
        for r, rank_states in enumerate(states):
            col = values[:, r]
            h[:, r] = self._apply_groups(rank_states, col, classes[:, r], col)
        return h

    def _unchanged_rows(self, states, classes) -> np.ndarray:
        keep = np.ones(classes.shape[0], dtype=bool)
        for r, rank_states in enumerate(states):
            keep &= np.isin(classes[:, r], [g for g, s in enumerate(rank_states) if s is None])
        return keep

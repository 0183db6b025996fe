"""SCIR: exact isotonic regression on its partial order, the monotone extension, the calibrator.

The points are ``(c, r)`` with ``c`` real and ``r`` one of ``K`` integer ranks;
``(c, r) <= (c', r')`` iff ``c <= c'`` and ``r <= r'``. The outcomes are 0/1.

Algorithm (Arad & Rosset, App. A.1; Spouge, Wan & Wilbur 2003)
----------------------------------------------------------------
Recursive partitioning. For a set ``S`` with weighted mean ``b``, find an
upper set ``U`` maximising ``H(U) = sum_U w (y - b)``. If the maximum is 0 the
isotonic fit on ``S`` is the constant ``b`` (Thm. A.5); otherwise ``(S - U, U)``
is a projection pair (Thm. A.3) and both halves are solved independently.

The maximal upper set is found by the dynamic programme of Lemma A.11,
vectorised over ``c`` instead of looping over single points: an upper set is
a staircase ``U = {(c, r): c >= tau_r}`` with thresholds ``tau_r`` non-increasing
in ``r``, so with ``A_r(m)`` the suffix sum of row ``r`` from the ``m``-th
distinct ``c`` value,

    dp_r(m) = A_r(m) + max_{m' >= m} dp_{r-1}(m'),   max H = max_m dp_K(m),

and the thresholds are recovered backwards. One DP costs ``O(|S| K_S)``
(``K_S`` ranks present in ``S``); the recursion has at most as many internal
nodes as the fit has distinct values, so the worst case is ``O(N^2 K)`` like the
paper's ``O(m^2 k^4)`` (``N = m (k - 1)`` points), and in practice about
``O(N K depth)``. Sets with one rank are solved directly by 1-D PAVA.

Exactness: with integer weights ``w`` (multiplicities) and integer positive
counts ``s`` the DP runs on ``W_S s - Y_S w``, integers far below ``2**53``, so
every comparison (in particular ``max H == 0``) is exact; the only rounding is
the final division ``Y / W`` of each level set.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register
from calcore.calibrators._state import Array, Items, Number, StateError
from calcore.foundation.tuning import SCIR_DP_BUDGET as _DP_BUDGET

__all__ = [
    "SortedCumulativeIsotonic",
    "isotonic_regression_ranked",
    "lower_envelope",
    "evaluate_envelope",
]

EPS_PARAM = Param(
    "eps",
    1e-6,
    "float",
    "Added to every calibrated score before the row is normalised (keeps probabilities > 0).",
    minimum=0.0,
    maximum=1.0,
)


def mean_nll(probs, labels):
    with np.errstate(divide="ignore"):
        return float(-np.mean(np.log(probs[np.arange(len(labels)), labels])))


def isotonic_regression_ranked(c, r, y):
    """Least-squares isotonic regression of 0/1 outcomes on the ``(c, r)`` product order.

    Parameters
    ----------
    c : ndarray of shape (n_points,)
        Real coordinate.
    r : ndarray of shape (n_points,)
        Integer coordinate (a rank; few distinct values).
    y : ndarray of shape (n_points,)
        Outcomes in {0, 1}.

    Returns
    -------
    fitted : ndarray of shape (n_points,)
        The fit, non-decreasing in ``c`` for fixed ``r`` and in ``r`` for fixed ``c``.
    n_levels : int
        Number of level sets of the fit (leaves of the recursion).

    Notes
    -----
    The same fit minimises every proper scoring rule (in particular the binary
    NLL of the paper's Eq. 6) under these constraints (Barlow et al. 1972;
    paper App. D). Equal points ``(c, r)`` are pooled first.
    """
    c = np.asarray(c, dtype=np.float64)
    r = np.asarray(r, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    # Pool identical points; sort the pooled points by c (then r).
    order = np.lexsort((r, c))
    cs, rs = c[order], r[order]
    new = np.ones(len(cs), dtype=bool)
    new[1:] = (cs[1:] != cs[:-1]) | (rs[1:] != rs[:-1])
    group = np.cumsum(new) - 1
    w = np.bincount(group).astype(np.int64)
    s = np.bincount(group, weights=y[order]).astype(np.int64)
    pc, pr = cs[new], rs[new]
    crank = np.cumsum(np.r_[True, pc[1:] != pc[:-1]]) - 1  # dense rank of c
    fitted = np.empty(len(pc))
    n_levels = 0
    stack = [np.arange(len(pc))]
    while stack:
        idx = stack.pop()
        W, Y = int(w[idx].sum()), int(s[idx].sum())
        ri = pr[idx]
        if Y in (0, W) or len(idx) == 1:
            fitted[idx] = Y / W
            n_levels += 1
            continue
        if ri[0] == ri.min() == ri.max():  # one rank: a 1-D problem
            res = isotonic_regression(s[idx] / w[idx], weights=w[idx].astype(np.float64))
            fitted[idx] = res.x
            n_levels += len(res.blocks) - 1
            continue
        upper = _max_upper_set(crank[idx], ri, s[idx] * W - w[idx] * Y)
        if upper is None:
            fitted[idx] = Y / W
            n_levels += 1
            continue
        stack.append(idx[upper])
        stack.append(idx[~upper])
    return fitted[group][np.argsort(order)], n_levels


def _max_upper_set(crank, r, v):
    """Boolean mask of an upper set maximising ``sum(v)``, or None when the maximum is 0.

    ``crank`` is non-decreasing (points sorted by c); ``v`` holds exact integers.
    """
    m_local = np.cumsum(np.r_[0, crank[1:] != crank[:-1]])
    M = int(m_local[-1]) + 1
    rows, row_of = np.unique(r, return_inverse=True)
    by_row = np.argsort(row_of, kind="stable")
    starts = np.searchsorted(row_of[by_row], np.arange(len(rows) + 1))
    vf = v.astype(np.float64)

    def row_dp(t, incoming):
        pts = by_row[starts[t] : starts[t + 1]]
        a = np.bincount(m_local[pts], weights=vf[pts], minlength=M + 1)
        return np.cumsum(a[::-1])[::-1] + incoming

    def suffix_max(dp):
        return np.maximum.accumulate(dp[::-1])[::-1]

    seg = max(1, _DP_BUDGET // (M + 1))
    checkpoints = []  # (first row of segment, incoming suffix max)
    incoming = np.zeros(M + 1)
    kept = []
    for t in range(len(rows)):
        if t % seg == 0:
            checkpoints.append((t, incoming))
            kept = []
        dp = row_dp(t, incoming)
        kept.append(dp)
        incoming = suffix_max(dp)
    if incoming[0] <= 0:
        return None
    thresholds = np.empty(len(rows), dtype=np.int64)
    m = 0  # the last rank's threshold may be anything: start from the whole range
    for k in range(len(checkpoints) - 1, -1, -1):
        first, inc = checkpoints[k]
        last = checkpoints[k + 1][0] if k + 1 < len(checkpoints) else len(rows)
        if k < len(checkpoints) - 1:
            kept = []
            for t in range(first, last):
                dp = row_dp(t, inc)
                kept.append(dp)
                inc = suffix_max(dp)
        for t in range(last - 1, first - 1, -1):
            dp = kept[t - first]
            m = m + int(np.argmax(dp[m:]))
            thresholds[t] = m
    return m_local >= thresholds[row_of]


def lower_envelope(c, r, g, n_ranks):
    """Per-rank step functions of the monotone extension of a fit on the ``(c, r)`` order.

    The value at a new point is the largest fitted value among the training
    points it dominates (paper App. A.1, "Prediction on the Grid"); below every
    training point it is the smallest fitted value.

    Parameters
    ----------
    c, r, g : ndarray of shape (n_points,)
        Training points and their (isotonic) fitted values; ranks in ``1..n_ranks``.
    n_ranks : int

    Returns
    -------
    list of (knots, values)
        For rank ``r`` (index ``r - 1``): ``value = values[j]`` for
        ``knots[j] <= c < knots[j + 1]``; knots strictly increasing, values
        strictly increasing; empty arrays when no point lies at rank ``<= r``.
    """
    envelope = []
    knots, values = np.empty(0), np.empty(0)
    for rank in range(1, n_ranks + 1):
        sel = r == rank
        if sel.any():
            order = np.argsort(c[sel], kind="stable")
            rc, rg = c[sel][order], np.maximum.accumulate(g[sel][order])
            union = np.union1d(knots, rc)
            mine = _step(rc, rg, union)
            prev = _step(knots, values, union) if len(knots) else mine
            val = np.maximum(mine, prev)
            keep = np.r_[True, val[1:] > val[:-1]]
            knots, values = union[keep], val[keep]
        envelope.append((knots, values))
    return envelope


def _step(knots, values, x):
    """Right-continuous step function; -inf left of the first knot."""
    j = np.searchsorted(knots, x, side="right") - 1
    out = np.full(len(x), -np.inf)
    ok = j >= 0
    out[ok] = values[j[ok]]
    return out


def evaluate_envelope(knots, values, x, floor):
    """The envelope at ``x``; ``floor`` left of the first knot (or when there are no knots)."""
    if len(knots) == 0:
        return np.full(len(x), floor)
    out = _step(knots, values, x)
    out[out == -np.inf] = floor
    return out


def _sorted_cumulative(probs):
    """Descending order of every row (stable: ties keep column order) and its cumulative sums."""
    order = np.argsort(-probs, axis=1, kind="stable")
    ps = np.take_along_axis(probs, order, axis=1)
    return order, ps, np.cumsum(ps, axis=1)


@register
class SortedCumulativeIsotonic(Calibrator):
    """SCIR: bivariate isotonic regression of "label among the top r" on (top-r mass, r).

    Every calibration row gives ``L - 1`` points ``(c_r, r)``, ``c_r`` the sum of
    its ``r`` largest probabilities, with outcome ``1{y in top r}``. The fit
    ``G`` is the exact least-squares (equivalently NLL) isotonic regression on
    the product order (non-decreasing in ``c`` for fixed ``r`` and in ``r`` for
    fixed ``c``), computed by :func:`calcore.calibrators._scir.isotonic_regression_ranked`.
    The class at rank ``r`` then gets ``G(c_r, r) - G(c_{r-1}, r-1)`` with
    ``G(., 0) = 0`` and ``G(., L) = 1`` (non-negative, summing to 1).

    Parameters
    ----------
    eps : float, default 1e-6
        Added to every class before renormalising: ``(q + eps) / (1 + L eps)``.

    Notes
    -----
    New ``c`` values: ``G(c, r)`` is the largest fitted value among the training
    points ``(c', r')`` with ``c' <= c`` and ``r' <= r`` (a step function,
    monotone in both arguments), and the smallest fitted value below all of
    them (paper App. A.1, "Prediction on the Grid"). Classes with exactly equal
    probabilities in a row share the mean of their rank-wise predictions, so the
    output does not depend on the column order. SCIR is not order preserving.
    Fit cost: see the module notes.

    References
    ----------
    Arad & Rosset, Sec. 4.2, Eq. 6 and the prediction formula below it; App. A.1
    (Alg. 2/3, Prop. 4.1); Spouge, Wan & Wilbur (2003).
    """

    name = "scir"
    family = "isotonic"
    slow = True  # 20 s on 5,000 x 100
    description = "Sorted cumulative isotonic regression (exact 2-D isotonic fit on ranks)."
    title = "Sorted cumulative isotonic regression"
    use = "an exact 2-D isotonic fit on ranks; slow"
    parameters = (EPS_PARAM,)
    # per rank r = 1..L-1 a step function: knots (strictly increasing top-r masses) and values
    state_fields = {
        "knots": Items("L-1", Array((None,), order="increasing")),
        "values": Items("L-1", Array((None,), minimum=0.0, maximum=1.0, order="non-decreasing")),
        "floor": Number(minimum=0.0, maximum=1.0),
        "eps": Number(minimum=0.0, maximum=1.0),
    }

    def _check_saved_rules(self, state, *, path, n_classes):
        for r, (knots, values) in enumerate(zip(state["knots"], state["values"], strict=True)):
            if len(knots) != len(values):
                raise StateError(
                    f"{path}.values[{r}]",
                    f"must have one value per knot of rank {r + 1} ({len(knots)}); got "
                    f"{len(values)}",
                )

    def _fit(self, preds):
        n, L = preds.probs.shape
        order, _, cum = _sorted_cumulative(preds.probs)
        rank_y = np.argmax(order == preds.labels[:, None], axis=1)
        ranks = np.broadcast_to(np.arange(1, L), (n, L - 1))
        inside = (ranks > rank_y[:, None]).astype(np.int64)
        c = cum[:, :-1].ravel()
        fitted, n_levels = isotonic_regression_ranked(c, ranks.ravel(), inside.ravel())
        env = lower_envelope(c, ranks.ravel(), fitted, L - 1)
        state = {
            "knots": [k for k, _ in env],
            "values": [v for _, v in env],
            "floor": float(fitted.min()),
            "eps": self.params["eps"],
        }
        q = self._transform(preds, state)[0]
        info = {
            "n_points": int(c.size),
            "n_levels": int(n_levels),
            "sse": float(np.sum((fitted - inside.ravel()) ** 2)),
            "nll": mean_nll(q, preds.labels),
            "exact": True,
            "converged": True,
        }
        return state, info

    def _transform(self, preds, state):
        n, L = preds.probs.shape
        order, ps, cum = _sorted_cumulative(preds.probs)
        G = np.zeros((n, L + 1))
        G[:, L] = 1.0
        for r in range(1, L):
            knots, values = np.asarray(state["knots"][r - 1]), np.asarray(state["values"][r - 1])
            G[:, r] = evaluate_envelope(knots, values, cum[:, r - 1], state["floor"])
        q = np.maximum(np.diff(G, axis=1), 0.0)
        # classes tied in probability share their mean prediction
        group = np.cumsum(np.c_[np.zeros((n, 1), bool), ps[:, 1:] != ps[:, :-1]], axis=1)
        key = (group + np.arange(n)[:, None] * L).ravel()
        count = np.bincount(key)
        total = np.bincount(key, weights=q.ravel())
        mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
        q = mean[key].reshape(n, L)
        q = (q + state["eps"]) / (q.sum(axis=1, keepdims=True) + L * state["eps"])
        out = np.empty_like(q)
        np.put_along_axis(out, order, q, axis=1)
        return out, None

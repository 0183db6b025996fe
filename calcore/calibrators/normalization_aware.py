"""Normalization-aware isotonic calibrators: FIR, NA-FIR and SCIR (Arad & Rosset).

FIR and NA-FIR share one non-decreasing map ``g`` of a probability, applied to
every entry of a row and normalised: ``q_ij = (g(p_ij) + eps) / sum_l (g(p_il) + eps)``.
``g`` is stored as knots for :func:`numpy.interp`: both ends of every block of
its fit, constant on a block, linear between the last score of a block and the
first score of the next, constant beyond the outermost scores. Every training
score lies inside a block, so the stored map gives exactly the fitted values on
the training data. ``g`` is non-decreasing, so neither method ever reverses the
order of two classes, but equal block values can tie the top classes; they are
therefore not declared accuracy preserving.

SCIR fits a bivariate isotonic regression of "the label is among the top ``r``"
on (cumulative top-``r`` mass, ``r``) and predicts differences of it
(:mod:`calcore.calibrators._scir` holds the exact solver).

References
----------
Arad & Rosset, "Improving Multi-Class Calibration through Normalization-Aware
Isotonic Techniques": FIR Sec. 3.3 (Eq. 3 and its normalisation), NA-FIR Sec. 4.1
(Eq. 4-5, Alg. 1, App. A.2), SCIR Sec. 4.2 (Eq. 6, Alg. 2, App. A.1).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from scipy.optimize import isotonic_regression, minimize

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register
from calcore.calibrators._scir import EPS_PARAM, SortedCumulativeIsotonic, mean_nll
from calcore.calibrators._state import Array, Number
from calcore.foundation.errors import CalcoreWarning
from calcore.foundation.limits import MAX_ITERATIONS

__all__ = ["FlattenedIsotonic", "NormalizationAwareFlattenedIsotonic", "SortedCumulativeIsotonic"]


#: The saved map of FIR and NA-FIR: interpolation knots (strictly increasing scores), the
#: map's values there (non-decreasing, in [0, 1]) and the ``eps`` added before normalising.
FLAT_STATE = {
    "knots": Array(("M",), order="increasing", nonempty=True),
    "values": Array(("M",), minimum=0.0, maximum=1.0, order="non-decreasing"),
    "eps": Number(minimum=0.0, maximum=1.0),
}


def _flat_pava(preds):
    """FIR's PAVA on the flattened pairs (p_ij, 1{y_i = j}), ties in p pooled.

    Returns the distinct scores, their multiplicities, the unique index of every
    entry, the fitted value of every distinct score and the block starts.
    """
    p = preds.probs.ravel()
    onehot = np.zeros(preds.probs.shape)
    onehot[np.arange(preds.n_samples), preds.labels] = 1.0
    u, inv = np.unique(p, return_inverse=True)
    count = np.bincount(inv).astype(np.float64)
    pos = np.bincount(inv, weights=onehot.ravel(), minlength=len(u))
    res = isotonic_regression(pos / count, weights=count)
    return u, count, inv, res.x, np.asarray(res.blocks)


def _knots(u, starts, values):
    """Interpolation knots of a map constant on the blocks ``u[starts[b]:starts[b + 1]]``."""
    lo, hi = u[starts[:-1]], u[starts[1:] - 1]
    x = np.column_stack([lo, hi]).ravel()
    y = np.repeat(values, 2)
    keep = np.r_[True, x[1:] != x[:-1]]
    return x[keep], y[keep]


def _apply_flat(probs, knots, values, eps):
    """``(g(p) + eps)`` normalised per row; rows with sum 0 (only if eps = 0) keep the input row."""
    g = np.interp(probs, knots, values) + eps
    total = g.sum(axis=1, keepdims=True)
    out = np.array(probs, dtype=np.float64)
    np.divide(g, total, out=out, where=np.broadcast_to(total > 0, g.shape))
    return out


@register
class FlattenedIsotonic(Calibrator):
    """Flattened isotonic regression (FIR), normalised afterwards.

    One isotonic regression ``g`` on all ``n * L`` pairs ``(p_ij, 1{y_i = j})``
    (``scipy.optimize.isotonic_regression``; equal scores pooled first), then
    ``q_ij = (g(p_ij) + eps) / sum_l (g(p_il) + eps)``. ``g`` is stored as
    interpolation knots (see the module notes). With ``eps = 0`` a row whose
    ``g`` values are all 0 keeps its input probabilities.

    Parameters
    ----------
    eps : float, default 1e-6
        Added to ``g`` before normalising; ``g`` lies in [0, 1].

    References
    ----------
    Arad & Rosset, Sec. 3.3, Eq. 3 and the normalisation below it; Zhang,
    Kailkhura & Han (2020), "Mix-n-Match" (IRM is the same map with another
    normalisation).

    Examples
    --------
    >>> import calcore, numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = calcore.Predictions.from_probs(rng.dirichlet([1, 1, 1], 200), rng.integers(0, 3, 200))
    >>> q = FlattenedIsotonic().fit_transform(p)
    >>> bool(np.allclose(q.probs.sum(axis=1), 1))
    True
    """

    name = "fir"
    family = "isotonic"
    description = "Flattened isotonic regression on all (probability, one-hot) pairs, normalised."
    title = "Flattened isotonic regression"
    use = "one isotonic map of every (probability, label) pair, then normalised"
    parameters = (EPS_PARAM,)
    state_fields = FLAT_STATE

    def _fit(self, preds):
        u, count, _, fitted, starts = _flat_pava(preds)
        knots, values = _knots(u, starts, fitted[starts[:-1]])
        state = {"knots": knots, "values": values, "eps": self.params["eps"]}
        q = _apply_flat(preds.probs, knots, values, self.params["eps"])
        info = {
            "n_blocks": len(starts) - 1,
            "n_distinct_scores": len(u),
            "nll": mean_nll(q, preds.labels),
            "converged": True,
        }
        return state, info

    def _transform(self, preds, state):
        knots, values = np.asarray(state["knots"]), np.asarray(state["values"])
        return _apply_flat(preds.probs, knots, values, state["eps"]), None


def _split_blocks(count, starts, min_blocks):
    """Sub-block id of every distinct score: PAVA blocks cut into pieces of equal mass.

    Each block of mass ``m_b`` becomes ``ceil(m_b / T)`` pieces, ``T = ceil(total /
    min_blocks)`` (our version of the paper's ``split_blocks``, App. A.2); a single
    score is never cut, so a piece may be larger than ``T`` and some may be empty.
    """
    block = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    mass = np.bincount(block, weights=count)
    target = np.ceil(count.sum() / min_blocks)
    pieces = np.maximum(np.ceil(mass / target), 1.0)
    before = np.cumsum(count) - count - (np.cumsum(np.r_[0.0, mass])[block])
    piece = np.minimum(np.floor(before * pieces[block] / mass[block]), pieces[block] - 1)
    key = (np.cumsum(np.r_[0.0, pieces[:-1]])[block] + piece).astype(np.int64)
    return np.cumsum(np.r_[0, key[1:] != key[:-1]])


class _NAObjective:
    """Mean normalised NLL of block values ``exp(u)``, ``u`` non-decreasing, ``u[-1] = 0``.

    Variables: ``d[j] = u[j + 1] - u[j] >= 0``. With ``eps = 0`` the problem is
    convex in ``u`` (a linear term plus log-sum-exp), so a KKT point is global.
    Rows are aggregated into a sparse count matrix ``C[i, b]`` (the paper's ``C``,
    App. A.2): ``S = C @ (exp(u) + eps)``, gradient ``C.T @ (1 / S)``.
    """

    def __init__(self, sub, labels, n_blocks, eps):
        n, L = sub.shape
        self.n, self.eps = n, eps
        rows = np.repeat(np.arange(n), L)
        self.C = sparse.csr_matrix(
            (np.ones(n * L), (rows, sub.ravel())), shape=(n, n_blocks)
        ).tocsr()
        self.CT = self.C.T.tocsr()
        self.true_block = sub[np.arange(n), labels]
        self.true_count = np.bincount(self.true_block, minlength=n_blocks).astype(np.float64)

    @staticmethod
    def values(d):
        u = np.zeros(len(d) + 1)
        u[:-1] = -np.cumsum(d[::-1])[::-1]
        return np.exp(u)

    def nll_of_values(self, g):
        ge = g + self.eps
        return float(np.mean(np.log(self.C @ ge)) - np.mean(np.log(ge[self.true_block])))

    def __call__(self, d):
        v = self.values(d)
        ge = v + self.eps
        S = self.C @ ge
        f = float(np.mean(np.log(S)) - np.mean(np.log(ge[self.true_block])))
        grad_g = (self.CT @ (1.0 / S) - self.true_count / ge) / self.n
        grad_u = grad_g * v
        return f, -np.cumsum(grad_u)[:-1]


@register
class NormalizationAwareFlattenedIsotonic(Calibrator):
    """NA-FIR: the flattened isotonic map that minimises the NLL after normalisation.

    Minimises ``-mean_i log(q_{i, y_i})`` with ``q_ij = (g(p_ij) + eps) / sum_l
    (g(p_il) + eps)`` over non-decreasing ``g >= 0``, constant on FIR's PAVA
    blocks (cut into at least ``min_blocks`` pieces of equal mass), as the paper
    does. Instead of simulated annealing (Alg. 1) the block values are written
    ``g_b = exp(u_b)`` with ``u`` non-decreasing (``u_last = 0``, the scale is free)
    through non-negative increments, and L-BFGS-B is run on them with the
    analytic gradient, starting from FIR. For ``eps = 0`` this problem is convex
    in ``u``, so the optimiser reaches the global optimum over the block values;
    an annealer searching the same blocks cannot go lower.

    Parameters
    ----------
    eps : float, default 1e-6
        Added to ``g`` (whose largest block value is 1) before normalising, in the
        objective and in predictions alike.
    min_blocks : int, default 1
        Cut PAVA blocks until there are about this many (1: FIR's blocks only).
    max_iter : int, default 5000
        L-BFGS-B iteration limit.
    tol : float, default 1e-10
        L-BFGS-B tolerance on the projected gradient (and relative change).

    Notes
    -----
    ``fit_info`` holds ``nll_start`` (FIR's training NLL with the same ``eps``),
    ``nll_end``, ``converged``, ``iterations`` and the optimiser's ``message``.
    Cost per iteration: ``O(nnz(C))`` with ``nnz(C) <= n L``. Predictions
    interpolate ``g`` as described in the module notes.

    References
    ----------
    Arad & Rosset, Sec. 4.1, Eq. 4-5; Alg. 1 and App. A.2 (block structure, the
    count matrix ``C``).
    """

    name = "na-fir"
    family = "isotonic"
    slow = True  # seconds per fit on 5,000 x 100 (7 s measured)
    description = "Flattened isotonic map fitted for the NLL of the normalised rows."
    title = "Normalisation-aware isotonic regression"
    use = "a flattened isotonic map fitted for the log-loss; slow"
    parameters = (
        EPS_PARAM,
        # min_blocks: one L-BFGS-B variable per block (and never more blocks than distinct
        # scores); 100,000 keeps an iteration's vector work below its pass over the n x L entries
        Param(
            "min_blocks",
            1,
            "int",
            "Cut PAVA blocks into about this many blocks.",
            minimum=1,
            maximum=100_000,
        ),
        Param(
            "max_iter",
            5000,
            "int",
            "Iteration limit of L-BFGS-B.",
            minimum=1,
            maximum=MAX_ITERATIONS,
        ),
        # tol = 0 asks for a change below float64's resolution, so the fit never converges
        # and runs to max_iter (100 s on 50,000 x 100 rows against 10 s by default).
        Param("tol", 1e-10, "float", "Tolerance of L-BFGS-B.", minimum=1e-14, maximum=1e-2),
    )
    state_fields = FLAT_STATE

    def _fit(self, preds):
        eps = self.params["eps"]
        u, count, inv, fitted, starts = _flat_pava(preds)
        sub = _split_blocks(count, starts, self.params["min_blocks"])
        B = int(sub[-1]) + 1
        sub_starts = np.r_[np.flatnonzero(np.r_[True, sub[1:] != sub[:-1]]), len(u)]
        fir = fitted[sub_starts[:-1]]
        obj = _NAObjective(sub[inv].reshape(preds.probs.shape), preds.labels, B, eps)
        nll_start = obj.nll_of_values(fir)
        info = {"n_blocks": B, "nll_start": nll_start, "converged": True, "iterations": 0}
        values, nll_end = fir, nll_start
        if B > 1:
            res = minimize(
                obj,
                np.diff(np.log(np.maximum(fir / fir[-1], max(eps, 1e-12)))),
                jac=True,
                method="L-BFGS-B",
                bounds=[(0.0, None)] * (B - 1),
                options={
                    "maxiter": self.params["max_iter"],
                    "gtol": self.params["tol"],
                    "ftol": self.params["tol"] * 1e-3,
                    "maxcor": 20,
                },
            )
            info.update(
                converged=bool(res.success), iterations=int(res.nit), message=str(res.message)
            )
            if not res.success:
                warnings.warn(
                    f"na-fir: L-BFGS-B stopped before converging ({res.message}); the fit "
                    f"is the best point found. Raise max_iter or loosen tol.",
                    CalcoreWarning,
                    stacklevel=3,
                )
            candidate = obj.values(res.x)
            if obj.nll_of_values(candidate) <= nll_start:  # never worse than the FIR start
                values, nll_end = candidate, obj.nll_of_values(candidate)
        info["nll_end"] = nll_end
        knots, kv = _knots(u, sub_starts, values)
        return {"knots": knots, "values": kv, "eps": eps}, info

    def _transform(self, preds, state):
        knots, values = np.asarray(state["knots"]), np.asarray(state["values"])
        return _apply_flat(preds.probs, knots, values, state["eps"]), None

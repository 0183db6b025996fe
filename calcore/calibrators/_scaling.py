"""Temperature search and ensemble weights of :mod:`calcore.calibrators.temperature`.

Also :func:`log_scores`, the scores every parametric method works on.
Everything here takes clean float64 arrays (validated by the callers) and
returns plain numbers/arrays plus convergence facts; nothing here raises for
user input. A temperature optimum beyond the allowed range is clamped to the bound
and reported (:attr:`TemperatureFit.at_bound`), never an error.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from calcore.foundation.tuning import SCALING_BLOCK_ELEMENTS as _BLOCK_ELEMENTS
from calcore.predictions import Predictions

__all__ = [
    "PROB_FLOOR",
    "TemperatureFit",
    "log_scores",
    "fit_inverse_temperature",
    "EtsStatistics",
    "ets_statistics",
    "ets_probabilities",
    "ets_weights_mse",
    "ets_weights_nll",
    "warm_start_inverse_temperature",
]

#: Floor applied to probabilities before taking logs when no logits are available:
#: ``log(max(p, PROB_FLOOR))`` keeps exact zeros finite (about -690.8).
PROB_FLOOR = 1e-300


def log_scores(preds: Predictions) -> np.ndarray:
    """Logits when ``preds`` carries them, else ``log(max(probs, PROB_FLOOR))`` (float64)."""
    if preds.logits is not None:
        return preds.logits
    return np.log(np.maximum(preds.probs, PROB_FLOOR))


@dataclass(frozen=True)
class TemperatureFit:
    """Result of :func:`fit_inverse_temperature`: ``beta = 1/T`` and how it was found.

    ``at_bound`` is ``"min_temperature"`` or ``"max_temperature"`` when the NLL was
    still decreasing at that bound and ``T`` was clamped to it, else None.
    """

    beta: float
    nll: float
    converged: bool
    iterations: int
    message: str
    at_bound: str | None = None


def _mean(x, weights):
    """``mean(x)``, or with row weights normalised to mean 1, ``sum(w x) / sum(w)``."""
    return float(np.mean(x) if weights is None else np.dot(x, weights) / x.size)


def _temperature_terms(z, zmax, d_label, beta, weights=None):
    """Mean NLL of softmax(beta z) and its first two derivatives in beta (one blocked pass);
    weighted means with ``weights`` (normalised to mean 1)."""
    n, n_classes = z.shape
    step = max(1, _BLOCK_ELEMENTS // n_classes)
    d = np.empty((min(step, n), n_classes))
    e = np.empty_like(d)
    log_s, m1, m2 = np.empty(n), np.empty(n), np.empty(n)
    for start in range(0, n, step):
        rows = slice(start, start + step)
        k = min(step, n - start)
        dd, ee = d[:k], e[:k]
        np.subtract(z[rows], zmax[rows, None], out=dd)  # d <= 0, max 0: no overflow
        np.multiply(dd, beta, out=ee)
        np.exp(ee, out=ee)
        s = ee.sum(axis=1)
        log_s[rows] = np.log(s)
        m1[rows] = np.einsum("ij,ij->i", ee, dd) / s
        ee *= dd
        m2[rows] = np.einsum("ij,ij->i", ee, dd) / s
    nll = _mean(log_s - beta * d_label, weights)
    grad = _mean(m1 - d_label, weights)
    hess = _mean(m2 - m1 * m1, weights)
    return nll, grad, hess


def _newton_on_beta(z, labels, beta0, lo, hi, *, xtol, max_iter, zmax=None, weights=None):
    """Safeguarded Newton on the convex NLL(beta) inside the bracket [lo, hi].

    Stops when the Newton step is at most ``xtol * beta``, or when the next step,
    predicted from the last two (quadratic convergence: ``s_{k+1} ~ C s_k^2`` with
    ``C = |s_k| / s_{k-1}^2``), is at most ``xtol * beta / 10``; the second rule
    saves the pass over the data that would only confirm convergence.
    """
    zmax = z.max(axis=1) if zmax is None else zmax
    d_label = z[np.arange(z.shape[0]), labels] - zmax
    b_min, b_max = lo, hi
    tried_min = tried_max = False
    beta, nll = float(np.clip(beta0, lo, hi)), np.nan
    prev_step = None  # the last Newton step actually taken (None after a bisection/bound try)
    for it in range(1, max_iter + 1):
        nll, grad, hess = _temperature_terms(z, zmax, d_label, beta, weights)
        tried_min |= beta == b_min
        tried_max |= beta == b_max
        if grad > 0:
            hi = beta
        else:
            lo = beta
        if lo >= b_max:  # still decreasing at the largest allowed 1/T
            return TemperatureFit(beta, nll, False, it, "bound:min_temperature")
        if hi <= b_min:  # still increasing at the smallest allowed 1/T
            return TemperatureFit(beta, nll, False, it, "bound:max_temperature")
        if grad == 0.0:
            return TemperatureFit(beta, nll, True, it, "gradient is exactly zero")
        step = grad / hess if hess > 0 else np.inf
        new = beta - step
        if abs(step) <= xtol * beta and lo <= new <= hi:
            return TemperatureFit(new, nll, True, it, f"Newton step {abs(step):.2e} <= xtol*beta")
        if prev_step is not None and lo <= new <= hi and abs(step) < 0.1 * abs(prev_step):
            predicted = abs(step) ** 3 / prev_step**2
            if predicted <= 0.1 * xtol * beta:
                return TemperatureFit(
                    new,
                    nll,
                    True,
                    it,
                    f"Newton step {abs(step):.2e}, next one predicted {predicted:.1e} "
                    f"<= xtol*beta/10 (quadratic convergence)",
                )
        # Newton steps that do not shrink (NLL ~ c exp(-m beta) on separable data gives
        # constant steps of 1/m): test the bound it is heading to once, instead of crawling.
        crawling = prev_step is not None and abs(step) >= 0.5 * abs(prev_step)
        prev_step = step if lo < new < hi else None
        if crawling and grad < 0 and hi == b_max and not tried_max:
            new, prev_step = b_max, None
        elif crawling and grad > 0 and lo == b_min and not tried_min:
            new, prev_step = b_min, None
        elif not lo < new < hi:  # Newton left the bracket: test the bound once, else bisect
            if grad < 0 and hi == b_max and not tried_max:
                new = b_max
            elif grad > 0 and lo == b_min and not tried_min:
                new = b_min
            else:
                new = float(np.sqrt(lo * hi))  # bisection on log beta
        beta = float(new)
    return TemperatureFit(beta, nll, False, max_iter, f"no convergence in {max_iter} iterations")


def _any_varying_row(z, zmax) -> bool:
    """Whether some row of ``z`` is not constant; looks at row blocks and stops at the first."""
    step = max(1, 4 * _BLOCK_ELEMENTS // z.shape[1])
    return any(
        np.any(zmax[start : start + step] > z[start : start + step].min(axis=1))
        for start in range(0, z.shape[0], step)
    )


def _bound_message(which: str, t_bound: float) -> str:
    if which == "max_temperature":
        return (
            f"temperature hit the upper bound {t_bound:g} (NLL still decreasing as T grows: the "
            "scores carry (almost) no signal about the labels, or are over-confident beyond the "
            f"allowed range); T clamped to {t_bound:g}. Widen 'max_temperature' to let it go on."
        )
    return (
        f"temperature hit the lower bound {t_bound:g} (NLL still decreasing as T shrinks: the "
        "calibration data are (nearly) separable by the scores, so sharper is always better); "
        f"T clamped to {t_bound:g}. Widen 'min_temperature' to let it go on."
    )


def fit_inverse_temperature(
    z, labels, *, t_min, t_max, xtol=1e-9, max_iter=100, owner="ts", weights=None
):
    """NLL-optimal ``beta = 1/T`` for ``softmax(beta * z)``, bracketed by ``[1/t_max, 1/t_min]``.

    With row ``weights`` (frequency weights) the NLL is the weighted mean, so integer
    weights give the temperature of the repeated rows; rows of weight 0 are left out.

    The mean NLL is convex in ``beta`` (its second derivative is the mean
    variance of ``z`` under ``softmax(beta z)``), strictly so unless every row
    is constant, so the optimum is unique. A Newton pass on a row subsample
    gives the starting point; safeguarded Newton on all rows (with bisection
    when a step leaves the bracket) then converges quadratically.

    Never raises for valid scores. When the NLL still decreases at a bound (perfectly
    separable data push ``T`` to 0, scores without signal push it to infinity), ``T`` is
    clamped to that bound: the optimum of the bounded problem, reported with
    ``converged=True``, ``at_bound`` set and a message saying so. When every row is
    constant the NLL does not depend on ``T``; ``T = 1`` (clipped into the bounds) is
    returned with a message.
    """
    if weights is not None:
        keep = weights > 0
        if not keep.all():
            z, labels, weights = z[keep], labels[keep], weights[keep]
        weights = weights / weights.mean()
    n, n_classes = z.shape
    zmax = z.max(axis=1)
    if not _any_varying_row(z, zmax):
        beta = 1.0 / float(np.clip(1.0, t_min, t_max))
        return TemperatureFit(
            beta,
            float(np.log(n_classes)),
            True,
            0,
            f"every row of the scores is constant, so the likelihood does not depend on the "
            f"temperature (every T gives the uniform prediction); T left at {1.0 / beta:g}.",
        )
    lo, hi = 1.0 / t_max, 1.0 / t_min
    beta0, iters = 1.0, 0
    stride = max(1, (n * n_classes) // 5_000_000)
    if stride > 1:  # cheap warm start on every stride-th row
        sub = _newton_on_beta(
            z[::stride],
            labels[::stride],
            1.0,
            lo,
            hi,
            xtol=1e-4,
            max_iter=60,
            zmax=zmax[::stride],
            weights=None if weights is None else weights[::stride] / weights[::stride].mean(),
        )
        beta0, iters = sub.beta, sub.iterations
    fit = _newton_on_beta(
        z, labels, beta0, lo, hi, xtol=xtol, max_iter=max_iter, zmax=zmax, weights=weights
    )
    if fit.message.startswith("bound:"):
        which = fit.message.split(":")[1]
        t_bound = t_min if which == "min_temperature" else t_max
        beta = 1.0 / t_bound  # the search stops exactly on the bound; state it exactly
        return TemperatureFit(
            beta, fit.nll, True, fit.iterations + iters, _bound_message(which, t_bound), which
        )
    return TemperatureFit(
        fit.beta, fit.nll, fit.converged, fit.iterations, f"{fit.message} (+{iters} warm-start)"
    )


def warm_start_inverse_temperature(z, labels, *, t_min=0.01, t_max=100.0, weights=None) -> float:
    """The NLL-optimal ``1/T`` of :func:`fit_inverse_temperature`, as a starting point only
    (weighted NLL with positive row ``weights``).

    Never raises: an optimum beyond a bound gives the bound, constant rows give 1.
    """
    zmax = z.max(axis=1)
    if not _any_varying_row(z, zmax):
        return 1.0
    lo, hi = 1.0 / t_max, 1.0 / t_min
    if weights is not None:  # normalised to mean 1, as _temperature_terms expects
        weights = np.asarray(weights, dtype=np.float64) * (z.shape[0] / float(np.sum(weights)))
    fit = _newton_on_beta(
        z, labels, 1.0, lo, hi, xtol=1e-6, max_iter=50, zmax=zmax, weights=weights
    )
    return float(fit.beta)


@dataclass(frozen=True)
class EtsStatistics:
    """What the ETS weight fits need from ``p_t = softmax(z / t)`` and ``p_1 = softmax(z)``.

    ``gram`` holds the row-averaged dot products ``mean_i <p_t, p_t>``,
    ``mean_i <p_t, p_1>``, ``mean_i <p_1, p_1>``; ``label_probs`` the columns
    ``p_t[i, y_i]``, ``p_1[i, y_i]`` (shape ``(n, 2)``).
    """

    s_tt: float
    s_t1: float
    s_11: float
    label_probs: np.ndarray
    n_classes: int


def _softmax_block(x, out):
    """``scipy.special.softmax(x, axis=1)`` into ``out``, same operations, no temporaries."""
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


def _row_blocks(n, n_classes):
    step = max(1, _BLOCK_ELEMENTS // n_classes)
    return [slice(start, min(start + step, n)) for start in range(0, n, step)], step


def ets_statistics(z, p_1, labels, temperature) -> EtsStatistics:
    """:class:`EtsStatistics` in one pass over row blocks (``p_t`` is never stored whole).

    ``z`` are the scores (:func:`log_scores`), ``p_1`` their softmax
    (``preds.probs``). Per block, ``e = exp((z - max z) / t)`` and its row sums
    ``s`` give ``<p_t, p_t> = <e, e> / s^2`` and ``<p_t, p_1> = <e, p_1> / s``
    without normalising ``e`` (one pass fewer than forming ``p_t``).
    """
    n, n_classes = z.shape
    blocks, step = _row_blocks(n, n_classes)
    e_buf = np.empty((min(step, n), n_classes))
    label_probs = np.empty((n, 2))
    beta = 1.0 / temperature
    s_tt = s_t1 = s_11 = 0.0
    for rows in blocks:
        k = rows.stop - rows.start
        e, zb, p1 = e_buf[:k], z[rows], p_1[rows]
        np.subtract(zb, zb.max(axis=1, keepdims=True), out=e)  # <= 0: exp never overflows
        e *= beta
        np.exp(e, out=e)
        total = e.sum(axis=1)
        s_tt += float(np.sum(np.einsum("ij,ij->i", e, e) / (total * total)))
        s_t1 += float(np.sum(np.einsum("ij,ij->i", e, p1) / total))
        s_11 += float(np.einsum("ij,ij->", p1, p1))
        at = np.arange(k), labels[rows]
        label_probs[rows, 0] = e[at] / total
        label_probs[rows, 1] = p1[at]
    return EtsStatistics(s_tt / n, s_t1 / n, s_11 / n, label_probs, n_classes)


def ets_probabilities(z, p_1, temperature, weights) -> np.ndarray:
    """``w1 softmax(z / t) + w2 p_1 + w3 / L`` on row blocks, into one new array.

    The same operations in the same order as the unblocked
    ``w1 * scipy.special.softmax(z / t, axis=1) + w2 * p_1 + w3 / L`` (so the
    same bits), without its four full-size temporaries.
    """
    w1, w2, w3 = weights
    n, n_classes = z.shape
    blocks, step = _row_blocks(n, n_classes)
    out = np.empty((n, n_classes))
    x_buf, tmp_buf = np.empty((min(step, n), n_classes)), np.empty((min(step, n), n_classes))
    uniform = w3 / n_classes
    for rows in blocks:
        k = rows.stop - rows.start
        x, tmp, block = x_buf[:k], tmp_buf[:k], out[rows]
        np.divide(z[rows], temperature, out=x)
        _softmax_block(x, tmp)
        np.multiply(w1, tmp, out=block)
        np.multiply(w2, p_1[rows], out=tmp)
        block += tmp
        block += uniform
    return out


def ets_weights_mse(stats: EtsStatistics):
    """ETS weights minimising the mean squared error, solved exactly over the 2-simplex.

    The loss ``mean ||w1 p_t + w2 p_1 + w3/L - e_y||^2`` is a convex quadratic
    ``w'Gw - 2c'w + 1``; its minimum over the simplex is the best of the face-wise
    equality-constrained minima that are feasible (KKT on each of the 7 faces).
    Solving the 7 small KKT systems directly is exact; a generic solver would only
    approximate this 3-variable problem.
    """
    inv_l = 1.0 / stats.n_classes
    s_tt, s_t1, s_11 = stats.s_tt, stats.s_t1, stats.s_11
    gram = np.array([[s_tt, s_t1, inv_l], [s_t1, s_11, inv_l], [inv_l, inv_l, inv_l]])
    mean_label = stats.label_probs.mean(axis=0)
    lin = np.array([mean_label[0], mean_label[1], inv_l])
    best_w, best_loss = None, np.inf
    for size in (1, 2, 3):
        for face in itertools.combinations(range(3), size):
            idx = list(face)
            kkt = np.zeros((size + 1, size + 1))
            kkt[:size, :size] = 2 * gram[np.ix_(idx, idx)]
            kkt[:size, size] = kkt[size, :size] = 1.0
            sol = np.linalg.lstsq(kkt, np.append(2 * lin[idx], 1.0), rcond=None)[0]
            w = np.zeros(3)
            w[idx] = sol[:size]
            if np.any(w < -1e-12):
                continue
            w = np.clip(w, 0.0, None)
            w /= w.sum()
            loss = float(w @ gram @ w - 2 * lin @ w + 1.0)
            if loss < best_loss - 1e-15:
                best_w, best_loss = w, loss
    return best_w, best_loss


def ets_weights_nll(stats: EtsStatistics, *, max_iter):
    """ETS weights minimising the mean NLL ``-mean log(w . a_i)`` over the simplex (SLSQP)."""
    n = stats.label_probs.shape[0]
    a = np.column_stack([stats.label_probs, np.full(n, 1.0 / stats.n_classes)])

    def loss(w):
        q = np.maximum(a @ w, PROB_FLOOR)
        return float(-np.mean(np.log(q))), -(a / q[:, None]).mean(axis=0)

    res = minimize(
        loss,
        np.full(3, 1.0 / 3),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * 3,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(3)}],
        options={"maxiter": max_iter, "ftol": 1e-12},
    )
    w = np.clip(res.x, 0.0, None)
    return w / w.sum(), res

"""Penalised logistic regressions behind the parametric calibrators.

* :func:`fit_affine_softmax`: ``softmax(x W^T + b)`` with a separable quadratic
  penalty (vector scaling, matrix scaling, Dirichlet calibration with ODIR);
* :func:`fit_binary_logistic`: ``sigmoid(features @ coef + c)`` (Platt, beta).

Both minimise with ``scipy.optimize.minimize(method="L-BFGS-B")`` and analytic
gradients, on clean float64 arrays validated by the callers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from calcore.calibrators._scaling import warm_start_inverse_temperature
from calcore.foundation.threads import single_threaded_blas

__all__ = ["AffinePenalty", "affine_logits", "affine_objective", "fit_affine_softmax"]
__all__ += ["fit_binary_logistic"]


def affine_logits(x, weights, bias):
    """``x W^T + b`` with ``weights`` a vector (diagonal W) or a matrix (full W)."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim == 1:
        return x * weights + np.asarray(bias)
    return x @ weights.T + np.asarray(bias)


@dataclass(frozen=True)
class AffinePenalty:
    """``off * sum_{i != j} W_ij^2 + diag * sum_i (W_ii - 1)^2 + bias * sum_j b_j^2``.

    For a diagonal ``W`` (vector scaling) only the last two terms exist.
    """

    off: float = 0.0
    diag: float = 0.0
    bias: float = 0.0

    def weights(self, n_classes: int) -> np.ndarray:
        """The per-entry weights of ``(W - I)^2`` as an ``(L, L)`` matrix."""
        omega = np.full((n_classes, n_classes), float(self.off))
        np.fill_diagonal(omega, self.diag)
        return omega


class _SoftmaxRegression:
    """Mean NLL of ``softmax(x W^T + b)`` and its gradient, with reused work buffers.

    One evaluation: one product ``x W^T`` (an elementwise product for a diagonal
    ``W``), one ``exp``, one product ``G^T x`` (numpy passes the transpose to BLAS
    as a flag, no copy). ``x`` is made C-contiguous float64 once. With row
    ``weights`` (frequency weights) the mean is ``sum(w * nll) / sum(w)``, so integer
    weights give the objective of the repeated rows.
    """

    def __init__(self, x, labels, *, diagonal: bool, weights=None):
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.labels = np.asarray(labels, dtype=np.intp)
        self.diagonal = diagonal
        n, n_classes = self.x.shape
        self.rows = np.arange(n)
        self.z = np.empty((n, n_classes))
        self.gw = np.empty(n_classes if diagonal else (n_classes, n_classes))
        # Each row's share of the weighted mean, w / sum(w) (None: the plain mean).
        self.share = (
            None
            if weights is None
            else np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
        )

    def __call__(self, w, b):
        x, z, rows = self.x, self.z, self.rows
        if self.diagonal:
            np.multiply(x, w, out=z)
        else:
            np.matmul(x, w.T, out=z)
        z += b
        z -= z.max(axis=1, keepdims=True)  # log-sum-exp shift: exp never overflows
        z_label = z[rows, self.labels]
        np.exp(z, out=z)
        total = z.sum(axis=1)
        share = self.share
        if share is None:
            n = x.shape[0]
            nll = float(np.mean(np.log(total) - z_label))
            z *= (1.0 / (n * total))[:, None]  # softmax / n
            z[rows, self.labels] -= 1.0 / n  # (softmax - onehot) / n
        else:
            nll = float(np.dot(share, np.log(total) - z_label))
            z *= (share / total)[:, None]  # softmax * w / sum(w)
            z[rows, self.labels] -= share  # (softmax - onehot) * w / sum(w)
        gb = z.sum(axis=0)
        if self.diagonal:
            np.einsum("ij,ij->j", z, x, out=self.gw)
        else:
            np.matmul(z.T, x, out=self.gw)
        return nll, self.gw, gb


def _representative(w, b, omega, penalty: AffinePenalty, diagonal: bool):
    """The parameters with the lowest penalty among those giving the same probabilities.

    ``softmax`` is unchanged by adding the same number to every logit of a row, so
    ``(W + 1 v^T, b + c 1)`` predicts exactly as ``(W, b)`` for every ``v, c``.
    The penalty, a weighted sum of squares, is lowest at the weighted column means
    ``v_j = -sum_i omega_ij (W_ij - I_ij) / sum_i omega_ij`` and at ``c = -mean(b)``.
    A diagonal ``W`` has only the bias shift.
    """
    if penalty.bias > 0:
        b = b - b.mean()
    if not diagonal:
        column_weight = omega.sum(axis=0)
        if np.any(column_weight > 0):
            dev = w - np.eye(w.shape[0])
            shift = np.divide(
                -(omega * dev).sum(axis=0),
                column_weight,
                out=np.zeros(w.shape[0]),
                where=column_weight > 0,
            )
            w = w + shift[None, :]
    return w, b


def affine_objective(x, labels, *, diagonal: bool, penalty: AffinePenalty, weights=None):
    """The penalised mean NLL of :func:`fit_affine_softmax` as ``f(W, b) -> (value, dW, db)``.

    This is the plain objective (no reparametrisation), for checking a fit's
    first-order condition.
    """
    nll = _SoftmaxRegression(x, labels, diagonal=diagonal, weights=weights)
    n_classes = nll.x.shape[1]
    omega = None if diagonal else penalty.weights(n_classes)

    def objective(w, b):
        w, b = np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)
        value, gw, gb = nll(w, b)
        gw, gb = gw.copy(), gb + 2 * penalty.bias * b
        if diagonal:
            value += penalty.diag * float(np.sum((w - 1.0) ** 2))
            gw += 2 * penalty.diag * (w - 1.0)
        else:
            dev = w - np.eye(n_classes)
            value += float(np.sum(omega * dev * dev))
            gw += 2 * omega * dev
        value += penalty.bias * float(b @ b)
        return value, gw, gb

    return objective


def fit_affine_softmax(
    x,
    labels,
    *,
    diagonal: bool,
    penalty: AffinePenalty,
    max_iter: int,
    warm_start: bool = True,
    weights=None,
):
    """Penalised multinomial logistic regression ``softmax(x W^T + b)`` (L-BFGS-B).

    Minimises ``mean NLL + penalty(W, b)`` (see :class:`AffinePenalty`); with row
    ``weights`` the weighted mean ``sum(w NLL) / sum(w)`` (integer weights: the repeated
    rows' objective).

    Parameters
    ----------
    x : ndarray of shape (n_samples, n_classes)
        Scores (logits or log-probabilities).
    labels : ndarray of shape (n_samples,)
    diagonal : bool
        ``W`` diagonal (vector scaling) or full.
    penalty : AffinePenalty
    max_iter : int
        L-BFGS-B iteration limit (function evaluations: twice that).
    warm_start : bool, default True
        Start at temperature scaling, ``W = I / T`` and ``b = 0`` with ``T`` the
        NLL-optimal temperature of ``x`` (a 1-D Newton search, clipped to
        ``[0.01, 100]``); otherwise at the identity ``W = I``.
    weights : ndarray of shape (n_samples,), optional
        Positive row weights (frequency weights).

    Returns
    -------
    weights : ndarray of shape (n_classes,) or (n_classes, n_classes)
    bias : ndarray of shape (n_classes,)
    result : scipy.optimize.OptimizeResult
        ``result.fun`` is the penalised objective at the returned parameters.

    Notes
    -----
    Speed without changing the optimum:

    * The NLL is flat along ``(W + 1 v^T, b + c 1)`` (softmax ignores a common
      shift of a row's logits), so the penalty alone fixes those ``L + 1``
      directions, with weights as small as ``1 / (L (L - 1))`` for ODIR, and
      L-BFGS-B crawls along them. The optimiser therefore minimises
      ``NLL(W, b) + penalty(P(W, b))``, with ``P`` the lowest-penalty parameters
      giving the same probabilities (a closed form, see ``_representative``), and
      returns ``P`` of its solution. Both problems have the same minimum value,
      and ``P`` of a minimiser of the second minimises the first (since
      ``penalty(P(theta)) <= penalty(theta)``). By the envelope theorem the
      gradient of ``penalty(P(.))`` is the penalty gradient at ``P(theta)``. On
      5,000 x 100 this halves the L-BFGS-B iterations needed for a gradient of
      1e-6 (407 instead of 873).
    * The temperature-scaling warm start saves about another 10 %.
    * Each evaluation costs two float64 GEMMs and one ``exp`` on reused
      buffers, and BLAS runs on one thread
      (:func:`calcore.foundation.threads.single_threaded_blas`).

    References
    ----------
    Guo et al. (2017), Sec. 4.2 (vector and matrix scaling); Kull et al. (2019),
    "Beyond temperature scaling", Eq. 5 and Sec. 4 (ODIR); Nocedal & Wright
    (2006), Ch. 7 (L-BFGS).
    """
    nll = _SoftmaxRegression(x, labels, diagonal=diagonal, weights=weights)
    n_classes = nll.x.shape[1]
    omega = penalty.weights(n_classes)
    eye = np.eye(n_classes)
    k = n_classes if diagonal else n_classes * n_classes

    def unpack(theta):
        return (theta[:k] if diagonal else theta[:k].reshape(n_classes, n_classes)), theta[k:]

    def objective(theta):
        w, b = unpack(theta)
        value, gw, gb = nll(w, b)
        w_rep, b_rep = _representative(w, b, omega, penalty, diagonal)
        grad = np.empty_like(theta)
        if diagonal:
            dev = w_rep - 1.0
            value += penalty.diag * float(dev @ dev)
            grad[:k] = gw + 2 * penalty.diag * dev
        else:
            dev = w_rep - eye
            weighted = omega * dev
            value += float(np.sum(weighted * dev))
            np.add(gw, 2 * weighted, out=grad[:k].reshape(n_classes, n_classes))
        value += penalty.bias * float(b_rep @ b_rep)
        grad[k:] = gb + 2 * penalty.bias * b_rep
        return value, grad

    scale = 1.0
    if warm_start:
        scale = warm_start_inverse_temperature(nll.x, nll.labels, weights=weights)
    w0 = np.full(n_classes, scale) if diagonal else scale * eye.ravel()
    theta0 = np.concatenate([w0, np.zeros(n_classes)])
    with single_threaded_blas():
        res = minimize(
            objective,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 2.2e-9, "gtol": 1e-5},
        )
    w, b = _representative(*unpack(res.x), omega, penalty, diagonal)
    return w, b, res


def fit_binary_logistic(features, targets, *, x0, bounds=None, max_iter=1000, weights=None):
    """Mean log-loss ``sigmoid(features @ coef + intercept)`` vs soft targets in [0, 1]; L-BFGS-B.

    With row ``weights`` (frequency weights) the mean is ``sum(w loss) / sum(w)``, so
    integer weights give the repeated rows' objective. Returns ``(coef, intercept,
    scipy OptimizeResult)``.
    """
    n, k = features.shape
    design = np.column_stack([features, np.ones(n)])
    share = None if weights is None else np.asarray(weights, np.float64) / float(np.sum(weights))

    def objective(theta):
        eta = design @ theta
        loss_i = targets * log_expit(eta) + (1.0 - targets) * log_expit(-eta)
        if share is None:
            return float(-np.mean(loss_i)), design.T @ (expit(eta) - targets) / n
        return float(-np.dot(share, loss_i)), design.T @ (share * (expit(eta) - targets))

    res = minimize(
        objective,
        np.asarray(x0, dtype=np.float64),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": 1e-14, "gtol": 1e-9},
    )
    return res.x[:k], float(res.x[k]), res

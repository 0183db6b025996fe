"""Solving the Dirichlet concentration of a fake classifier for a target accuracy."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaincinv, logsumexp

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import ROWS
from calcore.simulate._maps import TrueCalibrationMap

__all__ = ["concentration_for_accuracy"]


def _check_n(n) -> int:
    return ROWS.check(n, "n_samples")


def _crn_accuracy(log_a: float, true_map: TrueCalibrationMap, u1, u2) -> float:
    """Accuracy at concentration ``exp(log_a)`` from fixed uniforms (smooth in ``a``)."""
    a = np.exp(log_a)
    log_g = np.log(gammaincinv(a + 1.0, u1)) + np.log(u2) / a
    log_p = log_g - logsumexp(log_g, axis=1, keepdims=True)
    log_pi = true_map.log_apply(log_p)
    top = np.argmax(log_p, axis=1)
    return float(np.mean(np.exp(log_pi[np.arange(log_p.shape[0]), top])))


def concentration_for_accuracy(
    accuracy: float, true_map: TrueCalibrationMap, *, n_samples: int = 20_000, seed: int = 0
) -> float:
    """The symmetric Dirichlet concentration ``a`` whose predictions have a given accuracy.

    Solves ``E[pi(p)_{argmax p}] = accuracy`` for ``p ~ Dirichlet(a, ..., a)`` by
    Brent's method on a common-random-numbers Monte Carlo estimate (inverse-CDF
    gamma draws, so the estimate is continuous in ``a``), over ``a`` in [0.01, 100].

    Parameters
    ----------
    accuracy : float
        Target in (1/L, 1).
    true_map : TrueCalibrationMap
    n_samples : int, default 20000
        Monte Carlo size; the achieved accuracy is within about ``1/sqrt(n_samples)``.
    seed : int, default 0

    Returns
    -------
    float

    Raises
    ------
    CalcoreError
        When the target is outside the range reachable with ``a`` in [0.01, 100].
    """
    L = true_map.n_classes
    rng = np.random.default_rng(seed)
    u1 = rng.random((_check_n(n_samples), L))
    u2 = 1.0 - rng.random((n_samples, L))
    lo, hi = np.log(100.0), np.log(0.01)
    acc_lo, acc_hi = (_crn_accuracy(v, true_map, u1, u2) for v in (lo, hi))
    target = float(accuracy)
    if not (min(acc_lo, acc_hi) < target < max(acc_lo, acc_hi)):
        raise CalcoreError(
            f"accuracy {accuracy!r} is not reachable with this map and a symmetric Dirichlet; "
            f"the reachable range is ({min(acc_lo, acc_hi):.3f}, {max(acc_lo, acc_hi):.3f})."
        )
    root = brentq(lambda v: _crn_accuracy(v, true_map, u1, u2) - target, hi, lo, xtol=1e-6)
    return float(np.exp(root))

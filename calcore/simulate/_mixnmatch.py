"""Exact (quadrature) calibration errors of the Mix-n-Match synthetic problem."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.special import expit

from calcore.foundation.errors import CalcoreError
from calcore.simulate._generators import MixNMatchSimulator

__all__ = ["mix_n_match_true_ece", "mix_n_match_conf_ece", "mix_n_match_accuracy"]

_X_RANGE = 40.0  # |x| beyond this carries less than 1e-300 of the mixture density
_HALF_INV_SQRT_2PI = 0.5 / np.sqrt(2.0 * np.pi)
_QUAD = {"epsabs": 1e-13, "epsrel": 1e-11, "limit": 400}


def mixnmatch_density(x):
    """Marginal density of X: an equal mixture of N(-1, 1) and N(1, 1) (Eq. 13)."""
    return (np.exp(-0.5 * (x + 1.0) ** 2) + np.exp(-0.5 * (x - 1.0) ** 2)) * _HALF_INV_SQRT_2PI


def _check(sim) -> MixNMatchSimulator:
    if not isinstance(sim, MixNMatchSimulator):
        raise CalcoreError(f"expected a MixNMatchSimulator; got {type(sim)!r}.")
    return sim


def _roots(f, lo: float, hi: float, n_grid: int = 4001) -> list[float]:
    """Sign changes of ``f`` on a grid of ``[lo, hi]``, refined by Brent's method."""
    grid = np.linspace(lo, hi, n_grid)
    vals = f(grid)
    out = []
    for i in np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0):
        out.append(brentq(f, grid[i], grid[i + 1], xtol=1e-14))
    return out


def mix_n_match_true_ece(simulator, *, order: float = 1.0) -> float:
    """``E |z_1 - pi_1(z)|^d`` of the Mix-n-Match problem, by adaptive quadrature.

    This is the paper's ground truth (App. E.1) and, for this binary problem, the
    top-label ECE^d and the class-wise ECE^d (both classes give the same gap).
    The canonical ECE^d of Eq. 2 (``E ||z - pi(z)||_d^d`` over both coordinates)
    is twice this value. The integrand ``|sigma(b0 + b1 x) - sigma(-2x)|^d p(x)``
    is split at its only kink ``x* = -b0 / (b1 + 2)``.

    Parameters
    ----------
    simulator : MixNMatchSimulator
    order : float, default 1
        The power ``d >= 1`` (no d-th root).

    Returns
    -------
    float
        Accurate to about 1e-11 (quadrature tolerance).

    References
    ----------
    Zhang, Kailkhura, Han (2020), Mix-n-Match, ICML, Eq. 2, Eq. 13-14 and App. E.1.
    Vaicenavicius et al. (2019), "Evaluating model calibration in classification", AISTATS.

    Examples
    --------
    >>> from calcore.simulate import mix_n_match_simulator
    >>> round(mix_n_match_true_ece(mix_n_match_simulator(1)), 6)
    0.074443
    """
    sim = _check(simulator)
    d = float(order)
    if not d >= 1:
        raise CalcoreError(f"order must be >= 1; got {order!r}.")
    b0, b1 = sim.beta0, sim.beta1

    def integrand(x):
        return np.abs(expit(b0 + b1 * x) - expit(-2.0 * x)) ** d * mixnmatch_density(x)

    points = [-_X_RANGE, _X_RANGE]
    if b1 != -2.0 and abs(-b0 / (b1 + 2.0)) < _X_RANGE:
        points.insert(1, -b0 / (b1 + 2.0))
    return float(sum(quad(integrand, lo, hi, **_QUAD)[0] for lo, hi in pairwise(points)))


def _by_score(sim: MixNMatchSimulator):
    """For the score logit ``s >= 0`` (class 0 predicted with confidence sigma(s)):
    the two inputs with confidence sigma(s) and their contributions."""
    b0, b1 = sim.beta0, sim.beta1

    def parts(s):
        x, x2 = (s - b0) / b1, (-s - b0) / b1  # class 0 predicted at x, class 1 at x2
        f, f2 = mixnmatch_density(x), mixnmatch_density(x2)
        correct = f * expit(-2.0 * x) + f2 * (1.0 - expit(-2.0 * x2))
        return f + f2, correct

    return parts, abs(b1)


def mix_n_match_conf_ece(simulator) -> float:
    """Confidence ECE ``E |h - P(correct | h)|`` of the Mix-n-Match problem (quadrature).

    The confidence ``h = max(z_1, 1 - z_1)`` merges two inputs with different
    gaps, so this is at most :func:`mix_n_match_true_ece` (order 1), not equal to it.
    Integrated over the score logit ``s = |b0 + b1 x|``, with the kinks located
    numerically and passed to the integrator.

    References
    ----------
    Zhang, Kailkhura, Han (2020), Mix-n-Match, App. E.1; Guo et al. (2017), Sec. 2 (ECE).
    """
    sim = _check(simulator)
    parts, jac = _by_score(sim)

    def signed(s):
        mass, correct = parts(s)
        return expit(s) * mass - correct

    hi = _X_RANGE * jac + abs(sim.beta0)
    points = [0.0, *_roots(signed, 0.0, hi), hi]
    total = sum(quad(lambda s: np.abs(signed(s)), a, b, **_QUAD)[0] for a, b in pairwise(points))
    return float(total / jac)


def mix_n_match_accuracy(simulator) -> float:
    """``P(argmax z = Y)`` of the Mix-n-Match problem, by quadrature."""
    sim = _check(simulator)
    parts, jac = _by_score(sim)
    hi = _X_RANGE * jac + abs(sim.beta0)
    return float(quad(lambda s: parts(s)[1], 0.0, hi, **_QUAD)[0] / jac)

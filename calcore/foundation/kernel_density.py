"""KDE-based expected calibration error of a binary problem (Mix-n-Match, Sec. 4.1).

A binary problem is scores ``s`` in [0, 1] with outcomes ``o`` in {0, 1}; the
multiclass views build it elsewhere. Conventions of every function here: kernel
``K(u) = 35/32 (1 - u^2)^3`` on [-1, 1] with ``K_h(x) = K(x / h) / h``, so the
bandwidth ``h`` is the half-width of the support; the sample is reflected about 0
and 1 (copies ``-s`` and ``2 - s``) for the density and both regression sums, so
the density has mass exactly 1 on [0, 1] for ``h <= 1``; kernel sums at grid
points are exact (every point within ``h`` contributes; no binning, no FFT).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.tuning import KDE_PAIR_BUDGET as _PAIR_BUDGET
from calcore.foundation.validation import frozen_array

__all__ = [
    "KDE_MIN_EFFECTIVE_ROWS",
    "MIN_BANDWIDTH",
    "default_grid_size",
    "KDEReliabilityCurve",
    "kde_bandwidth",
    "kde_ece",
    "kde_reliability_curve",
]

#: Floor of :func:`kde_bandwidth`, used when the scores are (nearly) constant.
MIN_BANDWIDTH = 1e-3
_SMALLEST_BANDWIDTH = 1e-4  # smallest bandwidth accepted from the caller
_BASE_GRID_SIZE = 2001  # grid spacing 5e-4
_GRID_POINTS_PER_BANDWIDTH = 8  # automatic grid: spacing <= h / 8
_TRIWEIGHT = 35.0 / 32.0


@dataclass(frozen=True)
class KDEReliabilityCurve:
    """Smooth reliability curve of a binary problem, evaluated on a grid.

    ``density(z) = sum_j K_h(z - x_j) / n`` and ``accuracy(z) = sum_j o_j
    K_h(z - x_j) / sum_j K_h(z - x_j)``, with ``x_j`` running over the scores and
    their mirror images ``-s_i`` and ``2 - s_i``.

    Attributes
    ----------
    grid : ndarray of shape (grid_size,)
        Equally spaced evaluation points from 0 to 1 (both included).
    density : ndarray of shape (grid_size,)
        Reflected triweight KDE of the scores at ``grid``; integrates to 1
        over [0, 1] (up to the trapezoid error on this grid).
    accuracy : ndarray of shape (grid_size,)
        Nadaraya-Watson estimate ``pi(z) = sum_i o_i K_h(z - s_i) /
        sum_i K_h(z - s_i)`` (reflected copies included). NaN where no score
        lies within ``bandwidth`` of ``z`` (``density == 0``).
    bandwidth : float
        Kernel half-width ``h`` used.
    n : int
        Number of (score, outcome) pairs.
    effective_count : ndarray of shape (grid_size,)
        Kish's effective number of rows behind ``accuracy`` at each grid point,
        ``(sum_j K_j)^2 / sum_j K_j^2`` (0 where no score is near): the weighted
        average of the outcomes is as noisy as a plain mean of this many rows.
    standard_error : ndarray of shape (grid_size,)
        ``sqrt(accuracy (1 - accuracy) / effective_count)`` (NaN where undefined), the
        pointwise noise of the curve, bandwidth held fixed.

    Notes
    -----
    Where few scores lie within a bandwidth (the low-confidence end of a strong model's
    confidence axis) the curve swings between 0 and 1 on a handful of rows;
    :meth:`supported` says where it rests on at least ``KDE_MIN_EFFECTIVE_ROWS``.

    Examples
    --------
    >>> import calcore
    >>> curve = calcore.kde_reliability_curve([0.1, 0.4, 0.4, 0.9], [0, 1, 0, 1], bandwidth=0.3)
    >>> curve.n, curve.bandwidth, curve.grid[[0, -1]].tolist()
    (4, 0.3, [0.0, 1.0])
    >>> round(float(np.trapezoid(curve.density, curve.grid)), 4)  # a density on [0, 1]
    1.0
    """

    grid: np.ndarray
    density: np.ndarray
    accuracy: np.ndarray
    bandwidth: float
    n: int
    effective_count: np.ndarray
    standard_error: np.ndarray

    def supported(self, min_effective_rows: float | None = None) -> np.ndarray:
        """Boolean mask of the grid points whose ``effective_count`` is at least
        ``min_effective_rows`` (default :data:`KDE_MIN_EFFECTIVE_ROWS`)."""
        least = KDE_MIN_EFFECTIVE_ROWS if min_effective_rows is None else min_effective_rows
        return self.effective_count >= least


#: Effective rows below which a KDE reliability curve is not drawn as a finding: a mean of
#: fewer than 20 outcomes has a standard error of 0.11 or more at an accuracy of 0.5.
KDE_MIN_EFFECTIVE_ROWS = 20


def _as_vector(values, name: str, caller: str) -> np.ndarray:
    arr = np.asarray(values)
    if not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == bool
    ):
        raise CalcoreError(
            f"{caller}: {name!r} must be numeric, got dtype {arr.dtype}. "
            f"Convert the values to floats (or 0/1 integers, booleans for outcomes)."
        )
    if arr.ndim != 1:
        raise CalcoreError(
            f"{caller}: {name!r} must be a 1-D array of shape (n_samples,), got shape "
            f"{arr.shape}. Reduce multiclass predictions to one binary problem first "
            f"(e.g. the confidence view: max probability and 1{{label == argmax}})."
        )
    arr = arr.astype(np.float64)
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.argmin(finite))
        raise CalcoreError(
            f"{caller}: {name!r} must be finite, got {name}[{i}] = {float(arr[i])!r}. "
            f"Remove or fix rows with NaN or infinite values."
        )
    return arr


def _check_scores(scores, caller: str) -> np.ndarray:
    s = _as_vector(scores, "scores", caller)
    if s.size < 2:
        raise CalcoreError(
            f"{caller}: at least 2 scores are needed for a kernel estimate, got {s.size}."
        )
    bad = (s < 0.0) | (s > 1.0)
    if bad.any():
        i = int(np.argmax(bad))
        raise CalcoreError(
            f"{caller}: 'scores' must lie in [0, 1], got scores[{i}] = {float(s[i])!r}. "
            f"Pass probabilities (apply softmax / sigmoid to logits first)."
        )
    return s


def _check_bandwidth(bandwidth, caller: str) -> float:
    if not _is_real(bandwidth) or not _SMALLEST_BANDWIDTH <= float(bandwidth) <= 1.0:
        raise CalcoreError(
            f"{caller}: 'bandwidth' must be a number in [{_SMALLEST_BANDWIDTH:g}, 1] "
            f"(the half-width of the kernel), got {bandwidth!r}. Pass bandwidth=None "
            f"for the rule of thumb kde_bandwidth(scores)."
        )
    return float(bandwidth)


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _rule_of_thumb(s: np.ndarray) -> float:
    return max(1.06 * float(np.std(s)) * s.size**-0.2, MIN_BANDWIDTH)


def default_grid_size(bandwidth: float) -> int:
    """Grid points of the automatic grid for a bandwidth: ``max(2001, ceil(8 / h) + 1)``."""
    return max(_BASE_GRID_SIZE, math.ceil(_GRID_POINTS_PER_BANDWIDTH / bandwidth) + 1)


def _grid_size(grid_size, h: float, caller: str, *, integrate: bool) -> int:
    if grid_size is None:
        return default_grid_size(h)
    if not isinstance(grid_size, numbers.Integral) or isinstance(grid_size, bool) or grid_size < 2:
        raise CalcoreError(
            f"{caller}: 'grid_size' must be an integer >= 2 or None, got {grid_size!r}. "
            f"Pass grid_size=None for an automatic grid (spacing <= bandwidth / 8)."
        )
    if integrate and 1.0 / (grid_size - 1) > h / 2:
        raise CalcoreError(
            f"{caller}: grid_size={grid_size} is too coarse for bandwidth={h:.3g} "
            f"(spacing {1 / (grid_size - 1):.3g} > bandwidth / 2). Use grid_size >= "
            f"{math.ceil(2 / h) + 1}, or grid_size=None."
        )
    return int(grid_size)


def check_kde_inputs(scores, outcomes, bandwidth, grid_size, caller: str, order=None):
    """Validate everything once; return float64 arrays and the resolved ``h``, grid size.

    ``order`` is checked (and the grid required to resolve the kernel) only when
    the caller integrates over the grid, i.e. when ``order`` is not None.
    """
    s = _check_scores(scores, caller)
    o = _as_vector(outcomes, "outcomes", caller)
    if o.size != s.size:
        raise CalcoreError(
            f"{caller}: 'scores' and 'outcomes' must have the same length, got "
            f"{s.size} scores and {o.size} outcomes. Pass one outcome per score."
        )
    bad = (o != 0.0) & (o != 1.0)
    if bad.any():
        i = int(np.argmax(bad))
        raise CalcoreError(
            f"{caller}: 'outcomes' must be 0 or 1, got outcomes[{i}] = {float(o[i])!r}. "
            f"Pass 1{{event happened}}, e.g. (labels == predicted_class)."
        )
    h = _rule_of_thumb(s) if bandwidth is None else _check_bandwidth(bandwidth, caller)
    if order is not None and (not _is_real(order) or not 1.0 <= float(order) < math.inf):
        raise CalcoreError(
            f"{caller}: 'order' must be a finite number >= 1, got {order!r}. "
            f"Use order=1 for ECE or order=2 for the squared l2 error."
        )
    size = _grid_size(grid_size, h, caller, integrate=order is not None)
    return s, o, h, size


def _reflect(s: np.ndarray, o: np.ndarray, h: float):
    """Sample plus its mirror images about 0 and 1 that reach into [0, 1], sorted."""
    low, high = s <= h, s >= 1.0 - h
    points = np.concatenate([s, -s[low], 2.0 - s[high]])
    labels = np.concatenate([o, o[low], o[high]])
    order = np.argsort(points, kind="stable")
    return points[order], labels[order]


def _kernel_sums(
    grid: np.ndarray, points: np.ndarray, labels: np.ndarray, h: float, *, with_squares=False
):
    """Exact ``sum_j K((z - x_j) / h)`` and ``sum_j y_j K(...)`` at every grid point z
    (and ``sum_j K(...)^2`` with ``with_squares``).

    ``points`` must be sorted. Each grid point's window of points within ``h`` is
    found with ``searchsorted``; the (grid point, point) pairs are enumerated
    chunk by chunk with at most ``_PAIR_BUDGET`` pairs per chunk (more only when
    a single grid point's window is larger).
    """
    lo = np.searchsorted(points, grid - h, side="left")
    counts = np.searchsorted(points, grid + h, side="right") - lo
    ends = np.cumsum(counts)
    total_k = np.zeros(grid.size)
    total_yk = np.zeros(grid.size)
    total_kk = np.zeros(grid.size)
    start = 0
    while start < grid.size:
        before = ends[start] - counts[start]
        stop = max(start + 1, int(np.searchsorted(ends, before + _PAIR_BUDGET, side="right")))
        c = counts[start:stop]
        first = ends[start:stop] - c - before  # where each window starts in the pair list
        busy = np.flatnonzero(c)  # grid points of this chunk with a non-empty window
        if busy.size:
            j = np.arange(int(ends[stop - 1] - before)) + np.repeat(lo[start:stop] - first, c)
            u = (np.repeat(grid[start:stop], c) - points[j]) / h
            k = np.maximum(1.0 - u * u, 0.0)
            k *= k * k
            total_k[start + busy] = np.add.reduceat(k, first[busy])
            total_yk[start + busy] = np.add.reduceat(k * labels[j], first[busy])
            if with_squares:
                total_kk[start + busy] = np.add.reduceat(k * k, first[busy])
        start = stop
    if with_squares:
        return _TRIWEIGHT * total_k, _TRIWEIGHT * total_yk, _TRIWEIGHT**2 * total_kk
    return _TRIWEIGHT * total_k, _TRIWEIGHT * total_yk


def _curve(s: np.ndarray, o: np.ndarray, h: float, grid_size: int) -> KDEReliabilityCurve:
    grid = np.linspace(0.0, 1.0, grid_size)
    points, labels = _reflect(s, o, h)
    sum_k, sum_yk, sum_kk = _kernel_sums(grid, points, labels, h, with_squares=True)
    density = sum_k / (s.size * h)
    accuracy = np.full(grid_size, np.nan)
    np.divide(sum_yk, sum_k, out=accuracy, where=sum_k > 0.0)
    effective = np.zeros(grid_size)
    np.divide(sum_k * sum_k, sum_kk, out=effective, where=sum_kk > 0.0)
    error = np.full(grid_size, np.nan)
    np.divide(accuracy * (1.0 - accuracy), effective, out=error, where=effective > 0.0)
    np.sqrt(error, out=error)
    grid, density, accuracy, effective, error = (
        frozen_array(a, owned=True) for a in (grid, density, accuracy, effective, error)
    )
    return KDEReliabilityCurve(grid, density, accuracy, h, int(s.size), effective, error)


def kde_bandwidth(scores) -> float:
    """Rule-of-thumb kernel half-width ``h = 1.06 * sigma * n**(-1/5)``.

    Parameters
    ----------
    scores : array_like of shape (n_samples,)
        Scores in [0, 1], at least 2.

    Returns
    -------
    float
        ``max(1.06 * sigma * n**(-1/5), MIN_BANDWIDTH)`` with ``sigma`` the
        population standard deviation of the scores (``np.std``, ``ddof=0``).

    Raises
    ------
    CalcoreError
        If the scores are not a finite 1-D array in [0, 1] with at least 2 entries.

    Notes
    -----
    ``MIN_BANDWIDTH = 1e-3`` guards ``sigma = 0`` (all scores equal) and nearly
    constant scores; KDE-ECE of constant scores ``s0`` is then ``|s0 - mean(o)|``
    up to 1e-3. For scores in [0, 1] the rule never exceeds 0.46.
    The authors' code differs from the paper's text: it passes
    ``std(s | o = 1) * (2 n)**(-1/5)`` to KDEpy, whose ``bw`` is the kernel's
    standard deviation (``h / 3`` for the triweight), i.e. a half-width about
    2.5 times this rule. Pass ``bandwidth=`` to the estimators to reproduce it.

    References
    ----------
    Zhang, Kailkhura and Han (2020), "Mix-n-Match: Ensemble and compositional
    methods for uncertainty calibration in deep learning", ICML, App. C.

    Examples
    --------
    >>> round(kde_bandwidth([0.2, 0.4, 0.6, 0.8]), 4)
    0.1796
    """
    return _rule_of_thumb(_check_scores(scores, "kde_bandwidth"))


def validated_scores_bandwidth(scores: np.ndarray) -> float:
    """:func:`kde_bandwidth` of scores that are already checked (a ``Predictions``'
    probabilities: finite, in [0, 1]), without checking them again (on 10M scores
    the checks cost more than the standard deviation)."""
    return _rule_of_thumb(np.asarray(scores, dtype=np.float64))


def kde_reliability_curve(
    scores, outcomes, *, bandwidth=None, grid_size=None
) -> KDEReliabilityCurve:
    """Smooth reliability curve: reflected KDE of the scores and Nadaraya-Watson accuracy.

    Parameters
    ----------
    scores : array_like of shape (n_samples,)
        Scores in [0, 1], at least 2.
    outcomes : array_like of shape (n_samples,)
        0/1 or boolean outcomes, e.g. ``1{label == predicted class}``.
    bandwidth : float or None, default None
        Kernel half-width ``h`` in [1e-4, 1]; None uses :func:`kde_bandwidth`.
    grid_size : int or None, default None
        Grid points in [0, 1] (>= 2); None gives ``max(2001, ceil(8 / h) + 1)``
        (spacing <= 5e-4 and <= h / 8). Values at grid points are exact for any size.

    Returns
    -------
    KDEReliabilityCurve
        Read-only ``grid``, ``density``, ``accuracy`` arrays, ``bandwidth``, ``n``.

    Raises
    ------
    CalcoreError
        On invalid scores, outcomes, bandwidth or grid size.

    See Also
    --------
    kde_ece : the calibration error integrated from this curve.

    References
    ----------
    Zhang, Kailkhura and Han (2020), Mix-n-Match, ICML, Sec. 4.1 (the estimates
    of p and pi before Eq. 6), App. B (mirror-image KDE), App. C (kernel).

    Examples
    --------
    >>> curve = kde_reliability_curve([0.1, 0.4, 0.4, 0.9], [0, 1, 0, 1], bandwidth=0.3)
    >>> curve.grid.shape, float(curve.accuracy[800])
    ((2001,), 0.5)
    """
    s, o, h, size = check_kde_inputs(
        scores, outcomes, bandwidth, grid_size, "kde_reliability_curve"
    )
    return _curve(s, o, h, size)


def kde_ece(scores, outcomes, *, order=1, bandwidth=None, grid_size=None) -> float:
    """KDE estimate of ``ECE^d = integral |z - pi(z)|^d p(z) dz`` (no d-th root).

    Parameters
    ----------
    scores : array_like of shape (n_samples,)
        Scores in [0, 1], at least 2.
    outcomes : array_like of shape (n_samples,)
        0/1 or boolean outcomes.
    order : float, default 1
        The power ``d >= 1``.
    bandwidth : float or None, default None
        Kernel half-width ``h`` in [1e-4, 1]; None uses :func:`kde_bandwidth`.
    grid_size : int or None, default None
        Trapezoid grid on [0, 1]; None gives ``max(2001, ceil(8 / h) + 1)``.
        An explicit grid must have spacing ``<= h / 2``.

    Returns
    -------
    float
        ``trap(|z - pi(z)|^d p(z)) / trap(p(z))`` on the grid, the integrand
        being 0 where ``p = 0``. As in the paper (Eq. 2 and 6) and its code this
        is ``ECE^d`` itself: for ``order=2`` take the square root yourself.

    Raises
    ------
    CalcoreError
        On invalid inputs, ``order < 1``, or a grid too coarse for the bandwidth.

    See Also
    --------
    kde_reliability_curve : the density and accuracy integrated here.

    Notes
    -----
    Dividing by ``trap(p)`` (1 in exact arithmetic) makes the estimate a
    weighted mean of ``|z - pi(z)|^d``, as the authors' code does. Trapezoid
    error: the integrand is C^2 between the kinks where ``z = pi(z)``, with
    second derivative of order ``p / h^2``, so the relative error is at most
    about ``(dx / h)^2 / 12 = 1.3e-3`` on the automatic grid; the mass of ``p``
    itself is reproduced within 1e-6 for spread-out scores (4e-5 worst case,
    all scores equal).

    References
    ----------
    Zhang, Kailkhura and Han (2020), Mix-n-Match, ICML, Sec. 4.1, Eq. (6), with
    ECE^d defined in Eq. (2); App. C (kernel and bandwidth).

    Examples
    --------
    >>> round(kde_ece([0.2, 0.3, 0.7, 0.8], [0, 1, 1, 1], bandwidth=0.2), 4)
    0.2626
    """
    s, o, h, size = check_kde_inputs(scores, outcomes, bandwidth, grid_size, "kde_ece", order)
    curve = _curve(s, o, h, size)
    gap = np.abs(curve.grid - np.nan_to_num(curve.accuracy, nan=0.0)) ** float(order)
    integrand = np.where(curve.density > 0.0, gap * curve.density, 0.0)
    return float(np.trapezoid(integrand) / np.trapezoid(curve.density))

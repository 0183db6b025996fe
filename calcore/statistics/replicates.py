"""Bootstrap resamples of in-memory rows, and the cost cap of the KDE replicates.

A bootstrap resample of ``n`` rows is a vector of row counts ``w`` (``w_i`` = how often
row ``i`` was drawn, ``sum w = n``). Every metric of a report is a function of weighted
sums over rows (:mod:`calcore.statistics`), so a replicate is the same statistics with
the counts as weights: :class:`~calcore.statistics.accumulator.CalibrationStatistics`
with a replicate axis. The bins and KDE bandwidths stay the full sample's: for
equal-width bins with a fixed count that is what re-binning the resample would give;
for data-dependent bins and the KDE it is a bootstrap conditional on them (the report
says so).

Streams use Poisson(1) weights instead (:mod:`calcore.foundation.keyed_random`); here the
counts are the multinomial draws of :func:`scipy.stats.bootstrap`, so intervals did not
move when the engine changed.

References
----------
Efron & Tibshirani (1993), "An Introduction to the Bootstrap", Ch. 6 and 13.
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.tuning import KDE_PROBLEMS_PER_BLOCK

__all__ = [
    "JACKKNIFE_GROUPS",
    "KDE_MAX_WORK",
    "KDE_PROBLEMS_PER_BLOCK",
    "double_resample_counts",
    "jackknife_weights",
    "resample_counts",
    "kde_work_per_resample",
    "kde_resamples",
]

#: Groups of the grouped (delete-a-group) jackknife behind the BCa acceleration.
JACKKNIFE_GROUPS = 20

#: Weighted sums allowed for the KDE replicates of one metric: 14 per point (seven kernel
#: moments, all points and positives), per problem, per resample. 10 classes at
#: n = 10,000 cost 1.4M per resample (all 200 resamples); 100 classes 14M (57 resamples).
KDE_MAX_WORK = 800_000_000
_MIN_KDE_RESAMPLES = 25


def resample_counts(n: int, n_resamples: int, seed) -> np.ndarray:
    """Row counts of ``n_resamples`` bootstrap resamples of ``n`` rows, shape (R, n), float64
    (the transpose of a C-ordered (n, R) array).

    The rows are drawn as ``default_rng(seed).integers(0, n, (R, n))`` -- the draw
    :func:`scipy.stats.bootstrap` makes -- and counted, so each row of the result is a
    Multinomial(n, 1/n) vector and the resamples are the ones the generic subset path
    (:func:`calcore.bootstrap_intervals`) sees for the same seed.

    Examples
    --------
    >>> resample_counts(4, 2, seed=0).sum(axis=1).tolist()
    [4.0, 4.0]
    """
    idx = np.random.default_rng(seed).integers(0, n, (n_resamples, n))
    idx *= n_resamples
    idx += np.arange(n_resamples, dtype=idx.dtype)[:, None]
    return _by_row(np.bincount(idx.reshape(-1), minlength=n_resamples * n), n, n_resamples)


def _by_row(flat_counts: np.ndarray, n: int, n_resamples: int) -> np.ndarray:
    """(R, n) float64 view of counts laid out row by row (``flat[i * R + r]``).

    A row's replicate weights are then adjacent in memory, the layout in which the
    statistics engine's sparse products read them (as the stream's Poisson weights).
    """
    return flat_counts.reshape(n, n_resamples).astype(np.float64).T


def double_resample_counts(counts: np.ndarray, seed) -> np.ndarray:
    """Row counts of a resample of each resample in ``counts`` (shape (R, n)), float64.

    Resample ``r`` of the result draws ``n`` rows uniformly from the ``n`` rows of
    resample ``r`` of ``counts`` (with their multiplicities), as a bootstrap of that
    bootstrap sample does; a row's count is then Multinomial(n, counts[r] / n). The mean
    of a metric over these is the double bootstrap's ``E** theta**`` with one second-level
    resample per first-level one, which is all its mean needs (Hall 1992, Sec. 1.4). The
    draws come from a stream of the generator separate from the first level's and the
    jackknife's.

    Examples
    --------
    >>> first = resample_counts(6, 3, seed=0)
    >>> second = double_resample_counts(first, seed=0)
    >>> second.sum(axis=1).tolist(), bool(((first == 0) <= (second == 0)).all())
    ([6.0, 6.0, 6.0], True)
    """
    counts = np.asarray(counts)
    n_resamples, n = counts.shape
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
    rows = np.repeat(np.tile(np.arange(n), n_resamples), counts.reshape(-1).astype(np.int64))
    # resample r's rows are rows[r * n:(r + 1) * n]: each resample holds n rows in all
    picks = rng.integers(0, n, (n_resamples, n))
    picks += (np.arange(n_resamples, dtype=picks.dtype) * n)[:, None]
    cells = rows[picks] * n_resamples + np.arange(n_resamples, dtype=np.int64)[:, None]
    return _by_row(np.bincount(cells.reshape(-1), minlength=n_resamples * n), n, n_resamples)


def jackknife_weights(n: int, seed, groups: int = JACKKNIFE_GROUPS) -> np.ndarray:
    """0/1 row weights of a grouped jackknife, shape (G, n): row ``g`` leaves group ``g`` out.

    The rows are dealt into ``G = min(groups, n)`` groups of near-equal size by a seeded
    permutation (a stream of the generator separate from the resamples'), so each
    leave-one-group-out value is the statistics engine's sums with those weights: the
    BCa acceleration costs ``G`` replicates instead of the ``n`` of the full jackknife
    (Efron & Tibshirani 1993, Sec. 11.5 and 14.3).

    Examples
    --------
    >>> w = jackknife_weights(5, seed=0, groups=2)
    >>> w.shape, w.sum(axis=1).tolist(), w.sum(axis=0).tolist()
    ((2, 5), [2.0, 3.0], [1.0, 1.0, 1.0, 1.0, 1.0])
    """
    g = max(1, min(int(groups), int(n)))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    group = rng.permutation(n) % g
    return (group[:, None] != np.arange(g)).astype(np.float64).T  # a row's weights adjacent


def kde_work_per_resample(spec, n_rows: int) -> int:
    """Weighted sums per resample of a KDE spec's replicates (14 per point and problem)."""
    return 14 * int(n_rows) * len(spec.layouts)


def kde_resamples(work_per_resample: int, n_resamples: int, max_work: int) -> int:
    """How many resamples a KDE metric gets within ``max_work`` (at least 25, or all)."""
    affordable = max_work // max(work_per_resample, 1)
    return int(min(n_resamples, max(affordable, min(_MIN_KDE_RESAMPLES, n_resamples))))

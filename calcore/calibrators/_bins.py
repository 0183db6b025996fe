"""Bins of the binary binning calibrators: the ``bins``/``points_per_bin`` parameters and the
per-bin arithmetic shared by hb, ums, fwb and sb.

Binning methods take either ``bins`` (the number of bins B, default 15) or
``points_per_bin`` (k; then ``B = floor(n / k)`` on the fitting sample), never
both. Bins are half-open ``(e_{b-1}, e_b]`` between sorted edges, the first
starting at 0 and the last ending at 1, so a new score equal to an edge goes to
the lower bin (``np.searchsorted(edges, s, side="left")``). Ties are never split:
bins are defined by value, so calibration and new points share one rule. An
empty bin (possible only with heavily tied scores or ``n`` close to ``B``)
predicts the midpoint of its interval, i.e. leaves scores roughly unchanged.

References
----------
Gupta & Ramdas (2021), "Distribution-free calibration guarantees for histogram
binning without sample splitting", ICML, Alg. 1 and Sec. 4.
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import MAX_SEED, Param
from calcore.calibrators._binary import BinaryCalibrator
from calcore.calibrators._state import Array
from calcore.foundation import limits as _limits
from calcore.foundation.errors import CalcoreError

__all__ = ["BINS", "POINTS_PER_BIN", "SEED", "BinnedCalibrator", "umd_edges", "bin_sums"]
__all__ += ["bin_values", "bin_index", "lookup", "MAX_DELTA", "EDGE_STATE"]

# Bins and points per bin share the limit of a metric's bins (calcore.foundation.limits.BINS): a fit
# sorts the scores once and does O(log n) work per bin edge, so 100,000 bins on 50,000 x 100
# rows stays well under a second per class; more bins than rows is refused at fit.
BINS = Param(
    "bins", 15, "int", "Number of bins B (give either bins or points_per_bin).",
    minimum=_limits.BINS.minimum, maximum=_limits.BINS.maximum, optional=True,
)  # fmt: skip
POINTS_PER_BIN = Param(
    "points_per_bin", None, "int",
    "Points per bin k; the number of bins is then floor(n / k) "
    "(give either bins or points_per_bin).",
    minimum=_limits.BINS.minimum, maximum=_limits.BINS.maximum, optional=True,
)  # fmt: skip
SEED = Param(
    "seed", 0, "int", "Seed of the random generator (results are reproducible).", minimum=0,
    maximum=MAX_SEED,
)  # fmt: skip


#: Largest noise of randomised histogram binning (its ``delta``), so edges reach 1 + MAX_DELTA.
MAX_DELTA = 1e-3
#: The saved state of the binning methods with edges (hb, ums, sb): B - 1 sorted edges
#: (ties are kept whole, so equal edges are allowed), B values in [0, 1], B counts.
EDGE_STATE = {
    "edges": Array(("B-1",), minimum=0.0, maximum=1.0 + MAX_DELTA, order="non-decreasing"),
    "values": Array(("B",), minimum=0.0, maximum=1.0),
    "counts": Array(("B",), "int", minimum=0),
}


def _resolve_bin_params(params: dict) -> dict:
    """``points_per_bin`` given without ``bins`` switches the default ``bins=15`` off."""
    if params.get("points_per_bin") is not None and "bins" not in params:
        return {**params, "bins": None}
    return params


class BinnedCalibrator(BinaryCalibrator):
    """Shared handling of ``bins`` / ``points_per_bin``."""

    family = "binning"

    def __init__(self, **params):
        super().__init__(**_resolve_bin_params(params))

    def _check_params(self, params: dict) -> None:
        bins, k = params["bins"], params["points_per_bin"]
        if (bins is None) == (k is None):
            raise CalcoreError(
                f"{self.name}: give exactly one of 'bins' and 'points_per_bin'; got bins={bins!r}, "
                f"points_per_bin={k!r}. Set the other to None."
            )

    @classmethod
    def _n_bins(cls, params: dict, n: int) -> int:
        k = params["points_per_bin"]
        return int(params["bins"]) if k is None else int(n // k)

    @classmethod
    def min_points(cls, params: dict) -> int:
        k = params["points_per_bin"]
        return int(params["bins"]) if k is None else int(k)

    @classmethod
    def _check_sample(cls, scores, outcomes, params, needed=None) -> tuple[np.ndarray, np.ndarray]:
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        outcomes = np.asarray(outcomes, dtype=np.float64).reshape(-1)
        if scores.shape != outcomes.shape:
            raise CalcoreError(
                f"{cls.name}: scores and outcomes must have the same length; got "
                f"{scores.size} and {outcomes.size}."
            )
        needed = cls.min_points(params) if needed is None else needed
        if scores.size < needed:
            raise CalcoreError(
                f"{cls.name}: needs at least {needed} calibration points with {params}; got "
                f"{scores.size}. Use fewer bins or fewer points per bin."
            )
        return scores, outcomes


def umd_edges(sorted_scores: np.ndarray, n_bins: int) -> np.ndarray:
    """Inner UMD edges: the order statistics of ranks ``ceil(b (n+1)/B)``, ``b = 1..B-1``.

    Requires ``n >= B``; the ranks are computed in exact integer arithmetic.
    """
    n = sorted_scores.size
    ranks = (np.arange(1, n_bins, dtype=np.int64) * (n + 1) + n_bins - 1) // n_bins
    return sorted_scores[ranks - 1]


def bin_sums(sorted_scores, edges, scores, weights, *, open_bins: bool):
    """Points and weight sums per bin ``(e_{b-1}, e_b]`` (``open_bins``: ``(e_{b-1}, e_b)``).

    Counts come from the sorted scores; the sums only visit the points with a
    non-zero weight (for 0/1 outcomes, the positives), which keeps class-wise
    fits over many classes cheap.
    """
    n, n_bins = sorted_scores.size, edges.size + 1
    le = np.r_[0, np.searchsorted(sorted_scores, edges, side="right"), n]
    if open_bins:
        lt = np.r_[np.searchsorted(sorted_scores, edges, side="left"), n]
        counts = np.maximum(lt - le[:-1], 0)
    else:
        counts = np.diff(le)
    nz = np.flatnonzero(weights)
    s, w = scores[nz], weights[nz]
    b = np.searchsorted(edges, s, side="left")
    if open_bins and edges.size:
        keep = s != edges[np.minimum(b, edges.size - 1)]
        b, w = b[keep], w[keep]
    sums = np.bincount(b, weights=w, minlength=n_bins)
    return counts, sums


def bin_values(edges, counts, sums) -> np.ndarray:
    """``sums / counts``; an empty bin predicts the midpoint of its interval."""
    lo, hi = np.r_[0.0, edges], np.r_[edges, 1.0]
    mid = np.clip((lo + hi) / 2, 0.0, 1.0)
    return np.divide(sums, counts, out=mid, where=counts > 0)


def bin_index(edges: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``np.searchsorted(edges, scores, side="left")``: the number of edges below each score.

    For few edges, counting with one comparison per edge is several times
    faster than the binary search on unsorted scores (and gives the same result).
    """
    if edges.size > 32:
        return np.searchsorted(edges, scores, side="left")
    idx = np.zeros(scores.shape, dtype=np.intp)
    for edge in edges:
        idx += scores > edge
    return idx


def lookup(edges, values, scores) -> np.ndarray:
    """The value of each score's bin."""
    return values[bin_index(edges, scores)]

"""Canonical (full-vector) calibrators for small L: Sierpinski [sierpinski], grid [grid] and
projection histogram binning [projection-hb] (top-label paper, App. G).

Each method partitions the simplex into bins (see :mod:`calcore.calibrators._simplex`)
and predicts, for every row, the empirical label distribution of the calibration
rows in its bin, ``Pi_{l,b} = #{i in T_b : y_i = l} / n_b`` (App. G, intro). This
targets canonical calibration ``E[Y | h(X)] = h(X)``, which implies class-wise
calibration (App. G, Prop. 1).

Under-filled bins: a bin with fewer than ``min_count`` calibration rows
(default 1, i.e. empty bins) is a *fallback bin*. With ``fallback="identity"``
(default) its rows keep their input prediction (no data, no change); with
``fallback="uniform"`` they get ``1/L`` for every class, the paper's rule for
empty bins. ``fit_info`` reports the fallback bins and their calibration rows;
each ``transform`` records in ``fit_info["last_transform"]`` how many rows fell
in fallback bins, and :func:`canonical_bin_summary` flags them per bin.

The shared machinery is :class:`calcore.calibrators._canonical_base.CanonicalCalibrator`;
the summary for the simplex view is :mod:`calcore.calibrators.canonical_summary`
(:class:`CanonicalBins` and :func:`canonical_bin_summary` are re-exported here).

Not accuracy preserving: a bin spans rows with different argmax (e.g. the
Sierpinski centre bin, a grid cell straddling a decision boundary), and all of
them get the bin's majority class. Not injective: one output per bin.

The number of bins grows like ``2^Theta(L)`` (App. G), so L > 6 is refused.
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators import _simplex as sx
from calcore.calibrators._base import MAX_SEED, Param
from calcore.calibrators._canonical_base import (
    BINS_STATE,
    FALLBACK,
    MAX_CLASSES,
    MIN_COUNT,
    CanonicalCalibrator,
)
from calcore.calibrators._registry import register
from calcore.calibrators._state import Array, Recomputed
from calcore.calibrators.canonical_summary import CanonicalBins, canonical_bin_summary
from calcore.foundation.errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["SierpinskiBinning", "GridBinning", "ProjectionHistogramBinning"]
__all__ += ["CanonicalBins", "canonical_bin_summary", "MAX_CLASSES"]


@register
class SierpinskiBinning(CanonicalCalibrator):
    """Sierpinski binning of depth q (App. G.1, eqs. 18-19).

    Depth 1 splits the simplex into ``L + 1`` bins: ``s_l > 1/2`` (class ``l``,
    first such class on rounding ties) or the centre (every ``s_l <= 1/2``). Each
    corner cell ``s_l > 1/2`` is mapped back onto the simplex by
    ``t = 2 s - e_l`` and split again, down to depth ``q``; centre cells are not
    split. ``(L^(q+1) - 1)/(L - 1)`` bins, e.g. 13 for L = 3, q = 2. For L = 3 all
    bins of one depth have equal area; for L > 3 the centre is larger (the paper
    defines the construction for every L, so calcore does too; for L = 2 the
    centre is the single point (1/2, 1/2)).
    """

    name = "sierpinski"
    description = "Sierpinski binning of the simplex (canonical calibration, small L)"
    title = "Sierpinski binning of the simplex"
    use = "bins the whole probability vector: 2 to 6 classes"
    parameters = (
        Param("depth", 2, "int", "Recursion depth q.", minimum=0, maximum=12),
        MIN_COUNT,
        FALLBACK,
    )
    state_fields = {
        **BINS_STATE,  # first: their sizes are checked before the bins are recomputed
        "depth": Recomputed(lambda cal, n: cal.params["depth"], "the 'depth' parameter"),
        "paths": Recomputed(
            lambda cal, n: sx.sierpinski_bins(n, cal.params["depth"])[0],
            "the Sierpinski bins' corner paths for this depth and number of classes",
        ),
        "centre": Recomputed(
            lambda cal, n: sx.sierpinski_bins(n, cal.params["depth"])[1],
            "the Sierpinski bins' centre flags for this depth and number of classes",
        ),
    }

    def _n_bins_for(self, n_classes: int) -> int:
        return sx.sierpinski_n_bins(n_classes, self._params["depth"])

    def _define(self, preds: Predictions) -> dict:
        depth = self._params["depth"]
        n_bins = sx.sierpinski_n_bins(preds.n_classes, depth)
        if n_bins > sx.MAX_GRID_BINS:
            raise CalcoreError(
                f"sierpinski: depth={depth} with L={preds.n_classes} classes gives {n_bins:,} "
                f"bins, more than {sx.MAX_GRID_BINS:,}; use a smaller depth."
            )
        paths, centre = sx.sierpinski_bins(preds.n_classes, depth)
        return {"depth": depth, "paths": paths, "centre": centre}

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return sx.sierpinski_index(probs, state["depth"])


@register
class GridBinning(CanonicalCalibrator):
    """Grid-style binning with ``tau = 1/K`` (App. G.2, eqs. 20-21).

    Bin ``k`` (positive integers, ``max(L, K+1) <= sum k <= K + L - 1``) holds the
    ``s`` with ``K s_l in [k_l - 1, k_l]`` for every class; a row on a shared face
    goes to the lexicographically smallest such ``k`` (the paper's tie rule). For
    L = 3 these are the ``K^2`` equal triangles of Fig. 11.
    """

    name = "grid"
    description = "Grid binning of the simplex with tau = 1/K (canonical calibration, small L)"
    title = "Grid binning of the simplex"
    use = "bins the whole probability vector on a grid: 2 to 6 classes"
    parameters = (
        Param("K", 5, "int", "Grid resolution K = 1/tau.", minimum=1, maximum=1000),
        MIN_COUNT,
        FALLBACK,
    )
    state_fields = {
        **BINS_STATE,
        "K": Recomputed(lambda cal, n: cal.params["K"], "the 'K' parameter"),
        "bins": Recomputed(
            lambda cal, n: sx.grid_bins(n, cal.params["K"]),
            "the grid's bins for this K and number of classes",
        ),
    }

    def _n_bins_for(self, n_classes: int) -> int:
        return sx.grid_n_bins(n_classes, self._params["K"])

    def _define(self, preds: Predictions) -> dict:
        return {"K": self._params["K"], "bins": sx.grid_bins(preds.n_classes, self._params["K"])}

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return sx.grid_index(probs, state["K"], np.asarray(state["bins"], dtype=np.int64))


@register
class ProjectionHistogramBinning(CanonicalCalibrator):
    """Projection-based histogram binning (App. G.3, Alg. 10).

    With ``c = floor((n + 1) / B)``, bin ``b < B`` is cut off the rows still
    unbinned by the hyperplane ``g^T q_b = T_b`` at their ``c``-th smallest
    projection; a row belongs to the first bin with ``g^T q_b < T_b``
    (``T_B = 1.01``). As in the paper, calibration rows lying on any hyperplane
    (``g^T q_s = T_s``) are left out of the estimates of Pi. Directions:
    ``"rotate"`` uses ``q_b = -e_{(b-1) mod L + 1}`` (each bin takes the rows with
    the highest score of one class), ``"random"`` draws ``q_b`` uniformly on the
    unit sphere with ``seed``.
    """

    name = "projection-hb"
    description = "Projection histogram binning of the simplex (canonical calibration, small L)"
    title = "Projection histogram binning"
    use = "bins the whole probability vector by projections: 2 to 6 classes"
    parameters = (
        # Alg. 10 holds every row's projection on every direction (n x B floats: 200 MB for
        # 50,000 rows and 500 bins) and cuts the bins one by one, so B stays in the hundreds.
        Param("bins", 15, "int", "Number of bins B.", minimum=1, maximum=500),
        Param(
            "directions", "rotate", "str",
            "Unit vectors q_b: 'rotate' (-e_1, -e_2, ..., -e_L, -e_1, ...) or 'random'.",
            choices=("rotate", "random"),
        ),
        Param(
            "seed", 0, "int", "Seed for directions='random' (results are reproducible).",
            minimum=0, maximum=MAX_SEED,
        ),
        MIN_COUNT,
        FALLBACK,
    )  # fmt: skip
    state_fields = {
        **BINS_STATE,
        "directions": Array(("N", "L"), minimum=-1.0, maximum=1.0),  # unit vectors
        # projections of simplex points on unit vectors, and the last bin's sx.T_LAST
        "thresholds": Array(("N",), minimum=-sx.T_LAST, maximum=sx.T_LAST),
    }

    def _n_bins_for(self, n_classes: int) -> int:
        return self._params["bins"]

    def _directions(self, n_classes: int) -> np.ndarray:
        n_bins = self._params["bins"]
        if self._params["directions"] == "rotate":
            return -np.eye(n_classes)[np.arange(n_bins) % n_classes]
        q = np.random.default_rng(self._params["seed"]).normal(size=(n_bins, n_classes))
        return q / np.linalg.norm(q, axis=1, keepdims=True)

    def _define(self, preds: Predictions) -> dict:
        n_bins = self._params["bins"]
        if preds.n_samples + 1 < n_bins:
            raise CalcoreError(
                f"projection-hb: bins={n_bins} needs at least bins - 1 = {n_bins - 1} calibration "
                f"rows (Alg. 10 puts floor((n+1)/B) >= 1 rows per cut); got {preds.n_samples}. "
                f"Use fewer bins."
            )
        q = self._directions(preds.n_classes)
        thresholds = sx.projection_thresholds(sx.projection_values(preds.probs, q))
        return {"directions": q, "thresholds": thresholds}

    def _values(self, probs, state):
        return sx.projection_values(probs, np.asarray(state["directions"], dtype=np.float64))

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return sx.projection_index(self._values(probs, state), np.asarray(state["thresholds"]))

    def _estimation_rows(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return ~(self._values(probs, state) == np.asarray(state["thresholds"])).any(axis=1)

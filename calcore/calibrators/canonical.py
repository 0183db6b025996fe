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

Not accuracy preserving: a bin spans rows with different argmax (e.g. the
Sierpinski centre bin, a grid cell straddling a decision boundary), and all of
them get the bin's majority class. Not injective: one output per bin.

The number of bins grows like ``2^Theta(L)`` (App. G), so L > 6 is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore._errors import CalcoreError
from calcore.calibrators import _simplex as sx
from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register
from calcore.predictions import Predictions

__all__ = ["SierpinskiBinning", "GridBinning", "ProjectionHistogramBinning"]
__all__ += ["CanonicalBins", "canonical_bin_summary", "MAX_CLASSES"]

#: Largest number of classes the canonical calibrators accept.
MAX_CLASSES = 6

MIN_COUNT = Param(
    "min_count", 1, "int",
    "Bins with fewer calibration rows than this are fallback bins (see 'fallback').", minimum=1,
)  # fmt: skip
FALLBACK = Param(
    "fallback", "identity", "str",
    "Prediction in fallback bins: 'identity' keeps the input row, 'uniform' predicts 1/L "
    "(the paper's rule for empty bins).",
    choices=("identity", "uniform"),
)  # fmt: skip


class _Canonical(Calibrator):
    """Shared fit/transform: bins from :meth:`_bins`, per-bin label distributions."""

    family = "canonical"
    accuracy_preserving = False
    injective = False
    normalized = True

    # -- per method ------------------------------------------------------------------
    def _define(self, preds: Predictions) -> dict:
        """Bin definitions (JSON-able) learnt from / sized for ``preds``."""
        raise NotImplementedError

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        raise NotImplementedError

    def _n_bins_for(self, n_classes: int) -> int:
        raise NotImplementedError

    def _estimation_rows(self, probs: np.ndarray, state: dict) -> np.ndarray | None:
        """Boolean mask of the calibration rows used to estimate Pi (None: all)."""
        return None

    # -- shared ------------------------------------------------------------------------
    def _check_classes(self, n_classes: int) -> None:
        if n_classes > MAX_CLASSES:
            raise CalcoreError(
                f"{self.name}: canonical calibration bins the whole simplex; with L = {n_classes} "
                f"classes that needs {self._n_bins_for(n_classes)} bins with {self.params} "
                f"(and at least 2^(L-1) = {2 ** (n_classes - 1)} just to split every class score "
                f"at 1/2), each needing enough calibration points. calcore allows L <= "
                f"{MAX_CLASSES}; use an M2B method such as tl-hb or cw-hb."
            )

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        self._check_classes(preds.n_classes)
        n_classes = preds.n_classes
        state = {"n_classes": n_classes, **self._define(preds)}
        bins = self._index(preds.probs, state)
        n_bins = self._n_bins_for(n_classes)
        use = self._estimation_rows(preds.probs, state)
        b, y = (bins, preds.labels) if use is None else (bins[use], preds.labels[use])
        counts = np.bincount(b, minlength=n_bins)
        hits = np.bincount(b * n_classes + y, minlength=n_bins * n_classes)
        hits = hits.reshape(n_bins, n_classes).astype(np.float64)
        fallback = counts < self._params["min_count"]
        dist = np.full((n_bins, n_classes), 1.0 / n_classes)  # fallback rows: 1/L (paper)
        np.divide(hits, counts[:, None], out=dist, where=~fallback[:, None])
        state.update(counts=counts, distribution=dist, fallback=fallback)
        info = {
            "n_calibration": preds.n_samples,
            "n_bins": n_bins,
            "n_estimation_rows": int(counts.sum()),
            "n_fallback_bins": int(fallback.sum()),
            "calibration_rows_in_fallback_bins": int(
                np.bincount(bins, minlength=n_bins)[fallback].sum()
            ),
        }
        return state, info

    def bin_index(self, probs) -> np.ndarray:
        """Bin id (``0 .. n_bins - 1``) of each row of ``probs`` (``Predictions`` or array)."""
        if self._state is None:
            raise CalcoreError(f"{self.name} is not fitted yet: call fit(predictions) first.")
        probs = probs.probs if isinstance(probs, Predictions) else np.asarray(probs, np.float64)
        if probs.ndim != 2 or probs.shape[1] != self._state["n_classes"]:
            raise CalcoreError(
                f"{self.name}: probs must have shape (n_samples, {self._state['n_classes']}); "
                f"got {probs.shape}."
            )
        return self._index(probs, self._state)

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        bins = self._index(preds.probs, state)
        out = np.asarray(state["distribution"], dtype=np.float64)[bins]
        in_fallback = np.asarray(state["fallback"], dtype=bool)[bins]
        if self._params["fallback"] == "identity":
            out[in_fallback] = preds.probs[in_fallback]
        self._fit_info = {
            **self._fit_info,
            "last_transform": {
                "n_rows": preds.n_samples,
                "rows_in_fallback_bins": int(in_fallback.sum()),
            },
        }
        return out, None


@register
class SierpinskiBinning(_Canonical):
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
    parameters = (
        Param("depth", 2, "int", "Recursion depth q.", minimum=0, maximum=12),
        MIN_COUNT,
        FALLBACK,
    )

    def _n_bins_for(self, n_classes: int) -> int:
        return sx.sierpinski_n_bins(n_classes, self._params["depth"])

    def _define(self, preds: Predictions) -> dict:
        depth = self._params["depth"]
        n_bins = sx.sierpinski_n_bins(preds.n_classes, depth)
        if n_bins > sx.MAX_GRID_BINS:
            raise CalcoreError(
                f"sierpinski: depth={depth} with L={preds.n_classes} classes gives {n_bins} bins "
                f"(more than {sx.MAX_GRID_BINS}); use a smaller depth."
            )
        paths, centre = sx.sierpinski_bins(preds.n_classes, depth)
        return {"depth": depth, "paths": paths, "centre": centre}

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return sx.sierpinski_index(probs, state["depth"])


@register
class GridBinning(_Canonical):
    """Grid-style binning with ``tau = 1/K`` (App. G.2, eqs. 20-21).

    Bin ``k`` (positive integers, ``max(L, K+1) <= sum k <= K + L - 1``) holds the
    ``s`` with ``K s_l in [k_l - 1, k_l]`` for every class; a row on a shared face
    goes to the lexicographically smallest such ``k`` (the paper's tie rule). For
    L = 3 these are the ``K^2`` equal triangles of Fig. 11.
    """

    name = "grid"
    description = "Grid binning of the simplex with tau = 1/K (canonical calibration, small L)"
    parameters = (
        Param("K", 5, "int", "Grid resolution K = 1/tau.", minimum=1, maximum=1000),
        MIN_COUNT,
        FALLBACK,
    )

    def _n_bins_for(self, n_classes: int) -> int:
        return sx.grid_n_bins(n_classes, self._params["K"])

    def _define(self, preds: Predictions) -> dict:
        return {"K": self._params["K"], "bins": sx.grid_bins(preds.n_classes, self._params["K"])}

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        return sx.grid_index(probs, state["K"], np.asarray(state["bins"], dtype=np.int64))


@register
class ProjectionHistogramBinning(_Canonical):
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
    parameters = (
        Param("bins", 15, "int", "Number of bins B.", minimum=1, maximum=100_000),
        Param(
            "directions", "rotate", "str",
            "Unit vectors q_b: 'rotate' (-e_1, -e_2, ..., -e_L, -e_1, ...) or 'random'.",
            choices=("rotate", "random"),
        ),
        Param("seed", 0, "int", "Seed for directions='random' (results are reproducible)."),
        MIN_COUNT,
        FALLBACK,
    )  # fmt: skip

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


@dataclass(frozen=True)
class CanonicalBins:
    """Per-bin summary of a fitted canonical calibrator on some predictions (L = 3 simplex view).

    Attributes
    ----------
    method : str
    class_names : tuple of str
    n_bins : int
        Bins of the fitted partition (including those no row here falls in).
    bin_of_row : ndarray of shape (n_samples,), int64
        Bin id of every row (for colouring the scatter).
    bins : ndarray of shape (n_nonempty,), int64
        Ids of the bins holding at least one row, increasing.
    counts : ndarray of shape (n_nonempty,), int64
        Rows of ``preds`` in each of those bins.
    mean_prediction : ndarray of shape (n_nonempty, n_classes)
        Mean input prediction of the rows in the bin (arrow tail).
    recalibrated : ndarray of shape (n_nonempty, n_classes)
        Mean recalibrated prediction of those rows (arrow head): the bin's
        label distribution, or for an ``identity`` fallback bin the mean input.
    calibration_counts : ndarray of shape (n_nonempty,), int64
        Calibration rows that estimated the bin's distribution.
    fallback : ndarray of shape (n_nonempty,), bool
        Bins with fewer than ``min_count`` calibration rows.
    """

    method: str
    class_names: tuple[str, ...]
    n_bins: int
    bin_of_row: np.ndarray
    bins: np.ndarray
    counts: np.ndarray
    mean_prediction: np.ndarray
    recalibrated: np.ndarray
    calibration_counts: np.ndarray
    fallback: np.ndarray


def canonical_bin_summary(calibrator: Calibrator, preds: Predictions) -> CanonicalBins:
    """Bins, mean predictions and recalibrated predictions of ``preds`` under a fitted calibrator.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted ``sierpinski``, ``grid`` or ``projection-hb`` calibrator.
    preds : Predictions
        Rows to summarise (usually the test split), with the calibrator's classes.

    Returns
    -------
    CanonicalBins

    Raises
    ------
    CalcoreError
        Not a canonical calibrator, not fitted, or other classes.

    Examples
    --------
    >>> from calcore.calibrators import make_calibrator
    >>> p = Predictions.from_probs([[0.8, 0.1, 0.1], [0.7, 0.2, 0.1], [0.2, 0.3, 0.5]], [0, 1, 2])
    >>> s = canonical_bin_summary(make_calibrator("sierpinski", depth=1).fit(p), p)
    >>> s.bins.tolist(), s.counts.tolist(), s.recalibrated[1].tolist()
    ([0, 1], [1, 2], [0.5, 0.5, 0.0])
    """
    if not isinstance(calibrator, _Canonical):
        raise CalcoreError(
            f"canonical_bin_summary needs a 'sierpinski', 'grid' or 'projection-hb' calibrator; "
            f"got {getattr(calibrator, 'name', type(calibrator).__name__)!r}."
        )
    out = calibrator.transform(preds)  # checks fitted and classes
    state = calibrator._state
    bins = calibrator.bin_index(preds.probs)
    n_bins, n_classes = len(state["counts"]), preds.n_classes
    counts = np.bincount(bins, minlength=n_bins)
    keep = np.flatnonzero(counts)
    c = counts[keep, None]

    def bin_means(values):
        cols = [np.bincount(bins, weights=values[:, j], minlength=n_bins) for j in range(n_classes)]
        return np.stack(cols, axis=1)[keep] / c

    return CanonicalBins(
        method=calibrator.name,
        class_names=preds.class_names,
        n_bins=n_bins,
        bin_of_row=bins,
        bins=keep.astype(np.int64),
        counts=counts[keep].astype(np.int64),
        mean_prediction=bin_means(preds.probs),
        recalibrated=bin_means(out.probs),
        calibration_counts=np.asarray(state["counts"], dtype=np.int64)[keep],
        fallback=np.asarray(state["fallback"], dtype=bool)[keep],
    )

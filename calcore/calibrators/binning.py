"""Binary binning calibrators: histogram binning UMD [hb], UMS [ums], fixed-width binning [fwb],
scaling-binning [sb].

This module also defines the *binary-calibrator contract* that the M2B
wrappers (:mod:`calcore.calibrators.m2b`) rely on. A binary calibrator class

- sets ``binary_only = True``;
- provides ``fit_binary(scores, outcomes, params) -> dict`` (a JSON-able state)
  and ``apply_binary(state, scores, params) -> ndarray`` (values in [0, 1]),
  both classmethods working on 1-D float64 arrays;
- may provide ``min_points(params) -> int``, the fewest calibration points it
  can fit (wrappers leave groups with fewer points unchanged; default 1);
- fits a 2-class :class:`~calcore.Predictions` on column 1 (the positive class).

:class:`BinaryCalibrator` implements the last two points; subclasses only write
the two classmethods. Randomised methods take ``seed`` and are reproducible.

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
binning without sample splitting", ICML, Alg. 1-2 and Sec. 4.
Zadrozny & Elkan (2001), "Obtaining calibrated probability estimates from
decision trees and naive Bayesian classifiers".
Kumar, Liang & Ma (2019), "Verified uncertainty calibration", NeurIPS (scaling-binning).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from calcore._errors import CalcoreError
from calcore.binning import equal_width_index
from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register
from calcore.predictions import Predictions

__all__ = ["BinaryCalibrator", "HistogramBinning", "UniformMassSplit", "FixedWidthBinning"]
__all__ += ["ScalingBinning", "umd_edges"]

BINS = Param(
    "bins", 15, "int", "Number of bins B (give either bins or points_per_bin).", minimum=1,
    optional=True,
)  # fmt: skip
POINTS_PER_BIN = Param(
    "points_per_bin", None, "int",
    "Points per bin k; the number of bins is then floor(n / k) "
    "(give either bins or points_per_bin).",
    minimum=1, optional=True,
)  # fmt: skip
SEED = Param("seed", 0, "int", "Seed of the random generator (results are reproducible).")


class BinaryCalibrator(Calibrator):
    """Base of binary calibrators; see the module docstring for the contract."""

    binary_only = True

    @classmethod
    def fit_binary(cls, scores: np.ndarray, outcomes: np.ndarray, params: dict) -> dict:
        raise NotImplementedError

    @classmethod
    def apply_binary(cls, state: dict, scores: np.ndarray, params: dict) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def min_points(cls, params: dict) -> int:
        """Fewest calibration points ``fit_binary`` accepts."""
        return 1

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        outcomes = (preds.labels == 1).astype(np.float64)
        state = self.fit_binary(preds.probs[:, 1], outcomes, self._params)
        return state, {"n_calibration": preds.n_samples}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        h = self.apply_binary(state, preds.probs[:, 1], self._params)
        return np.column_stack([1.0 - h, h]), None


def _resolve_bin_params(params: dict) -> dict:
    """``points_per_bin`` given without ``bins`` switches the default ``bins=15`` off."""
    if params.get("points_per_bin") is not None and "bins" not in params:
        return {**params, "bins": None}
    return params


class _Binned(BinaryCalibrator):
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


def _bin_sums(sorted_scores, edges, scores, weights, *, open_bins: bool):
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


def _bin_values(edges, counts, sums) -> np.ndarray:
    """``sums / counts``; an empty bin predicts the midpoint of its interval."""
    lo, hi = np.r_[0.0, edges], np.r_[edges, 1.0]
    mid = np.clip((lo + hi) / 2, 0.0, 1.0)
    return np.divide(sums, counts, out=mid, where=counts > 0)


def _bin_index(edges: np.ndarray, scores: np.ndarray) -> np.ndarray:
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


def _in_threads(run, n: int, size: int) -> list:
    """``[run(begin, end), ...]`` over consecutive row ranges covering ``0 .. n - 1``.

    Large inputs (``size`` elements) are split between up to 4 threads (numpy
    releases the GIL in the vectorised passes); small ones run in one call.
    """
    workers = min(4, os.cpu_count() or 1) if size >= 4_000_000 else 1
    if workers < 2 or n < 2:
        return [run(0, n)]
    bounds = np.linspace(0, n, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, bounds[:-1], bounds[1:]))


def _lookup(edges, values, scores) -> np.ndarray:
    return values[_bin_index(edges, scores)]


@register
class HistogramBinning(_Binned):
    """Histogram binning without sample splitting, UMD (Gupta & Ramdas 2021, Alg. 1-2).

    With the calibration scores sorted and ``Delta = (n+1)/B``, the inner bin
    edges are the order statistics of ranks ``ceil(b Delta)``, ``b = 1..B-1``.
    ``variant="paper"`` estimates each bin's value from the points strictly
    between its edges (Alg. 1 line 12), ``"original"`` (Zadrozny & Elkan) also
    counts the upper edge point. With distinct scores every bin of the paper
    variant holds at least ``floor((n+1)/B) - 1`` points. ``randomized=True``
    (Alg. 2, the paper's experiments) adds ``U(0, delta)`` noise to calibration
    and new scores, which breaks ties consistently, and maps each bin value ``v``
    to ``(v + U(0, delta)) / (1 + delta)`` so that values are distinct; the
    noise of new scores is drawn only for scores within ``delta`` below an edge
    (the only ones whose bin it can change), from ``seed``, so transforms are
    reproducible.
    """

    name = "hb"
    description = "Histogram binning UMD (uniform-mass bins, double dipping; Gupta & Ramdas 2021)"
    parameters = (
        BINS,
        POINTS_PER_BIN,
        Param(
            "variant",
            "paper",
            "str",
            "paper: bin means exclude the edge points; original: they count them.",
            choices=("paper", "original"),
        ),  # fmt: skip
        Param(
            "randomized", True, "bool", "Add U(0, delta) noise to scores and bin values (Alg. 2)."
        ),
        Param(
            "delta",
            1e-10,
            "float",
            "Noise size of the randomised variant.",
            minimum=0.0,
            maximum=1e-3,
        ),  # fmt: skip
        SEED,
    )

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        n_bins = cls._n_bins(params, scores.size)
        rng = np.random.default_rng([params["seed"], 0])
        if params["randomized"]:
            scores = scores + rng.uniform(0.0, params["delta"], scores.size)
        sorted_scores = np.sort(scores)
        edges = umd_edges(sorted_scores, n_bins)
        counts, sums = _bin_sums(
            sorted_scores, edges, scores, outcomes, open_bins=params["variant"] == "paper"
        )
        values = _bin_values(edges, counts, sums)
        if params["randomized"]:
            values = (values + rng.uniform(0.0, params["delta"], n_bins)) / (1 + params["delta"])
        return {"edges": edges, "values": values, "counts": counts}

    @classmethod
    def fit_binary_columns(cls, columns: np.ndarray, labels: np.ndarray, params: dict) -> list:
        """Class-wise fits, identical to ``fit_binary(columns[l], labels == l)`` for every ``l``.

        ``columns`` (shape ``(n_classes, n)``, C-contiguous) is overwritten. One
        sort of all columns replaces ``n_classes`` separate passes, and the bin
        sums only visit each row's own label (the single positive of the row).
        """
        return cls._fit_columns(columns, labels, params, 0)

    @classmethod
    def fit_binary_rows(
        cls, probs: np.ndarray, labels: np.ndarray, params: dict, chunk_size: int = 4_194_304
    ) -> list:
        """:meth:`fit_binary_columns` of ``probs.T`` without a transposed copy of ``probs``.

        Groups of classes (about ``chunk_size`` values each) are transposed in turn
        into a reused buffer (a fresh full-size copy costs as much in page faults as
        in copying); large inputs share the groups between threads.
        """
        n, n_classes = probs.shape
        cls._check_sample(probs[:, 0], probs[:, 0], params)
        chunk = max(1, min(n_classes, chunk_size // max(n, 1)))
        firsts = list(range(0, n_classes, chunk))

        def run(begin: int, end: int) -> list:
            buffer, states = np.empty((chunk, n)), []
            for first in firsts[begin:end]:
                cols = buffer[: min(chunk, n_classes - first)]
                last = first + cols.shape[0]
                for start in range(0, n, 512):
                    cols[:, start : start + 512] = probs[start : start + 512, first:last].T
                states += cls._fit_columns(cols, labels, params, first)
            return states

        return [st for part in _in_threads(run, len(firsts), n * n_classes) for st in part]

    @classmethod
    def _fit_columns(cls, columns, labels, params, first: int) -> list:
        """Fits of classes ``first .. first + len(columns) - 1`` (``columns`` is overwritten)."""
        n_classes, n = columns.shape
        cls._check_sample(columns[0], columns[0], params)
        n_bins = cls._n_bins(params, n)
        if params["randomized"]:
            # Every class draws from a fresh [seed, 0] generator: n noise values, then n_bins.
            rng = np.random.default_rng([params["seed"], 0])
            noise = rng.uniform(0.0, params["delta"], n)
            nudge = rng.uniform(0.0, params["delta"], n_bins)
            columns += noise
        rows = np.flatnonzero((labels >= first) & (labels < first + n_classes))
        own = labels[rows] - first  # the rows whose label is one of these classes
        pos = columns[own, rows]
        columns.sort(axis=1)
        ranks = (np.arange(1, n_bins, dtype=np.int64) * (n + 1) + n_bins - 1) // n_bins
        edges = columns[:, ranks - 1]
        open_bins = params["variant"] == "paper"
        b = (pos[:, None] > edges[own]).sum(axis=1)
        keep = np.ones(rows.size, dtype=bool)
        if open_bins and n_bins > 1:
            keep = pos != edges[own, np.minimum(b, n_bins - 2)]
        sums = np.bincount(own[keep] * n_bins + b[keep], minlength=n_classes * n_bins)
        sums = sums.reshape(n_classes, n_bins).astype(np.float64)
        states = []
        first_le, last = np.zeros(1, dtype=np.intp), np.full(1, n, dtype=np.intp)
        for lab in range(n_classes):
            le = np.concatenate([first_le, columns[lab].searchsorted(edges[lab], "right"), last])
            if open_bins:
                lt = np.concatenate([columns[lab].searchsorted(edges[lab], "left"), last])
                counts = np.maximum(lt - le[:-1], 0)
            else:
                counts = np.diff(le)
            values = _bin_values(edges[lab], counts, sums[lab])
            if params["randomized"]:
                values = (values + nudge) / (1 + params["delta"])
            states.append({"edges": edges[lab], "values": values, "counts": counts})
        return states

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        edges, values = np.asarray(state["edges"], float), np.asarray(state["values"], float)
        idx = _bin_index(edges, scores)
        if params["randomized"] and edges.size:
            # s + u (u ~ U(0, delta)) crosses edge e only when e - delta < s <= e.
            delta = params["delta"]
            near = np.flatnonzero(scores > edges[np.minimum(idx, edges.size - 1)] - delta)
            near = near[idx[near] < edges.size]
            if near.size:
                rng = np.random.default_rng([params["seed"], 1])
                noisy = scores[near] + rng.uniform(0.0, delta, near.size)
                idx[near] = np.searchsorted(edges, noisy, side="left")
        return values[idx]

    @classmethod
    def apply_binary_columns(cls, states: list, probs: np.ndarray, params: dict):
        """Class-wise outputs ``out[:, l] = apply_binary(states[l], probs[:, l])``, bit-identical.

        Works on row blocks of ``probs`` (shape ``(n, n_classes)``), so no transposed
        copy is made: the bin index of every entry counts its class's edges below it
        (one vectorised comparison per edge). The randomised variant draws its noise
        per class as :meth:`apply_binary` does (entries within ``delta`` below an
        edge, in row order, from a fresh ``[seed, 1]`` generator). Returns None when
        the batched path does not apply (then call :meth:`apply_binary` per class).
        """
        n, n_classes = probs.shape
        edges = [np.asarray(st["edges"], float) for st in states]
        values = [np.asarray(st["values"], float) for st in states]
        n_edges = edges[0].size if edges else 0
        if (
            len(states) != n_classes
            or n_edges > 32
            or any(e.shape != (n_edges,) for e in edges)
            or any(v.shape != (n_edges + 1,) for v in values)
        ):
            return None
        edge_rows = np.stack(edges, axis=1) if n_edges else np.empty((0, n_classes))  # (E, L)
        flat_values = np.stack(values).reshape(-1)  # class l, bin b at l * (E + 1) + b
        offsets = np.arange(n_classes, dtype=np.intp) * (n_edges + 1)
        randomized = bool(params["randomized"]) and n_edges > 0
        if randomized:
            # scores > edges[idx] - delta (only for idx < E): an upper threshold of +inf at E.
            thresholds = np.concatenate(
                [np.stack(edges) - params["delta"], np.full((n_classes, 1), np.inf)], axis=1
            ).reshape(-1)
        out = np.empty((n, n_classes))
        step = max(1, 65_536 // max(n_classes, 1))

        def run(begin: int, end: int) -> list:
            """Rows ``begin .. end - 1``; returns the (rows, cols) of the near-edge entries."""
            shape = (min(step, end - begin), n_classes)
            above, count = np.empty(shape, dtype=bool), np.empty(shape, dtype=np.uint8)
            flat_idx, limit, near = np.empty(shape, dtype=np.intp), np.empty(shape), []
            for start in range(begin, end, step):
                block = probs[start : min(start + step, end)]
                rows = block.shape[0]
                b_above, b_count, b_idx = above[:rows], count[:rows], flat_idx[:rows]
                b_count.fill(0)
                for edge in edge_rows:  # uint8 counts (E <= 32): cheap vectorised passes
                    np.greater(block, edge, out=b_above)
                    b_count += b_above.view(np.uint8)
                np.add(b_count, offsets, out=b_idx)
                if randomized:
                    b_limit = limit[:rows]
                    np.take(thresholds, b_idx, out=b_limit, mode="clip")
                    np.greater(block, b_limit, out=b_above)
                    if np.count_nonzero(b_above):  # rare: scores within delta below an edge
                        r, c = np.divmod(np.flatnonzero(b_above), n_classes)
                        near.append((r + start, c))
                np.take(flat_values, b_idx, out=out[start : start + rows], mode="clip")
            return near

        near_rows, near_cols = [], []
        for part in _in_threads(run, n, n * n_classes):
            near_rows += [r for r, _ in part]
            near_cols += [c for _, c in part]
        if near_rows:
            rows, cols = np.concatenate(near_rows), np.concatenate(near_cols)
            order = np.lexsort((rows, cols))
            rows, cols = rows[order], cols[order]
            bounds = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1], True])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                lab, r = cols[a], rows[a:b]
                rng = np.random.default_rng([params["seed"], 1])
                noisy = probs[r, lab] + rng.uniform(0.0, params["delta"], r.size)
                out[r, lab] = values[lab][np.searchsorted(edges[lab], noisy, side="left")]
        return out


@register
class UniformMassSplit(_Binned):
    """Uniform-mass binning with sample splitting, UMS (Gupta & Ramdas 2021, Sec. 4).

    A seeded random half of the calibration points (``floor(n/2)``) sets the
    UMD edges (with ``points_per_bin``, ``B = floor(n_half / k)``); the other
    half sets each bin's value, the mean of its outcomes over ``(e_{b-1}, e_b]``.
    """

    name = "ums"
    description = "Uniform-mass binning with sample splitting (half for edges, half for means)"
    parameters = (BINS, POINTS_PER_BIN, SEED)

    @classmethod
    def min_points(cls, params: dict) -> int:
        return 2 * super().min_points(params)

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        perm = np.random.default_rng(params["seed"]).permutation(scores.size)
        first, second = perm[: scores.size // 2], perm[scores.size // 2 :]
        edges = umd_edges(np.sort(scores[first]), cls._n_bins(params, first.size))
        s2 = scores[second]
        counts, sums = _bin_sums(np.sort(s2), edges, s2, outcomes[second], open_bins=False)
        return {"edges": edges, "values": _bin_values(edges, counts, sums), "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        return _lookup(
            np.asarray(state["edges"], float), np.asarray(state["values"], float), scores
        )


@register
class FixedWidthBinning(_Binned):
    """Fixed-width binning: B equal-width bins ``[b/B, (b+1)/B)`` (last closed), mean outcomes.

    With ``points_per_bin``, ``B = floor(n / k)``. Bin indices come from
    :func:`calcore.binning.equal_width_index` (exact edges). An empty bin
    predicts its midpoint ``(b + 1/2) / B``.
    """

    name = "fwb"
    description = "Fixed-width (equal-width) binning; empty bins predict their midpoint"
    parameters = (BINS, POINTS_PER_BIN)

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        n_bins = cls._n_bins(params, scores.size)
        idx = equal_width_index(np.clip(scores, 0.0, 1.0), n_bins)
        counts = np.bincount(idx, minlength=n_bins)
        sums = np.bincount(idx, weights=outcomes, minlength=n_bins)
        mid = (np.arange(n_bins) + 0.5) / n_bins
        values = np.divide(sums, counts, out=mid, where=counts > 0)
        return {"bins": n_bins, "values": values, "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        idx = equal_width_index(np.clip(scores, 0.0, 1.0), int(state["bins"]))
        return np.asarray(state["values"], float)[idx]


@register
class ScalingBinning(_Binned):
    """Scaling-binning (Kumar et al. 2019), with double dipping as in Gupta & Ramdas (2021, Sec. 4).

    The scores are assumed to be the output of a scaling method already (e.g.
    Platt or temperature scaling fitted on other data); ``sb`` does no scaling
    itself. Bins are the UMD uniform-mass bins ``(e_{b-1}, e_b]`` over all
    calibration scores, and each bin predicts the mean of the *scores* in it,
    not of the outcomes (which are ignored).
    """

    name = "sb"
    description = "Scaling-binning: uniform-mass bins predicting the mean score in the bin"
    parameters = (BINS, POINTS_PER_BIN)

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, _ = cls._check_sample(scores, outcomes, params)
        sorted_scores = np.sort(scores)
        edges = umd_edges(sorted_scores, cls._n_bins(params, scores.size))
        counts, sums = _bin_sums(sorted_scores, edges, scores, scores, open_bins=False)
        # Zero scores add nothing to the sums but do count: _bin_sums counts from the sorted scores.
        return {"edges": edges, "values": _bin_values(edges, counts, sums), "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        return _lookup(
            np.asarray(state["edges"], float), np.asarray(state["values"], float), scores
        )

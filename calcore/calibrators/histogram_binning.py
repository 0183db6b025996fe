"""Histogram binning without sample splitting, UMD [hb] (Gupta & Ramdas 2021, Alg. 1-2).

Besides the binary contract (:mod:`calcore.calibrators._binary`), hb has the
batched class-wise paths that ``cw-hb`` and ``n-hb`` use on many classes:
``fit_binary_rows`` / ``fit_binary_columns`` (one sort of all columns) and
``apply_binary_columns`` (row blocks, no transposed copies), each identical to
one ``fit_binary`` / ``apply_binary`` per class.

References
----------
Gupta & Ramdas (2021), "Distribution-free calibration guarantees for histogram
binning without sample splitting", ICML, Alg. 1-2.
Zadrozny & Elkan (2001), "Obtaining calibrated probability estimates from
decision trees and naive Bayesian classifiers" (the "original" variant).
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import Param
from calcore.calibrators._bins import (
    BINS,
    EDGE_STATE,
    MAX_DELTA,
    POINTS_PER_BIN,
    SEED,
    BinnedCalibrator,
    bin_index,
    bin_sums,
    bin_values,
    umd_edges,
)
from calcore.calibrators._registry import register
from calcore.foundation.threads import in_threads

__all__ = ["HistogramBinning"]


@register
class HistogramBinning(BinnedCalibrator):
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
    title = "Histogram binning"
    use = "equal-mass bins with a guarantee: needs a few hundred rows"
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
            maximum=MAX_DELTA,
        ),  # fmt: skip
        SEED,
    )
    state_fields = EDGE_STATE

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        n_bins = cls._n_bins(params, scores.size)
        rng = np.random.default_rng([params["seed"], 0])
        if params["randomized"]:
            scores = scores + rng.uniform(0.0, params["delta"], scores.size)
        sorted_scores = np.sort(scores)
        edges = umd_edges(sorted_scores, n_bins)
        counts, sums = bin_sums(
            sorted_scores, edges, scores, outcomes, open_bins=params["variant"] == "paper"
        )
        values = bin_values(edges, counts, sums)
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

        return [st for part in in_threads(run, len(firsts), n * n_classes) for st in part]

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
            values = bin_values(edges[lab], counts, sums[lab])
            if params["randomized"]:
                values = (values + nudge) / (1 + params["delta"])
            states.append({"edges": edges[lab], "values": values, "counts": counts})
        return states

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        edges, values = np.asarray(state["edges"], float), np.asarray(state["values"], float)
        idx = bin_index(edges, scores)
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
        for part in in_threads(run, n, n * n_classes):
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

"""Fast per-class bin statistics for the class-wise view of wide problems.

The class-wise view has ``n * L`` points (50 million for 50,000 x 1,000): the
generic path of :mod:`calcore.binned` (build the view, sort by group) is too
slow and too large there. Here each block of classes is transposed and
sorted once; every binning of a class then reduces to the *positions* where
its bins begin in the sorted column:

* equal-width: the first position with a score ``>= k/B`` (``searchsorted``,
  exact against the edges ``k/B``);
* rank-based (equal-mass, points-per-bin): the rank boundaries
  ``floor(b m / B)``, moved forward to the next start of a block of equal
  scores so that ties are never split (the rule of
  :func:`calcore.binning.assign_bins`);
* a threshold (TACE) just starts the column at the first score ``>= threshold``.

Counts are differences of positions, score sums one ``np.add.reduceat`` per
class, and each label's bin a ``searchsorted`` of its score in its class's
column. Several (scheme, threshold) requests share one sort. Results equal
the generic path's (tested).
"""

from __future__ import annotations

import numpy as np

from calcore.binning import BinningScheme, equal_width_index

__all__ = ["ClasswiseRequest", "classwise_equal_width", "classwise_sorted_statistics"]

_BLOCK_VALUES = 4_000_000

#: (scheme, threshold or None)
ClasswiseRequest = tuple[BinningScheme, "float | None"]


def classwise_equal_width(probs: np.ndarray, labels: np.ndarray, n_bins: int):
    """Equal-width statistics per (class, bin) from row blocks, without sorting.

    Faster than :func:`classwise_sorted_statistics` when equal-width bins are
    all that is asked for (one pass of index arithmetic and two ``bincount``
    per block). ``labels`` may hold -1 for rows of no listed class.

    Returns
    -------
    count, sum_score, sum_outcome : ndarray of shape (L, B)
    """
    n, n_classes = probs.shape
    size = n_classes * n_bins
    count = np.zeros(size, dtype=np.int64)
    sum_score = np.zeros(size)
    sum_outcome = np.zeros(size)
    offsets = np.arange(n_classes, dtype=np.intp) * n_bins
    step = max(1, _BLOCK_VALUES // n_classes)
    for r0 in range(0, n, step):
        block = probs[r0 : r0 + step]
        cell = equal_width_index(block, n_bins)
        cell += offsets
        count += np.bincount(cell.reshape(-1), minlength=size)
        sum_score += np.bincount(cell.reshape(-1), weights=block.reshape(-1), minlength=size)
        lab = labels[r0 : r0 + step]
        has = lab >= 0
        sum_outcome += np.bincount(cell[np.flatnonzero(has), lab[has]], minlength=size)
    shape = (n_classes, n_bins)
    return count.reshape(shape), sum_score.reshape(shape), sum_outcome.reshape(shape)


def _rank_boundaries(row: np.ndarray, start: int, n_bins: int) -> np.ndarray:
    n = row.size
    m = n - start
    ranks = start + (np.arange(1, n_bins) * m) // n_bins
    moved = np.searchsorted(row, row[np.maximum(ranks - 1, 0)], side="right")
    moved = np.where(ranks > start, moved, start)
    return np.concatenate(([start], np.maximum.accumulate(moved), [n]))


def _width_boundaries(row: np.ndarray, n_bins: int) -> np.ndarray:
    inner = np.searchsorted(row, np.arange(1, n_bins) / n_bins, side="left")
    return np.concatenate(([0], inner, [row.size]))


def classwise_sorted_statistics(probs: np.ndarray, labels: np.ndarray, requests):
    """Per-class bin statistics for each (scheme, threshold) request.

    Parameters
    ----------
    probs : ndarray of shape (n, L)
    labels : ndarray of shape (n,)
        Class index per row, or -1 for rows whose label is none of these columns.
    requests : sequence of (BinningScheme, float or None)
        Schemes of kind equal-width, equal-mass or points-per-bin.

    Returns
    -------
    list of tuples, one per request:
        ``(count, sum_score, sum_outcome, lower, upper, n_bins)``, the first five
        of shape (L, Bmax) and ``n_bins`` of shape (L,) (bins used per class).
        ``lower``/``upper`` are the smallest and largest score in each bin.
    """
    n, n_classes = probs.shape
    out = []
    for scheme, _ in requests:
        b_max = scheme.n_bins(n)
        shape = (n_classes, b_max)
        out.append(
            (
                np.zeros(shape, dtype=np.int64),
                np.zeros(shape),
                np.zeros(shape),
                np.full(shape, np.nan),
                np.full(shape, np.nan),
                np.zeros(n_classes, dtype=np.int64),
            )
        )
    valid_label = labels >= 0
    rows_by_label = np.flatnonzero(valid_label)[np.argsort(labels[valid_label], kind="stable")]
    label_start = np.searchsorted(labels[rows_by_label], np.arange(n_classes + 1))
    step = max(1, _BLOCK_VALUES // max(n, 1))
    for c0 in range(0, n_classes, step):
        # An explicit copy: ascontiguousarray returns a view when k == 1, and we sort in place.
        block = np.array(
            probs[:, c0 : c0 + step].T, order="C", copy=True
        )  # (k, n), contiguous rows
        block.sort(axis=1)
        for j in range(block.shape[0]):  # per class: O(B log n) work plus one reduceat
            c, row = c0 + j, block[j]
            label_rows = rows_by_label[label_start[c] : label_start[c + 1]]
            label_rank = np.searchsorted(row, probs[label_rows, c], side="left")
            for (scheme, threshold), (count, sum_s, sum_o, lower, upper, used) in zip(
                requests, out, strict=True
            ):
                start = (
                    0 if threshold is None else int(np.searchsorted(row, threshold, side="left"))
                )
                if start == n:
                    continue
                b = scheme.n_bins(n - start)  # count rules use the kept scores, as assign_bins does
                if scheme.kind == "equal-width":
                    edges = np.maximum(_width_boundaries(row, b), start)
                else:
                    edges = _rank_boundaries(row, start, b)
                cnt = np.diff(edges)
                nonempty = cnt > 0
                # The non-empty bins' segments tile row[start:], so reduceat over them is exact.
                sum_s[c, :b][nonempty] = np.add.reduceat(row, edges[:-1][nonempty])
                count[c, :b], used[c] = cnt, b
                lower[c, :b] = np.where(nonempty, row[np.minimum(edges[:-1], n - 1)], np.nan)
                upper[c, :b] = np.where(nonempty, row[np.maximum(edges[1:] - 1, 0)], np.nan)
                ranks = label_rank[label_rank >= start]
                sum_o[c, :b] = np.bincount(
                    np.searchsorted(edges[1:-1], ranks, side="right"), minlength=b
                )
    return out

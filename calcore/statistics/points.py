"""The binary reductions whose cells the statistics keep: where each row's points fall.

A multiclass row becomes one point per reduction (Gupta & Ramdas 2022, Table 1):

* ``confidence``: score ``max p``, outcome ``1{y = argmax p}``, one group;
* ``top-label``: the same point, grouped by the predicted class;
* ``class-wise``: one point ``(p_l, 1{y = l})`` per class ``l``, grouped by class.

For each, :func:`reduction_edges` finds the bins from in-memory rows and
:func:`add_rows` adds a batch of rows to a :class:`~calcore.statistics.cells.CellSums`.
Everything binned in calcore goes through these two functions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from calcore.foundation.binning import equal_width_index, resolve_binning
from calcore.foundation.errors import CalcoreError
from calcore.foundation.threads import in_threads, single_threaded_blas
from calcore.foundation.tuning import POINTS_ADD_VALUES as _ADD_VALUES
from calcore.foundation.tuning import POINTS_CHECK_ROWS as _CHECK_ROWS
from calcore.foundation.tuning import POINTS_DENSE_CELL_SHARE as _DENSE_CELL_SHARE
from calcore.foundation.tuning import POINTS_NARROW_CLASSES as _NARROW
from calcore.foundation.tuning import POINTS_SORT_BLOCK_VALUES as _BLOCK_VALUES
from calcore.predictions.reductions import REDUCTIONS as BINARY_REDUCTIONS
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import (
    BinEdges,
    bins_per_group,
    edges_for,
    equal_mass_ranks,
    group_thresholds,
)
from calcore.statistics.selection import order_statistics

__all__ = [
    "REDUCTIONS",
    "RowBatch",
    "add_rows",
    "classwise_edges",
    "complementary_binary",
    "local_labels",
    "point_cells",
    "reduction_edges",
]

REDUCTIONS = tuple(BINARY_REDUCTIONS)  # the names, defined once in calcore.predictions.reductions


@dataclass(frozen=True, eq=False)
class RowBatch:
    """The quantities of a batch of rows that the reductions read.

    ``probs`` (m, L), ``labels`` (m,), ``confidence`` and ``predicted`` (m,),
    ``correct`` (m,) boolean. Built from a :class:`~calcore.Predictions` by
    :meth:`of` (which reuses its cached argmax).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import RowBatch
    >>> batch = RowBatch.of(calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 0]))
    >>> batch.confidence.tolist(), batch.predicted.tolist(), batch.correct.tolist()
    ([0.9, 0.7], [0, 1], [True, False])
    """

    probs: np.ndarray
    labels: np.ndarray
    confidence: np.ndarray
    predicted: np.ndarray
    correct: np.ndarray
    _confidence_bins: dict = field(default_factory=dict, init=False, repr=False)

    def confidence_bins(self, n_bins: int) -> np.ndarray:
        """``equal_width_index(confidence, n_bins)``, computed once per batch (the
        confidence and top-label cells both read it)."""
        if n_bins not in self._confidence_bins:
            self._confidence_bins[n_bins] = equal_width_index(self.confidence, n_bins)
        return self._confidence_bins[n_bins]

    @classmethod
    def of(cls, preds) -> "RowBatch":
        return cls(
            preds.probs,
            preds.labels,
            preds.confidence,
            preds.predicted,
            preds.predicted == preds.labels,
        )


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise CalcoreError(f"reduction must be one of {list(REDUCTIONS)}; got {reduction!r}.")


def complementary_binary(probs: np.ndarray) -> bool:
    """Whether ``probs`` has two columns, column 0 exactly ``1 - column 1`` (a binary
    score and its complement, as ``Predictions.from_probs`` of ``[1 - p, p]`` gives).

    Class 0's points are then the mirror images of class 1's (score ``1 - s``, outcome
    ``1 - o``, and ``1 - x`` rounds monotonically), which spares work on one of them.

    Examples
    --------
    >>> p = np.array([0.1, 0.7])
    >>> complementary_binary(np.column_stack([1 - p, p])), complementary_binary(np.eye(3))
    (True, False)
    """
    if probs.ndim != 2 or probs.shape[1] != 2:
        return False
    # in slices: no batch-sized temporary, and a first differing slice ends it early
    # (10M rows: 15 ms against 28-45 ms for one array_equal of the whole columns)
    complement = np.empty(min(_CHECK_ROWS, probs.shape[0]))
    for a in range(0, probs.shape[0], _CHECK_ROWS):
        part = complement[: min(_CHECK_ROWS, probs.shape[0] - a)]
        np.subtract(1.0, probs[a : a + part.size, 1], out=part)
        if not np.array_equal(probs[a : a + part.size, 0], part):
            return False
    return True


def local_labels(labels: np.ndarray, n_classes: int, classes) -> np.ndarray:
    """Labels as positions among ``classes`` (-1 for rows labelled with another class)."""
    if classes is None:
        return labels
    to_local = np.full(n_classes, -1, dtype=np.intp)
    to_local[classes] = np.arange(classes.size)
    return to_local[labels]


def reduction_edges(
    batch: RowBatch,
    reduction: str,
    *,
    binning="equal-width",
    bins=15,
    weights=None,
    min_score: float | None = None,
    classes=None,
) -> BinEdges:
    """The bins of one reduction of in-memory rows.

    Parameters
    ----------
    batch : RowBatch
    reduction : {"confidence", "top-label", "class-wise"}
    binning, bins :
        See :mod:`calcore.foundation.binning`.
    weights : ndarray of shape (m,), optional
        Row weights (frequency weights).
    min_score : float, optional
        Points with a lower score are in no bin (class-wise, for TACE).
    classes : ndarray of int, optional
        Class-wise only: these classes, as groups ``0 .. len(classes) - 1``.

    Returns
    -------
    BinEdges
        Groups: one (confidence), the classes (top-label, class-wise).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> from calcore.statistics import RowBatch, reduction_edges
    >>> edges = reduction_edges(RowBatch.of(preds), "top-label", binning="equal-mass", bins=2)
    >>> edges.bins_per_group.tolist(), edges.thresholds.tolist()  # a threshold per predicted class
    ([2, 2], [0.8, 0.6])
    """
    _check_reduction(reduction)
    scheme = resolve_binning(binning, bins)
    n_classes = batch.probs.shape[1]
    if reduction == "confidence":
        return edges_for(batch.confidence, binning=scheme, weights=weights, min_score=min_score)
    if reduction == "top-label":
        return edges_for(
            batch.confidence,
            batch.predicted,
            n_groups=n_classes,
            binning=scheme,
            weights=weights,
            min_score=min_score,
        )
    (edges,) = classwise_edges(batch, [(scheme, min_score)], weights=weights, classes=classes)
    return edges


def classwise_edges(batch: RowBatch, requests, *, weights=None, classes=None) -> list[BinEdges]:
    """The class-wise bins of several requests ``[(scheme, min_score), ...]`` at once.

    Rank-based requests (equal-mass, points-per-bin) need order statistics of each
    probability column: unweighted, every request's ranks of a column are selected at
    once (ACE and TACE bin the same columns, TACE above a cut: O(n) a column, no sort;
    :func:`~calcore.statistics.selection.order_statistics`); with weights, or for
    ``"unique"``, each column is sorted once for all requests. Each result equals
    :func:`reduction_edges` of its request alone.

    Parameters
    ----------
    batch : RowBatch
    requests : list of (BinningScheme, float or None)
    weights : ndarray of shape (m,), optional
    classes : ndarray of int, optional
        These classes only, as groups ``0 .. len(classes) - 1``.

    Returns
    -------
    list of BinEdges
        One per request, in order.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> batch = RowBatch.of(calcore.Predictions.from_probs(probs, [0, 1, 1, 1]))
    >>> mass = resolve_binning("equal-mass", 2)
    >>> ace, tace = classwise_edges(batch, [(mass, None), (mass, 0.5)])
    >>> ace.thresholds.tolist(), tace.thresholds.tolist()
    ([0.4, 0.2], [0.8, 0.6])
    """
    probs = batch.probs if classes is None else batch.probs[:, classes]
    n, n_groups = probs.shape
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    total = float(n if w is None else w.sum())
    out: list = [None] * len(requests)
    ranked = []
    for i, (scheme, min_score) in enumerate(requests):
        if min_score is None and scheme.kind == "equal-width":
            out[i] = BinEdges(scheme, bins_per_group(scheme, np.full(n_groups, total)), None, None)
        elif scheme.kind == "equal-width":  # a count rule or a cut: the group sizes are needed
            kept = probs >= min_score
            sizes = kept.sum(axis=0) if w is None else w @ kept
            out[i] = BinEdges(scheme, bins_per_group(scheme, sizes), None, min_score)
        else:
            ranked.append(i)
    if not ranked:
        return out
    selected = w is None and all(requests[i][0].kind != "unique" for i in ranked)
    per_column = _selected_thresholds if selected else _sorted_thresholds
    found = per_column(probs, [requests[i] for i in ranked], w)
    for i, (nb, thresholds) in zip(ranked, found, strict=True):
        scheme, min_score = requests[i]
        flat = np.concatenate(thresholds) if thresholds else np.empty(0)
        out[i] = BinEdges(scheme, nb, flat, min_score)
    return out


def _selected_thresholds(probs: np.ndarray, requests, w) -> list:
    """``[(bins per column, [thresholds per column])]`` of unweighted rank-based requests:
    each column's order statistics at every request's ranks, in one selection
    (:func:`~calcore.statistics.selection.order_statistics`). A binary batch whose
    column 0 is exactly ``1 - p1`` selects from column 1 only: ``1 - x`` rounds
    monotonically, so column 0 sorted is ``1 - (p1 sorted)`` reversed, value for value."""
    n, n_groups = probs.shape
    # per request and column: points below the cut, then the bins of the points kept
    starts = [
        np.zeros(n_groups, np.int64) if cut is None else points_below(probs, cut)
        for _, cut in requests
    ]
    n_bins = [
        bins_per_group(scheme, n - start)
        for (scheme, _), start in zip(requests, starts, strict=True)
    ]
    wanted = []  # per column, per request: (bins, rows kept, positions in the sorted column)
    for c in range(n_groups):
        per_request = []
        for start_of, bins_of in zip(starts, n_bins, strict=True):
            start, b = int(start_of[c]), int(bins_of[c])
            m = n - start
            ranks = equal_mass_ranks(m, b) if b > 1 and m else None
            positions = None if ranks is None else np.where(ranks > 0, start + ranks - 1, -1)
            per_request.append((b, m, positions))
        wanted.append(per_request)
    mirrored = complementary_binary(probs)
    plan = []  # (column, [(column asking, positions)], its sorted positions to select)
    for c in [1] if mirrored else range(n_groups):
        asked = [(c, p) for _, _, p in wanted[c] if p is not None]
        if mirrored:
            asked += [(0, p) for _, _, p in wanted[0] if p is not None]
        kth = {int(q) if col == c else n - 1 - int(q) for col, ps in asked for q in ps if q >= 0}
        if kth:
            plan.append((c, asked, np.fromiter(sorted(kth), dtype=np.intp)))

    def select(begin: int, end: int) -> list:
        return [order_statistics(probs[:, c], ks) for c, _, ks in plan[begin:end]]

    # columns split between threads (numpy's partition releases the GIL); the values do
    # not depend on the split
    selected = [v for part in in_threads(select, len(plan), n * len(plan)) for v in part]
    values = {}  # (column, position) -> the column's order statistic there
    for (c, asked, ks), found in zip(plan, selected, strict=True):
        at = dict(zip(ks.tolist(), found.tolist(), strict=True))
        for col, ps in asked:
            for q in ps[ps >= 0].tolist():
                values[col, q] = at[q] if col == c else 1.0 - at[n - 1 - q]
    found = [(np.zeros(n_groups, dtype=np.int64), []) for _ in requests]
    for c in range(n_groups):
        for (nb, thresholds), (b, m, positions) in zip(found, wanted[c], strict=True):
            nb[c] = b
            if b <= 1:
                thresholds.append(np.empty(0))
            elif m == 0:  # B empty bins (a fixed count): -inf keeps the layout aligned
                thresholds.append(np.full(b - 1, -np.inf))
            else:
                thresholds.append(
                    np.array([values[c, q] if q >= 0 else -np.inf for q in positions.tolist()])
                )
    return found


def points_below(probs: np.ndarray, cut: float) -> np.ndarray:
    """Points below ``cut`` in each column: a pass over the rows for many columns, a
    pass per column for a few (numpy's row-wise count over 2 columns is 9x slower:
    10M x 2, 0.153 against 0.017 s; 50,000 x 1,000, 0.042 against 0.213 s)."""
    if probs.shape[1] >= _NARROW:
        return np.count_nonzero(probs < cut, axis=0)
    return np.array([np.count_nonzero(probs[:, c] < cut) for c in range(probs.shape[1])])


def _sorted_thresholds(probs: np.ndarray, requests, w) -> list:
    """As :func:`_selected_thresholds`, from each column sorted once (weights, unique)."""
    n, n_groups = probs.shape
    found = [(np.zeros(n_groups, dtype=np.int64), []) for _ in requests]
    step = max(1, _BLOCK_VALUES // max(n, 1))
    for c0 in range(0, n_groups, step):
        block = np.array(probs[:, c0 : c0 + step].T, order="C", copy=True)  # (k, n)
        order = None
        if w is None:
            block.sort(axis=1)
        else:
            order = np.argsort(block, axis=1, kind="stable")
            block = np.take_along_axis(block, order, axis=1)
        for j in range(block.shape[0]):
            col = block[j]
            for (nb, thresholds), (scheme, min_score) in zip(found, requests, strict=True):
                start = 0 if min_score is None else int(np.searchsorted(col, min_score, "left"))
                kept = col[start:]
                wk = None if w is None else w[order[j]][start:]
                if wk is not None and not (wk > 0).all():  # weight 0: the row is not there
                    kept, wk = kept[wk > 0], wk[wk > 0]
                if scheme.kind == "unique":
                    b = int(np.unique(kept).size)
                else:
                    size = kept.size if wk is None else wk.sum()
                    b = int(bins_per_group(scheme, [size])[0])
                nb[c0 + j] = b
                thresholds.append(group_thresholds(scheme, kept, wk, b))
    return found


def add_rows(
    sums: CellSums,
    edges: BinEdges,
    batch: RowBatch,
    reduction: str,
    *,
    weights=None,
    classes=None,
) -> None:
    """Add a batch of rows to the cell sums of one reduction (in place).

    Parameters
    ----------
    sums : CellSums
        With ``edges.n_cells`` cells.
    edges : BinEdges
        From :func:`reduction_edges` (or a streamed pass) for the same reduction.
    batch : RowBatch
    reduction : str
    weights : ndarray of shape (m,) or (R, m), optional
        Row weights (a leading replicate axis for bootstrap sums).
    classes : ndarray of int, optional
        Class-wise only: the classes the edges were built for.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> from calcore.statistics import CellSums, RowBatch, add_rows, reduction_edges
    >>> batch = RowBatch.of(preds)
    >>> edges = reduction_edges(batch, "confidence", bins=5)
    >>> sums = CellSums.zeros(edges.n_cells)
    >>> add_rows(sums, edges, batch, "confidence")
    >>> sums.weight.tolist(), sums.outcome.tolist()
    ([0.0, 0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 0.0, 2.0, 1.0])
    """
    _check_reduction(reduction)
    if reduction in ("confidence", "top-label"):
        cells = point_cells(edges, batch, reduction)
        sums.add(cells, batch.confidence, weights, outcomes=batch.correct)
        return
    n, n_classes = batch.probs.shape
    chosen = None if classes is None else np.asarray(classes, dtype=np.intp)
    labels = local_labels(batch.labels, n_classes, chosen)
    width = n_classes if chosen is None else chosen.size
    step = max(1, _ADD_VALUES // max(width, 1))
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    with _OneBlasThread() as blas:
        for r0 in range(0, n, step):
            _add_classwise_block(sums, edges, batch, labels, chosen, width, w, r0, step, blas)


class _OneBlasThread(contextlib.ExitStack):
    """An exit stack that enters :func:`single_threaded_blas` on the first :meth:`enter`
    only (entering scans the loaded libraries, a few ms: not for blocks that need no product)."""

    def enter(self) -> None:
        if not getattr(self, "_entered", False):
            self.enter_context(single_threaded_blas())
            self._entered = True


def _add_classwise_block(sums, edges, batch, labels, chosen, width, w, r0, step, blas) -> None:
    """One block of rows of :func:`add_rows`' class-wise points (``blas``: a
    :class:`_OneBlasThread`, entered for the dense products when first needed)."""
    block = batch.probs[r0 : r0 + step]
    if chosen is not None:
        block = block[:, chosen]
    cells = _classwise_cells(edges, block)
    wb = None if w is None else w[..., r0 : r0 + step]
    rest = cells
    if wb is not None and wb.ndim == 2:
        rest = _add_densest_cells(sums, edges, cells, block, wb, blas)
    sums.add(rest, block, wb)
    lab = labels[r0 : r0 + step]
    # each row's cell at its label, read from the flat cells (a take, not 2-D fancy
    # indexing: 1.3 against 5.0 ns a row for 2 classes)
    if chosen is None:
        at = np.arange(0, cells.size, width) + lab
        sums.add_outcomes(cells.reshape(-1).take(at), wb)
        return
    has = np.flatnonzero(lab >= 0)  # rows of a chosen class
    at = has * width + lab[has]
    sums.add_outcomes(cells.reshape(-1).take(at), None if wb is None else wb[..., has])


def _add_densest_cells(sums, edges, cells, block, wb, blas) -> np.ndarray:
    """Add the weight and score sums of each class's most crowded cell of a block by one
    dense product, ``wb @ [mask, mask * p]``, for the classes where that cell holds at
    least :data:`_DENSE_CELL_SHARE` of the rows; returns ``cells`` with those points
    set to -1 (in no cell) for the sparse product that adds the others.

    The sums are the same terms as the sparse product's, added in BLAS's order (equal to
    ~1e-16 relative; the counts of integer weights are exact). Outcomes are not touched
    (:func:`add_rows` adds them from the label's cell of each row).
    """
    k, width = cells.shape
    if k == 0:
        return cells
    n = sums.n_cells
    count = np.bincount(cells.reshape(-1) + 1, minlength=n + 1)[1:]  # -1: in no cell
    offsets = edges.offsets
    if offsets.size != width + 1 or not (np.diff(offsets) > 0).all():
        return cells  # every class's cells side by side, each class with some
    best = offsets[:-1] + _group_argmax(count, offsets)
    crowded = np.flatnonzero(count[best] >= _DENSE_CELL_SHARE * k)
    if crowded.size == 0:
        return cells
    mask = cells[:, crowded] == best[crowded]
    both = np.empty((k, 2 * crowded.size))
    np.copyto(both[:, : crowded.size], mask)
    np.multiply(block[:, crowded], mask, out=both[:, crowded.size :])
    blas.enter()  # one BLAS thread: a pool's wake-ups cost more than these products
    got = wb @ both  # (R, 2q)
    sums.weight[:, best[crowded]] += got[:, : crowded.size]
    sums.score[:, best[crowded]] += got[:, crowded.size :]
    rest = cells.copy()
    rest[:, crowded] = np.where(mask, -1, cells[:, crowded])
    return rest


def _group_argmax(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Position of the first largest value within each group ``offsets[g]:offsets[g+1]``
    (groups non-empty and consecutive)."""
    top = np.maximum.reduceat(values, offsets[:-1])
    group = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    hit = np.flatnonzero(values == top[group])
    first = hit[np.searchsorted(group[hit], np.arange(offsets.size - 1), side="left")]
    return first - offsets[:-1]


def point_cells(edges: BinEdges, batch: RowBatch, reduction: str, *, classes=None) -> np.ndarray:
    """The cell of every point of a batch (``-1``: in no cell).

    Parameters
    ----------
    edges : BinEdges
    batch : RowBatch
    reduction : str
    classes : ndarray of int, optional
        Class-wise only: the classes the edges were built for.

    Returns
    -------
    ndarray of intp
        Shape (m,) for the confidence and top-label reductions, (m, k) class-wise (one
        column per class of ``classes``, all classes by default). The whole batch at once:
        callers bound its size.

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import RowBatch, point_cells, reduction_edges
    >>> batch = RowBatch.of(calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1]))
    >>> point_cells(reduction_edges(batch, "top-label", bins=2), batch, "top-label").tolist()
    [1, 3]
    """
    _check_reduction(reduction)
    if reduction in ("confidence", "top-label"):
        b = edges.uniform_bins
        local = None if b is None else batch.confidence_bins(b)
        groups = None if reduction == "confidence" else batch.predicted
        return edges.cell_of(batch.confidence, groups, local=local)
    block = batch.probs if classes is None else batch.probs[:, np.asarray(classes, dtype=np.intp)]
    return _classwise_cells(edges, block)


def _classwise_cells(edges: BinEdges, block: np.ndarray) -> np.ndarray:
    """Cells of a (k, L) block of class-wise points (column ``l`` is group ``l``).

    A narrow block is taken a column at a time, with the group a scalar: numpy
    broadcasts a (1, L) operand over (k, L) one short row at a time, 3-4 ns a point for
    L = 2 against 0.3 ns for a scalar (each shift, subtraction and addition of a cell).
    """
    n_groups = block.shape[1]
    if n_groups >= _NARROW:
        return edges.cell_of(block, np.arange(n_groups)[None, :])
    cells = np.empty(block.shape, dtype=np.intp)
    for c in range(n_groups):
        cells[:, c] = edges.cell_of(block[:, c], c)
    return cells

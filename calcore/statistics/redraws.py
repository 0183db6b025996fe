"""Statistics of label sets redrawn from the predicted probabilities, batch by batch.

The test of calibration (:mod:`calcore.evaluation.significance`) compares an error
with its distribution when every row's label is drawn from the row's own predicted
distribution. A redraw changes only the sums that involve labels: per cell the outcome
sums ``sum w 1{y = l}``, the KDE moments of the positive points, the number correct
and the weight of each label. The cell of every point, the weights, the score sums and
the moments of all points are the data's. So :class:`LabelRedraws` finds each point's
cell once per batch and adds every redraw's outcomes with one ``np.bincount`` per set
of cells (seven per KDE problem), instead of a full update per redraw.

The label of row ``i`` in redraw ``r`` is the inverse distribution function of its
probabilities at one uniform keyed by ``(seed, r + 1, i)``
(:func:`~calcore.foundation.keyed_random.row_uniforms`), ``i`` the row's position in the
whole source: the redraws do not depend on how rows are batched or partitioned, and
the state (a replicate axis of outcome sums) merges by addition.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from calcore.foundation.keyed_random import row_uniforms
from calcore.foundation.threads import concurrently
from calcore.foundation.tuning import REDRAW_CHUNK_VALUES as _CHUNK_VALUES
from calcore.foundation.tuning import REDRAW_COMPARE_MAX_CLASSES as _COMPARE_LABEL_CLASSES
from calcore.foundation.tuning import REDRAW_HINT_MISS_COST as _HINT_MISS_COST
from calcore.foundation.tuning import REDRAW_HINT_ROW_COST as _HINT_ROW_COST
from calcore.foundation.tuning import REDRAW_PRODUCT_MAX_CLASSES as _COMPARE_CLASSES
from calcore.foundation.tuning import REDRAWN_LABELS_KEPT_BYTES
from calcore.foundation.validation import frozen_array
from calcore.statistics.accumulator import CalibrationStatistics
from calcore.statistics.cells import replicate_sums
from calcore.statistics.kde_cells import positive_moments, union_add
from calcore.statistics.points import RowBatch, local_labels, point_cells

__all__ = ["KEPT_LABELS", "KeptLabels", "LabelRedraws", "redrawn_labels"]


def redrawn_labels(probs: np.ndarray, positions, seed: int, redraws) -> np.ndarray:
    """Labels drawn from each row's probabilities, one row of labels per redraw.

    Parameters
    ----------
    probs : ndarray of shape (m, L)
        Rows summing to 1.
    positions : ndarray of int, shape (m,)
        Each row's position in the whole source.
    seed : int
    redraws : sequence of int
        Redraw indices ``r``; redraw ``r`` uses the uniforms of stream ``r + 1``.

    Returns
    -------
    ndarray of shape (len(redraws), m), uint8 up to 256 classes, else intp
        ``min(#{k : cumsum(p)_k <= u}, L - 1)``: label ``k`` with probability ``p_k``.

    Notes
    -----
    The cumulative sums never decrease, so the count is that of the first ``L - 1``
    only: one comparison per row for a binary model. Each redraw's uniforms are made
    and compared in turn (a (m,) temporary, not (R, m)). With many classes and confident
    rows, a uniform in the step of the row's predicted class gives that class with two
    comparisons, and only the other rows are counted (:func:`_predicted_steps`).

    Examples
    --------
    >>> labels = redrawn_labels(np.array([[1.0, 0.0], [0.0, 1.0]]), np.arange(2), 0, range(3))
    >>> labels.tolist()
    [[0, 1], [0, 1], [0, 1]]
    """
    cumulative = np.cumsum(np.asarray(probs, dtype=np.float64), axis=1)
    m, n_classes = cumulative.shape
    redraws = [int(r) for r in redraws]
    small = n_classes <= 256
    labels = np.zeros((len(redraws), m), dtype=np.uint8 if small else np.intp)
    hinted = _predicted_steps(probs, cumulative)
    if hinted is not None:
        low, high, top = hinted
        counted = np.ascontiguousarray(cumulative[:, : n_classes - 1])
        for row, r in zip(labels, redraws, strict=True):
            u = row_uniforms(positions, seed, stream=r + 1)
            row[:] = top
            other = np.flatnonzero((u < low) | (u >= high))
            if other.size:  # the rest: the count itself, on their rows only
                row[other] = np.count_nonzero(counted[other] <= u[other, None], axis=1)
        return labels
    if n_classes <= _COMPARE_LABEL_CLASSES:
        thresholds = [np.ascontiguousarray(cumulative[:, k]) for k in range(n_classes - 1)]
    else:
        base = np.arange(m) * n_classes
        flat = cumulative.reshape(-1)
    for row, r in zip(labels, redraws, strict=True):
        u = row_uniforms(positions, seed, stream=r + 1)
        if n_classes <= _COMPARE_LABEL_CLASSES:
            for threshold in thresholds:
                row += threshold <= u
            continue
        # bisection for the first k with cumulative_k > u (equal to the count above)
        low = np.zeros(m, dtype=np.intp)
        high = np.full(m, n_classes, dtype=np.intp)
        while True:
            open_ = low < high
            if not open_.any():
                break
            mid = (low + high) // 2
            below = flat[base + np.minimum(mid, n_classes - 1)] <= u
            low = np.where(open_ & below, mid + 1, low)
            high = np.where(open_ & ~below, mid, high)
        row[:] = np.minimum(low, n_classes - 1)
    return labels


def _predicted_steps(probs, cumulative: np.ndarray):
    """``(low, high, label)`` per row: the step ``[low, high)`` of the cumulative
    probabilities whose uniforms draw the row's predicted class ``label``, or None when
    counting every row is the cheaper way (few classes, or low confidence).

    With ``p`` the predicted class, every threshold before it is ``<= low = C[p - 1]``
    and every one from it on is ``>= high = C[p]`` (the cumulative sums never decrease),
    so a uniform in ``[low, high)`` counts exactly ``p`` thresholds: the label the count
    gives. The first class has ``low = -inf``; the last one ``high = inf`` (the count
    stops at ``L - 1`` whatever the rounding of ``C[L - 1]``).
    """
    m, n_classes = cumulative.shape
    if n_classes < 3 or m == 0:
        return None
    top = np.argmax(probs, axis=1)
    rows = np.arange(m)
    miss = 1.0 - float(np.mean(probs[rows, top]))
    counting = n_classes - 1.0
    if n_classes > _COMPARE_LABEL_CLASSES:
        counting = 12.0 * np.ceil(np.log2(n_classes))
    if _HINT_ROW_COST + _HINT_MISS_COST * miss * (n_classes - 1) >= counting:
        return None
    low = np.where(top > 0, cumulative[rows, np.maximum(top - 1, 0)], -np.inf)
    high = np.where(top < n_classes - 1, cumulative[rows, np.minimum(top, n_classes - 2)], np.inf)
    return low, high, top


class KeptLabels:
    """Redrawn labels of whole in-memory predictions, kept for their next test.

    A calibration test redraws every row's label from the row's own probabilities; the
    labels depend on the probabilities, the rows' positions, the seed and the redraw
    indices, not on the cells, so tests of the same predictions under other bins draw
    the same labels. They are kept here, per predictions object (held weakly: they go
    when it does), within ``max_bytes`` in all, the least recently used dropped first.
    Predictions are immutable (their arrays are read-only), so a kept draw stays right.

    Parameters
    ----------
    max_bytes : int
        Labels kept in all; a draw larger than this is neither kept nor drawn whole.

    Examples
    --------
    >>> import calcore
    >>> kept = KeptLabels(1 << 20)
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.2, 0.8]], [0, 1])
    >>> first = kept.labels(preds, np.arange(2), 0, range(3), step=1)
    >>> first.shape, kept.labels(preds, np.arange(2), 0, range(3), step=1) is first
    ((3, 2), True)
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def labels(self, preds, positions, seed: int, redraws, step: int):
        """Every row's labels in each redraw, shape ``(len(redraws), n)`` (read-only), as
        :func:`redrawn_labels` draws them chunk by chunk (``step`` rows, two threads from
        two chunks on); None when they would take more than ``max_bytes``."""
        redraws = tuple(int(r) for r in redraws)
        n, n_classes = preds.probs.shape
        itemsize = 1 if n_classes <= 256 else np.dtype(np.intp).itemsize
        if len(redraws) * n * itemsize > self.max_bytes:
            return None
        where = hashlib.blake2b(np.ascontiguousarray(positions).tobytes(), digest_size=16)
        key = (id(preds), int(seed), redraws, where.digest())
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0]() is preds:
                self._entries.move_to_end(key)
                return hit[1]
        out = np.empty((len(redraws), n), dtype=np.uint8 if n_classes <= 256 else np.intp)

        def draw(starts):
            for a in starts:
                rows = slice(a, a + step)
                out[:, rows] = redrawn_labels(preds.probs[rows], positions[rows], seed, redraws)

        starts = range(0, n, step)
        half = len(starts) // 2
        if half:
            concurrently([lambda: draw(starts[:half]), lambda: draw(starts[half:])])
        else:
            draw(starts)
        out = frozen_array(out, owned=True)
        with self._lock:
            self._entries[key] = (weakref.ref(preds), out)
            for gone in [k for k, (ref, _) in self._entries.items() if ref() is None]:
                del self._entries[gone]
            total = sum(labels.nbytes for _, labels in self._entries.values())
            while total > self.max_bytes:
                _, (_, oldest) = self._entries.popitem(last=False)
                total -= oldest.nbytes
        return out

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: The process's kept labels (:class:`KeptLabels`), within
#: :data:`calcore.foundation.tuning.REDRAWN_LABELS_KEPT_BYTES`.
KEPT_LABELS = KeptLabels(REDRAWN_LABELS_KEPT_BYTES)


class LabelRedraws:
    """Label-dependent sums of ``R`` redrawn label sets, on the cells of given statistics.

    Parameters
    ----------
    class_names : sequence of str
    specs, kde_specs : dict
        The cells and KDE problems (as in :class:`CalibrationStatistics`).
    redraws : sequence of int
        The redraw indices to accumulate (e.g. ``range(200)``, or a part of it to bound
        memory: the state is ``len(redraws)`` times the cells' outcome sums).
    seed : int

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import CalibrationStatistics, CellSpec, edges_for
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]], [0, 1, 1])
    >>> spec = {"conf": CellSpec("confidence", edges_for(np.empty(0), bins=2))}
    >>> data = CalibrationStatistics.empty(preds.class_names, spec)
    >>> data.update(preds)
    >>> redraws = LabelRedraws(preds.class_names, spec, {}, redraws=range(4), seed=0)
    >>> redraws.update(preds, np.arange(3))
    >>> null = redraws.statistics(data)
    >>> null.cells["conf"].weight.tolist() == [data.cells["conf"].weight.tolist()] * 4
    True
    >>> bool((null.cells["conf"].outcome <= null.cells["conf"].weight).all())
    True
    """

    def __init__(self, class_names, specs: dict, kde_specs: dict, *, redraws, seed: int):
        self.class_names = tuple(class_names)
        self.specs = dict(specs)
        self.kde_specs = dict(kde_specs)
        self.redraws = tuple(int(r) for r in redraws)
        self.seed = int(seed)
        n_redraws = len(self.redraws)
        self.outcome = {k: np.zeros((n_redraws, s.edges.n_cells)) for k, s in self.specs.items()}
        # per KDE problem: (moments (R, 7, k), the k layout cells they are on)
        self.positives = {
            k: [(np.zeros((n_redraws, 7, 0)), np.empty(0, dtype=np.intp)) for _ in s.layouts]
            for k, s in self.kde_specs.items()
        }
        self.correct = np.zeros(n_redraws)
        self.label_weight = np.zeros((n_redraws, len(self.class_names)))
        self.n_rows = 0

    def update(self, preds, positions, weights=None) -> None:
        """Add a batch of rows at the given positions (with optional row weights).

        Rows are taken in chunks of about ``_CHUNK_VALUES`` (redraws x rows) values; from
        two chunks on, the second half of them is added on a worker thread (when
        :func:`calcore.foundation.threads.worker_count` allows two) into redraws of its own and
        merged (split by chunk index, so the result does not depend on timing; the sums
        with unit weights are integers, exact in any order). The labels of the whole
        batch are drawn first and kept (:data:`KEPT_LABELS`) when they fit its budget:
        another test of the same predictions (another binning) reads them again.
        """
        positions = np.asarray(positions)
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        step = max(1, _CHUNK_VALUES // max(len(self.redraws), len(self.class_names), 1))
        starts = range(0, preds.n_samples, step)
        labels = KEPT_LABELS.labels(preds, positions, self.seed, self.redraws, step)
        if len(starts) < 2:
            self._update_chunks(preds, positions, w, starts, step, labels)
        else:
            half = len(starts) // 2
            other = self._empty_like()
            concurrently(
                [
                    lambda: self._update_chunks(preds, positions, w, starts[:half], step, labels),
                    lambda: other._update_chunks(preds, positions, w, starts[half:], step, labels),
                ]
            )
            merged = self.merge(other)
            self.outcome, self.positives = merged.outcome, merged.positives
            self.correct, self.label_weight = merged.correct, merged.label_weight
        self.n_rows += preds.n_samples

    def _empty_like(self) -> "LabelRedraws":
        return LabelRedraws(
            self.class_names, self.specs, self.kde_specs, redraws=self.redraws, seed=self.seed
        )

    def _update_chunks(self, preds, positions, w, starts, step: int, kept=None) -> None:
        """Add the chunks at ``starts``; ``kept``: every row's labels, drawn already."""
        for a in starts:
            rows = slice(a, a + step)
            batch = RowBatch(
                preds.probs[rows],
                preds.labels[rows],
                preds.confidence[rows],
                preds.predicted[rows],
                preds.predicted[rows] == preds.labels[rows],
            )
            if kept is None:
                labels = redrawn_labels(batch.probs, positions[rows], self.seed, self.redraws)
            else:
                labels = kept[:, rows]
            self._add(batch, labels, None if w is None else w[rows])

    def _add(self, batch: RowBatch, labels: np.ndarray, w) -> None:
        n_redraws, m = labels.shape
        n_classes = len(self.class_names)
        hit = labels == batch.predicted.astype(labels.dtype)[None, :]
        weighted_hit = hit.astype(np.float64) if w is None else hit * w
        self.correct += weighted_hit.sum(axis=1)
        few = n_classes <= _COMPARE_CLASSES
        # with few classes, a (redraws, rows) indicator per class and matrix products
        # (calcore.statistics.cells.replicate_sums); with many, bincounts of flat indices
        if few:
            is_class = [labels == c for c in range(n_classes)]
            for c, is_c in enumerate(is_class):
                self.label_weight[:, c] += np.count_nonzero(is_c, axis=1) if w is None else is_c @ w
        else:
            offset = np.arange(n_redraws)[:, None]
            self.label_weight += _bincount(
                offset * n_classes + labels,
                None if w is None else np.broadcast_to(w, labels.shape),
                n_redraws,
                n_classes,
            )
        at_label = None  # flat positions of each redraw's label in (m, L) class-wise cells
        for key, spec in self.specs.items():
            cells = point_cells(spec.edges, batch, spec.reduction, classes=spec.classes)
            n_cells = spec.edges.n_cells
            if spec.reduction != "class-wise":
                (outcome,) = replicate_sums(weighted_hit, cells, n_cells)
            elif few:
                chosen = range(n_classes) if spec.classes is None else spec.classes
                outcome = sum(
                    replicate_sums(
                        is_class[c] if w is None else is_class[c] * w, cells[:, j], n_cells
                    )[0]
                    for j, c in enumerate(chosen)
                )
            elif spec.classes is None:
                # each redraw's cell at each row's label, a take from the flat cells at
                # positions shared by every class-wise set of cells (against a
                # take_along_axis of transposes and a where per set: 10,000 x 100, 200
                # redraws, three sets of cells)
                if at_label is None:
                    at_label = labels.astype(np.intp)
                    at_label += (np.arange(m) * n_classes)[None, :]
                own = cells.reshape(-1).take(at_label)  # (R, m)
                if cells.min(initial=0) >= 0:  # every point in a cell: no key to drop
                    own += np.arange(0, n_redraws * n_cells, n_cells)[:, None]
                    sums = np.bincount(
                        own.reshape(-1),
                        weights=None if w is None else np.broadcast_to(w, own.shape).reshape(-1),
                        minlength=n_redraws * n_cells,
                    )
                    outcome = sums.reshape(n_redraws, n_cells).astype(np.float64)
                else:
                    offset = np.arange(n_redraws)[:, None]
                    index = np.where(own >= 0, offset * n_cells + own, -1)
                    outcome = _bincount(
                        index,
                        None if w is None else np.broadcast_to(w, index.shape),
                        n_redraws,
                        n_cells,
                    )
            else:
                offset = np.arange(n_redraws)[:, None]
                local = local_labels(labels, n_classes, spec.classes)
                own = np.take_along_axis(cells, np.maximum(local, 0).T, axis=1).T  # (R, m)
                index = np.where((local >= 0) & (own >= 0), offset * n_cells + own, -1)
                outcome = _bincount(
                    index,
                    None if w is None else np.broadcast_to(w, index.shape),
                    n_redraws,
                    n_cells,
                )
            self.outcome[key] += outcome
        for key, spec in self.kde_specs.items():
            problems = self.positives[key]
            if spec.reduction == "confidence":
                got = positive_moments(spec.layouts[0], batch.confidence, hit, w)
                problems[0] = union_add(*problems[0], *got)
                continue
            chosen = range(n_classes) if spec.classes is None else spec.classes
            for i, (layout, c) in enumerate(zip(spec.layouts, chosen, strict=True)):
                got = positive_moments(layout, batch.probs[:, c], labels == c, w)
                problems[i] = union_add(*problems[i], *got)

    def merge(self, other: "LabelRedraws") -> "LabelRedraws":
        """The redraws of both sets of rows (a new object; same cells, redraws and seed)."""
        if (
            other.class_names != self.class_names
            or other.redraws != self.redraws
            or other.seed != self.seed
            or other.specs.keys() != self.specs.keys()
            or other.kde_specs.keys() != self.kde_specs.keys()
        ):
            raise ValueError("cannot merge redraws of different cells, classes or seeds")
        out = self._empty_like()
        out.outcome = {k: v + other.outcome[k] for k, v in self.outcome.items()}
        out.positives = {
            k: [union_add(*a, *b) for a, b in zip(v, other.positives[k], strict=True)]
            for k, v in self.positives.items()
        }
        out.correct = self.correct + other.correct
        out.label_weight = self.label_weight + other.label_weight
        out.n_rows = self.n_rows + other.n_rows
        return out

    def statistics(self, data: CalibrationStatistics) -> CalibrationStatistics:
        """The statistics of every redraw: ``data``'s label-free sums with these outcomes.

        ``data`` holds the same rows' statistics on (at least) the same cells and KDE
        problems. The result has a replicate axis (one per redraw) and no NLL or Brier sums
        (``proper_scores=False``).
        """
        if data.n_rows != self.n_rows:
            raise ValueError(f"the redraws saw {self.n_rows} rows, the statistics {data.n_rows}")
        n_redraws = len(self.redraws)
        out = CalibrationStatistics.empty(
            self.class_names,
            self.specs,
            self.kde_specs,
            replicates=n_redraws,
            proper_scores=False,
        )
        for key, sums in out.cells.items():
            sums.weight[:] = data.cells[key].weight
            sums.score[:] = data.cells[key].score
            sums.outcome[:] = self.outcome[key]
        for key, problems in out.kde.items():
            for sums, observed, layout, (positive, at) in zip(
                problems, data.kde[key], self.kde_specs[key].layouts, self.positives[key],
                strict=True,
            ):  # fmt: skip
                every = observed.dense(layout.n_cells)[0]  # (7, n_cells)
                kept = np.union1d(np.flatnonzero(every[0]), at)  # cells with weight
                # all points' moments once (not R copies: 235 MB for 100 classes, 200
                # redraws); the replicates' all-points half stays zero. Replicated sums
                # are cells first, (cells, 7, outcome, redraw): see KDESums
                sums.moments = np.zeros((kept.size, 7, 2, n_redraws))
                sums.moments[np.searchsorted(kept, at), :, 1, :] = positive.transpose(2, 1, 0)
                sums.cells = kept
                sums.shared_all = every[:, kept]
        return replace(
            out,
            n_rows=data.n_rows,
            weight=np.full(n_redraws, float(data.weight)),
            correct=self.correct.copy(),
            label_weight=self.label_weight.copy(),
            n_tied_rows=data.n_tied_rows,
            normalized=data.normalized,
        )


def _bincount(index: np.ndarray, weights, n_redraws: int, n_cells: int) -> np.ndarray:
    """Per-(redraw, cell) sums of ``weights`` (1 when None) at flat indices, ``< 0`` skipped."""
    flat = index.reshape(-1)
    keep = flat >= 0
    wk = None if weights is None else np.asarray(weights).reshape(-1)[keep]
    sums = np.bincount(flat[keep], weights=wk, minlength=n_redraws * n_cells)
    return sums.reshape(n_redraws, n_cells).astype(np.float64)

"""One object that accumulates every sum a calibration report needs, batch by batch.

:class:`CalibrationStatistics` keeps, for fixed bins (one :class:`BinEdges` per
named set of cells), the :class:`CellSums` of each, plus the scoring sums
(``sum w``, ``sum w * correct``, ``sum w * nll``, ``sum w * brier``), the weight of
each label and the number of rows with a tied argmax. It is updated with batches of
:class:`~calcore.Predictions` (in memory: one batch; a streamed source: many) and
merged with another built on the same edges. Every quantity is a sum, so any
batching, any partition and any merge order give the same statistics up to float64
rounding (tested to 1e-12), and the state is a few numpy arrays of size ``n_cells``:
small, plain arrays (any array format carries them) and independent of the number of
rows.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, fields, replace

import numpy as np

from calcore.foundation.threads import concurrently, single_threaded_blas
from calcore.foundation.tuning import ACCUMULATOR_CHUNK_ROWS as _CHUNK_ROWS
from calcore.foundation.tuning import ACCUMULATOR_CHUNK_VALUES as _CHUNK_VALUES
from calcore.foundation.tuning import (
    ACCUMULATOR_CHUNK_VALUES_REPLICATED as _CHUNK_VALUES_REPLICATED,
)
from calcore.foundation.tuning import ACCUMULATOR_SPLIT_CHUNKS as _SPLIT_CHUNKS
from calcore.predictions import take
from calcore.statistics.cells import CellSums, replicate_sums
from calcore.statistics.edges import BinEdges
from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums
from calcore.statistics.points import RowBatch, add_rows
from calcore.statistics.scoring import brier_per_row, nll_per_row

__all__ = ["CellSpec", "KDESpec", "CalibrationStatistics"]


@dataclass(frozen=True, eq=False)
class CellSpec:
    """A named set of cells: a reduction binned by fixed edges.

    ``classes`` restricts the class-wise reduction to some classes (None: all).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics import CalibrationStatistics, CellSpec, edges_for
    >>> edges = edges_for(np.empty(0), np.empty(0, int), n_groups=2, bins=5)  # 5 bins per class
    >>> stats = CalibrationStatistics.empty(("a", "b"), {"top": CellSpec("top-label", edges)})
    >>> stats.update(calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 0], ["a", "b"]))
    >>> stats.cells["top"].weight.tolist()  # 0.9 in a's last bin, 0.7 in b's fourth
    [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    """

    reduction: str
    edges: BinEdges
    classes: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class KDESpec:
    """KDE-ECE problems of a reduction: one layout (bandwidth) per group.

    ``reduction`` is ``"confidence"`` (one problem: ``max p`` against correctness) or
    ``"class-wise"`` (one problem per class in ``classes``, all classes by default).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> from calcore.statistics import CalibrationStatistics, KDESpec
    >>> kde = {"kde": KDESpec.confidence(0.2)}
    >>> stats = CalibrationStatistics.empty(preds.class_names, {}, kde)
    >>> stats.update(preds)
    >>> stats.kde_ece("kde").round(4).tolist()  # = calcore.kde_ece_confidence(preds, bandwidth=0.2)
    [0.2571]
    """

    reduction: str
    layouts: tuple
    classes: np.ndarray | None = None

    @classmethod
    def confidence(cls, bandwidth: float) -> "KDESpec":
        return cls("confidence", (KDELayout.for_bandwidth(bandwidth),))

    @classmethod
    def classwise(cls, bandwidths, classes=None) -> "KDESpec":
        chosen = None if classes is None else np.asarray(classes, dtype=np.intp)
        return cls("class-wise", tuple(KDELayout.for_bandwidth(h) for h in bandwidths), chosen)


@dataclass(eq=False)
class CalibrationStatistics:
    """Mergeable sufficient statistics of a set of predictions.

    Attributes
    ----------
    class_names : tuple of str
    specs : dict of str to CellSpec
    cells : dict of str to CellSums
    n_rows : int
        Rows seen (whatever their weight).
    weight, correct, nll, brier : float, or ndarray of shape (R,) with replicates
        ``sum w`` and the weighted sums of ``1{argmax = y}``, the NLL and the Brier terms.
    label_weight : ndarray of shape (L,) (or (R, L))
        ``sum w`` of the rows of each label.
    n_tied_rows : int
        Rows whose top probability is shared by several classes.
    normalized : bool
        False when any batch was an unnormalised calibrator's output.
    kde_specs, kde : dict of str to KDESpec, dict of str to list of KDESums
        KDE-ECE problems and their per-cell kernel moments
        (:mod:`calcore.statistics.kde_cells`).

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics.edges import edges_for
    >>> p = calcore.Predictions.from_probs([[0.8, 0.2], [0.8, 0.2], [0.3, 0.7]], [0, 1, 1])
    >>> spec = CellSpec("confidence", edges_for(np.empty(0), binning="equal-width", bins=10))
    >>> a = CalibrationStatistics.empty(p.class_names, {"conf": spec})
    >>> a.update(p.subset([0, 1])); a.update(p.subset([2]))
    >>> a.cells["conf"].weight[[7, 8]].tolist(), float(a.correct)  # 0.7 in bin 7, 0.8 in bin 8
    ([1.0, 2.0], 2.0)
    """

    class_names: tuple[str, ...]
    specs: dict
    cells: dict
    n_rows: int = 0
    weight: float | np.ndarray = 0.0
    correct: float | np.ndarray = 0.0
    nll: float | np.ndarray = 0.0
    brier: float | np.ndarray = 0.0
    label_weight: np.ndarray = field(default=None)
    n_tied_rows: int = 0
    normalized: bool = True
    kde_specs: dict = field(default_factory=dict)
    kde: dict = field(default_factory=dict)
    proper_scores: bool = True

    @classmethod
    def empty(
        cls,
        class_names,
        specs: dict,
        kde_specs: dict | None = None,
        *,
        replicates=None,
        proper_scores: bool = True,
        ranges: bool = False,
    ):
        """Zero statistics for the given cells and KDEs.

        With ``replicates=R`` every sum gets a leading axis of ``R`` bootstrap replicates,
        and :meth:`update` takes ``(R, m)`` weights (e.g. :func:`poisson_weights`).
        ``proper_scores=False`` skips the NLL and Brier sums (a report without them).
        ``ranges=True`` keeps each rank-based cell's smallest and largest score (a bin's
        edges in a table or diagram; no metric reads them): off by default, as they cost
        a ``np.minimum.at`` and a ``np.maximum.at`` per point, about a quarter of ACE's
        and TACE's sums.
        """
        cells = {
            k: CellSums.zeros(
                s.edges.n_cells,
                replicates=replicates,
                ranges=ranges and s.edges.thresholds is not None and replicates is None,
            )
            for k, s in specs.items()
        }
        kde_specs = dict(kde_specs or {})
        kde = {
            k: [KDESums.zeros(lay, replicates=replicates) for lay in s.layouts]
            for k, s in kde_specs.items()
        }
        names = tuple(class_names)
        lead = () if replicates is None else (int(replicates),)
        return cls(
            names,
            dict(specs),
            cells,
            0,
            np.zeros(lead),
            np.zeros(lead),
            np.zeros(lead),
            np.zeros(lead),
            np.zeros(lead + (len(names),)),
            kde_specs=kde_specs,
            kde=kde,
            proper_scores=proper_scores,
        )

    @property
    def n_replicates(self) -> int | None:
        """Number of bootstrap replicates (None for the statistics of the data themselves)."""
        return None if np.ndim(self.weight) == 0 else int(np.shape(self.weight)[0])

    def replicate(self, r: int) -> "CalibrationStatistics":
        """The statistics of replicate ``r`` alone (views, no copies)."""
        return CalibrationStatistics(
            self.class_names,
            self.specs,
            {k: CellSums(c.weight[r], c.score[r], c.outcome[r]) for k, c in self.cells.items()},
            self.n_rows,
            self.weight[r],
            self.correct[r],
            self.nll[r],
            self.brier[r],
            self.label_weight[r],
            self.n_tied_rows,
            self.normalized,
            self.kde_specs,
            {k: [s.replicate(r) for s in v] for k, v in self.kde.items()},
            self.proper_scores,
        )

    def update(self, preds, weights=None) -> None:
        """Add a batch of rows (a :class:`~calcore.Predictions`), with optional row weights.

        Rows are taken in chunks of about ``_CHUNK_VALUES`` values (more with replicate
        weights), so that every per-row temporary (argmax, NLL terms, cells, kernel
        moments) stays in cache. From :data:`_SPLIT_CHUNKS` chunks on, the second half of
        the chunks is added on a worker thread (when
        :func:`calcore.foundation.threads.worker_count` allows two) into statistics of its
        own, merged at the end (numpy releases the GIL in most of the work). The sizes, and
        the timings that chose them, are in :mod:`calcore.foundation.tuning`. The split is by
        chunk index, never by timing, so the result is the same on every machine and every
        run.
        """
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        values = _CHUNK_VALUES if w is None or w.ndim < 2 else _CHUNK_VALUES_REPLICATED
        step = max(1, min(values // max(preds.n_classes, 1), _CHUNK_ROWS))
        if preds.n_samples <= step:
            self._update(preds, w, RowBatch.of(preds), preds.n_tied_rows)
            return
        starts = range(0, preds.n_samples, step)
        if len(starts) < _SPLIT_CHUNKS:
            self._update_chunks(preds, w, starts, step)
            return
        half = len(starts) // 2
        other = self._empty_like()
        concurrently(
            [
                lambda: self._update_chunks(preds, w, starts[:half], step),
                lambda: other._update_chunks(preds, w, starts[half:], step),
            ]
        )
        merged = self.merge(other)
        for f in fields(self):
            setattr(self, f.name, getattr(merged, f.name))

    def _empty_like(self) -> "CalibrationStatistics":
        """Zero statistics on the same cells, KDE problems and replicates."""
        return CalibrationStatistics.empty(
            self.class_names,
            self.specs,
            self.kde_specs,
            replicates=self.n_replicates,
            proper_scores=self.proper_scores,
            ranges=any(c.low is not None for c in self.cells.values()),
        )

    def _update_chunks(self, preds, w, starts, step: int) -> None:
        # The argmax already computed on all rows (a cached property) is sliced, not redone.
        cached = "_top" in preds.__dict__
        # the chunks' rows alone: metadata columns would be recounted on every take
        rows_only = replace(preds, metadata={}) if preds.metadata else preds
        for a in starts:
            part = take(rows_only, slice(a, a + step))
            if cached:
                batch = RowBatch(
                    part.probs,
                    part.labels,
                    preds.confidence[a : a + step],
                    preds.predicted[a : a + step],
                    preds.predicted[a : a + step] == part.labels,
                )
                tied = preds.n_tied_rows if a == 0 else 0
            else:
                batch, tied = RowBatch.of(part), part.n_tied_rows
            self._update(part, None if w is None else w[..., a : a + step], batch, tied)

    def _update(self, preds, w, batch: RowBatch, n_tied_rows: int) -> None:
        for key, spec in self.specs.items():
            add_rows(
                self.cells[key], spec.edges, batch, spec.reduction, weights=w, classes=spec.classes
            )
        # replicated KDE sums run their dense products on one BLAS thread (KDESums.add);
        # entered once here for all problems rather than once per problem
        replicated = self.kde and w is not None and np.ndim(w) == 2
        with single_threaded_blas() if replicated else contextlib.nullcontext():
            for key, spec in self.kde_specs.items():
                if spec.reduction == "confidence":
                    self.kde[key][0].add(spec.layouts[0], batch.confidence, batch.correct, w)
                    continue
                chosen = range(self.n_classes) if spec.classes is None else spec.classes
                for sums, layout, c in zip(self.kde[key], spec.layouts, chosen, strict=True):
                    sums.add(layout, batch.probs[:, c], batch.labels == c, w)
        n = preds.n_samples
        self.n_rows += n
        self.n_tied_rows += n_tied_rows
        self.normalized &= bool(preds.normalized)
        # One contiguous vector per term: np.sum / np.dot add them pairwise or blocked.
        terms = (batch.correct.astype(np.float64),)
        if self.proper_scores:
            terms += (nll_per_row(preds), brier_per_row(preds))
        n_labels = len(self.class_names)
        if w is None:
            total, sums = float(n), [float(t.sum()) for t in terms]
            per_label = np.bincount(preds.labels, minlength=n_labels)
        elif w.ndim == 1:
            total, sums = float(w.sum()), [float(w @ t) for t in terms]
            per_label = np.bincount(preds.labels, weights=w, minlength=n_labels)
        else:  # (R, m) replicate weights
            # one product for the total weight and every term
            total, *sums = (w @ np.column_stack((np.ones(n),) + terms)).T
            (per_label,) = replicate_sums(w, preds.labels, n_labels)
        self.weight = self.weight + total
        self.correct = self.correct + sums[0]
        if self.proper_scores:
            self.nll = self.nll + sums[1]
            self.brier = self.brier + sums[2]
        self.label_weight = self.label_weight + per_label

    def merge(self, other: "CalibrationStatistics") -> "CalibrationStatistics":
        """The statistics of both (a new object); built on the same cells and classes."""
        if (
            other.class_names != self.class_names
            or other.specs.keys() != self.specs.keys()
            or other.kde_specs.keys() != self.kde_specs.keys()
        ):
            raise ValueError("cannot merge statistics of different classes or cells")
        return CalibrationStatistics(
            self.class_names,
            self.specs,
            {k: self.cells[k].merge(other.cells[k]) for k in self.cells},
            self.n_rows + other.n_rows,
            self.weight + other.weight,
            self.correct + other.correct,
            self.nll + other.nll,
            self.brier + other.brier,
            self.label_weight + other.label_weight,
            self.n_tied_rows + other.n_tied_rows,
            self.normalized and other.normalized,
            self.kde_specs,
            {
                k: [a.merge(b) for a, b in zip(self.kde[k], other.kde[k], strict=True)]
                for k in self.kde
            },
            self.proper_scores and other.proper_scores,
        )

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    def total(self):
        """``n_rows`` for unit weights, else the total weight (the ``N`` of ``n_b / N``)."""
        if np.ndim(self.weight) == 0 and float(self.weight) == self.n_rows:
            return self.n_rows
        return self.weight

    def kde_ece(self, key: str, *, order=1) -> np.ndarray:
        """KDE-ECE of every problem of one KDE spec (one per group): shape (n_problems,),
        or (R, n_problems) with replicates (all replicates evaluated at once)."""
        spec = self.kde_specs[key]
        values = [
            kde_ece_from_sums(layout, sums, order=order)
            for layout, sums in zip(spec.layouts, self.kde[key], strict=True)
        ]
        return np.stack(values, axis=-1) if values else np.empty(0)

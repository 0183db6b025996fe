"""One object that accumulates every sum a calibration report needs, batch by batch.

:class:`CalibrationStatistics` keeps, for fixed bins (one :class:`BinEdges` per
named set of cells), the :class:`CellSums` of each, plus the scoring sums
(``sum w``, ``sum w * correct``, ``sum w * nll``, ``sum w * brier``), the weight of
each label and the number of rows with a tied argmax. It is updated with batches of
:class:`~calcore.Predictions` (in memory: one batch; a streamed source: many) and
merged with another built on the same edges. Every quantity is a sum, so any
batching, any partition and any merge order give the same statistics up to float64
rounding (tested to 1e-12), and the state is a few arrays of size ``n_cells``:
small, serialisable (``to_arrays``) and independent of the number of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calcore.metrics_scoring import brier_per_row, nll_per_row
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import BinEdges
from calcore.statistics.reductions import RowBatch, add_rows

__all__ = ["CellSpec", "CalibrationStatistics"]


@dataclass(frozen=True, eq=False)
class CellSpec:
    """A named set of cells: a reduction binned by fixed edges.

    ``classes`` restricts the class-wise reduction to some classes (None: all).
    """

    reduction: str
    edges: BinEdges
    classes: np.ndarray | None = None


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
    weight, correct, nll, brier : float
        ``sum w`` and the weighted sums of ``1{argmax = y}``, the NLL and the Brier terms.
    label_weight : ndarray of shape (L,)
        ``sum w`` of the rows of each label.
    n_tied_rows : int
        Rows whose top probability is shared by several classes.
    normalized : bool
        False when any batch was an unnormalised calibrator's output.

    Examples
    --------
    >>> import calcore
    >>> from calcore.statistics.edges import edges_for
    >>> p = calcore.Predictions.from_probs([[0.8, 0.2], [0.8, 0.2], [0.3, 0.7]], [0, 1, 1])
    >>> spec = CellSpec("confidence", edges_for(np.empty(0), binning="equal-width", bins=10))
    >>> a = CalibrationStatistics.empty(p.class_names, {"conf": spec})
    >>> a.update(p.subset([0, 1])); a.update(p.subset([2]))
    >>> a.cells["conf"].weight[[6, 7]].tolist(), a.correct
    ([1.0, 2.0], 2.0)
    """

    class_names: tuple[str, ...]
    specs: dict
    cells: dict
    n_rows: int = 0
    weight: float = 0.0
    correct: float = 0.0
    nll: float = 0.0
    brier: float = 0.0
    label_weight: np.ndarray = field(default=None)
    n_tied_rows: int = 0
    normalized: bool = True

    @classmethod
    def empty(cls, class_names, specs: dict) -> "CalibrationStatistics":
        """Zero statistics for the given cells (ranges kept for rank-based edges)."""
        cells = {
            k: CellSums.zeros(s.edges.n_cells, ranges=s.edges.thresholds is not None)
            for k, s in specs.items()
        }
        names = tuple(class_names)
        return cls(names, dict(specs), cells, label_weight=np.zeros(len(names)))

    def update(self, preds, weights=None) -> None:
        """Add a batch of rows (a :class:`~calcore.Predictions`), with optional row weights."""
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        batch = RowBatch.of(preds)
        for key, spec in self.specs.items():
            add_rows(
                self.cells[key], spec.edges, batch, spec.reduction, weights=w, classes=spec.classes
            )
        n = preds.n_samples
        self.n_rows += n
        self.n_tied_rows += preds.n_tied_rows
        self.normalized &= bool(preds.normalized)
        # One contiguous vector per term: np.sum / np.dot add them pairwise or blocked.
        terms = (batch.correct.astype(np.float64), nll_per_row(preds), brier_per_row(preds))
        if w is None:
            total, sums = float(n), [float(t.sum()) for t in terms]
        else:
            total, sums = float(w.sum()), [float(w @ t) for t in terms]
        self.weight += total
        self.correct += sums[0]
        self.nll += sums[1]
        self.brier += sums[2]
        self.label_weight += np.bincount(preds.labels, weights=w, minlength=len(self.class_names))

    def merge(self, other: "CalibrationStatistics") -> "CalibrationStatistics":
        """The statistics of both (a new object); built on the same cells and classes."""
        if other.class_names != self.class_names or other.specs.keys() != self.specs.keys():
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
        )

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    def total(self):
        """``n_rows`` for unit weights, else the total weight (the ``N`` of ``n_b / N``)."""
        return self.n_rows if self.weight == self.n_rows else self.weight

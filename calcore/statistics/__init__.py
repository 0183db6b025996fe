"""The statistics engine: mergeable sufficient statistics behind every binned metric.

The layer above sources (:mod:`calcore.io`) and below metrics; its foundations (binning
schemes, the exact ranks of several passes, the keyed random numbers of the bootstrap)
are in :mod:`calcore.foundation`. Modules, bottom up:

* :mod:`~calcore.statistics.edges` -- where the bins of each group lie
  (:class:`BinEdges`, from data by :func:`edges_for`);
* :mod:`~calcore.statistics.cuts`, :mod:`~calcore.statistics.selection` -- a score's
  cell among sorted cuts, and the order statistics that rank-based bins start from
  (exact, without a sort);
* :mod:`~calcore.statistics.cells` -- weighted sums per cell (:class:`CellSums`),
  merged by addition;
* :mod:`~calcore.statistics.points` -- how a batch of multiclass rows falls into
  the cells of the confidence, top-label and class-wise reductions;
* :mod:`~calcore.statistics.kde_cells` -- KDE-ECE from per-cell kernel moments
  (exact, mergeable);
* :mod:`~calcore.statistics.bin_statistics` -- per-bin counts, mean scores and
  accuracies of a binary view (:class:`BinStatistics`), read off the cells;
* :mod:`~calcore.statistics.scoring` -- per-row scores (accuracy, negative
  log-likelihood, Brier score) and the calibration gain of a map;
* :mod:`~calcore.statistics.accumulator` -- :class:`CalibrationStatistics`, every sum
  of a report, updated batch by batch and merged;
* :mod:`~calcore.statistics.passes` -- the passes over a stream that build the
  statistics (of all rows, or of every slice at once), with the exact order statistics
  of :mod:`calcore.foundation.exact_ranks`;
* :mod:`~calcore.statistics.replicates` -- bootstrap weights (Poisson, keyed by row
  position: :mod:`calcore.foundation.keyed_random`; multinomial counts in memory);
* :mod:`~calcore.statistics.redraws` -- the sums of labels redrawn from the
  predictions (the test of calibration), keyed by row position too.
"""

from calcore.foundation.keyed_random import poisson_weights
from calcore.statistics.accumulator import CalibrationStatistics, CellSpec, KDESpec
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import BinEdges, edges_for
from calcore.statistics.kde_cells import KDELayout, KDESums, kde_ece_from_sums
from calcore.statistics.passes import (
    CellRequest,
    SlicedStatistics,
    StreamedStatistics,
    stream_statistics,
    stream_statistics_by,
)
from calcore.statistics.points import REDUCTIONS, RowBatch, add_rows, point_cells, reduction_edges
from calcore.statistics.redraws import LabelRedraws, redrawn_labels

__all__ = [
    "CalibrationStatistics",
    "CellSpec",
    "KDESpec",
    "KDELayout",
    "KDESums",
    "kde_ece_from_sums",
    "CellRequest",
    "stream_statistics",
    "stream_statistics_by",
    "StreamedStatistics",
    "SlicedStatistics",
    "poisson_weights",
    "LabelRedraws",
    "redrawn_labels",
    "BinEdges",
    "edges_for",
    "CellSums",
    "REDUCTIONS",
    "RowBatch",
    "add_rows",
    "point_cells",
    "reduction_edges",
]

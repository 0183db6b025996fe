"""The statistics engine: mergeable sufficient statistics behind every binned metric.

Layers, bottom up:

* :mod:`~calcore.statistics.edges` -- where the bins of each group lie
  (:class:`BinEdges`, from data by :func:`edges_for`);
* :mod:`~calcore.statistics.cells` -- weighted sums per cell (:class:`CellSums`),
  merged by addition;
* :mod:`~calcore.statistics.reductions` -- how a batch of multiclass rows falls into
  the cells of the confidence, top-label and class-wise reductions;
* :mod:`~calcore.statistics.accumulator` -- :class:`CalibrationStatistics`, every sum
  of a report, updated batch by batch and merged.
"""

from calcore.statistics.accumulator import CalibrationStatistics, CellSpec
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import BinEdges, edges_for
from calcore.statistics.reductions import REDUCTIONS, RowBatch, add_rows, reduction_edges

__all__ = [
    "CalibrationStatistics",
    "CellSpec",
    "BinEdges",
    "edges_for",
    "CellSums",
    "REDUCTIONS",
    "RowBatch",
    "add_rows",
    "reduction_edges",
]

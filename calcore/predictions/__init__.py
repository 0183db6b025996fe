"""Predictions and what describes their rows: the layer every calcore package above builds on.

* :class:`Predictions` (:mod:`calcore.predictions._predictions`) -- probabilities (or
  logits) with labels and optional row weights; :func:`take` and :func:`concat`, the one
  way to select rows and the one way to join them (every per-row field alike);
* :mod:`~calcore.predictions.metadata` -- extra columns of the rows, kept for slicing;
* :mod:`~calcore.predictions.slicing` -- slice specifications ("age:q4", "date:week")
  and the slices of rows in memory;
* :mod:`~calcore.predictions.slicing_batches` -- the same slices over a stream of batches;
* :mod:`~calcore.predictions.reductions` -- multiclass-to-binary views (confidence,
  top-label, class-wise, top-k).
"""

from calcore.predictions._predictions import Predictions, concat, take

__all__ = ["Predictions", "take", "concat"]

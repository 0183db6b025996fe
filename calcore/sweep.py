"""Binned ECE as a function of the number of bins (top-label paper, Fig. 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore._errors import CalcoreError
from calcore.binned import statistics_for
from calcore.metrics_binned import calibration_error_from_bins
from calcore.predictions import Predictions

__all__ = ["EceByBins", "ece_by_bins"]


@dataclass(frozen=True, eq=False)
class EceByBins:
    """conf-ECE, TL-ECE and CW-ECE for each number of bins.

    Attributes
    ----------
    bins : ndarray of shape (K,), int
    confidence_ece, top_label_ece, classwise_ece : ndarray of shape (K,)
    binning : str
    """

    bins: np.ndarray
    confidence_ece: np.ndarray
    top_label_ece: np.ndarray
    classwise_ece: np.ndarray
    binning: str


def ece_by_bins(
    preds: Predictions, *, bins=range(5, 26), binning: str = "equal-width"
) -> EceByBins:
    """How the binned estimates move with the number of bins ``B`` (default 5..25).

    The top-label paper's Fig. 2 shows TL-ECE staying above conf-ECE for every
    ``B``; a KDE-ECE (no bins) drawn beside it shows how much of the movement is
    the estimator's, not the model's.

    Raises
    ------
    CalcoreError
        An empty list of bin counts, or a count that is not a positive integer.

    References
    ----------
    Gupta & Ramdas (2022), Fig. 2; Zhang et al. (2020), Sec. 4.1.
    """
    counts = np.asarray(list(bins))
    if counts.size == 0 or not np.issubdtype(counts.dtype, np.integer) or (counts < 1).any():
        raise CalcoreError(
            f"bins must be a non-empty sequence of positive integers; got {list(bins)!r}."
        )
    values = {v: np.empty(counts.size) for v in ("confidence", "top-label", "class-wise")}
    for i, b in enumerate(counts):
        for view, out in values.items():
            stats = statistics_for(preds, view, binning=binning, bins=int(b))
            out[i] = calibration_error_from_bins(stats, per_group=view == "class-wise")
    return EceByBins(
        counts, values["confidence"], values["top-label"], values["class-wise"], binning
    )

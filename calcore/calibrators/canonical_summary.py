"""Per-bin summary of a fitted canonical calibrator, for the L = 3 simplex view of the dashboard."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.calibrators._base import Calibrator
from calcore.calibrators._canonical_base import CanonicalCalibrator
from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import freeze_fields
from calcore.predictions import Predictions

__all__ = ["CanonicalBins", "canonical_bin_summary"]


@dataclass(frozen=True)
class CanonicalBins:
    """Per-bin summary of a fitted canonical calibrator on some predictions (L = 3 simplex view).

    Attributes
    ----------
    method : str
    class_names : tuple of str
    n_bins : int
        Bins of the fitted partition (including those no row here falls in).
    bin_of_row : ndarray of shape (n_samples,), int64
        Bin id of every row (for colouring the scatter).
    bins : ndarray of shape (n_nonempty,), int64
        Ids of the bins holding at least one row, increasing.
    counts : ndarray of shape (n_nonempty,), int64
        Rows of ``preds`` in each of those bins.
    mean_prediction : ndarray of shape (n_nonempty, n_classes)
        Mean input prediction of the rows in the bin (arrow tail).
    recalibrated : ndarray of shape (n_nonempty, n_classes)
        Mean recalibrated prediction of those rows (arrow head): the bin's
        label distribution, or for an ``identity`` fallback bin the mean input.
    calibration_counts : ndarray of shape (n_nonempty,), int64
        Calibration rows that estimated the bin's distribution.
    fallback : ndarray of shape (n_nonempty,), bool
        Bins with fewer than ``min_count`` calibration rows.
    """

    method: str
    class_names: tuple[str, ...]
    n_bins: int
    bin_of_row: np.ndarray
    bins: np.ndarray
    counts: np.ndarray
    mean_prediction: np.ndarray
    recalibrated: np.ndarray
    calibration_counts: np.ndarray
    fallback: np.ndarray

    def __post_init__(self):
        freeze_fields(self)  # the dashboard shares it across sessions (st.cache_resource)


def canonical_bin_summary(calibrator: Calibrator, preds: Predictions) -> CanonicalBins:
    """Bins, mean predictions and recalibrated predictions of ``preds`` under a fitted calibrator.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted ``sierpinski``, ``grid`` or ``projection-hb`` calibrator.
    preds : Predictions
        Rows to summarise (usually the test split), with the calibrator's classes.

    Returns
    -------
    CanonicalBins

    Raises
    ------
    CalcoreError
        Not a canonical calibrator, not fitted, or other classes.

    Examples
    --------
    >>> from calcore.calibrators import make_calibrator
    >>> p = Predictions.from_probs([[0.8, 0.1, 0.1], [0.7, 0.2, 0.1], [0.2, 0.3, 0.5]], [0, 1, 2])
    >>> s = canonical_bin_summary(make_calibrator("sierpinski", depth=1).fit(p), p)
    >>> s.bins.tolist(), s.counts.tolist(), s.recalibrated[1].tolist()
    ([0, 1], [1, 2], [0.5, 0.5, 0.0])
    """
    if not isinstance(calibrator, CanonicalCalibrator):
        raise CalcoreError(
            f"canonical_bin_summary needs a 'sierpinski', 'grid' or 'projection-hb' calibrator; "
            f"got {getattr(calibrator, 'name', type(calibrator).__name__)!r}."
        )
    out = calibrator.transform(preds)  # checks fitted and classes
    state = calibrator._state
    bins = calibrator.bin_index(preds.probs)
    n_bins, n_classes = len(state["counts"]), preds.n_classes
    counts = np.bincount(bins, minlength=n_bins)
    keep = np.flatnonzero(counts)
    c = counts[keep, None]

    def bin_means(values):
        cols = [np.bincount(bins, weights=values[:, j], minlength=n_bins) for j in range(n_classes)]
        return np.stack(cols, axis=1)[keep] / c

    return CanonicalBins(
        method=calibrator.name,
        class_names=preds.class_names,
        n_bins=n_bins,
        bin_of_row=bins,
        bins=keep.astype(np.int64),
        counts=counts[keep].astype(np.int64),
        mean_prediction=bin_means(preds.probs),
        recalibrated=bin_means(out.probs),
        calibration_counts=np.asarray(state["counts"], dtype=np.int64)[keep],
        fallback=np.asarray(state["fallback"], dtype=bool)[keep],
    )

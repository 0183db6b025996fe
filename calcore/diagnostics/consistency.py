"""Consistency-resampling bands for reliability diagrams.

Under the null hypothesis that the predictions are perfectly calibrated, each
outcome is ``Bernoulli(score)``. Redrawing the outcomes ``R`` times and
recomputing every bin's observed frequency shows how far from the diagonal a
perfectly calibrated model's diagram would wander by chance: deviations inside
the band are noise.

References
----------
Broecker & Smith (2007), "Increasing the reliability of reliability diagrams";
Silva Filho et al. (2023), "Classifier calibration: a survey", Sec. 3.3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.deprecation import renamed_attribute, renamed_keywords
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import N_RESAMPLES
from calcore.foundation.tuning import CONSISTENCY_DRAWS_PER_BLOCK as _DRAWS_PER_BLOCK
from calcore.foundation.validation import freeze_fields, refuse_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import binary_view
from calcore.statistics.cells import CellSums, replicate_sums
from calcore.statistics.edges import edges_for

__all__ = ["ConsistencyBands", "consistency_bands"]


@dataclass(frozen=True, eq=False)
class ConsistencyBands:
    """Per-bin band of observed frequencies under perfect calibration.

    Attributes
    ----------
    confidence : ndarray of shape (B,)
        Mean score per bin (the diagram's x); NaN for empty bins.
    lower, upper : ndarray of shape (B,)
        Quantiles ``(1 - confidence_level) / 2`` and ``(1 + confidence_level) / 2`` of
        the resampled frequencies; NaN for empty bins.
    confidence_level : float
        (Until 0.1 ``level``, still readable for one release, with a DeprecationWarning.)
    n_resamples : int
    seed : int

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> bands = calcore.consistency_bands(preds, bins=5, n_resamples=100)
    >>> [round(float(c), 4) for c in bands.confidence[3:]]
    [0.65, 0.85]
    >>> bands.confidence_level, bands.n_resamples
    (0.9, 100)
    """

    confidence: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence_level: float
    n_resamples: int
    seed: int

    level = renamed_attribute("confidence_level", "level")

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it


@renamed_keywords(level="confidence_level")
def consistency_bands(
    preds: Predictions,
    *,
    view: str = "confidence",
    bins=15,
    binning="equal-width",
    n_resamples: int = 200,
    confidence_level: float = 0.9,
    seed: int = 0,
) -> ConsistencyBands:
    """Consistency bands for the confidence (or another single-group) view's bins.

    Parameters
    ----------
    preds : Predictions
    view : str, default "confidence"
        A single-problem view (only ``"confidence"`` among the named views); the bins are
        those of :func:`calcore.reliability_diagram`.
    bins, binning :
        As for the diagram the bands go with.
    n_resamples : int, default 200
    confidence_level : float, default 0.9
        Central mass of the band (0.9 gives the 5-95% band). ``level``, its name until
        0.1, still works for one release, with a DeprecationWarning.
    seed : int, default 0

    Returns
    -------
    ConsistencyBands

    Raises
    ------
    CalcoreError
        Invalid ``n_resamples`` or ``confidence_level``.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> bands = calcore.consistency_bands(preds, bins=5, n_resamples=100, seed=0)
    >>> bands.lower[3:].tolist(), bands.upper[3:].tolist()  # observed: 1.0 and 0.5
    ([0.0, 0.5], [1.0, 1.0])
    """
    refuse_weights(preds, "consistency_bands (resampling labels under perfect calibration)")
    N_RESAMPLES.check(n_resamples, "n_resamples")
    if not 0 < confidence_level < 1:
        raise CalcoreError(f"confidence_level must be in (0, 1); got {confidence_level!r}.")
    v = binary_view(preds, view)
    if v.n_groups != 1:
        raise CalcoreError(
            f"consistency_bands needs a single-problem view such as 'confidence'; {view!r} has "
            f"{v.n_groups} groups. For one class, build the bands from that class's diagram data."
        )
    edges = edges_for(v.scores, binning=binning, bins=bins)
    cells = edges.cell_of(v.scores)
    total = edges.n_cells
    sums = CellSums.zeros(total)
    sums.add(cells, v.scores)
    count, conf = sums.weight, sums.score
    rng = np.random.default_rng(seed)
    freq = np.empty((n_resamples, total))
    per_block = max(1, _DRAWS_PER_BLOCK // max(v.scores.size, 1))
    # The draws follow the points sorted by bin (as they always have, so a seed gives the
    # same bands); each block of resamples is one replicate-weighted sum per cell.
    order = np.argsort(cells, kind="stable")
    s_sorted, cells_sorted = v.scores[order], cells[order]
    nonempty = count > 0
    for r0 in range(0, n_resamples, per_block):
        r1 = min(n_resamples, r0 + per_block)
        draws = (rng.random((r1 - r0, s_sorted.size)) < s_sorted).astype(np.float64)
        (freq[r0:r1],) = replicate_sums(draws, cells_sorted, total)
    with np.errstate(invalid="ignore", divide="ignore"):
        freq /= count
        lo, hi = np.quantile(freq, [(1 - confidence_level) / 2, (1 + confidence_level) / 2], axis=0)
        mean_conf = conf / count
    lo[~nonempty] = np.nan
    hi[~nonempty] = np.nan
    return ConsistencyBands(mean_conf, lo, hi, float(confidence_level), int(n_resamples), int(seed))

"""Binary binning calibrators: histogram binning UMD [hb] (in
:mod:`calcore.calibrators.histogram_binning`), and here UMS [ums], fixed-width
binning [fwb], scaling-binning [sb].

The bin rules (``bins`` or ``points_per_bin``, half-open bins, empty bins) are in
:mod:`calcore.calibrators._bins`; the binary-calibrator contract that the M2B
wrappers rely on is :class:`calcore.calibrators._binary.BinaryCalibrator`.

References
----------
Gupta & Ramdas (2021), "Distribution-free calibration guarantees for histogram
binning without sample splitting", ICML, Sec. 4 (UMS).
Zadrozny & Elkan (2001), "Obtaining calibrated probability estimates from
decision trees and naive Bayesian classifiers" (fixed-width binning).
Kumar, Liang & Ma (2019), "Verified uncertainty calibration", NeurIPS (scaling-binning).
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._bins import (
    BINS,
    EDGE_STATE,
    POINTS_PER_BIN,
    SEED,
    BinnedCalibrator,
    bin_sums,
    bin_values,
    lookup,
    umd_edges,
)
from calcore.calibrators._registry import register
from calcore.calibrators._state import Array, Number
from calcore.foundation.binning import equal_width_index

__all__ = ["UniformMassSplit", "FixedWidthBinning", "ScalingBinning"]


@register
class UniformMassSplit(BinnedCalibrator):
    """Uniform-mass binning with sample splitting, UMS (Gupta & Ramdas 2021, Sec. 4).

    A seeded random half of the calibration points (``floor(n/2)``) sets the
    UMD edges (with ``points_per_bin``, ``B = floor(n_half / k)``); the other
    half sets each bin's value, the mean of its outcomes over ``(e_{b-1}, e_b]``.
    """

    name = "ums"
    description = "Uniform-mass binning with sample splitting (half for edges, half for means)"
    title = "Uniform-mass binning, split sample"
    use = "bin edges from half the rows, bin means from the other half"
    parameters = (BINS, POINTS_PER_BIN, SEED)
    state_fields = EDGE_STATE

    @classmethod
    def min_points(cls, params: dict) -> int:
        return 2 * super().min_points(params)

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        perm = np.random.default_rng(params["seed"]).permutation(scores.size)
        first, second = perm[: scores.size // 2], perm[scores.size // 2 :]
        edges = umd_edges(np.sort(scores[first]), cls._n_bins(params, first.size))
        s2 = scores[second]
        counts, sums = bin_sums(np.sort(s2), edges, s2, outcomes[second], open_bins=False)
        return {"edges": edges, "values": bin_values(edges, counts, sums), "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        return lookup(np.asarray(state["edges"], float), np.asarray(state["values"], float), scores)


@register
class FixedWidthBinning(BinnedCalibrator):
    """Fixed-width binning: B equal-width bins ``[b/B, (b+1)/B)`` (last closed), mean outcomes.

    With ``points_per_bin``, ``B = floor(n / k)``. Bin indices come from
    :func:`calcore.foundation.binning.equal_width_index` (exact edges). An empty bin
    predicts its midpoint ``(b + 1/2) / B``.
    """

    name = "fwb"
    description = "Fixed-width (equal-width) binning; empty bins predict their midpoint"
    title = "Fixed-width binning"
    use = "equal-width bins: simple; bins empty where scores crowd"
    parameters = (BINS, POINTS_PER_BIN)
    state_fields = {
        "bins": Number(minimum=1, dim="B"),
        "values": Array(("B",), minimum=0.0, maximum=1.0),
        "counts": Array(("B",), "int", minimum=0),
    }

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, outcomes = cls._check_sample(scores, outcomes, params)
        n_bins = cls._n_bins(params, scores.size)
        idx = equal_width_index(np.clip(scores, 0.0, 1.0), n_bins)
        counts = np.bincount(idx, minlength=n_bins)
        sums = np.bincount(idx, weights=outcomes, minlength=n_bins)
        mid = (np.arange(n_bins) + 0.5) / n_bins
        values = np.divide(sums, counts, out=mid, where=counts > 0)
        return {"bins": n_bins, "values": values, "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        idx = equal_width_index(np.clip(scores, 0.0, 1.0), int(state["bins"]))
        return np.asarray(state["values"], float)[idx]


@register
class ScalingBinning(BinnedCalibrator):
    """Scaling-binning (Kumar et al. 2019), with double dipping as in Gupta & Ramdas (2021, Sec. 4).

    The scores are assumed to be the output of a scaling method already (e.g.
    Platt or temperature scaling fitted on other data); ``sb`` does no scaling
    itself. Bins are the UMD uniform-mass bins ``(e_{b-1}, e_b]`` over all
    calibration scores, and each bin predicts the mean of the *scores* in it,
    not of the outcomes (which are ignored).
    """

    name = "sb"
    description = "Scaling-binning: uniform-mass bins predicting the mean score in the bin"
    title = "Scaling-binning"
    use = "bins that predict their mean score: few rows per bin suffice"
    parameters = (BINS, POINTS_PER_BIN)
    state_fields = EDGE_STATE

    @classmethod
    def fit_binary(cls, scores, outcomes, params) -> dict:
        scores, _ = cls._check_sample(scores, outcomes, params)
        sorted_scores = np.sort(scores)
        edges = umd_edges(sorted_scores, cls._n_bins(params, scores.size))
        counts, sums = bin_sums(sorted_scores, edges, scores, scores, open_bins=False)
        # Zero scores add nothing to the sums but do count: bin_sums counts from the sorted scores.
        return {"edges": edges, "values": bin_values(edges, counts, sums), "counts": counts}

    @classmethod
    def apply_binary(cls, state, scores, params) -> np.ndarray:
        return lookup(np.asarray(state["edges"], float), np.asarray(state["values"], float), scores)

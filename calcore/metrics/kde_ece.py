"""KDE-ECE of the multiclass views (Mix-n-Match Sec. 4.1), over the kernel density estimators
of :mod:`calcore.foundation.kernel_density`.

``kde_ece_confidence`` is the estimator on the confidence view (score ``max p``,
outcome ``1{y = argmax p}``), which the Mix-n-Match paper and code call the
"top-label" ECE; ``kde_ece_classwise`` averages the estimator over the
class-wise problems (``p_l`` vs ``1{y = l}``).
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.kernel_density import (
    KDEReliabilityCurve,
    check_kde_inputs,
    kde_bandwidth,
    kde_ece,
    kde_reliability_curve,
)
from calcore.foundation.validation import refuse_weights, row_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import confidence_view
from calcore.statistics.kde_cells import KDELayout, KDESums, ScoreMoments, kde_ece_from_sums

__all__ = ["kde_ece_confidence", "kde_ece_classwise", "kde_confidence_curve"]


def kde_ece_confidence(preds: Predictions, *, order=1, bandwidth=None, sample_weight=None) -> float:
    """KDE-ECE of the confidence view.

    Evaluated from per-cell kernel moments (:mod:`calcore.statistics.kde_cells`), equal
    to :func:`calcore.foundation.kernel_density.kde_ece` on ``(max p, 1{y = argmax p})`` to
    ~1e-12 relative.

    Parameters
    ----------
    preds : Predictions
    order : float, default 1
        The power ``d`` in ``integral |z - pi(z)|^d p(z) dz`` (no d-th root, as in
        the paper).
    bandwidth : float, optional
        Kernel half-width; the rule of thumb of
        :func:`calcore.foundation.kernel_density.kde_bandwidth` by default (of the weighted
        scores with ``sample_weight``).
    sample_weight : array_like of shape (n,), optional
        Row weights (frequency weights: an integer weight equals repeating the row).

    Returns
    -------
    float

    References
    ----------
    Zhang, Kailkhura, Han (2020), "Mix-n-Match", ICML, Sec. 4.1, Eq. 6.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.kde_ece_confidence(preds, bandwidth=0.2), 4)
    0.2571
    >>> round(calcore.kde_ece([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 1], bandwidth=0.2), 4)
    0.2571
    """
    v = confidence_view(preds)
    if preds.n_samples < 2:
        return kde_ece(v.scores, v.outcomes, order=order, bandwidth=bandwidth)  # raises
    # Same checks and messages as kde_ece; then the statistics engine (as calcore.evaluate).
    check_kde_inputs(v.scores, v.outcomes, bandwidth, None, "kde_ece", order)
    w = row_weights(preds, sample_weight)
    return _engine_kde_ece(v.scores, v.outcomes, bandwidth, order, w)


def kde_ece_classwise(
    preds: Predictions, *, order=1, bandwidth=None, classes=None, sample_weight=None
) -> float:
    """Mean over classes of the KDE-ECE of ``(p_l, 1{y = l})``.

    Each class gets its own rule-of-thumb bandwidth unless ``bandwidth`` is given.
    Each class is evaluated from per-cell kernel moments
    (:mod:`calcore.statistics.kde_cells`; equal to
    :func:`calcore.foundation.kernel_density.kde_ece` per class to ~1e-12 relative, tested).

    Parameters
    ----------
    preds : Predictions
    order : float, default 1
        The power ``d`` (no d-th root, as in the paper).
    bandwidth : float, optional
        One kernel half-width for every class.
    classes : sequence of int, optional
        Average over these classes only (all by default).
    sample_weight : array_like of shape (n,), optional
        Row weights (frequency weights).

    Returns
    -------
    float

    References
    ----------
    Zhang, Kailkhura, Han (2020), "Mix-n-Match", ICML, Sec. 4.1, Eq. 6.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> round(calcore.kde_ece_classwise(preds, bandwidth=0.2), 4)
    0.3498
    >>> e0 = calcore.kde_ece(preds.probs[:, 0], preds.labels == 0, bandwidth=0.2)
    >>> e1 = calcore.kde_ece(preds.probs[:, 1], preds.labels == 1, bandwidth=0.2)
    >>> round((e0 + e1) / 2, 4)
    0.3498
    """
    chosen = list(range(preds.n_classes)) if classes is None else [int(c) for c in classes]
    if not chosen or preds.n_samples < 2:
        # Nothing to batch: the reference raises (too few rows) or averages nothing.
        values = [
            kde_ece(preds.probs[:, c], preds.labels == c, order=order, bandwidth=bandwidth)
            for c in chosen
        ]
        return float(np.mean(values))
    first = chosen[0]
    # Same checks and messages as kde_ece (bandwidth range, order); scores are valid already.
    check_kde_inputs(
        preds.probs[:, first], preds.labels == first, bandwidth, None, "kde_ece", order
    )
    w = row_weights(preds, sample_weight)
    values = [
        _engine_kde_ece(preds.probs[:, c], preds.labels == c, bandwidth, order, w) for c in chosen
    ]
    return float(np.mean(values))


def _engine_kde_ece(scores, outcomes, bandwidth, order, weights=None) -> float:
    """KDE-ECE of one binary problem from its per-cell kernel moments (calcore.statistics)."""
    if bandwidth is not None:
        h = float(bandwidth)
    elif weights is None:
        h = kde_bandwidth(scores)
    else:
        h = ScoreMoments.of(scores, weights).bandwidth()
    layout = KDELayout.for_bandwidth(h)
    sums = KDESums.zeros(layout)
    sums.add(layout, scores, outcomes, weights)
    return kde_ece_from_sums(layout, sums, order=order)


def kde_confidence_curve(
    preds: Predictions, *, bandwidth=None, grid_size=None
) -> KDEReliabilityCurve:
    """The smooth KDE reliability curve of the confidence view (drawn over the binned points).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> curve = calcore.kde_confidence_curve(preds, bandwidth=0.2)
    >>> curve.n, curve.bandwidth, curve.grid.size
    (4, 0.2, 2001)
    """
    refuse_weights(preds, "kde_confidence_curve")
    v = confidence_view(preds)
    return kde_reliability_curve(v.scores, v.outcomes, bandwidth=bandwidth, grid_size=grid_size)

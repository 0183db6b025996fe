"""Multiclass-to-binary (M2B) reductions of a set of predictions ("views" in metric options).

Each named function turns (probs, labels) into a :class:`BinaryView`: one score
and one 0/1 outcome per point, plus a group id. Metrics, calibrators and
diagnostics all consume these views, so that "top-label" means the same thing
everywhere.

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Table 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.predictions import Predictions

__all__ = [
    "BinaryView",
    "REDUCTIONS",
    "confidence_view",
    "top_label_view",
    "classwise_view",
    "top_k_confidence_view",
    "top_k_label_view",
    "binary_view",
]


@dataclass(frozen=True, eq=False)
class BinaryView:
    """A multiclass problem reduced to binary problems.

    Attributes
    ----------
    name : str
        The reduction, e.g. ``"confidence"`` or ``"top-label"``.
    scores : ndarray of shape (m,), float64
        The predicted probability of the event.
    outcomes : ndarray of shape (m,), float64
        1.0 where the event happened, else 0.0.
    groups : ndarray of shape (m,), int64
        Which binary problem each point belongs to (``0 .. n_groups - 1``):
        0 for confidence, the predicted class for top-label, the class for
        class-wise.
    group_names : tuple of str
        One name per group.
    n_rows : int
        Number of prediction rows the view was built from (the ``n`` that
        weights each problem in TL-ECE and CW-ECE).
    n_tied_rows : int
        Rows whose top probability is shared by several classes; the lowest
        class index was taken as the prediction.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> view = calcore.confidence_view(preds)
    >>> view.scores.tolist(), view.outcomes.tolist()
    ([0.9, 0.8, 0.7, 0.6], [1.0, 0.0, 1.0, 1.0])
    >>> view.name, view.n_groups, view.n_rows
    ('confidence', 1, 4)
    """

    name: str
    scores: np.ndarray
    outcomes: np.ndarray
    groups: np.ndarray
    group_names: tuple[str, ...]
    n_rows: int
    n_tied_rows: int = 0

    @property
    def n_groups(self) -> int:
        return len(self.group_names)

    def group(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores and outcomes of group ``g``."""
        mask = self.groups == g
        return self.scores[mask], self.outcomes[mask]


def confidence_view(preds: Predictions) -> BinaryView:
    """Confidence view: score ``max p``, outcome ``1{y = argmax p}``, one group.

    Argmax ties resolve to the lowest class index; their count is in
    ``n_tied_rows``.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.5, 0.5], [0.2, 0.8]], [1, 1])
    >>> view = calcore.confidence_view(preds)
    >>> view.scores.tolist(), view.outcomes.tolist(), view.n_tied_rows  # the tie goes to class 0
    ([0.5, 0.8], [0.0, 1.0], 1)
    """
    n = preds.n_samples
    return BinaryView(
        "confidence",
        preds.confidence,
        preds.correct,
        np.zeros(n, dtype=np.int64),
        ("all",),
        n,
        preds.n_tied_rows,
    )


def top_label_view(preds: Predictions) -> BinaryView:
    """Top-label view: as the confidence view, grouped by the predicted class.

    Conditioning on the predicted class is what separates top-label
    calibration from confidence calibration (Gupta & Ramdas 2022, Eq. 2).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> view = calcore.top_label_view(preds)
    >>> view.groups.tolist(), view.group_names  # grouped by the predicted class
    ([0, 0, 1, 1], ('0', '1'))
    """
    return BinaryView(
        "top-label",
        preds.confidence,
        preds.correct,
        preds.predicted.astype(np.int64),
        preds.class_names,
        preds.n_samples,
        preds.n_tied_rows,
    )


def classwise_view(preds: Predictions, *, classes=None) -> BinaryView:
    """Class-wise view: for each class ``l``, score ``p_l`` and outcome ``1{y = l}``.

    Parameters
    ----------
    preds : Predictions
    classes : sequence of int, optional
        Only these classes (all by default). Metrics over many classes pass
        blocks of classes so that the ``n * L`` arrays are never built at once.

    Returns
    -------
    BinaryView
        ``n * len(classes)`` points; group ``l`` holds class ``l`` (group ids
        are the class indices, and ``group_names`` lists every class).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> view = calcore.classwise_view(preds)  # class 0's points, then class 1's
    >>> view.scores.tolist(), view.outcomes.tolist(), view.groups.tolist()
    ([0.9, 0.3, 0.1, 0.7], [1.0, 0.0, 0.0, 1.0], [0, 0, 1, 1])
    """
    classes = np.arange(preds.n_classes) if classes is None else np.asarray(classes, dtype=np.int64)
    n = preds.n_samples
    scores = np.ascontiguousarray(preds.probs[:, classes].T).reshape(-1)
    outcomes = (preds.labels[None, :] == classes[:, None]).reshape(-1).astype(np.float64)
    groups = np.repeat(classes, n)
    return BinaryView("class-wise", scores, outcomes, groups, preds.class_names, n, 0)


def _kth_largest(preds: Predictions, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Class index and probability of the k-th largest entry per row (k is 1-based).

    Ties are ordered by class index (a stable sort of ``-p``), consistent with
    the argmax rule.
    """
    if not 1 <= k <= preds.n_classes:
        raise CalcoreError(
            f"k must be between 1 and the number of classes ({preds.n_classes}); got {k}."
        )
    if k == 1:
        return preds.predicted, preds.confidence
    order = np.argsort(-preds.probs, axis=1, kind="stable")[:, k - 1]
    return order, preds.probs[np.arange(preds.n_samples), order]


def top_k_confidence_view(preds: Predictions, k: int) -> BinaryView:
    """Rank-``k`` confidence view: the k-th largest probability and whether its class is the label.

    ``k = 1`` is the confidence view. Top-K-confidence calibration asks this of
    every ``k <= K`` (Gupta & Ramdas 2022, Eq. 6).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], [1, 0])
    >>> view = calcore.top_k_confidence_view(preds, 2)  # second-largest probability
    >>> view.name, view.scores.tolist(), view.outcomes.tolist()
    ('top-2-confidence', [0.3, 0.3], [1.0, 0.0])
    """
    cls, score = _kth_largest(preds, k)
    n = preds.n_samples
    outcome = (cls == preds.labels).astype(np.float64)
    return BinaryView(
        f"top-{k}-confidence",
        score,
        outcome,
        np.zeros(n, dtype=np.int64),
        ("all",),
        n,
        preds.n_tied_rows,
    )


def top_k_label_view(preds: Predictions, k: int) -> BinaryView:
    """Rank-``k`` label view: :func:`top_k_confidence_view` grouped by the rank-k class (Eq. 7).

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.Predictions.from_probs([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], [1, 0])
    >>> view = calcore.top_k_label_view(preds, 2)  # grouped by the rank-2 class
    >>> view.name, view.groups.tolist(), view.outcomes.tolist()
    ('top-2-label', [1, 2], [1.0, 0.0])
    """
    cls, score = _kth_largest(preds, k)
    outcome = (cls == preds.labels).astype(np.float64)
    return BinaryView(
        f"top-{k}-label",
        score,
        outcome,
        cls.astype(np.int64),
        preds.class_names,
        preds.n_samples,
        preds.n_tied_rows,
    )


#: Binary reductions of a multiclass problem by name (the ``view=`` of metrics and diagrams).
REDUCTIONS = {
    "confidence": confidence_view,
    "top-label": top_label_view,
    "class-wise": classwise_view,
}


def binary_view(preds: Predictions, view: str) -> BinaryView:
    """The view called ``view`` (``"confidence"``, ``"top-label"`` or ``"class-wise"``).

    Raises
    ------
    CalcoreError
        Unknown view name.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> calcore.binary_view(preds, "top-label").groups.tolist()
    [0, 0, 1, 1]
    >>> try:
    ...     calcore.binary_view(preds, "top")
    ... except calcore.CalcoreError as err:
    ...     print(err)
    view must be one of ['class-wise', 'confidence', 'top-label']; got 'top'.
    """
    try:
        return REDUCTIONS[view](preds)
    except KeyError:
        raise CalcoreError(f"view must be one of {sorted(REDUCTIONS)}; got {view!r}.") from None

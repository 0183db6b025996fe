"""Reliability-diagram data: plain dataclasses that a figure builder draws.

Nothing here plots. Each diagram carries per-bin confidence, accuracy, count
and a Wilson interval on the accuracy; the top-label diagram adds the
``Delta_b`` construction of Gupta & Ramdas (2022, Sec. 2.1, Fig. 1) and the
per-class breakdown of every bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import freeze_fields, row_weights
from calcore.predictions import Predictions
from calcore.predictions.reductions import top_label_view
from calcore.statistics.bin_statistics import (
    BinStatistics,
    bin_statistics_from_sums,
    classwise_bin_statistics,
    counts_of,
    statistics_for,
    view_bin_statistics,
)
from calcore.statistics.cells import CellSums
from calcore.statistics.edges import edges_for

__all__ = [
    "wilson_interval",
    "ReliabilityDiagram",
    "TopLabelReliabilityDiagram",
    "reliability_diagram",
    "top_label_reliability_diagram",
    "classwise_reliability_diagrams",
    "positive_class_reliability_diagram",
]

_Z95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes, count, *, z: float = _Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion, elementwise; NaN where ``count == 0``.

    References
    ----------
    Wilson (1927); Brown, Cai, DasGupta (2001), Eq. 4.

    Examples
    --------
    >>> import calcore
    >>> lower, upper = calcore.wilson_interval([8, 0], [10, 0])  # 8 of 10, and an empty bin
    >>> lower.round(4).tolist(), upper.round(4).tolist()
    ([0.4902, nan], [0.9433, nan])
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        phat = k / n
        denom = 1 + z**2 / n
        centre = (phat + z**2 / (2 * n)) / denom
        half = z * np.sqrt(phat * (1 - phat) / n + z**2 / (4 * n**2)) / denom
    lower = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))  # exact ends, not 1e-17 off
    upper = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return np.where(n > 0, lower, np.nan), np.where(n > 0, upper, np.nan)


@dataclass(frozen=True, eq=False)
class ReliabilityDiagram:
    """One binary problem's reliability diagram.

    Attributes
    ----------
    view : str
        ``"confidence"``, ``"top-label"`` (one predicted class), ``"class-wise"`` (one class)
        or ``"positive"`` (a binary model's probability of class 1).
    group : str or None
        The class the diagram is about, for per-class diagrams.
    confidence, accuracy : ndarray of shape (B,)
        Mean score and observed frequency per bin; NaN for empty bins.
    count : ndarray of shape (B,), int64
    ci_lower, ci_upper : ndarray of shape (B,)
        95% Wilson interval on ``accuracy``; NaN for empty bins.
    lower_edge, upper_edge : ndarray of shape (B,)
        Bin intervals (fixed edges for equal-width, else the score range in the bin).
    bin_edges : ndarray of shape (B + 1,)
        ``lower_edge`` followed by the last ``upper_edge`` (for equal-width the edges).
    ece : float
        ``sum_b n_b / n |acc_b - conf_b|`` over these bins, with ``n`` as below.
    n : int
        Rows the weights are relative to.
    binning : str
        Human-readable scheme, e.g. ``"equal-width, 15 bins"``.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> diagram = calcore.reliability_diagram(preds, bins=5)
    >>> diagram.count.tolist(), diagram.accuracy[3:].tolist(), round(diagram.ece, 4)
    ([0, 0, 0, 2, 2], [1.0, 0.5], 0.35)
    >>> diagram.bin_edges.tolist(), diagram.binning
    ([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 'equal-width, 5 bins')
    """

    view: str
    group: str | None
    confidence: np.ndarray
    accuracy: np.ndarray
    count: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    lower_edge: np.ndarray
    upper_edge: np.ndarray
    ece: float
    n: int
    binning: str

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def bin_edges(self) -> np.ndarray:
        return np.r_[self.lower_edge, self.upper_edge[-1:]]

    @property
    def largest_bin_share(self) -> float:
        """The share of the rows (weight) in the fullest bin: near 1 when the scores crowd
        into one bin (a rare event's probabilities on equal-width bins), where bins that
        follow the data (equal-mass) show more.

        Examples
        --------
        >>> import calcore
        >>> probs = [[0.99, 0.01], [0.98, 0.02], [0.97, 0.03], [0.2, 0.8]]
        >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 1, 1])
        >>> calcore.positive_class_reliability_diagram(preds, bins=10).largest_bin_share
        0.75
        """
        total = float(np.sum(self.count))
        return float(np.max(self.count)) / total if total > 0 else float("nan")


def _diagram(
    stats: BinStatistics, mask: np.ndarray, *, view: str, group: str | None, n: int
) -> ReliabilityDiagram:
    count = stats.count[mask]
    acc = stats.mean_outcome[mask]
    lo, hi = wilson_interval(np.where(count > 0, acc * count, 0.0), count)
    ok = count > 0
    ece = float(np.sum(count[ok] / n * np.abs(acc[ok] - stats.mean_score[mask][ok])))
    return ReliabilityDiagram(
        view,
        group,
        stats.mean_score[mask],
        acc,
        count,
        lo,
        hi,
        stats.lower_edge[mask],
        stats.upper_edge[mask],
        ece,
        int(n) if float(n).is_integer() else float(n),
        stats.scheme.describe(),
    )


def reliability_diagram(
    preds: Predictions,
    *,
    view: str = "confidence",
    bins=15,
    binning="equal-width",
    sample_weight=None,
) -> ReliabilityDiagram:
    """The confidence reliability diagram (``view="confidence"``).

    For the top-label view use :func:`top_label_reliability_diagram`, for the
    class-wise view :func:`classwise_reliability_diagrams`. Every diagram takes
    ``sample_weight`` (row weights): counts are then total weights.

    Returns
    -------
    ReliabilityDiagram
        Its ``ece`` equals :func:`calcore.confidence_ece` with the same bins.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> diagram = calcore.reliability_diagram(preds, bins=5)
    >>> [round(float(c), 4) for c in diagram.confidence[3:]], diagram.accuracy[3:].tolist()
    ([0.65, 0.85], [1.0, 0.5])
    >>> diagram.ece == calcore.confidence_ece(preds, bins=5)
    True
    """
    if view != "confidence":
        raise CalcoreError(
            f"reliability_diagram draws the confidence view; got view={view!r}. Use "
            f"top_label_reliability_diagram or classwise_reliability_diagrams for the other views."
        )
    stats = statistics_for(
        preds, "confidence", binning=binning, bins=bins, sample_weight=sample_weight
    )
    return _diagram(
        stats,
        np.ones(stats.count.size, dtype=bool),
        view="confidence",
        group=None,
        n=stats.n_rows,
    )


@dataclass(frozen=True, eq=False)
class TopLabelReliabilityDiagram:
    """Top-label reliability diagram (Gupta & Ramdas 2022, Sec. 2.1 and Fig. 1).

    Bins are formed on the confidence ``h`` over all rows (as in the
    confidence diagram) and each bin is split by predicted class.

    Attributes
    ----------
    confidence_diagram : ReliabilityDiagram
        ``(conf_b, acc_b)`` over all rows.
    class_names : tuple of str
    class_count : ndarray of shape (B, L), int64
        ``n_{b,l}``: rows in bin ``b`` predicted as class ``l``.
    class_confidence, class_accuracy : ndarray of shape (B, L)
        ``conf_{b,l}``, ``acc_{b,l}``; NaN where ``n_{b,l} = 0``.
    class_gap : ndarray of shape (B, L)
        ``Delta_{b,l} = |acc_{b,l} - conf_{b,l}|``.
    delta : ndarray of shape (B,)
        ``Delta_b = sum_l P(c = l | h in b) Delta_{b,l}``; NaN for empty bins.
    signed_point : ndarray of shape (B,)
        ``conf_b + Delta_b`` where ``acc_b > conf_b``, else ``conf_b - Delta_b``:
        the point drawn beside ``(conf_b, acc_b)``.
    top_label_ece : float
        ``sum_b n_b / n Delta_b`` -- the TL-ECE with bins shared across classes.
    per_class : tuple of ReliabilityDiagram
        One diagram per predicted class, bins formed within the class
        (Fig. 4); ``count.sum() / n`` of each is the class ratio.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 0, 0])
    >>> diagram = calcore.top_label_reliability_diagram(preds, bins=5)
    >>> diagram.class_count[4].tolist(), diagram.class_accuracy[4].tolist()  # bin [0.8, 1]
    ([2, 2], [1.0, 0.0])
    >>> round(float(diagram.delta[4]), 4), round(diagram.confidence_diagram.ece, 4)
    (0.5, 0.3)
    """

    confidence_diagram: ReliabilityDiagram
    class_names: tuple[str, ...]
    class_count: np.ndarray
    class_confidence: np.ndarray
    class_accuracy: np.ndarray
    class_gap: np.ndarray
    delta: np.ndarray
    signed_point: np.ndarray
    top_label_ece: float
    per_class: tuple[ReliabilityDiagram, ...]

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    def bin_breakdown(self, b: int) -> dict[str, np.ndarray]:
        """Per-class points inside bin ``b`` (drill-down of Fig. 1b); classes with points only."""
        has = self.class_count[b] > 0
        return {
            "class": np.asarray(self.class_names, dtype=object)[has],
            "count": self.class_count[b][has],
            "confidence": self.class_confidence[b][has],
            "accuracy": self.class_accuracy[b][has],
            "gap": self.class_gap[b][has],
        }


def top_label_reliability_diagram(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> TopLabelReliabilityDiagram:
    """Data for the top-label reliability diagram and its per-class drill-down.

    Returns
    -------
    TopLabelReliabilityDiagram

    References
    ----------
    Gupta & Ramdas (2022), Sec. 2.1, Fig. 1 and Fig. 4.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.8, 0.2], [0.8, 0.2], [0.2, 0.8], [0.2, 0.8]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 0, 0, 0])
    >>> diagram = calcore.top_label_reliability_diagram(preds, bins=5)
    >>> round(diagram.top_label_ece, 4), round(diagram.confidence_diagram.ece, 4)
    (0.5, 0.3)
    >>> diagram.bin_breakdown(4)["gap"].round(4).tolist()  # class 0 right, class 1 wrong
    [0.2, 0.8]
    """
    view = top_label_view(preds)
    w = row_weights(preds, sample_weight)
    # One set of confidence-view edges; its cells crossed with the predicted class give
    # the drill-down (Fig. 1b), summed by the same CellSums as every other diagram.
    edges = edges_for(view.scores, binning=binning, bins=bins, weights=w)
    point_bin = edges.cell_of(view.scores)
    overall_sums = CellSums.zeros(edges.n_cells, ranges=edges.thresholds is not None)
    overall_sums.add(point_bin, view.scores, w, outcomes=view.outcomes)
    overall = bin_statistics_from_sums(
        overall_sums,
        edges,
        view="confidence",
        group_names=("all",),
        n_rows=view.n_rows if w is None else float(w.sum()),
    )
    conf_diagram = _diagram(
        overall,
        np.ones(overall.count.size, dtype=bool),
        view="confidence",
        group=None,
        n=overall.n_rows,
    )
    n_bins, n_classes = edges.n_cells, preds.n_classes
    crossed = CellSums.zeros(n_bins * n_classes)
    crossed.add(point_bin * n_classes + view.groups, view.scores, w, outcomes=view.outcomes)
    count = counts_of(crossed.weight).reshape(n_bins, n_classes)
    sum_s = crossed.score.reshape(n_bins, n_classes)
    sum_o = crossed.outcome.reshape(n_bins, n_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        conf_bl, acc_bl = sum_s / count, sum_o / count
        gap_bl = np.abs(acc_bl - conf_bl)
        delta = np.nansum(np.where(count > 0, count * gap_bl, 0.0), axis=1) / overall.count
    delta = np.where(overall.count > 0, delta, np.nan)
    conf_b, acc_b = overall.mean_score, overall.mean_outcome
    signed = np.where(acc_b > conf_b, conf_b + delta, conf_b - delta)
    ok = overall.count > 0
    tl_ece = float(np.sum(overall.count[ok] / overall.n_rows * delta[ok]))

    within = view_bin_statistics(view, binning=binning, bins=bins, weights=w)
    per_class = tuple(
        _diagram(within, within.bin_group == g, view="top-label", group=name, n=within.n_rows)
        for g, name in enumerate(preds.class_names)
    )
    return TopLabelReliabilityDiagram(
        conf_diagram,
        preds.class_names,
        count,
        conf_bl,
        acc_bl,
        gap_bl,
        delta,
        signed,
        tl_ece,
        per_class,
    )


def classwise_reliability_diagrams(
    preds: Predictions, *, bins=15, binning="equal-width", classes=None, sample_weight=None
) -> tuple[ReliabilityDiagram, ...]:
    """One reliability diagram per class of the class-wise view (``p_l`` vs ``1{y = l}``).

    Parameters
    ----------
    classes : sequence of int, optional
        Only these classes (all by default), e.g. the most frequent ones.

    Returns
    -------
    tuple of ReliabilityDiagram
        The mean of their ``ece`` over all classes is the CW-ECE.

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> preds = calcore.Predictions.from_probs(probs, [0, 1, 1, 1])
    >>> diagrams = calcore.classwise_reliability_diagrams(preds, bins=2)
    >>> [(d.group, d.accuracy.tolist(), round(d.ece, 4)) for d in diagrams]
    [('0', [0.0, 0.5], 0.35), ('1', [0.5, 1.0], 0.35)]
    """
    stats = classwise_bin_statistics(
        preds, binning=binning, bins=bins, classes=classes, sample_weight=sample_weight
    )
    chosen = np.arange(preds.n_classes) if classes is None else np.asarray(classes)
    return tuple(
        _diagram(
            stats,
            stats.bin_group == c,
            view="class-wise",
            group=preds.class_names[c],
            n=stats.n_rows,
        )
        for c in chosen
    )


def positive_class_reliability_diagram(
    preds: Predictions, *, bins=15, binning="equal-width", sample_weight=None
) -> ReliabilityDiagram:
    """The reliability diagram of a binary model's one probability: ``P(class 1)`` against
    the observed frequency of class 1 (view ``"positive"``).

    A binary model states one number per row; its confidence view folds the scores at 0.5
    (a 3% click model's rows all sit near a confidence of 0.97), this view does not. Its
    ``ece`` equals :func:`calcore.metrics.binary.positive_class_ece` with the same bins.

    Raises
    ------
    CalcoreError
        Predictions with other than two classes (use the class-wise diagrams).

    References
    ----------
    Murphy & Winkler (1977), "Reliability of subjective probability forecasts of
    precipitation and temperature", JRSS C 26 (the reliability diagram of one probability).

    Examples
    --------
    >>> import calcore
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.4, 0.6]]
    >>> d = calcore.positive_class_reliability_diagram(
    ...     calcore.Predictions.from_probs(probs, [0, 1, 1, 1]), bins=2)
    >>> d.view, d.group, d.accuracy.tolist(), round(d.ece, 4)
    ('positive', '1', [0.5, 1.0], 0.35)
    """
    if preds.n_classes != 2:
        raise CalcoreError(
            f"The positive-class diagram is for two classes; these predictions have "
            f"{preds.n_classes}. Use classwise_reliability_diagrams for one diagram per class."
        )
    stats = classwise_bin_statistics(
        preds, binning=binning, bins=bins, classes=[1], sample_weight=sample_weight
    )
    return _diagram(
        stats,
        stats.bin_group == 1,
        view="positive",
        group=preds.class_names[1],
        n=stats.n_rows,
    )

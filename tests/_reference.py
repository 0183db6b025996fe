"""Brute-force reference implementations of calcore's metrics, written from the definitions.

Independent of calcore (no calcore import): plain Python loops over points and bins on lists
of floats, so that the vectorised library code is checked against something that shares none
of its tricks (sorting once, ``bincount``, ``searchsorted``, ``reduceat``, blockwise class-wise
statistics). Slow (O(n L B)), meant for n up to a few hundred.

Definitions (ALGORITHMS.md "M2B reductions", "Binned estimators"; calcore.foundation.binning
docstring):

* a binary problem is a list of (score, outcome, group); bins are formed within each group;
* equal-width, B bins: point s goes to the k with ``k/B <= s < (k+1)/B`` (``k/B`` the correctly
  rounded float), the last bin closed at 1;
* equal-mass, B bins over the m points of a group: sort; bin k holds ranks
  ``[floor(k m / B), floor((k+1) m / B))``; a block of tied scores goes to the bin of its
  first (lowest-rank) member;
* points-per-bin k: ``B = max(1, floor(m / k))`` equal-mass bins;
* unique: one bin per distinct score;
* bin-count rules (per group of m points): "sturges" ``ceil(log2 m) + 1``, "cube-root"
  ``ceil(m^(1/3))``, both evaluated in exact integer arithmetic here.
"""

from __future__ import annotations

import math

INF = float("inf")
#: float64 machine epsilon, 2**-52: calcore's documented floor on p_{i,y_i} in the NLL.
FLOAT64_EPS = 2.0**-52

__all__ = [
    "FLOAT64_EPS",
    "n_bins_for",
    "bin_groups",
    "confidence_problem",
    "top_label_problem",
    "rank_problem",
    "classwise_problem",
    "lp_error",
    "confidence_ece",
    "top_label_ece",
    "classwise_ece",
    "top_k_confidence_ece",
    "top_k_label_ece",
    "adaptive_ece",
    "thresholded_adaptive_ece",
    "debiased_squared_ece",
    "accuracy",
    "nll_from_probs",
    "nll_from_logits",
    "brier",
    "calibration_gain",
    "softmax",
]


# -- inputs as plain lists -----------------------------------------------------------------
def _rows(probs) -> list[list[float]]:
    return [[float(v) for v in row] for row in probs]


def _labels(labels) -> list[int]:
    return [int(v) for v in labels]


def argmax(row: list[float]) -> int:
    """First index attaining the maximum (ties to the lowest class index)."""
    best = 0
    for j in range(1, len(row)):
        if row[j] > row[best]:
            best = j
    return best


def ranked_classes(row: list[float]) -> list[int]:
    """Classes by descending probability, ties by lower class index (selection by hand)."""
    remaining = list(range(len(row)))
    out = []
    while remaining:
        best = remaining[0]
        for j in remaining[1:]:
            if row[j] > row[best]:
                best = j
        out.append(best)
        remaining.remove(best)
    return out


# -- binning --------------------------------------------------------------------------------
def n_bins_for(bins, m: int) -> int:
    """Number of bins for a group of m >= 1 points under an int or a rule name."""
    if bins == "sturges":
        j = 0
        while 2**j < m:  # j = ceil(log2 m)
            j += 1
        return j + 1
    if bins == "cube-root":
        j = 1
        while j**3 < m:  # j = ceil(m ** (1/3)), at least 1
            j += 1
        return j
    return int(bins)


def _equal_width_bin(s: float, n_bins: int) -> int:
    for k in range(n_bins):
        lo, hi = k / n_bins, (k + 1) / n_bins
        if lo <= s < hi or (k == n_bins - 1 and s == hi):
            return k
    raise AssertionError(f"score {s!r} outside [0, 1]")


def _equal_mass_bins(scores: list[float], n_bins: int) -> list[int]:
    m = len(scores)
    order = sorted(range(m), key=lambda i: scores[i])
    out = [0] * m
    k = 0
    first = 0
    for r, i in enumerate(order):
        if r == 0 or scores[i] != scores[order[r - 1]]:
            first = r  # rank of the first member of this block of tied scores
        # the block's first rank is non-decreasing, so the bin index only moves forward
        while not ((k * m) // n_bins <= first < ((k + 1) * m) // n_bins):
            k += 1
            assert k < n_bins, "rank in no bin"
        out[i] = k
    return out


def _bin_one_group(scores: list[float], binning: str, bins) -> list[int]:
    m = len(scores)
    if binning == "equal-width":
        b = n_bins_for(bins, m)
        return [_equal_width_bin(s, b) for s in scores]
    if binning == "equal-mass":
        return _equal_mass_bins(scores, n_bins_for(bins, m))
    if binning == "points-per-bin":
        return _equal_mass_bins(scores, max(1, m // int(bins)))
    if binning == "unique":
        position = {v: j for j, v in enumerate(sorted(set(scores)))}
        return [position[s] for s in scores]
    raise ValueError(binning)


def bin_groups(problem, binning: str, bins) -> list[tuple[int, int, float, float]]:
    """Non-empty bins of a binary problem as ``(group, n_b, conf_b, acc_b)``.

    ``problem`` is a list of ``(score, outcome, group)``; bins are formed within each group.
    """
    out = []
    for g in sorted({g for _, _, g in problem}):
        pts = [(s, o) for s, o, gg in problem if gg == g]
        assignment = _bin_one_group([s for s, _ in pts], binning, bins)
        members: dict[int, list[tuple[float, float]]] = {}
        for point, b in zip(pts, assignment, strict=True):
            members.setdefault(b, []).append(point)
        for b in sorted(members):
            n_b = len(members[b])
            conf = math.fsum(s for s, _ in members[b]) / n_b
            acc = math.fsum(o for _, o in members[b]) / n_b
            out.append((g, n_b, conf, acc))
    return out


# -- M2B views --------------------------------------------------------------------------------
def confidence_problem(probs, labels):
    rows, ys = _rows(probs), _labels(labels)
    return [(max(r), 1.0 if argmax(r) == y else 0.0, 0) for r, y in zip(rows, ys, strict=True)]


def top_label_problem(probs, labels):
    rows, ys = _rows(probs), _labels(labels)
    return [
        (max(r), 1.0 if argmax(r) == y else 0.0, argmax(r)) for r, y in zip(rows, ys, strict=True)
    ]


def rank_problem(probs, labels, rank: int, *, grouped: bool):
    """The rank-th largest probability (1-based) and whether its class is the label."""
    out = []
    for r, y in zip(_rows(probs), _labels(labels), strict=True):
        c = ranked_classes(r)[rank - 1]
        out.append((r[c], 1.0 if c == y else 0.0, c if grouped else 0))
    return out


def classwise_problem(probs, labels, cls: int):
    return [
        (r[cls], 1.0 if y == cls else 0.0, cls)
        for r, y in zip(_rows(probs), _labels(labels), strict=True)
    ]


# -- binned errors --------------------------------------------------------------------------
def lp_error(stats, n_rows: int, p) -> float:
    """``(sum_b n_b/N |acc_b - conf_b|^p)^(1/p)``; ``p = inf``: the largest gap (0 if no bins)."""
    if p == INF:
        return max((abs(acc - conf) for _, _, conf, acc in stats), default=0.0)
    total = math.fsum(n_b / n_rows * abs(acc - conf) ** p for _, n_b, conf, acc in stats)
    return total ** (1.0 / p)


def confidence_ece(probs, labels, *, bins, binning="equal-width", p=1) -> float:
    return lp_error(bin_groups(confidence_problem(probs, labels), binning, bins), len(labels), p)


def top_label_ece(probs, labels, *, bins, binning="equal-width", p=1) -> float:
    """Bins within each predicted class; weights n_{b,l}/n; p=inf: max over (class, bin)."""
    return lp_error(bin_groups(top_label_problem(probs, labels), binning, bins), len(labels), p)


def classwise_ece(probs, labels, *, bins, binning="equal-width", p=1) -> float:
    """Mean over classes of the per-class lp error over all n rows (p=inf: per-class max gap)."""
    n_classes = len(probs[0])
    per_class = [
        lp_error(bin_groups(classwise_problem(probs, labels, c), binning, bins), len(labels), p)
        for c in range(n_classes)
    ]
    return math.fsum(per_class) / n_classes


def top_k_confidence_ece(probs, labels, *, k, bins, binning="equal-width", p=1) -> float:
    errs = [
        lp_error(
            bin_groups(rank_problem(probs, labels, r, grouped=False), binning, bins), len(labels), p
        )
        for r in range(1, k + 1)
    ]
    return math.fsum(errs) / k


def top_k_label_ece(probs, labels, *, k, bins, binning="equal-width", p=1) -> float:
    errs = [
        lp_error(
            bin_groups(rank_problem(probs, labels, r, grouped=True), binning, bins), len(labels), p
        )
        for r in range(1, k + 1)
    ]
    return math.fsum(errs) / k


def _adaptive(probs, labels, bins, threshold) -> float:
    gaps = []
    for c in range(len(probs[0])):
        problem = [
            pt
            for pt in classwise_problem(probs, labels, c)
            if threshold is None or pt[0] >= threshold
        ]
        if problem:
            gaps += [abs(acc - conf) for _, _, conf, acc in bin_groups(problem, "equal-mass", bins)]
    return math.fsum(gaps) / len(gaps) if gaps else 0.0


def adaptive_ece(probs, labels, *, bins) -> float:
    """ACE: per class, equal-mass bins over all that class's scores; unweighted mean gap."""
    return _adaptive(probs, labels, bins, None)


def thresholded_adaptive_ece(probs, labels, *, bins, threshold) -> float:
    """TACE: as ACE over the class-wise scores >= threshold (bin counts from the kept scores)."""
    return _adaptive(probs, labels, bins, threshold)


def debiased_squared_ece(probs, labels, *, bins, binning="equal-width", view="confidence") -> float:
    """Kumar et al.: ``sum_b n_b/N [(acc_b - conf_b)^2 - acc_b (1 - acc_b)/(n_b - 1)]``.

    No correction for bins with one point; class-wise: the mean over classes. Not clipped.
    """
    n = len(labels)

    def one(stats):
        return math.fsum(
            n_b / n * ((acc - conf) ** 2 - (acc * (1 - acc) / (n_b - 1) if n_b > 1 else 0.0))
            for _, n_b, conf, acc in stats
        )

    if view == "confidence":
        return one(bin_groups(confidence_problem(probs, labels), binning, bins))
    if view == "top-label":
        return one(bin_groups(top_label_problem(probs, labels), binning, bins))
    n_classes = len(probs[0])
    return (
        math.fsum(
            one(bin_groups(classwise_problem(probs, labels, c), binning, bins))
            for c in range(n_classes)
        )
        / n_classes
    )


# -- scores ---------------------------------------------------------------------------------
def accuracy(probs, labels) -> float:
    rows, ys = _rows(probs), _labels(labels)
    return sum(1 for r, y in zip(rows, ys, strict=True) if argmax(r) == y) / len(ys)


def nll_from_probs(probs, labels, *, clip=FLOAT64_EPS) -> float:
    rows, ys = _rows(probs), _labels(labels)
    terms = []
    for r, y in zip(rows, ys, strict=True):
        p = max(r[y], clip)
        terms.append(INF if p == 0 else -math.log(p))
    return math.fsum(terms) / len(ys)


def nll_from_logits(logits, labels) -> float:
    """``-mean log softmax(z)_y`` with the max subtracted before exponentiating."""
    terms = []
    for z, y in zip(_rows(logits), _labels(labels), strict=True):
        top = max(z)
        terms.append(top + math.log(math.fsum(math.exp(v - top) for v in z)) - z[y])
    return math.fsum(terms) / len(terms)


def softmax(logits) -> list[list[float]]:
    out = []
    for z in _rows(logits):
        top = max(z)
        e = [math.exp(v - top) for v in z]
        s = math.fsum(e)
        out.append([v / s for v in e])
    return out


def brier(probs, labels) -> float:
    """``mean_i sum_j (p_ij - 1{y_i = j})^2`` (sum over classes, not divided by L)."""
    rows, ys = _rows(probs), _labels(labels)
    return math.fsum(
        math.fsum((p - (1.0 if j == y else 0.0)) ** 2 for j, p in enumerate(r))
        for r, y in zip(rows, ys, strict=True)
    ) / len(ys)


def calibration_gain(before, after, labels, *, declared: bool) -> tuple[float, bool]:
    """(Brier(before) - Brier(after), exact); exact = declared and argmax unchanged on every row."""
    same = all(argmax(a) == argmax(b) for a, b in zip(_rows(before), _rows(after), strict=True))
    return brier(before, labels) - brier(after, labels), declared and same

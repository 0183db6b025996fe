"""Each diagnostic view's answer in one sentence (two at most): what is wrong or best, how
sure, and where.

Pure functions over the result dataclasses the views already hold (reliability diagrams,
validity curves, the KDE-ECE and its bin sweep, learning curves); they compute nothing new
from rows. "How sure" comes from the intervals the results carry:

* a bin's Wilson interval on its accuracy: a direction (over- or under-confident) is named
  only when it excludes the bin's mean confidence (the diagonal), else "within noise";
* when a bin is picked *because* it looks worst (the largest gap among many), its interval
  is widened for the number of bins searched (Bonferroni): with 15 bins of a calibrated
  model, one plain 95% interval in two misses the diagonal by chance somewhere;
* where there is no interval the sentence says so ("no interval computed").

Names (methods, classes) go into the text as they are; a page escapes the sentence.

References
----------
Wilson (1927), "Probable inference, the law of succession, and statistical inference",
JASA 22 (the bin intervals); Gupta & Ramdas (2022), "Top-label calibration and multiclass-
to-binary reductions", ICLR (TL-ECE); Gupta & Ramdas (2021), "Distribution-free calibration
guarantees for histogram binning without sample splitting", ICML (validity plots).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from calcore.diagnostics.bin_sweep import EceByBins
from calcore.diagnostics.reliability import (
    ReliabilityDiagram,
    TopLabelReliabilityDiagram,
    wilson_interval,
)
from calcore.diagnostics.validity import ValidityCurve

__all__ = [
    "ViewSummary",
    "reliability_summary",
    "top_label_summary",
    "classwise_summary",
    "validity_summary",
    "kde_summary",
    "learning_summary",
]

OVER, UNDER, NOISE = "over-confident", "under-confident", "within noise"
#: Severities, the way a page shows them: fine, worth reading, needs action.
SUCCESS, INFO, WARNING = "success", "info", "warning"


@dataclass(frozen=True)
class ViewSummary:
    """A view's answer: the sentence and how a page should show it.

    Attributes
    ----------
    sentence : str
        One sentence, two at most, with numbers and how sure; "" when there is nothing to
        say (no rows).
    severity : str
        ``"success"`` (nothing to fix), ``"info"`` (a finding, and a method that handles
        it) or ``"warning"`` (a finding nothing shown fixes).

    Examples
    --------
    >>> from calcore.diagnostics.summaries import ViewSummary
    >>> s = ViewSummary("All bins within noise.", "success")
    >>> str(s), s.severity
    ('All bins within noise.', 'success')
    """

    sentence: str
    severity: str

    def __str__(self) -> str:
        return self.sentence


# --------------------------------------------------------------------------- helpers


def _pct(share: float) -> str:
    """A share of rows as a percentage; "<1%" rather than a misleading "0%"."""
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def _direction(accuracy: float, confidence: float, low: float, high: float) -> str | None:
    """OVER or UNDER when the interval excludes the diagonal on that side, NOISE when it
    covers it, None when there is no interval."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    if high < confidence and accuracy < confidence:
        return OVER
    if low > confidence and accuracy > confidence:
        return UNDER
    return NOISE


def _bonferroni_z(n_tests: int) -> float:
    """The normal quantile of a two-sided 95% interval widened for ``n_tests`` looks."""
    return float(-ndtri(0.025 / max(int(n_tests), 1)))


def _range(lower: float, upper: float) -> str:
    return f"{lower:.2f}–{upper:.2f}"


@dataclass(frozen=True)
class _BinFinding:
    """One bin of a diagram and what its interval says."""

    bin: int
    direction: str | None  # OVER, UNDER, NOISE or None (no interval)
    accuracy: float
    confidence: float
    low: float
    high: float
    share: float  # of the diagram's rows
    searched: int  # bins searched to pick it (1: picked for its rows, not its gap)
    everywhere: bool  # NOISE in the fullest bin and no bin flagged after widening


def _flagged_bins(diagrams: Sequence[ReliabilityDiagram]):
    """Every non-empty bin of ``diagrams`` with its interval widened for all of them:
    ``(diagram index, bin, direction, low, high)``, flagged ones only."""
    n_tests = sum(int(np.count_nonzero(d.count > 0)) for d in diagrams)
    z = _bonferroni_z(n_tests)
    out = []
    for i, d in enumerate(diagrams):
        ok = np.flatnonzero(d.count > 0)
        if ok.size == 0:
            continue
        count = d.count[ok].astype(np.float64)
        low, high = wilson_interval(d.accuracy[ok] * count, count, z=z)
        for j, b in enumerate(ok):
            way = _direction(float(d.accuracy[b]), float(d.confidence[b]), low[j], high[j])
            if way in (OVER, UNDER):
                out.append((i, int(b), way, float(low[j]), float(high[j])))
    return out, n_tests


def _ways_words(flagged, n_tests: int, unit: str) -> str:
    """ "; 13 of its 15 bins are over-confident and none under-confident beyond noise ..."
    when more than one bin (or cell) is flagged: whether the gap runs one way or both."""
    n_over = sum(1 for f in flagged if f == OVER)
    n_under = sum(1 for f in flagged if f == UNDER)
    if n_over + n_under < 2:
        return ""
    under = f"{n_under:,}" if n_under else "none"
    return (
        f"; {n_over:,} of its {n_tests:,} {unit} are over-confident and {under} "
        f"under-confident beyond noise (intervals widened for the {n_tests:,})"
    )


def _bin_finding(d: ReliabilityDiagram) -> _BinFinding | None:
    """The fullest bin when its own interval excludes the diagonal; else the flagged bin
    with the largest share of the ECE after widening; else the fullest bin, within noise."""
    ok = d.count > 0
    if not np.any(ok):
        return None
    total = float(np.sum(d.count))
    main = int(np.argmax(np.where(ok, d.count, -1)))
    acc, conf = float(d.accuracy[main]), float(d.confidence[main])
    low, high = float(d.ci_lower[main]), float(d.ci_upper[main])
    way = _direction(acc, conf, low, high)
    if way != NOISE:
        return _BinFinding(main, way, acc, conf, low, high, d.count[main] / total, 1, False)
    flagged, n_tests = _flagged_bins([d])
    if not flagged:
        return _BinFinding(main, NOISE, acc, conf, low, high, d.count[main] / total, 1, True)
    _, b, way, low, high = max(
        flagged, key=lambda f: d.count[f[1]] * abs(d.accuracy[f[1]] - d.confidence[f[1]])
    )
    return _BinFinding(
        b, way, float(d.accuracy[b]), float(d.confidence[b]), low, high,
        d.count[b] / total, n_tests, False,
    )  # fmt: skip


def _interval_words(f: _BinFinding) -> str:
    widened = f", widened for {f.searched:,} bins searched" if f.searched > 1 else ""
    return f"[{f.low:.3f}, {f.high:.3f}{widened}]"


# --------------------------------------------------------------------------- confidence


def reliability_summary(diagrams: Mapping[str, ReliabilityDiagram]) -> ViewSummary:
    """The confidence reliability diagrams' answer: which way the first (reference) model
    is miscalibrated and where, and whether each other method fixes it.

    The bin that speaks for a diagram is the one with most rows when its Wilson interval
    excludes the diagonal; otherwise the bin with the largest share of the ECE among those
    whose interval, widened for the number of bins searched, still excludes it; otherwise
    the diagram is within noise in every bin.

    Parameters
    ----------
    diagrams : mapping of str to ReliabilityDiagram
        By method label, the reference (uncalibrated) model first.

    Returns
    -------
    ViewSummary
        ``"success"`` when the reference is within noise in every bin, ``"info"`` when it
        is not but a method is, else ``"warning"``.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.7, 1.0, 3000)
    >>> right = rng.random(3000) < conf - 0.1              # right 10 points less often
    >>> probs = np.column_stack([conf, 1 - conf])
    >>> preds = calcore.Predictions.from_probs(probs, np.where(right, 0, 1))
    >>> s = calcore.reliability_summary({"uncalibrated": calcore.reliability_diagram(preds)})
    >>> s.severity, s.sentence[:52]
    ('warning', 'uncalibrated is over-confident where most rows are: ')
    """
    items = [(label, _bin_finding(d), d) for label, d in diagrams.items()]
    items = [(label, f, d) for label, f, d in items if f is not None]
    if not items:
        return ViewSummary("", INFO)
    label, f, d = items[0]
    where = _range(d.lower_edge[f.bin], d.upper_edge[f.bin])
    numbers = (
        f"accuracy is {f.accuracy:.3f} {_interval_words(f)} against confidence {f.confidence:.3f}"
    )
    if f.direction is None:
        first = (
            f"In {label}'s fullest bin ({where}, {_pct(f.share)} of the test rows) accuracy "
            f"is {f.accuracy:.3f} against confidence {f.confidence:.3f} (no interval computed)."
        )
    elif f.everywhere:
        first = (
            f"{label} is within noise in every bin: where most rows are ({where}, "
            f"{_pct(f.share)} of the test rows) accuracy {f.accuracy:.3f} [{f.low:.3f}, "
            f"{f.high:.3f}] covers confidence {f.confidence:.3f}, and no bin's interval "
            "excludes the diagonal."
        )
    else:
        flagged, n_tests = _flagged_bins([d])
        ways = _ways_words([f[2] for f in flagged], n_tests, "bins")
        if f.searched == 1:
            first = (
                f"{label} is {f.direction} where most rows are: in the {where} bin "
                f"({_pct(f.share)} of the test rows) {numbers}{ways}."
            )
        else:
            first = (
                f"{label} is {f.direction} in the {where} bin ({_pct(f.share)} of the test "
                f"rows): {numbers}; where most rows are it is within noise{ways}."
            )
    others = []
    for other, g, od in items[1:]:
        if g.direction is None:
            others.append(f"{other} has no interval computed")
        elif g.everywhere:
            others.append(f"{other} is within noise in every bin")
        else:
            others.append(
                f"{other} leaves its {_range(od.lower_edge[g.bin], od.upper_edge[g.bin])} bin "
                f"{g.direction} (accuracy {g.accuracy:.3f} against {g.confidence:.3f}, a "
                f"{abs(g.accuracy - g.confidence):.3f} gap)"
            )
    second = ("Calibrated: " + "; ".join(others) + ".") if others else ""
    if f.everywhere:
        severity = SUCCESS
    elif f.direction is None:
        severity = INFO
    else:
        severity = INFO if any(g.everywhere for _, g, _ in items[1:]) else WARNING
    return ViewSummary(" ".join(s for s in (first, second) if s), severity)


# --------------------------------------------------------------------------- top-label


def _class_shares(d: TopLabelReliabilityDiagram) -> np.ndarray:
    """Each predicted class's part of the TL-ECE: ``sum_b n_{b,l} Delta_{b,l} / n``."""
    n = float(d.confidence_diagram.n)
    parts = np.where(d.class_count > 0, d.class_count * np.nan_to_num(d.class_gap), 0.0)
    return parts.sum(axis=0) / n if n > 0 else np.zeros(d.class_count.shape[1])


def _top_classes(d: TopLabelReliabilityDiagram, *, most: int = 3) -> list[tuple[str, float]]:
    """The predicted classes that carry half the TL-ECE (at most ``most``), with shares."""
    parts = _class_shares(d)
    total = float(parts.sum())
    if not total > 0:
        return []
    out, cumulative = [], 0.0
    for c in np.argsort(-parts, kind="stable")[:most]:
        out.append((str(d.class_names[c]), float(parts[c]) / total))
        cumulative += float(parts[c]) / total
        if cumulative >= 0.5:
            break
    return out


def _flagged_cell(d: TopLabelReliabilityDiagram):
    """The (bin, class) cell with the largest share of the TL-ECE among those whose Wilson
    interval, widened for every non-empty cell, excludes the diagonal; and that count."""
    count = d.class_count.astype(np.float64)
    ok = count > 0
    n_tests = int(np.count_nonzero(ok))
    if n_tests == 0:
        return None, 0
    acc = np.where(ok, d.class_accuracy, 0.0)
    conf = np.where(ok, d.class_confidence, 0.0)
    low, high = wilson_interval(acc * count, count, z=_bonferroni_z(n_tests))
    over = ok & (high < conf) & (acc < conf)
    under = ok & (low > conf) & (acc > conf)
    weight = np.where(over | under, count * np.abs(acc - conf), -1.0)
    if not np.any(over | under):
        return None, n_tests
    b, c = np.unravel_index(int(np.argmax(weight)), weight.shape)
    way = OVER if over[b, c] else UNDER
    ways = [OVER] * int(over.sum()) + [UNDER] * int(under.sum())
    return (int(b), int(c), way, float(low[b, c]), float(high[b, c]), ways), n_tests


def _shares_words(top: list[tuple[str, float]]) -> str:
    words = [f"{name} ({_pct(share)})" for name, share in top]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def top_label_summary(diagrams: Mapping[str, TopLabelReliabilityDiagram]) -> ViewSummary:
    """The top-label diagrams' answer: which predicted classes carry most of the first
    (reference) model's TL-ECE, the surest miscalibrated cell, and each method's TL-ECE.

    A (predicted class, confidence bin) cell is called over- or under-confident only when
    its Wilson interval, widened for the number of non-empty cells (Bonferroni: the cell is
    picked for looking worst), excludes the cell's mean confidence. With many classes and
    few rows a cell, none may: then the TL-ECE is mostly the noise of small cells.

    Parameters
    ----------
    diagrams : mapping of str to TopLabelReliabilityDiagram
        By method label, the reference (uncalibrated) model first.

    Returns
    -------
    ViewSummary
        ``"warning"`` when the reference has a miscalibrated cell and no other method is
        free of them, ``"info"`` when one is, ``"success"`` when the reference has none.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> probs = np.array([[0.9, 0.1]] * 400 + [[0.1, 0.9]] * 400)
    >>> labels = np.r_[np.zeros(400, int), np.ones(240, int), np.zeros(160, int)]
    >>> d = calcore.top_label_reliability_diagram(
    ...     calcore.Predictions.from_probs(probs, labels, ("cat", "dog")))
    >>> calcore.top_label_summary({"uncalibrated": d}).sentence[:70]
    "uncalibrated's TL-ECE of 0.200 comes mostly from predicted dog (75%); "
    """
    if not diagrams:
        return ViewSummary("", INFO)
    (label, d), *rest = diagrams.items()
    top = _top_classes(d)
    if not top:
        return ViewSummary(f"{label}'s TL-ECE is {d.top_label_ece:.3f}: no gap in any cell.",
                           SUCCESS)  # fmt: skip
    cell, n_cells = _flagged_cell(d)
    if sum(share for _, share in top) >= 0.5:
        first = f"{label}'s TL-ECE of {d.top_label_ece:.3f} comes mostly from predicted " + (
            _shares_words(top)
        )
    else:  # many classes, none stands out: naming three would mislead
        first = (
            f"{label}'s TL-ECE of {d.top_label_ece:.3f} is spread over the predicted classes "
            f"(the largest part, {top[0][0]}'s, is {_pct(top[0][1])})"
        )
    if cell is None:
        first += (
            f"; but no (class, bin) cell's interval excludes the diagonal (widened for "
            f"{n_cells:,} cells searched): much of it may be the noise of small cells."
        )
    else:
        b, c, way, low, high, ways = cell
        cd = d.confidence_diagram
        first += _ways_words(ways, n_cells, "cells")
        first += (
            f"; the surest: when it predicts {d.class_names[c]} with confidence "
            f"{_range(cd.lower_edge[b], cd.upper_edge[b])} ({int(d.class_count[b, c]):,} rows) "
            f"it is right {d.class_accuracy[b, c]:.3f} [{low:.3f}, {high:.3f}, widened for "
            f"{n_cells:,} cells] of the time against confidence {d.class_confidence[b, c]:.3f}, "
            f"{way}."
        )
    others, clean = [], False
    for other, od in rest:
        o_top = _top_classes(od, most=1)
        o_cell, _ = _flagged_cell(od)
        clean = clean or o_cell is None
        mostly = f", most from {o_top[0][0]} ({_pct(o_top[0][1])})" if o_top else ""
        state = "no cell beyond noise" if o_cell is None else "cells beyond noise remain"
        others.append(f"{other} {od.top_label_ece:.3f}{mostly}; {state}")
    second = ("TL-ECE of the methods: " + "; ".join(others) + ".") if others else ""
    severity = SUCCESS if cell is None else (INFO if clean else WARNING)
    return ViewSummary(" ".join(s for s in (first, second) if s), severity)


# --------------------------------------------------------------------------- class-wise


def _labelled_rows(d: ReliabilityDiagram) -> float:
    """Rows whose label is the diagram's class: the outcome of a class-wise diagram is
    ``1{y = class}``, so the sum of ``accuracy x count`` over bins."""
    ok = d.count > 0
    return float(np.sum(d.accuracy[ok] * d.count[ok]))


def classwise_summary(
    diagrams: Mapping[str, Sequence[ReliabilityDiagram]],
) -> ViewSummary:
    """The class-wise diagrams' answer: the worst calibrated of the classes shown for the
    first (reference) model, with its labelled rows and its surest bin, and what each
    other method makes of that class.

    A bin is called over- or under-predicted only when its Wilson interval, widened for
    every non-empty bin of every class shown (the class and bin are picked for looking
    worst), excludes the bin's mean probability.

    Parameters
    ----------
    diagrams : mapping of str to sequence of ReliabilityDiagram
        By method label (the reference first), the class-wise diagrams of the same classes.

    Returns
    -------
    ViewSummary
        ``"success"`` when no bin of the reference's worst class is off beyond noise,
        ``"info"`` when it is and a method brings it within noise, else ``"warning"``.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> probs = np.array([[0.6, 0.2, 0.2]] * 500 + [[0.2, 0.6, 0.2]] * 500)
    >>> labels = np.r_[np.zeros(200, int), np.full(300, 2), np.ones(300, int),
    ...                np.zeros(200, int)]                  # cat is the label 400 times
    >>> ds = calcore.classwise_reliability_diagrams(
    ...     calcore.Predictions.from_probs(probs, labels, ("cat", "dog", "owl")))
    >>> print(calcore.classwise_summary({"uncalibrated": ds}).sentence[:68])
    Of the 3 classes shown, uncalibrated is worst calibrated on cat (400
    """
    if not diagrams:
        return ViewSummary("", INFO)
    (label, panels), *rest = diagrams.items()
    panels = tuple(panels)
    if not panels or not any(np.any(p.count > 0) for p in panels):
        return ViewSummary("", INFO)
    worst = int(np.nanargmax([p.ece for p in panels]))
    d = panels[worst]
    name = d.group
    rows = _labelled_rows(d)

    def surest(ps: tuple, k: int):
        flagged, n_tests = _flagged_bins(ps)
        mine = [f for f in flagged if f[0] == k]
        if not mine:
            return None, n_tests
        p = ps[k]
        return max(
            mine, key=lambda f: p.count[f[1]] * abs(p.accuracy[f[1]] - p.confidence[f[1]])
        ), n_tests

    found, n_tests = surest(panels, worst)
    first = (
        f"Of the {len(panels)} classes shown, {label} is worst calibrated on {name} "
        f"({rows:,.0f} test rows labelled {name}): its one-vs-rest ECE is {d.ece:.3f}"
    )
    if found is None:
        first += (
            f", but no bin's interval excludes the diagonal (widened for {n_tests:,} bins "
            "searched): within noise."
        )
    else:
        _, b, way, low, high = found
        verb = "over-predicts" if way == OVER else "under-predicts"
        first += (
            f"; where its probability is {_range(d.lower_edge[b], d.upper_edge[b])} "
            f"({d.count[b]:,.0f} rows) the class is the label {d.accuracy[b]:.3f} "
            f"[{low:.3f}, {high:.3f}, widened for {n_tests:,} bins] of the time against a "
            f"predicted {d.confidence[b]:.3f}: it {verb} {name} there."
        )
    others, fixed = [], False
    for other, ops in rest:
        ops = tuple(ops)
        if worst >= len(ops):
            continue
        o_found, _ = surest(ops, worst)
        fixed = fixed or o_found is None
        state = "within noise" if o_found is None else "still off beyond noise"
        others.append(f"{other} {ops[worst].ece:.3f} ({state})")
    second = (f"On {name}: " + ", ".join(others) + ".") if others else ""
    severity = SUCCESS if found is None else (INFO if fixed else WARNING)
    return ViewSummary(" ".join(s for s in (first, second) if s), severity)


# --------------------------------------------------------------------------- validity


def _epsilon_at(epsilon: np.ndarray, values: np.ndarray, level: float) -> float | None:
    """The smallest epsilon at which ``values`` reach ``level``; None if none does."""
    reached = np.flatnonzero(np.asarray(values) >= level)
    return float(epsilon[reached[0]]) if reached.size else None


def validity_summary(curves: Mapping[str, ValidityCurve], *, level: float = 0.9) -> ViewSummary:
    """The validity plots' answer: at which epsilon each method's bins are valid for a
    share ``level`` of the test points, the best method first, and whether the others are
    told apart from it.

    How sure: the epsilon at which the mean curve plus and minus two standard errors over
    resamples reaches ``level``. The resamples share rows (each is half of the same data),
    so this spread understates the noise: ranges that overlap are "not told apart".

    Parameters
    ----------
    curves : mapping of str to ValidityCurve
        By method label.
    level : float, default 0.9
        The share of test points (and of resamples, for the conditional curve) that must
        lie within epsilon: the validity curve's height, read where it reaches ``level``.
        Neither a significance level nor the confidence level of an interval, so it keeps
        its name (``alpha`` and ``confidence_level`` elsewhere are those).

    Returns
    -------
    ViewSummary
        ``"warning"`` when no method reaches ``level`` on the epsilon grid, else ``"info"``.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> eps = np.linspace(0, 0.2, 201)
    >>> def curve(scale):
    ...     v = 1 - np.exp(-eps / scale)
    ...     return calcore.ValidityCurve(eps, v, np.full(201, 0.01), v ** 4,
    ...                                  np.full(201, 0.01), "confidence", None, 20)
    >>> print(calcore.validity_summary({"ts": curve(0.02), "conf-hb": curve(0.01)}).sentence[:60])
    conf-hb's bins are the most valid: 90% of the test points li
    """
    found = {}
    for label, c in curves.items():
        eps = np.asarray(c.epsilon)
        v, sem = np.asarray(c.validity), np.asarray(c.validity_sem)
        found[label] = (
            _epsilon_at(eps, v, level),
            _epsilon_at(eps, v + 2 * sem, level),  # the curve high: reached sooner
            _epsilon_at(eps, v - 2 * sem, level),
            _epsilon_at(eps, np.asarray(c.conditional), level),
            float(eps[-1]),
            int(c.n_resamples),
        )
    if not found:
        return ViewSummary("", INFO)
    ranked = sorted(found, key=lambda k: math.inf if found[k][0] is None else found[k][0])
    best = ranked[0]
    e, e_low, e_high, cond, top, n_res = found[best]
    if e is None:
        return ViewSummary(
            f"No method's bins reach {level:.0%} validity for ε up to {top:.2f} "
            f"({n_res} resamples): for more than {1 - level:.0%} of the test points the "
            "calibrated probability is further than that from its bin's frequency.",
            WARNING,
        )

    def span(lo, hi) -> str:
        return f"{lo:.3f}–{hi:.3f}" if hi is not None else f"{lo:.3f} or more"

    first = (
        f"{best}'s bins are the most valid: {level:.0%} of the test points lie within "
        f"ε = {e:.3f} ({span(e_low, e_high)} within two standard errors over {n_res} "
        f"resamples) of their bin's observed frequency"
    )
    first += (
        f"; every bin at once is within {cond:.3f} in {level:.0%} of the resamples."
        if cond is not None
        else f"; no ε up to {top:.2f} holds for every bin at once in {level:.0%} of resamples."
    )
    others = []
    for label in ranked[1:]:
        oe, olo, ohi, *_ = found[label]
        if oe is None:
            others.append(f"{label} does not reach {level:.0%} by ε = {top:.2f}")
            continue
        # told apart only when the ranges do not overlap
        apart = e_high is not None and olo is not None and olo > e_high
        tail = "" if apart else f", not told apart from {best}"
        others.append(f"{label} needs ε = {oe:.3f} ({span(olo, ohi)}{tail})")
    second = ("Others: " + "; ".join(others) + ".") if others else ""
    return ViewSummary(" ".join(s for s in (first, second) if s), INFO)


# --------------------------------------------------------------------------- KDE


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def kde_agrees(kde: float, binned_low: float, binned_high: float) -> bool:
    """Whether a KDE-ECE agrees with the range binned ECE takes over bin counts: inside it,
    or off it by no more than the range's own width (what the bins alone move it by) or a
    fifth of its middle (two estimators of one error differ by their smoothing).

    Examples
    --------
    >>> from calcore.diagnostics.summaries import kde_agrees
    >>> kde_agrees(0.018, 0.012, 0.016), kde_agrees(0.006, 0.003, 0.0032)
    (True, False)
    """
    off = max(binned_low - kde, kde - binned_high, 0.0)
    return off <= max(binned_high - binned_low, 0.2 * (binned_low + binned_high) / 2)


def kde_summary(kde_ece: Mapping[str, float], sweeps: Mapping[str, EceByBins]) -> ViewSummary:
    """KDE-ECE beside binned ECE: whether the bin-free estimate agrees with the range the
    binned conf-ECE takes over the bin counts swept (:func:`kde_agrees`), and whether both
    rank the methods alike.

    Binned ECE depends on the bins: its spread over bin counts is a difference the bins
    alone make, so smaller differences between methods are no finding. Neither estimate
    here carries an interval; the sentence says so.

    Parameters
    ----------
    kde_ece : mapping of str to float
        KDE-ECE of the confidence view, by method label.
    sweeps : mapping of str to EceByBins
        Binned ECE against the number of bins, by the same labels (``confidence_ece`` used).

    Returns
    -------
    ViewSummary
        ``"warning"`` when the two estimates rank the methods differently, else ``"info"``.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> sweep = calcore.EceByBins(np.array([5, 15, 25]), np.array([0.02, 0.03, 0.04]),
    ...                           None, None, "equal-width")
    >>> print(calcore.kde_summary({"uncalibrated": 0.025}, {"uncalibrated": sweep}).sentence)
    KDE-ECE agrees with binned ECE over 5–25 bins for uncalibrated (0.025 against
    0.020–0.040); the bin count alone moves binned ECE by up to 0.020, so smaller
    differences are no finding (no interval computed).
    """
    rows = {}
    for label, value in kde_ece.items():
        sweep = sweeps.get(label)
        if sweep is None or sweep.confidence_ece is None or not math.isfinite(value):
            continue
        binned = np.asarray(sweep.confidence_ece, dtype=np.float64)
        if not np.any(np.isfinite(binned)):
            continue
        rows[label] = (float(value), float(np.nanmin(binned)), float(np.nanmax(binned)), sweep)
    if not rows:
        return ViewSummary("", INFO)
    bins = next(iter(rows.values()))[3].bins
    over = f"{int(np.min(bins))}–{int(np.max(bins))} bins"
    spread = max(hi - lo for _, lo, hi, _ in rows.values())
    agreeing = [k for k in rows if kde_agrees(*rows[k][:3])]
    apart = [k for k in rows if k not in agreeing]

    def numbers(k: str) -> str:
        v, lo, hi, _ = rows[k]
        binned = f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}–{hi:.3f}"
        named = f"{k} " if len(rows) > 1 else ""
        if k in agreeing:
            return f"{named}{v:.3f} against {binned}"
        return f"{named}{v:.3f}, {'below' if v < lo else 'above'} {binned}"

    if not apart:
        who = "every output" if len(rows) > 1 else next(iter(rows))
        first = f"KDE-ECE agrees with binned ECE over {over} for {who}"
    elif not agreeing:
        first = f"KDE-ECE and binned ECE over {over} disagree for every output"
    else:
        first = (
            f"KDE-ECE agrees with binned ECE over {over} for {', '.join(agreeing)} but not "
            f"for {', '.join(apart)}"
        )
    first += (
        f" ({'; '.join(numbers(k) for k in rows)}); the bin count alone moves binned ECE by "
        f"up to {spread:.3f}, so smaller differences are no finding (no interval computed)."
    )
    second, agree = "", True
    if len(rows) > 1:
        labels = list(rows)
        kde_best = min(labels, key=lambda k: rows[k][0])
        # methods within the bins' own spread of the lowest KDE-ECE are not told apart
        tied = [k for k in labels if rows[k][0] - rows[kde_best][0] <= spread]
        binned = np.vstack(
            [np.asarray(rows[k][3].confidence_ece, dtype=np.float64) for k in labels]
        )
        filled = np.where(np.isfinite(binned), binned, np.inf)
        best_each = np.argmin(filled, axis=0)
        in_tied = np.isin(best_each, [labels.index(k) for k in tied])
        same = int(np.count_nonzero(in_tied))
        agree = same == best_each.size
        if agree and len(tied) == 1:
            second = f"Both rank {kde_best} lowest, at every bin count."
        elif agree:
            second = (
                f"Both put {_and(tied)} lowest, closer together than the bins move binned "
                "ECE: not told apart."
            )
        else:
            second = (
                f"KDE-ECE ranks {_and(tied)} lowest; binned ECE agrees at {same} of "
                f"{best_each.size} bin counts."
            )
    # the rankings decide which method to ship; an estimator's disagreement alone does not
    severity = INFO if agree else WARNING
    return ViewSummary(" ".join(s for s in (first, second) if s), severity)


# --------------------------------------------------------------------------- learning


#: The relative drop of a metric between the last two calibration-set sizes below which
#: more rows are not worth gathering, however sure: a 1% lower TL-ECE from twice the rows
#: (100-class upload, ts) is no reason to label more data.
MIN_GAIN = 0.05


def learning_summary(curve, *, metric_label: str | None = None) -> ViewSummary:
    """The learning curves' answer: which method ends lowest, and whether any still
    improves between the last two calibration-set sizes beyond the spread over subsets
    (then more calibration rows would likely help it) by at least :data:`MIN_GAIN` of its
    value.

    "Beyond the spread": the drop exceeds two standard errors of the difference of the
    two means over repetitions. At the last size every repetition may use every
    calibration row (no spread); then the spread at the size before stands for both.

    Parameters
    ----------
    curve : LearningCurve
        From :func:`calcore.learning_curve` (a lower metric is better).
    metric_label : str, optional
        How the metric is named; ``curve.metric`` by default.

    Returns
    -------
    ViewSummary
        ``"warning"`` when a method still improves (the calibration set is small for
        it), else ``"success"``.

    Examples
    --------
    >>> import numpy as np, calcore
    >>> curve = calcore.LearningCurve(
    ...     np.array([100, 1000]), ("ts", "tl-hb"), "top_label_ece",
    ...     np.array([[0.020, 0.019], [0.060, 0.030]]), np.array([[0.002, 0.0], [0.004, 0.0]]),
    ...     np.ones((2, 2)), np.zeros((2, 2)), 5, 0.05)
    >>> print(calcore.learning_summary(curve, metric_label="TL-ECE").sentence[:72])
    With all 1,000 calibration rows ts has the lowest TL-ECE (0.019, against
    """
    label = metric_label or curve.metric
    mean, std = np.asarray(curve.mean, dtype=np.float64), np.asarray(curve.std, dtype=np.float64)
    sizes = np.asarray(curve.sizes)
    if mean.size == 0 or sizes.size == 0:
        return ViewSummary("", INFO)
    last = mean[:, -1]
    best = int(np.nanargmin(last))
    methods = list(curve.methods)
    first = (
        f"With all {int(sizes[-1]):,} calibration rows {methods[best]} has the lowest "
        f"{label} ({last[best]:.3f}, against {float(curve.uncalibrated):.3f} uncalibrated)"
    )
    if sizes.size < 2:
        return ViewSummary(first + "; one size only: no trend to read.", INFO)
    reps = max(int(curve.n_repeats), 1)
    improving, flat, no_spread = [], [], []
    largest_gain = 0.0
    for m, name in enumerate(methods):
        before, after = mean[m, -2], mean[m, -1]
        sd_before, sd_after = std[m, -2], std[m, -1]
        if sd_after == 0:
            sd_after = sd_before  # every repetition used every row: no spread of its own
        se = math.sqrt((sd_before**2 + sd_after**2) / reps)
        drop = before - after
        if not se > 0:
            no_spread.append(name)
        elif drop > 2 * se and drop >= MIN_GAIN * before:
            largest_gain = max(largest_gain, drop / before if before > 0 else 0.0)
            improving.append(
                f"{name} ({before:.4f} → {after:.4f}, {-drop / before:+.0%}; spread ± {2 * se:.4f})"
            )
        else:
            flat.append(name)
    step = f"from {int(sizes[-2]):,} to {int(sizes[-1]):,} rows"
    if improving:
        first += (
            f"; still improving {step} by {MIN_GAIN:.0%} or more, beyond the spread over "
            f"{reps} subsets: "
            + ", ".join(improving)
            + ": more calibration rows would likely help"
            + (" a little." if largest_gain < 0.1 else ".")
        )
    else:
        first += (
            f"; no method improves {step} by {MIN_GAIN:.0%} or more beyond the spread over "
            f"{reps} subsets: more "
            "calibration rows are unlikely to help much."
        )
    worse = [methods[m] for m in range(len(methods)) if last[m] > float(curve.uncalibrated)]
    second = ""
    if worse:
        second = f"Worse than uncalibrated at full size: {', '.join(worse)}."
    if no_spread:
        second += f" No spread computed for {', '.join(no_spread)} (one repetition)."
    return ViewSummary(" ".join(s.strip() for s in (first, second) if s.strip()),
                       WARNING if improving else SUCCESS)  # fmt: skip

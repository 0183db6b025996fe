"""What :func:`calcore.evaluate_by` returns, and how it is put together from the slices'
results, in memory and streamed alike (:mod:`calcore.evaluation.slices`,
:mod:`calcore.evaluation.slices_stream`): :class:`SliceResult` per slice,
:class:`SlicedReport` (the slices ranked by evidence, :func:`sliced_report`) and
:class:`PeriodChange` (the test of a change between the first and the last period, on
rows of :func:`period_sample`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from calcore.evaluation.evaluator import CalibrationReport
from calcore.evaluation.significance import CalibrationTest
from calcore.evaluation.slice_ranking import (
    RANK_LEVEL,
    STANDOUT_Z,
    noise_effect,
    rank_key,
    with_evidence,
)
from calcore.evaluation.slice_truth import direction_of
from calcore.foundation.deprecation import renamed_keywords
from calcore.io._bottom_k import BottomK
from calcore.metrics.registry import METRICS, compute_metric
from calcore.predictions import concat
from calcore.predictions.metadata import MISSING

__all__ = [
    "SliceResult",
    "SlicedReport",
    "PeriodChange",
    "PERIOD_TEST_ROWS",
    "sliced_report",
    "period_sample",
    "period_ends",
    "period_change",
]


#: Most rows of each period the test of a change between the first and the last period
#: deals again (a seeded sample of a larger period): every reshuffling recomputes the
#: metric on both sets, which on the 4M rows of two weeks of the demo took 25 s for 200.
PERIOD_TEST_ROWS = 100_000
#: The row uniforms of that sample: apart from the redrawn labels' (streams 1 to R).
_PERIOD_SAMPLE_STREAM = 1 << 40


@dataclass(frozen=True)
class SliceResult:
    """One slice: its rows' report, its test and where it stands among the slices.

    Attributes
    ----------
    columns, values : tuple of str
        The slicing columns and this slice's value in each.
    n : int
        Rows.
    weight : float
        Total row weight (``n`` without weights).
    report : CalibrationReport or None
        :func:`calcore.evaluate` of the slice's rows (None when their weight is 0).
    p_value, q_value : float
        The calibration test's p-value of the ranking metric and its Benjamini-Hochberg
        q-value across the tested slices (NaN when untested).
    share : float
        ``weight x metric`` of the slice over the sum of it over all slices: its share
        of the total miscalibration.
    note : str
        Why a slice was not tested ("" when it was).
    test : CalibrationTest or None
    observed, expected : float
        Binary: the slice's weighted rate of the positive class (label index 1) and its
        mean predicted probability of it; several classes: its weighted accuracy and
        mean confidence (:mod:`calcore.evaluation.slice_truth`).
    view : str
        ``"positive"`` (binary) or ``"confidence"``: what ``observed`` and ``expected`` are.
    excess : float
        The ranking metric without the slice's noise (the folded-normal inversion of
        :func:`~calcore.evaluation.slice_ranking.noise_effect` against its redrawn errors)
        minus the overall model's; NaN when untested.
    z : float
        ``excess`` over the sd of the slice's redrawn errors: what the slices are ranked by.
    p_method : str
        ``"redraws"``, or ``"tail fit"`` when no redrawn error reached the observed one
        and the p-value comes from a gamma fitted to them ("" when untested).
    beyond_q : float
        With ``beyond_model`` (the default), the q-value of the slice's test after the
        model's own calibration curve (:data:`~calcore.evaluation.slice_ranking.MODEL_CURVE`):
        evidence that the slice departs from what the model does everywhere, where
        ``q_value`` is evidence that it is miscalibrated at all; ``excess`` and ``z`` are
        then measured after that curve too. NaN when not measured.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2)
    >>> preds = calcore.simulate_predictions(sim, 400, seed=0).preds
    >>> preds = preds.with_metadata({"shop": np.tile(["x", "y"], 200)})
    >>> top = calcore.evaluate_by(preds, "shop", n_resamples=19).slices[0]
    >>> top.n, top.p_method, top.p_value < 0.05, sorted(top.as_dict())[:4]
    (200, 'tail fit', True, ['accuracy', 'ace', 'beyond_q', 'brier'])
    """

    columns: tuple[str, ...]
    values: tuple[str, ...]
    n: int
    weight: float
    report: CalibrationReport | None
    p_value: float = float("nan")
    q_value: float = float("nan")
    share: float = float("nan")
    note: str = ""
    test: CalibrationTest | None = field(default=None, repr=False, compare=False)
    observed: float = float("nan")
    expected: float = float("nan")
    view: str = ""
    excess: float = float("nan")
    z: float = float("nan")
    p_method: str = ""
    beyond_q: float = float("nan")

    @property
    def label(self) -> str:
        return " | ".join(self.values)

    @property
    def tested(self) -> bool:
        return bool(np.isfinite(self.p_value))

    @property
    def ratio(self) -> float:
        """``observed / expected`` (NaN when ``expected`` is 0 or undefined)."""
        if not (self.expected > 0 and math.isfinite(self.observed)):
            return math.nan
        return self.observed / self.expected

    @property
    def direction(self) -> str:
        """Which way the slice is off: "under-predicted" / "over-predicted" (binary),
        "underconfident" / "overconfident" (several classes), or "" within noise
        (:func:`calcore.evaluation.slice_truth.direction_of`)."""
        return direction_of(self.observed, self.expected, self.n, self.view) if self.view else ""

    def as_dict(self) -> dict:
        """``column``, ``value``, ``n``, the report's metrics (and intervals), ``p_value``,
        ``p_method``, ``q_value``, ``share``, ``excess``, ``z``, ``observed``, ``expected``,
        ``ratio``, ``direction`` (JSON-ready; NaN as None)."""
        out = {"column": " x ".join(self.columns), "value": self.label, "n": self.n}
        if self.weight != self.n:
            out["weight"] = self.weight
        if self.report is not None:
            body = self.report.as_dict()
            out |= {k: body[k] for k in METRICS if k in body}
            if "intervals" in body:
                out["intervals"] = body["intervals"]
        for key in (
            "p_value", "q_value", "share", "excess", "z", "observed", "expected", "ratio",
            "beyond_q",
        ):  # fmt: skip
            value = getattr(self, key)
            out[key] = float(value) if np.isfinite(value) else None
        out["p_method"] = self.p_method or None
        out["direction"] = self.direction
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class PeriodChange:
    """Whether a metric changed between the first and the last period of a datetime slicing.

    A permutation test: under "the two periods are calibrated alike" their rows are
    exchangeable, so the rows of both are dealt again into two sets of the same sizes
    (``n_resamples`` times, seeded) and the metric's difference recomputed; the p-value
    is ``(1 + #{|d*| >= |d|}) / (R + 1)`` (two-sided).

    Attributes
    ----------
    metric : str
    first, last : str
        The periods compared.
    first_value, last_value : float
    p_value : float
    n_resamples : int
    n_rows : tuple of int
        Rows of the first and the last period.
    n_tested : tuple of int
        Those dealt again: all of them, or a seeded sample of :data:`PERIOD_TEST_ROWS` of
        a larger period (each reshuffling recomputes the metric on both sets).

    Examples
    --------
    >>> change = PeriodChange("top_label_ece", "2026-11-01", "2026-11-08", 0.02, 0.05, 0.004, 249)
    >>> change.verdict()
    'TL-ECE rose from 0.02 (2026-11-01) to 0.05 (2026-11-08): a change (p = 0.004)'
    """

    metric: str
    first: str
    last: str
    first_value: float
    last_value: float
    p_value: float
    n_resamples: int
    n_rows: tuple[int, int] = (0, 0)
    n_tested: tuple[int, int] = (0, 0)

    @property
    def sampled(self) -> bool:
        """Whether the test dealt a sample of the periods' rows (:data:`PERIOD_TEST_ROWS`)."""
        return self.n_tested != self.n_rows

    def method(self) -> str:
        """How the p-value was found, in words."""
        rows = "the two periods' rows"
        if self.sampled:
            rows = (
                f"a seeded sample of {self.n_tested[0]:,} and {self.n_tested[1]:,} of the two "
                f"periods' {self.n_rows[0]:,} and {self.n_rows[1]:,} rows"
            )
        return f"permutation test, {self.n_resamples} reshufflings of {rows}"

    @property
    def difference(self) -> float:
        return self.last_value - self.first_value

    @renamed_keywords(level="alpha")
    def verdict(self, alpha: float = 0.05) -> str:
        """The change in words: "a change" when the test's p-value is at most ``alpha``, its
        significance level (until 0.1 ``level``, which still works for one release, with a
        DeprecationWarning)."""
        moved = "rose" if self.difference > 0 else "fell" if self.difference < 0 else "stayed"
        words = "a change" if self.p_value <= alpha else "no evidence of a change"
        return (
            f"{METRICS[self.metric].label} {moved} from {self.first_value:.4g} ({self.first}) "
            f"to {self.last_value:.4g} ({self.last}): {words} (p = {self.p_value:.2g})"
        )

    def as_dict(self) -> dict:
        return asdict(self) | {"difference": self.difference}


@dataclass(frozen=True)
class SlicedReport:
    """The overall report and every slice's, slices sorted by evidence of miscalibration.

    Attributes
    ----------
    overall : CalibrationReport
    columns : tuple of str
        What the rows were sliced by.
    rank_metric : str
        The metric of the tests, q-values and shares.
    slices : tuple of SliceResult
        Most miscalibrated first: the tested slices with ``q_value <= 0.05`` by ``z``
        (miscalibration beyond their size's noise and the overall model's), then the
        other tested slices by p-value, then the untested ones, largest first (by share
        when nothing was tested).
    overall_effect : float
        The overall model's ranking metric without its noise
        (:func:`~calcore.evaluation.slice_ranking.noise_effect` of its redrawn values),
        subtracted from every slice's (NaN when untested).
    ordered : bool
        Whether the slices have a natural order (periods, ranges): :meth:`in_order`.
    min_slice_rows, n_resamples : int
    notes : tuple of str
    change : PeriodChange or None
        For one datetime column sliced by period: the first period against the last.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="calibrated")
    >>> preds = calcore.simulate_predictions(sim, 300, seed=1).preds
    >>> preds = preds.with_metadata({"day": np.repeat(["2026-11-02", "2026-11-03"], 150)})
    >>> sliced = calcore.evaluate_by(preds, "day", n_resamples=19)
    >>> [s.label for s in sliced.in_order()], sliced.ordered, sliced.discoveries()
    (['2026-11-02', '2026-11-03'], True, ())
    """

    overall: CalibrationReport
    columns: tuple[str, ...]
    rank_metric: str
    slices: tuple[SliceResult, ...]
    ordered: bool
    min_slice_rows: int
    n_resamples: int
    notes: tuple[str, ...] = ()
    order: tuple[int, ...] = field(default=(), repr=False)
    change: PeriodChange | None = None
    overall_effect: float = float("nan")

    def in_order(self) -> tuple[SliceResult, ...]:
        """The slices in their natural order (periods, ranges, sorted values)."""
        return tuple(self.slices[i] for i in self.order)

    @renamed_keywords(level="alpha")
    def discoveries(self, alpha: float = 0.05) -> tuple[SliceResult, ...]:
        """The slices whose q-value is at most ``alpha`` (miscalibrated, at that false
        discovery rate). ``alpha`` was ``level`` until 0.1, as in :meth:`standouts` and
        :meth:`headline`; the old name still works for one release, with a
        DeprecationWarning."""
        return tuple(s for s in self.slices if s.tested and s.q_value <= alpha)

    @renamed_keywords(level="alpha")
    def standouts(self, alpha: float = 0.05) -> tuple[SliceResult, ...]:
        """The discoveries whose error is beyond the whole model's by more than
        :data:`~calcore.evaluation.slice_ranking.STANDOUT_Z` of their noise (and, when it
        was measured, whose test after the model's own curve finds them at ``alpha`` too):
        where the model is miscalibrated more than it is everywhere, most first."""
        return tuple(
            s
            for s in self.discoveries(alpha)
            if s.z >= STANDOUT_Z and not (np.isfinite(s.beyond_q) and s.beyond_q > alpha)
        )

    @renamed_keywords(level="alpha")
    def headline(self, alpha: float = 0.05) -> str:
        """One sentence a reviewer can read aloud: where the model is miscalibrated, which
        way, how sure, what to do; ``alpha`` is the false discovery rate of the slices'
        discoveries (:meth:`discoveries`).

        Examples
        --------
        >>> import calcore
        >>> sim = calcore.dirichlet_simulator(2, miscalibration="calibrated")
        >>> preds = calcore.simulate_predictions(sim, 600, seed=0).preds
        >>> preds = preds.with_metadata({"half": np.repeat(["a", "b"], 300)})
        >>> calcore.evaluate_by(preds, "half", n_resamples=49).headline()[:38]
        'No slice is miscalibrated beyond noise'
        """
        label = METRICS[self.rank_metric].label
        tested = [s for s in self.slices if s.tested]
        overall = self.overall.metrics.get(self.rank_metric)
        overall_words = "n/a" if overall is None else f"{overall:.3f}"
        if not tested:
            return (
                f"No slice was tested (too few rows, or no redraws): {len(self.slices)} "
                f"slice(s) are listed by their share of the {label}, which is not evidence."
            )
        stand = self.standouts(alpha)
        found = self.discoveries(alpha)
        if stand:
            top = stand[0]
            value = top.report.metrics.get(self.rank_metric)
            if overall is not None and value < overall:
                # what stands out is its departure from the model's curve, not its size
                words = (
                    f"{top.label} stands out although its {label}, {value:.3f}, is below the "
                    f"{overall_words} overall"
                )
                before_direction = "; it is "
            else:
                words = (
                    f"{top.label} stands out: {label} {value:.3f} against {overall_words} overall"
                )
                before_direction = ", "
            if top.direction:
                what = "observed rate" if top.view == "positive" else "accuracy"
                against = "predicted" if top.view == "positive" else "confidence"
                words += (
                    f"{before_direction}{top.direction} ({what} {top.observed:.3g} against "
                    f"{against} {top.expected:.3g})"
                )
            if np.isfinite(top.beyond_q):
                words += (
                    f"; {top.z:.1f} noise SDs beyond the model's own calibration curve "
                    f"(q = {top.beyond_q:.2g})."
                )
            else:
                words += (
                    f"; {top.z:.1f} noise SDs beyond the model's error (q = {top.q_value:.2g})."
                )
            more = [s.label for s in stand[1:]]
            if more:
                shown = ", ".join(more[:3]) + (
                    f" and {len(more) - 3} others" if len(more) > 3 else ""
                )
                words += f" {len(more)} more beyond the model's error: {shown}."
            if np.isfinite(top.beyond_q):
                return words + (
                    " One calibrator for every row will not fix it: fit one per slice, or give "
                    "the model the feature it lacks."
                )
            return words + (
                " Check them after a global calibrator (evaluate_by on its output; the CLI's "
                "--after): a slice that keeps its error needs a per-slice fit or a feature the "
                "model lacks."
            )
        if found:
            return (
                f"{len(found)} of {len(tested)} tested slices are miscalibrated (q <= {alpha}), "
                f"but none beyond the model's overall error ({label} {overall_words}): the "
                "miscalibration is the model's, and one global calibrator is where to start."
            )
        return (
            f"No slice is miscalibrated beyond noise: {len(tested)} tested, none with "
            f"q <= {alpha} ({label} {overall_words} overall)."
        )

    def as_dict(self) -> dict:
        out = {
            "by": list(self.columns),
            "rank_metric": self.rank_metric,
            "n_resamples": self.n_resamples,
            "min_slice_rows": self.min_slice_rows,
            "overall_effect": self.overall_effect if np.isfinite(self.overall_effect) else None,
            "headline": self.headline(),
            "standouts": [s.label for s in self.standouts()],
            "slices": [s.as_dict() for s in self.slices],
        }
        if self.change is not None:
            out["change"] = self.change.as_dict()
        return out


def sliced_report(
    overall, slicing, results, change_of, *, rank_metric, n_resamples, min_slice_rows, notes=(),
    overall_test=None,
) -> SlicedReport:  # fmt: skip
    """The slices' results (in ``slicing``'s order) ranked by evidence
    (:mod:`calcore.evaluation.slice_ranking`), with q-values, shares and notes;
    ``overall_test`` the whole model's test of ``rank_metric`` (its effect is subtracted
    from every slice's); ``change_of(results, notes)`` the period change test, if any (it
    may add a note of why there is none)."""
    notes = list(notes)
    label = METRICS[rank_metric].label
    overall_effect = math.nan
    if overall_test is not None and rank_metric in overall_test.null_values:
        overall_effect, _ = noise_effect(
            overall_test.observed[rank_metric], overall_test.null_values[rank_metric]
        )
    # without an overall test (unnormalised rows) the slices' own effects are compared
    base = overall_effect if math.isfinite(overall_effect) else 0.0
    results = with_evidence(results, rank_metric, base)
    untested_by = "share" if n_resamples == 0 else "size"
    order = sorted(range(len(results)), key=lambda i: rank_key(results[i], untested_by))
    ranked = tuple(results[i] for i in order)
    natural = tuple(order.index(i) for i in range(len(results)))
    small = sum(1 for s in results if not s.tested)
    if n_resamples == 0:
        notes.append(
            f"No slice was tested (n_resamples=0): slices are ranked by their share of the "
            f"miscalibration, the slice's weight x {label} over the sum across slices. A "
            "share is not evidence: small slices have a high error by noise alone."
        )
        change_of = None
    else:
        if small:
            notes.append(
                f"{small} slice(s) were not tested: fewer than {min_slice_rows} rows (or no "
                "weight); they are listed after the tested ones."
            )
        notes.append(
            f"Slices are tested by the calibration test of {label} ({n_resamples} redrawn "
            "label sets per slice) with Benjamini-Hochberg q-values across the tested slices "
            f"(the false discovery rate of calling the slice miscalibrated). Those with q <= "
            f"{RANK_LEVEL} come first, by z: the slice's {label} without the noise its "
            "redrawn values show (what a calibrated slice of its size reads), minus the whole "
            f"model's ({_number(overall_effect)}), over the sd of its redrawn values; then "
            "the other tested slices, by p-value. Share: the "
            f"slice's weight x {label} over the sum across slices."
        )
        fitted = sum(1 for s in results if s.p_method == "tail fit")
        if fitted:
            notes.append(
                f"{fitted} slice(s) had no redrawn {label} at or above the observed one: "
                f"instead of the floor 1/{n_resamples + 1}, their p-values are the upper "
                "tail of a gamma fitted to the redrawn values by moments (p_method 'tail "
                "fit'), an extrapolation that orders strong slices."
            )
    change = None if change_of is None else change_of(results, notes)
    if change is not None:
        notes.append(f"Over time: {change.verdict()} ({change.method()}).")
    return SlicedReport(
        overall,
        tuple(slicing.columns),
        rank_metric,
        ranked,
        slicing.ordered,
        int(min_slice_rows),
        int(n_resamples),
        tuple(notes),
        natural,
        change,
        overall_effect,
    )


def _number(value: float) -> str:
    return f"{value:.4g}" if math.isfinite(value) else "not tested"


def period_sample(seed: int) -> BottomK:
    """The rows of a period the change test deals again: all of them, or the
    :data:`PERIOD_TEST_ROWS` with the smallest uniforms keyed by row position (the same
    rows in memory and streamed, whatever the batching)."""
    return BottomK(PERIOD_TEST_ROWS, seed, stream=_PERIOD_SAMPLE_STREAM)


def period_ends(slicing, results, sizes, min_rows):
    """The first and last periods (missing values aside), if both can be compared."""
    periods = [k for k, v in enumerate(slicing.values) if v != (MISSING,)]
    if len(periods) < 2:
        return None
    first, last = periods[0], periods[-1]
    if (
        min(sizes[first], sizes[last]) < min_rows
        or results[first].report is None
        or results[last].report is None
    ):
        return None
    return first, last


def period_change(
    samples, first_label, last_label, first, last, *, options, metric, n_resamples
) -> PeriodChange:
    """The permutation test on the rows kept by ``samples`` (:func:`period_sample` of the
    first and the last period)."""
    kw = dict(bins=options["bins"], binning=options["binning"])
    parts = [[preds for _, _, preds, _ in s.rows()] for s in samples]
    n_first = sum(p.n_samples for p in parts[0])
    # the permutations take rows only: metadata columns would be recounted at every take
    sub = replace(concat(parts[0] + parts[1]), metadata={})
    w = sub.sample_weight

    def value(part: np.ndarray) -> float:
        return compute_metric(
            metric, sub.subset(part), sample_weight=None if w is None else w[part], **kw
        )

    observed = value(np.arange(n_first, sub.n_samples)) - value(np.arange(n_first))
    rng = np.random.default_rng(np.random.SeedSequence(options["seed"], spawn_key=(2,)))
    extreme = 0
    for _ in range(int(n_resamples)):
        order = rng.permutation(sub.n_samples)
        d = value(order[n_first:]) - value(order[:n_first])
        extreme += abs(d) >= abs(observed) - 1e-15
    return PeriodChange(
        metric,
        first_label,
        last_label,
        float(first.report.metrics[metric]),
        float(last.report.metrics[metric]),
        float((1 + extreme) / (int(n_resamples) + 1)),
        int(n_resamples),
        (first.n, last.n),
        (n_first, sub.n_samples - n_first),
    )

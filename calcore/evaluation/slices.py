"""Calibration per slice: which slices are miscalibrated, with evidence, not raw ECE.

Small slices have a large binned ECE by noise alone, and when the whole model is
miscalibrated every slice is. So each slice is tested (:func:`calcore.calibration_test`,
consistency resampling, of one metric), and ranked by its miscalibration beyond what its
size explains and beyond the whole model's (:mod:`calcore.evaluation.slice_ranking`:
``excess`` and ``z`` from the redrawn errors), with Benjamini-Hochberg q-values across
the tested slices (the false discovery rate of "this slice is miscalibrated") as the
filter: the slices with ``q <= 0.05`` first, by ``z``; then the other tested slices, by
p-value; then the untested ones. p-values at the redraws' floor are resolved by a gamma
tail fit. Every slice also says which way it is off: observed against expected
(:mod:`calcore.evaluation.slice_truth`: "under-predicted", "overconfident", ...).

Every slice is evaluated as a data set of its own (its own bins and bandwidths, as if
its rows had been loaded alone), so a slice's metrics equal :func:`calcore.evaluate` of
its rows. The redrawn labels of a slice's test are keyed by the rows' positions in the
whole data, so the slices' tests draw independent labels.

References
----------
Benjamini & Hochberg (1995), "Controlling the false discovery rate", JRSS B 57.
Vaicenavicius et al. (2019), "Evaluating model calibration in classification", AISTATS.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from calcore._errors import CalcoreError
from calcore._limits import SLICE_RESAMPLES
from calcore._validation import row_weights
from calcore.evaluation.calibration_test import TESTABLE_METRICS, CalibrationTest, calibration_test
from calcore.evaluation.evaluator import CalibrationReport, evaluate
from calcore.evaluation.slice_ranking import (
    RANK_LEVEL,
    STANDOUT_Z,
    beyond_the_curve,
    fit_model_curve,
    noise_effect,
    rank_key,
    with_evidence,
)
from calcore.evaluation.slice_truth import direction_of, signed_truth
from calcore.io._bottom_k import BottomK
from calcore.metadata import MAX_SLICE_VALUES, MISSING
from calcore.metrics.registry import METRICS, compute_metric, default_primary, metric_keys
from calcore.predictions import Predictions, concat
from calcore.slicing import Slicing, slicing_of

__all__ = [
    "SliceResult",
    "SlicedReport",
    "PeriodChange",
    "evaluate_by",
    "MIN_SLICE_ROWS",
    "PERIOD_TEST_ROWS",
]

#: Rows a slice needs to be tested and ranked. Below it a 15-bin ECE rests on fewer than
#: two rows per bin, and the test has almost no power: such slices are listed with their
#: metrics, untested, after the tested ones.
MIN_SLICE_ROWS = 30
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

    def verdict(self, level: float = 0.05) -> str:
        moved = "rose" if self.difference > 0 else "fell" if self.difference < 0 else "stayed"
        words = "a change" if self.p_value <= level else "no evidence of a change"
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

    def discoveries(self, level: float = 0.05) -> tuple[SliceResult, ...]:
        """The slices whose q-value is at most ``level`` (miscalibrated, at that FDR)."""
        return tuple(s for s in self.slices if s.tested and s.q_value <= level)

    def standouts(self, level: float = 0.05) -> tuple[SliceResult, ...]:
        """The discoveries whose error is beyond the whole model's by more than
        :data:`~calcore.evaluation.slice_ranking.STANDOUT_Z` of their noise (and, when it
        was measured, whose test after the model's own curve finds them at ``level`` too):
        where the model is miscalibrated more than it is everywhere, most first."""
        return tuple(
            s
            for s in self.discoveries(level)
            if s.z >= STANDOUT_Z and not (np.isfinite(s.beyond_q) and s.beyond_q > level)
        )

    def headline(self, level: float = 0.05) -> str:
        """One sentence a reviewer can read aloud: where the model is miscalibrated, which
        way, how sure, what to do.

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
        stand = self.standouts(level)
        found = self.discoveries(level)
        if stand:
            top = stand[0]
            value = top.report.metrics.get(self.rank_metric)
            words = f"{top.label} stands out: {label} {value:.3f} against {overall_words} overall"
            if top.direction:
                what = "observed rate" if top.view == "positive" else "accuracy"
                against = "predicted" if top.view == "positive" else "confidence"
                words += (
                    f", {top.direction} ({what} {top.observed:.3g} against {against} "
                    f"{top.expected:.3g})"
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
                f"{len(found)} of {len(tested)} tested slices are miscalibrated (q <= {level}), "
                f"but none beyond the model's overall error ({label} {overall_words}): the "
                "miscalibration is the model's, and one global calibrator is where to start."
            )
        return (
            f"No slice is miscalibrated beyond noise: {len(tested)} tested, none with "
            f"q <= {level} ({label} {overall_words} overall)."
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


def evaluate_by(
    preds: Predictions,
    by,
    *,
    bins=15,
    binning: str = "equal-width",
    seed: int = 0,
    n_bootstrap: int = 0,
    n_resamples: int = 200,
    confidence_level: float = 0.95,
    metrics=None,
    rank_by: str | None = None,
    min_slice_rows: int = MIN_SLICE_ROWS,
    interval_method: str | None = None,
    sample_weight=None,
    max_slices: int = MAX_SLICE_VALUES,
    beyond_model: bool = True,
) -> SlicedReport:
    """Evaluate ``preds`` overall and per slice of its metadata columns.

    Parameters
    ----------
    preds : Predictions or PredictionStream
        With metadata columns (from a loaded file, or :meth:`Predictions.with_metadata`),
        or a stream opened with ``calcore.scan(..., slice_columns=[...])``: then every
        slice is accumulated in the same passes over the data
        (:func:`calcore.statistics.stream_statistics_by`), after passes over the slice
        columns for quantile ranges; datetime columns without a period are refused (see
        :mod:`calcore.slicing_batches`).
    by : str or sequence of str
        Slice specifications (:mod:`calcore.slicing`): ``"country"``, ``"age:q4"``,
        ``"date:week"``; two or more cross.
    bins, binning, seed, n_bootstrap, confidence_level, metrics, interval_method :
        As in :func:`calcore.evaluate`, for the overall report and every slice's.
    n_resamples : int, default 200
        Redrawn label sets of each slice's test; 0: no tests (nor a change test), the
        slices are ranked by their share of the miscalibration (for very large data,
        where drawing labels for every row costs more than the rest).
    rank_by : str, optional
        The calibration error tested and ranked by; default the one a reader of the model
        reads (:func:`calcore.metrics.registry.default_primary`: the ECE of class 1 for
        two classes, the top-label ECE otherwise).
    min_slice_rows : int, default MIN_SLICE_ROWS
        Slices with fewer rows are reported but neither tested nor ranked.
    sample_weight : array_like of shape (n,), optional
        Row weights (default ``preds.sample_weight``; a stream's come from its weight
        column).
    max_slices : int
        Most slices allowed.
    beyond_model : bool, default True
        Measure each tested slice's ``excess`` and ``z`` (the ranking) after the model's
        own calibration curve: an isotonic map of the ranking metric's view
        (:data:`~calcore.evaluation.slice_ranking.MODEL_CURVE`) fitted on the evaluated
        rows (a stream: a seeded sample of
        :data:`~calcore.evaluation.slice_ranking.MODEL_FIT_ROWS`), then each slice tested
        again on the mapped scores. A slice that only shares the model's miscalibration
        (over-confident everywhere, so more where its scores are high) then ranks as noise;
        one the model misses keeps its error. ``p_value`` and ``q_value`` stay those of
        "the slice is calibrated"; ``beyond_q`` is that of "it departs from the model's
        curve". Costs one more test of the ranking metric per slice (a stream: a sample
        and the passes once more). False: both against the slice's own predictions, with
        the whole model's effect subtracted.

    Returns
    -------
    SlicedReport

    Raises
    ------
    CalcoreError
        Unknown or unsliceable columns, too many slices, invalid options.

    References
    ----------
    Benjamini & Hochberg (1995); Vaicenavicius et al. (2019), Sec. 4 (the test).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="calibrated")
    >>> preds = calcore.simulate_predictions(sim, 600, seed=0).preds
    >>> preds = preds.with_metadata({"half": np.repeat(["a", "b"], 300)})
    >>> sliced = calcore.evaluate_by(preds, "half", n_resamples=49)
    >>> [(s.label, s.n) for s in sliced.in_order()]
    [('a', 300), ('b', 300)]
    """
    if rank_by is None:
        rank_by = default_primary(len(getattr(preds, "class_names", ())))
    rank_metric = metric_keys([rank_by], among=TESTABLE_METRICS, what="rank_by")[0]
    n_resamples = SLICE_RESAMPLES.check(n_resamples, "n_resamples")
    if metrics is not None:
        metrics = list(dict.fromkeys([*metric_keys(metrics), rank_metric]))
    if int(min_slice_rows) < 2:
        raise CalcoreError(f"min_slice_rows must be at least 2; got {min_slice_rows}.")
    options = dict(
        bins=bins,
        binning=binning,
        seed=seed,
        confidence_level=confidence_level,
        metrics=metrics,
        interval_method=interval_method,
    )
    common = dict(
        n_bootstrap=n_bootstrap, n_resamples=n_resamples, rank_metric=rank_metric,
        min_slice_rows=int(min_slice_rows), max_slices=max_slices,
    )  # fmt: skip
    if not isinstance(preds, Predictions):
        from calcore.evaluation.slices_stream import evaluate_stream_by

        if sample_weight is not None:
            raise CalcoreError(
                "sample_weight= is for predictions in memory; a stream's weights come from its "
                "weight column (scan(weight_column=))."
            )
        sliced = evaluate_stream_by(preds, by, options=options, **common)
    else:
        sliced = _evaluate_in_memory_by(preds, by, sample_weight, options=options, **common)
    if not (beyond_model and n_resamples and any(s.tested for s in sliced.slices)):
        return sliced
    # the same slices after the model's own calibration curve: only the ranking metric
    curve, fitted_on = fit_model_curve(preds, rank_metric, seed=seed, sample_weight=sample_weight)
    mapped = (
        curve.transform(preds)
        if isinstance(preds, Predictions)
        else preds.with_transform(curve.transform)
    )
    after = evaluate_by(
        mapped, by, bins=bins, binning=binning, seed=seed, n_bootstrap=0,
        n_resamples=n_resamples, metrics=[rank_metric], rank_by=rank_metric,
        min_slice_rows=min_slice_rows, sample_weight=sample_weight, max_slices=max_slices,
        beyond_model=False,
    )  # fmt: skip
    return beyond_the_curve(sliced, after, curve=curve.name, fitted_on=fitted_on)


def _evaluate_in_memory_by(
    preds, by, sample_weight, *, options, n_bootstrap, n_resamples, rank_metric,
    min_slice_rows, max_slices,
) -> SlicedReport:  # fmt: skip
    slicing = slicing_of(preds.metadata, by, max_slices=max_slices)
    weights = row_weights(preds, sample_weight)
    overall = evaluate(preds, n_bootstrap=n_bootstrap, sample_weight=weights, **options)
    groups = slicing.row_groups()
    results = [
        _one_slice(
            preds, slicing, k, rows, weights,
            options=options, n_bootstrap=n_bootstrap, n_resamples=n_resamples,
            rank_metric=rank_metric, min_slice_rows=min_slice_rows,
        )
        for k, rows in enumerate(groups)
    ]  # fmt: skip

    def change_of(results, notes):
        return _period_change(
            preds, slicing, groups, results, weights,
            options=options, metric=rank_metric, n_resamples=n_resamples, min_rows=min_slice_rows,
        )  # fmt: skip

    overall_test = None
    if n_resamples and preds.normalized and preds.n_samples >= 2:
        # the whole model's redrawn errors, with the slices' seed and R and the rows'
        # positions as keys: the same draws as a stream's overall test
        overall_test = calibration_test(
            preds, metrics=[rank_metric], bins=options["bins"], binning=options["binning"],
            n_resamples=n_resamples, seed=options["seed"], sample_weight=weights,
        )  # fmt: skip
    return sliced_report(
        overall, slicing, results, change_of if slicing.kinds == ("datetime",) else None,
        rank_metric=rank_metric, n_resamples=n_resamples, min_slice_rows=min_slice_rows,
        overall_test=overall_test,
    )  # fmt: skip


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


def _period_change(
    preds, slicing, groups, results, weights, *, options, metric, n_resamples, min_rows
):
    """The permutation test of the metric between the first and the last period."""
    ends = period_ends(slicing, results, [g.size for g in groups], min_rows)
    if ends is None:
        return None
    first, last = ends
    if weights is not None:
        preds = preds.with_sample_weight(weights)
    samples = []
    for rows in (groups[first], groups[last]):
        sample = period_sample(options["seed"])
        sample.add(rows, preds, {}, rows=rows)
        samples.append(sample)
    return period_change(
        samples, slicing.labels[first], slicing.labels[last], results[first], results[last],
        options=options, metric=metric, n_resamples=n_resamples,
    )  # fmt: skip


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


def _one_slice(
    preds, slicing: Slicing, k, rows, weights, *, options, n_bootstrap, n_resamples,
    rank_metric, min_slice_rows,
) -> SliceResult:  # fmt: skip
    values = slicing.values[k]
    w = None if weights is None else weights[rows]
    weight = float(rows.size if w is None else w.sum())
    if weight == 0:
        return SliceResult(slicing.columns, values, int(rows.size), 0.0, None, note="no weight")
    sub = preds.subset(rows)
    observed, expected, view = signed_truth(sub, w)
    truth = dict(observed=observed, expected=expected, view=view)
    testable = rows.size >= min_slice_rows and preds.normalized and n_resamples > 0
    report = evaluate(
        sub,
        n_bootstrap=n_bootstrap if testable else 0,
        sample_weight=w,
        test_calibration=False,
        **options,
    )
    if not testable:
        why = (
            "unnormalised predictions"
            if not preds.normalized
            else "no test (n_resamples=0)"
            if n_resamples == 0
            else f"{rows.size} rows"
        )
        return SliceResult(
            slicing.columns, values, int(rows.size), weight, report, note=why, **truth
        )
    test = calibration_test(
        sub,
        metrics=[rank_metric],
        bins=options["bins"],
        binning=options["binning"],
        n_resamples=n_resamples,
        seed=options["seed"],
        sample_weight=w,
        positions=rows,
    )
    p = test.p_values[rank_metric]
    return SliceResult(
        slicing.columns, values, int(rows.size), weight, report, p, test=test, **truth
    )

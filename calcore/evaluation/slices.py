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

from calcore.evaluation.evaluator import evaluate
from calcore.evaluation.significance import TESTABLE_METRICS, calibration_test
from calcore.evaluation.slice_ranking import beyond_the_curve, fit_model_curve
from calcore.evaluation.slice_results import (
    PERIOD_TEST_ROWS,
    PeriodChange,
    SlicedReport,
    SliceResult,
    period_change,
    period_ends,
    period_sample,
    sliced_report,
)
from calcore.evaluation.slice_truth import signed_truth
from calcore.foundation.deprecation import renamed_keywords
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import SLICE_RESAMPLES
from calcore.foundation.validation import row_weights
from calcore.metrics.registry import default_primary, metric_keys
from calcore.predictions import Predictions
from calcore.predictions.metadata import MAX_SLICE_VALUES
from calcore.predictions.slicing import Slicing, slicing_of

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


@renamed_keywords(n_bootstrap="interval_resamples")
def evaluate_by(
    preds: Predictions,
    by,
    *,
    bins=15,
    binning: str = "equal-width",
    seed: int = 0,
    interval_resamples: int = 0,
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
        :mod:`calcore.predictions.slicing_batches`).
    by : str or sequence of str
        Slice specifications (:mod:`calcore.predictions.slicing`): ``"country"``, ``"age:q4"``,
        ``"date:week"``; two or more cross.
    bins, binning, seed, confidence_level, metrics, interval_method :
        As in :func:`calcore.evaluate`, for the overall report and every slice's.
    interval_resamples : int, default 0
        The bootstrap resamples for the intervals of the overall report and every slice's
        (:func:`calcore.evaluate`'s ``n_resamples``). Named apart here because
        ``n_resamples`` counts the slices' redrawn label sets, as in
        :func:`calcore.calibration_test`. (``n_bootstrap``, its name until 0.1, still
        works for one release, with a DeprecationWarning.)
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
        interval_resamples=interval_resamples, n_resamples=n_resamples, rank_metric=rank_metric,
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
        mapped, by, bins=bins, binning=binning, seed=seed, interval_resamples=0,
        n_resamples=n_resamples, metrics=[rank_metric], rank_by=rank_metric,
        min_slice_rows=min_slice_rows, sample_weight=sample_weight, max_slices=max_slices,
        beyond_model=False,
    )  # fmt: skip
    return beyond_the_curve(sliced, after, curve=curve.name, fitted_on=fitted_on)


def _evaluate_in_memory_by(
    preds, by, sample_weight, *, options, interval_resamples, n_resamples, rank_metric,
    min_slice_rows, max_slices,
) -> SlicedReport:  # fmt: skip
    slicing = slicing_of(preds.metadata, by, max_slices=max_slices)
    weights = row_weights(preds, sample_weight)
    overall = evaluate(preds, n_resamples=interval_resamples, sample_weight=weights, **options)
    groups = slicing.row_groups()
    results = [
        _one_slice(
            preds, slicing, k, rows, weights,
            options=options, interval_resamples=interval_resamples, n_resamples=n_resamples,
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


def _one_slice(
    preds, slicing: Slicing, k, rows, weights, *, options, interval_resamples, n_resamples,
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
        n_resamples=interval_resamples if testable else 0,
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

"""Calibration per slice of a streamed source: every slice in the same passes over the data.

:func:`calcore.evaluate_by` on a :class:`~calcore.io.stream.PredictionStream` lands here.
The statistics engine keeps one accumulator per slice
(:func:`calcore.statistics.stream_statistics_by`), so each slice's metrics are those of
its rows evaluated alone, as in memory; its test redraws the labels of the ranking
metric only, keyed by the rows' positions in the stream, so its p-value equals the
in-memory one. Quantile ranges take passes over the slice columns before the rows are
evaluated (for Parquet and Arrow IPC files, those columns alone are read): they are the
ranges of the same rows in memory. What differs from memory, and is said in the notes:

* intervals are Poisson bootstrap intervals (as for :func:`calcore.evaluate` on a stream);
* the overall report's calibration test is of the ranking metric only, with the slices'
  ``n_resamples`` redrawn label sets (in memory: every error, ``interval_resamples`` sets);
* the change between the first and last periods reads those two periods' rows (a seeded
  sample of :data:`~calcore.evaluation.slice_results.PERIOD_TEST_ROWS` of a larger period, the
  same rows as in memory) in one more pass, when they fit in
  :data:`PERIOD_CHANGE_MAX_VALUES` probabilities; otherwise it is left out with a note.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calcore.evaluation.bootstrap import check_bootstrap_options
from calcore.evaluation.evaluator import (
    PROPER_SCORES,
    needs_double_bootstrap,
    stream_requests,
    streamed_report,
)
from calcore.evaluation.intervals import check_interval_method
from calcore.evaluation.report_statistics import CELLS_OF_METRIC, replicate_values
from calcore.evaluation.significance import p_values_from_null
from calcore.evaluation.slice_results import (
    PERIOD_TEST_ROWS,
    SliceResult,
    period_change,
    period_ends,
    period_sample,
    sliced_report,
)
from calcore.evaluation.slice_truth import SIGNED_CELLS, signed_request, signed_truth_from
from calcore.foundation.binning import resolve_binning
from calcore.foundation.errors import CalcoreError, EmptySplitError
from calcore.foundation.limits import N_BOOTSTRAP
from calcore.foundation.validation import check_total_weight
from calcore.io.stream import PredictionStream
from calcore.metrics.registry import METRICS, metric_keys
from calcore.predictions.slicing_batches import BatchSlicer
from calcore.statistics.passes import stream_statistics_by

__all__ = ["evaluate_stream_by", "PERIOD_CHANGE_MAX_VALUES"]

#: Most probabilities (rows x classes) of the first and last periods held for the
#: permutation test of a change on a stream: 16.7M, 128 MiB of float64, one batch's worth
#: (binary: both periods' samples at once; 1,000 classes: periods of up to 8,000 rows).
PERIOD_CHANGE_MAX_VALUES = 1 << 24


def evaluate_stream_by(
    stream, by, *, options, interval_resamples, n_resamples, rank_metric, min_slice_rows, max_slices
):
    """:func:`calcore.evaluate_by` of a stream (its options already checked there)."""
    if not isinstance(stream, PredictionStream):
        raise CalcoreError(
            f"evaluate_by expects a calcore.Predictions or a stream from calcore.scan; got "
            f"{type(stream).__name__}. Load the file with load_predictions, or open it with "
            "calcore.scan(path, slice_columns=[...])."
        )
    _check(options, interval_resamples)
    if not stream.slice_columns:
        raise CalcoreError(
            f"{stream.name}: the stream reads no slice column. Open it with "
            f"calcore.scan(path, slice_columns=[...]) naming the columns to slice by."
        )
    metrics = options["metrics"]
    wanted = frozenset(METRICS) if metrics is None else frozenset(metric_keys(metrics))
    requests, kde = stream_requests(
        bins=options["bins"], binning=options["binning"], wanted=wanted,
        n_classes=len(stream.class_names),
    )  # fmt: skip
    # every slice's observed and expected, whatever metrics= asked for (one cell or two)
    requests[SIGNED_CELLS] = signed_request(len(stream.class_names))
    seed = options["seed"]
    slicer = BatchSlicer(by, stream.slice_columns, max_slices=max_slices)
    while slicer.wants_range_pass():  # quantile ranges: cut from every row first
        for batch in stream.slice_batches():
            slicer.observe_ranges(batch)
        slicer.end_range_pass()
    out = stream_statistics_by(
        stream,
        slicer,
        requests=requests,
        kde=kde,
        bootstrap=(int(interval_resamples), seed) if interval_resamples else None,
        redraws=(int(n_resamples), seed) if n_resamples else None,
        redraw_keys={CELLS_OF_METRIC.get(rank_metric, rank_metric)},
        double_bootstrap=bool(interval_resamples)
        and needs_double_bootstrap(wanted, options["interval_method"]),
        proper_scores=bool(PROPER_SCORES & wanted),
    )
    if out.overall.statistics.n_rows == 0 and stream.split:
        raise EmptySplitError(
            f"{stream.name}: no rows in split {stream.split!r}. Nothing to evaluate.",
            source=stream.name,
            split=stream.split,
            column=stream.roles.split,
        )
    if out.overall.statistics.n_rows == 0 or out.overall.statistics.weight == 0:
        raise CalcoreError(f"{stream.name}: no rows with a positive weight. Nothing to evaluate.")
    check_total_weight(float(out.overall.statistics.weight), source=stream.name)
    report = dict(
        wanted=wanted,
        kde=kde,
        bins=options["bins"],
        binning=options["binning"],
        seed=seed,
        confidence_level=options["confidence_level"],
        interval_method=options["interval_method"],
    )
    tested = [rank_metric] if n_resamples else []
    overall = streamed_report(out.overall, n_resamples=interval_resamples, tested=tested, **report)
    results = [
        _one_slice(
            passes, out.slicing.columns, values, rank_metric=rank_metric,
            min_slice_rows=min_slice_rows, interval_resamples=interval_resamples, report=report,
        )
        for passes, values in zip(out.slices, out.slicing.values, strict=True)
    ]  # fmt: skip
    notes = []
    if n_resamples:
        notes.append(
            f"Streamed: the overall calibration test is of {METRICS[rank_metric].label} only, "
            f"with the slices' {n_resamples} redrawn label sets."
        )
    change_of = None
    if out.slicing.kinds == ("datetime",) and getattr(stream, "engine", None) is not None:
        notes.append(
            f"{stream.name}: no test of a change between the first and last periods on an "
            "engine's source (Spark) yet: it reads those periods' rows on the driver."
        )
    elif out.slicing.kinds == ("datetime",):

        def change_of(results, notes):
            return _period_change(
                stream, slicer, out.slicing, results, options=options, metric=rank_metric,
                n_resamples=n_resamples, min_rows=min_slice_rows, notes=notes,
            )  # fmt: skip

    return sliced_report(
        overall, out.slicing, results, change_of, rank_metric=rank_metric,
        n_resamples=n_resamples, min_slice_rows=min_slice_rows, notes=notes,
        overall_test=overall.calibration_test,
    )  # fmt: skip


def _check(options, interval_resamples) -> None:
    """The checks :func:`calcore.evaluate` makes of a stream's options."""
    resolve_binning(options["binning"], options["bins"])
    N_BOOTSTRAP.check(interval_resamples, "interval_resamples")
    if interval_resamples:
        check_bootstrap_options(interval_resamples, options["confidence_level"])
    method = options["interval_method"]
    if method is not None:
        check_interval_method(method)
        if method == "bca" and interval_resamples:
            raise CalcoreError(
                "interval_method='bca' needs in-memory predictions (its jackknife leaves out "
                "groups of rows); streams give 'percentile', 'basic' or 'bc' intervals."
            )


def _one_slice(passes, columns, values, *, rank_metric, min_slice_rows, interval_resamples, report):
    stats = passes.statistics
    n, weight = int(stats.n_rows), float(stats.weight)
    if weight == 0:
        return SliceResult(columns, values, n, 0.0, None, note="no weight")
    observed, expected, view = signed_truth_from(stats)
    truth = dict(observed=observed, expected=expected, view=view)
    testable = n >= min_slice_rows and stats.normalized and passes.redrawn is not None
    # an untested slice gets point estimates only, as in memory
    own = replace(passes, redrawn=None, bootstrap=passes.bootstrap if testable else None)
    result = streamed_report(own, n_resamples=interval_resamples if testable else 0, **report)
    if not testable:
        why = (
            "unnormalised predictions"
            if not stats.normalized
            else "no test (n_resamples=0)"
            if passes.redrawn is None
            else f"{n} rows"
        )
        return SliceResult(columns, values, n, weight, result, note=why, **truth)
    observed = {rank_metric: result.metrics[rank_metric]}
    null = replicate_values(passes.redrawn, observed)
    test = p_values_from_null(observed, null, report["seed"])
    p = test.p_values[rank_metric]
    return SliceResult(columns, values, n, weight, result, p, test=test, **truth)


def _period_change(
    stream, slicer, slicing, results, *, options, metric, n_resamples, min_rows, notes
):
    """The in-memory permutation test on the first and last periods' rows (or their seeded
    samples, :func:`~calcore.evaluation.slice_results.period_sample`), read in one more pass when
    they fit in :data:`PERIOD_CHANGE_MAX_VALUES` probabilities."""
    ends = period_ends(slicing, results, [s.n for s in results], min_rows)
    if ends is None:
        return None
    first, last = ends
    # a sample holds up to twice its rows between two cuts
    n_held = sum(min(results[k].n, 2 * PERIOD_TEST_ROWS) for k in ends)
    if n_held * len(stream.class_names) > PERIOD_CHANGE_MAX_VALUES:
        notes.append(
            f"No test of a change over time: the first and last periods' rows tested hold "
            f"{n_held * len(stream.class_names):,} probabilities, more than a streamed test "
            f"holds in memory ({PERIOD_CHANGE_MAX_VALUES:,}). Compare them on a filtered file."
        )
        return None
    ids = np.argsort(slicing.place)  # ids[k]: the slicer's id of the k-th slice
    samples = {k: period_sample(options["seed"]) for k in ends}
    for batch in stream.batches():
        codes = slicer.codes(batch)
        for k, sample in samples.items():
            rows = np.flatnonzero(codes == ids[k])
            if rows.size:
                sample.add(batch.position + rows, batch.preds, {}, rows=rows)
    return period_change(
        [samples[first], samples[last]], slicing.labels[first], slicing.labels[last],
        results[first], results[last], options=options, metric=metric,
        n_resamples=n_resamples,
    )  # fmt: skip

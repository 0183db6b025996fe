"""Cached calls into calcore: fitting, transforming, evaluating and every diagnostic.

Nothing here computes a metric: each function calls one calcore function and caches its
result. Keys are strings derived from the file's content hash, the split, the method
and its parameters, and the evaluation settings -- never from object identity or file
names -- so every view reuses what another view (or another session on the same file)
already computed. Results live in ``st.cache_resource``: calcore's results are immutable,
so they are shared instead of pickled and copied on every rerun.

Arguments whose names start with ``_`` are not hashed by Streamlit; the ``key`` argument
next to them identifies them.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

import calcore
from calcore.evaluation.protocols import fit_warning_texts
from calcore.foundation.threads import worker_count
from calcore.foundation.validation import freeze_fields
from calcore.metrics.registry import adaptive_bins_for
from calcore.predictions import concat
from dashboard.calibration.memory import budgeted, holding_slot, resampling

__all__ = [
    "Fitted",
    "bin_free_report",
    "in_parallel",
    "calcore_binning",
    "classwise_diagrams",
    "confidence_bands",
    "confidence_diagram",
    "ece_sweep",
    "fit",
    "progress_of",
    "report_parts",
    "gain",
    "kde_curve",
    "learning",
    "report",
    "simplex_summary",
    "slice_predictions",
    "sliced",
    "step_line",
    "top_label_diagram",
    "validity",
]

# Cache sizes: a few files x methods x settings; each entry holds at most one copy of the
# test predictions (50,000 x 1,000 float64 = 400 MB), so keep the fitted entries few.
_FITS = 24
_SMALL = 256
#: Entries older than this are dropped (Streamlit's ttl counts from creation; the next use
#: recomputes), so a shared server gives back the memory of old files: a 50,000 x 1,000
#: upload held about 2 GB at its peak in the two-upload test.
CACHE_TTL_S = 2 * 3600


def calcore_binning(binning: str, bins: int) -> tuple[str, int | str]:
    """The dashboard's scheme name -> calcore's ``(binning, bins)``.

    The data-dependent choices are equal-mass bins whose number follows a rule of ``n``.
    """
    if binning in ("sturges", "cube-root"):
        return "equal-mass", binning
    return binning, int(bins)


#: The progress line of the step the script thread is in (see :func:`step_line`).
_STEP = threading.local()
#: Seconds between redraws of a step's progress line while its calls run.
STEP_REFRESH_S = 0.3


class _Step:
    """What a :func:`step_line` shows: each method's parts, how far calcore says each is
    (``evaluate(progress=...)``: resamples done of its passes' total), and which have
    finished. Updated from worker threads, read by the script thread (which alone draws)."""

    def __init__(self, line, what: str) -> None:
        self.line, self.what = line, what
        self._lock = threading.Lock()
        # label -> part -> [done, total (None until calcore says), finished]
        self._parts: dict[str, dict[str, list]] = {}
        self._shown = ""

    def expects(self, label: str) -> bool:
        with self._lock:
            return label in self._parts

    def expect(self, label: str, parts) -> None:
        with self._lock:
            state = self._parts.setdefault(label, {})
            for part in parts:
                state.setdefault(part, [0, None, False])

    def update(self, label: str, part: str, done: int, total: int) -> None:
        with self._lock:
            entry = self._parts.setdefault(label, {}).setdefault(part, [0, None, False])
            entry[0], entry[1] = max(entry[0], done), total

    def finished(self, label: str, part: str) -> None:
        with self._lock:
            self._parts.setdefault(label, {}).setdefault(part, [0, None, False])[2] = True

    @staticmethod
    def share(parts: dict) -> float | None:
        """The resamples done over the total of a method's parts; None before calcore has
        told any. A part not started counts as the smallest total told (at least one pass
        of resamples); one that finished without telling (an estimate alone, or a cached
        result) counts for nothing."""
        totals = [t for _, t, _ in parts.values() if t]
        if not totals:
            return None
        guess, done, total = min(totals), 0, 0
        for d, t, finished in parts.values():
            if t:
                done, total = done + (t if finished else min(d, t)), total + t
            elif not finished:
                total += guess
        return done / total

    def text(self) -> str:
        """ "⏳ Intervals, 200 resamples per method: ts done · tl-hb 40% · irm waiting…"."""
        with self._lock:
            state = {label: [list(e) for e in p.values()] for label, p in self._parts.items()}
        words = []
        for label, entries in state.items():
            share = self.share(dict(enumerate(entries)))
            if entries and all(finished for *_, finished in entries):
                words.append(f"{label} done")
            elif share is None:
                words.append(f"{label} waiting")
            else:  # not "100%" before every part is in
                words.append(f"{label} {min(int(share * 100), 99)}%")
        return f"⏳ {self.what}" + (": " + " · ".join(words) if words else "") + "…"

    def draw(self) -> None:
        text = self.text()
        if text != self._shown:
            self._shown = text
            self.line.caption(text)


@contextmanager
def step_line(what: str, *, into=None):
    """A caption naming the step while the block runs ("Intervals: 200 resamples…"), which
    :func:`in_parallel` extends with each method's progress as its parts run ("… ts done ·
    tl-hb 40% · irm waiting"): a long wait says what the server is doing instead of only
    Streamlit's running icon. ``into``: the placeholder to write it in (e.g. under the
    table it fills in), else a new one."""
    line = st.empty() if into is None else into
    step = _Step(line, what)
    line.caption(f"⏳ {what}…")
    _STEP.current = step
    try:
        yield step
    finally:
        _STEP.current = None
        line.empty()


def progress_of(label: str):
    """For the step the script thread is in (else None): ``progress(part, done, total)``
    of ``label``'s parts, to pass to :func:`report_parts`."""
    step = getattr(_STEP, "current", None)
    if step is None:
        return None
    step.expect(label, ())  # its parts are shown under this label
    return functools.partial(step.update, label)


def in_parallel(calls: dict, *, quiet: bool = False, meanwhile=None) -> dict:
    """``{name: fn()}`` for ``{name: fn}``, on up to one thread per core, in order.

    For the per-method cached calls into calcore: numpy releases the GIL in its sorts and
    ufuncs, so on 2 cores the three evaluations of a 25,000 x 1,000 file took 2.1 s
    instead of 3.0 s. Each worker carries the script's context, as Streamlit's guide on
    multithreading shows (``add_script_run_ctx``), so the cached functions behave as in
    the script thread. An exception is raised from the first call that failed, in order.
    ``meanwhile()`` runs in the script thread once the calls are submitted (drawing what
    is ready while the workers compute). Inside :func:`step_line` (unless ``quiet``: parts
    of one step), its caption is redrawn as the calls progress: a call named ``(label,
    part)`` is a part of that method when the method has a :func:`progress_of` (another
    tuple, such as ``(what, label)`` for a method's gain, is a quick side call and is not
    shown); any other name is a method of its own.
    """
    step = None if quiet else getattr(_STEP, "current", None)
    workers = min(len(calls), worker_count())
    if workers <= 1 and step is None and meanwhile is None:
        return {name: fn() for name, fn in calls.items()}
    ctx = get_script_run_ctx()

    def attach() -> None:
        if ctx is not None:
            add_script_run_ctx(ctx=ctx)

    with ThreadPoolExecutor(max(workers, 1), initializer=attach) as pool:
        futures = {name: pool.submit(fn) for name, fn in calls.items()}
        if step is not None:
            for name in futures:
                label, part = name if isinstance(name, tuple) else (name, "")
                if not isinstance(name, tuple) or step.expects(label):
                    step.expect(label, [part])
        if meanwhile is not None:
            meanwhile()
        if step is not None:
            pending = set(futures.values())
            named = {f: name for name, f in futures.items()}
            while pending:
                finished, pending = wait(pending, STEP_REFRESH_S, return_when=FIRST_COMPLETED)
                for f in finished:
                    name = named[f]
                    label, part = name if isinstance(name, tuple) else (name, "")
                    if f.exception() is None and (
                        not isinstance(name, tuple) or step.expects(label)
                    ):
                        step.finished(label, part)
                step.draw()
        return {name: future.result() for name, future in futures.items()}


@dataclass(frozen=True)
class Fitted:
    """A calibrator fitted on the calibration rows, and its output on the test rows."""

    calibrator: calcore.Calibrator
    output: calcore.Predictions
    seconds: float
    info: dict
    #: What the fit warned about (a bound hit, no convergence), shown on the verdict.
    warnings: tuple[str, ...] = ()

    def __post_init__(self):
        freeze_fields(self)  # cached for every session: ``info`` read-only


def fit(key: str, name: str, params: tuple, calib, test) -> Fitted:
    """``make_calibrator(name, **params).fit(calib)``, then ``transform(test)``; cached once
    per key for every session, its output counted in the server's byte budget."""
    return budgeted(_fit, key, name, params, calib, test)


@st.cache_resource(show_spinner=False, max_entries=_FITS, ttl=CACHE_TTL_S)
def _fit(key: str, name: str, params: tuple, _calib, _test) -> Fitted:
    calibrator = calcore.make_calibrator(name, **dict(params))
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always", calcore.CalcoreWarning)
        calibrator.fit(_calib)
    seconds = time.perf_counter() - start
    output = calibrator.transform(_test)
    return Fitted(calibrator, output, seconds, calibrator.fit_info, fit_warning_texts(raised))


_BINNED = tuple(k for k in calcore.METRICS if k not in calcore.BIN_FREE_METRICS)
KDE_CLASSWISE = "kde_ece_classwise"
#: The bin-free metrics but the class-wise KDE-ECE (its own part: see :func:`report_parts`).
_BIN_FREE = tuple(k for k in calcore.BIN_FREE_METRICS if k != KDE_CLASSWISE)
#: ACE and TACE: binned, on equal-mass cells of their own, and their calibration test is
#: not shown (the table's "calibrated?" rows are the conf-, TL- and CW-ECE's).
_ADAPTIVE = tuple(k for k in _BINNED if calcore.METRICS[k].cells in ("ace", "tace"))
#: The other binned metrics: the confidence, top-label and class-wise cells, tested.
_BINNED_TESTED = tuple(k for k in _BINNED if k not in _ADAPTIVE)
#: The parts of :func:`report`, each one cached ``calcore.evaluate`` of disjoint metrics,
#: the heaviest first (with 200 resamples on 10,000 x 100 rows: ACE/TACE 0.75 CPU-s
#: without their test, 1.1 with it; the other binned errors 0.55; the bin-free metrics
#: 0.4-0.6; the class-wise KDE-ECE's estimate 0.2). Four parts balance two cores better
#: than two: a bins change recomputes two parts a method.
PARTS = ("adaptive", "binned", "bin-free", "kde-cw")


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def bin_free_report(
    key: str, n_resamples: int, _preds, _progress=None
) -> calcore.CalibrationReport:
    """Accuracy, NLL, Brier, the KDE-ECE (and the binary measures that use no bins), with
    intervals and no calibration test: the page shows the test of the binned errors only
    (the KDE-ECEs' redrawn labels took 15-25% of the bin-free evaluation on 10,000 x 100
    rows with 200 resamples)."""
    with resampling(n_resamples):
        return calcore.evaluate(
            _preds, n_resamples=n_resamples, seed=0, metrics=_BIN_FREE,
            test_calibration=False, progress=_progress,
        )  # fmt: skip


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def kde_classwise_report(
    key: str, n_resamples: int, _preds, _progress=None
) -> calcore.CalibrationReport:
    """The class-wise KDE-ECE, with ``n_resamples`` resamples (0: its estimate only)."""
    with resampling(n_resamples):
        return calcore.evaluate(
            _preds, n_resamples=n_resamples, seed=0, metrics=(KDE_CLASSWISE,),
            test_calibration=False, progress=_progress,
        )  # fmt: skip


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def _binned_report(
    key: str, binning: str, bins, n_resamples: int, part: str, _preds, _progress=None
) -> calcore.CalibrationReport:
    """``part`` "binned": the confidence, top-label and class-wise errors with their
    calibration test; "adaptive": ACE and TACE, without one. ``binning`` and ``bins``
    are calcore's (:func:`binned_settings`)."""
    tested = part == "binned"
    with resampling(n_resamples):
        return calcore.evaluate(
            _preds, bins=bins, binning=binning, n_resamples=n_resamples, seed=0,
            metrics=_BINNED_TESTED if tested else _ADAPTIVE, test_calibration=tested,
            progress=_progress,
        )  # fmt: skip


def binned_settings(binning: str, bins) -> dict:
    """calcore's ``(binning, bins)`` of each binned part, by part name.

    ACE and TACE use equal-mass cells of their own, as many as
    :func:`calcore.metrics.registry.adaptive_bins_for` says: their part is evaluated (and
    cached) under the equal-width binning of that count, which gives the same ACE and
    TACE, so a change of binning that keeps the count (equal-width to equal-mass at 15
    bins) reuses it instead of recomputing 60% of a bins change (10,000 x 100 rows, 200
    resamples: ACE/TACE 0.69 of 1.16 CPU-s a method).
    """
    b, k = calcore_binning(binning, bins)
    return {"adaptive": ("equal-width", adaptive_bins_for(b, k)), "binned": (b, k)}


def report_parts(
    key: str, binning: str, bins, n_resamples: int, preds, progress=None, *,
    kde_classwise_intervals: bool = False,
) -> dict:  # fmt: skip
    """The cached calls whose reports :func:`combine` into :func:`report`'s, by part name
    (:data:`PARTS`). ``progress(part, done, total)``: calcore's progress of each part
    (:func:`progress_of`).

    The class-wise KDE-ECE gets its estimate only unless ``kde_classwise_intervals``: the
    table shows no interval for it (its ``interval_caveat``), and its replicates were
    three quarters of the bin-free metrics' time (10,000 x 100 rows: 1.8 of 2.4 CPU-s a
    method; CIFAR-10's 10,000 x 10: 0.7 of 0.9). A verdict ranked by it needs them.
    """

    def told(part):
        return None if progress is None else functools.partial(progress, part)

    cw_resamples = n_resamples if kde_classwise_intervals else 0
    return {
        **{
            part: functools.partial(_binned_report, key, b, k, n_resamples, part, preds, told(part))
            for part, (b, k) in binned_settings(binning, bins).items()
        },
        "bin-free": functools.partial(bin_free_report, key, n_resamples, preds, told("bin-free")),
        "kde-cw": functools.partial(kde_classwise_report, key, cw_resamples, preds, told("kde-cw")),
    }


def combine(parts: dict) -> calcore.CalibrationReport:
    """One report from :func:`report_parts`' reports (by part name): the binned part's
    settings, every part's metrics, intervals, replicates and notes (merged by
    ``combined_with`` as one evaluation words them).
    A class-wise KDE-ECE without resamples joins as its estimate alone (no interval, no
    replicates)."""
    binned, cw = parts["binned"], parts["kde-cw"]
    if cw.n_resamples != binned.n_resamples and not cw.intervals:
        cw = dataclasses.replace(cw, n_resamples=binned.n_resamples)
    out = binned.combined_with(parts["adaptive"])
    return out.combined_with(parts["bin-free"]).combined_with(cw)


def report(
    key: str, binning: str, bins, n_resamples: int, preds, *,
    kde_classwise_intervals: bool = False,
) -> calcore.CalibrationReport:  # fmt: skip
    """``calcore.evaluate`` of every metric, from three cached parts (:func:`report_parts`).

    The metrics that use no bins (NLL, Brier, the KDE-ECEs) are kept while the binning
    changes; all parts draw the same resamples (same seed), so the values and intervals
    equal one ``evaluate`` call's (tests/dashboard/calibration/test_app.py), but for the class-wise
    KDE-ECE's interval (unless ``kde_classwise_intervals``). The calibration test is the
    binned errors' only (the table's "calibrated?" rows; the KDE-ECEs' test is not shown,
    so not computed). The parts run side by side (each in a compute slot); the Metrics
    view runs every method's parts in one pool (:func:`views.metrics.comparison`).
    """
    parts = report_parts(
        key, binning, bins, n_resamples, preds, kde_classwise_intervals=kde_classwise_intervals
    )
    return combine(in_parallel(parts, quiet=True))


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def gain(key: str, injective: bool, _test, _out) -> calcore.CalibrationGain:
    return calcore.calibration_gain(_test, _out, injective_accuracy_preserving=injective)


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def confidence_diagram(key: str, binning: str, bins, _preds) -> calcore.ReliabilityDiagram:
    b, k = calcore_binning(binning, bins)
    return calcore.reliability_diagram(_preds, view="confidence", bins=k, binning=b)


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def positive_diagram(key: str, binning: str, bins, _preds) -> calcore.ReliabilityDiagram:
    b, k = calcore_binning(binning, bins)
    return calcore.positive_class_reliability_diagram(_preds, bins=k, binning=b)


#: Said under the views that calcore cannot weight yet, when the rows carry weights.
UNWEIGHTED_NOTE = (
    "The rows carry weights (a weight column), which this view does not use yet: it is "
    "computed on the rows unweighted. The metrics table and the reliability diagrams use them."
)


def unweighted(preds: calcore.Predictions) -> calcore.Predictions:
    """``preds`` without row weights, for the views that do not take them yet."""
    return preds if preds.sample_weight is None else preds.with_sample_weight(None)


def weights_note(*preds: calcore.Predictions) -> str | None:
    """:data:`UNWEIGHTED_NOTE` when any of ``preds`` carries row weights."""
    return UNWEIGHTED_NOTE if any(p.sample_weight is not None for p in preds) else None


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def confidence_bands(key: str, binning: str, bins, _preds) -> calcore.ConsistencyBands:
    b, k = calcore_binning(binning, bins)
    return calcore.consistency_bands(
        unweighted(_preds), view="confidence", bins=k, binning=b, seed=0
    )


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
def top_label_diagram(key: str, binning: str, bins, _preds) -> calcore.TopLabelReliabilityDiagram:
    b, k = calcore_binning(binning, bins)
    return calcore.top_label_reliability_diagram(_preds, bins=k, binning=b)


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def classwise_diagrams(key: str, binning: str, bins, classes: tuple[int, ...], _preds) -> tuple:
    b, k = calcore_binning(binning, bins)
    return tuple(
        calcore.classwise_reliability_diagrams(_preds, bins=k, binning=b, classes=list(classes))
    )


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def kde_curve(key: str, _preds) -> calcore.KDEReliabilityCurve:
    return calcore.kde_confidence_curve(unweighted(_preds))


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def ece_sweep(key: str, binning: str, _preds) -> calcore.EceByBins:
    b, _ = calcore_binning(binning, 15)
    if b == "points-per-bin":  # a sweep over bin counts needs a count-based scheme
        b = "equal-mass"
    # the figure draws conf-ECE; class-wise would cost 30x more on 100 classes
    return calcore.ece_by_bins(
        unweighted(_preds), bins=range(5, 26), binning=b, views=("confidence", "top-label")
    )


def _all_rows(key: str, calib, test) -> calcore.Predictions:
    """Every row (calibration then test rows), cached once per key within the byte budget."""
    return budgeted(_joined_rows, key, calib, test)


@st.cache_resource(show_spinner=False, max_entries=8, ttl=CACHE_TTL_S)
def _joined_rows(key: str, _calib, _test) -> calcore.Predictions:
    if _calib is _test:
        return _test
    # the views that use every row do not take weights yet, and a second file may be
    # weighted when the first is not: join the rows unweighted
    return concat([unweighted(_calib), unweighted(_test)])


#: Above this many rows the resampling views (validity, learning curves) work on a seeded
#: uniform sample: they refit every method tens of times, and on 2,000,000 rows that took
#: 27 s (validity) and 12 s (learning) before this cap; the page says so.
RESAMPLING_MAX_ROWS = 200_000


def sample_note(n_rows: int, *, limit: int = RESAMPLING_MAX_ROWS) -> str | None:
    """What the page says when a resampling view works on a sample of ``n_rows`` rows."""
    if n_rows <= limit:
        return None
    return (
        f"Computed on a seeded uniform sample of {limit:,} of the {n_rows:,} rows (seed 0): "
        "this view refits every method many times."
    )


def sampled_rows(preds: calcore.Predictions, *, limit: int = RESAMPLING_MAX_ROWS):
    """``preds`` itself, or a seeded uniform sample of ``limit`` of its rows (in order)."""
    if preds.n_samples <= limit:
        return preds
    rows = np.sort(np.random.default_rng(0).choice(preds.n_samples, limit, replace=False))
    return preds.subset(rows)


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def validity(
    key: str, name: str, params: tuple, view: str, n_resamples: int, group, _calib, _test
) -> calcore.ValidityCurve:
    """The histogram-binning paper's protocol on all rows: half calibration, half test;
    ``group`` (a class index or None) restricts the test rows to one predicted class."""
    data = unweighted(sampled_rows(_all_rows(key.split("|")[0], _calib, _test)))
    n_calib = data.n_samples // 2
    discrete = calcore.CALIBRATORS[name].discrete_output
    options = {"binning": "unique"} if discrete else {"binning": "equal-width", "bins": 15}
    return calcore.calibrator_validity(
        data,
        (name, dict(params)),
        n_calib=n_calib,
        n_test=data.n_samples - n_calib,
        n_resamples=n_resamples,
        view=view,
        group=group,
        seed=0,
        **options,
    )


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def learning(
    key: str, name: str, params: tuple, metric: str, sizes: tuple, n_repeats: int, binning, bins,
    _calib, _test,
) -> calcore.LearningCurve:  # fmt: skip
    """One method's learning curve; the same seed draws the same subsets for every method."""
    b, k = calcore_binning(binning, bins)
    return calcore.learning_curve(
        unweighted(sampled_rows(_calib)), unweighted(sampled_rows(_test)), [(name, dict(params))],
        sizes=list(sizes),
        metric=metric, n_repeats=n_repeats, bins=k, binning=b, seed=0,
    )  # fmt: skip


def learning_sizes(n_calib: int) -> tuple[int, ...]:
    """Six calibration-set sizes on a log scale, from 100 rows (a quarter of the rows when
    there are fewer than 400; never below 10) up to all calibration rows (of the sample,
    above :data:`RESAMPLING_MAX_ROWS`)."""
    n_calib = min(n_calib, RESAMPLING_MAX_ROWS)
    low = max(min(100, n_calib // 4), 10)
    sizes = np.unique(np.geomspace(low, n_calib, num=6).astype(int))
    return tuple(int(s) for s in sizes if s >= 10)


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def simplex_summary(key: str, name: str, params: tuple, _calib, _test):
    """A canonical calibrator fitted on calib, summarised bin by bin on test."""
    from calcore.calibrators.canonical import canonical_bin_summary

    calibrator = calcore.make_calibrator(name, **dict(params)).fit(_calib)
    return canonical_bin_summary(calibrator, _test)


#: What each slice's report holds in the Slices view: the errors it ranks by and the
#: scoring rules. The KDE-ECEs are left to the Metrics view: they took about 85% of a
#: sliced evaluation's time with intervals (credit sample, 10 age ranges: 3.9 s -> 0.5 s).
SLICE_METRICS = ("accuracy", "conf_ece", "top_label_ece", "classwise_ece", "nll", "brier")
#: Redrawn label sets of each slice's calibration test.
SLICE_TEST_RESAMPLES = 200


@st.cache_resource(show_spinner=False, max_entries=_SMALL, ttl=CACHE_TTL_S)
@holding_slot
def sliced(
    key: str, by: tuple[str, ...], rank_by: str, binning: str, bins, interval_resamples: int, _preds
) -> calcore.SlicedReport:
    """``calcore.evaluate_by`` of the test rows (one output) by ``by``."""
    b, k = calcore_binning(binning, bins)
    return calcore.evaluate_by(
        _preds, list(by), bins=k, binning=b, interval_resamples=interval_resamples, seed=0,
        n_resamples=SLICE_TEST_RESAMPLES, metrics=SLICE_METRICS, rank_by=rank_by,
    )  # fmt: skip


@st.cache_resource(show_spinner=False, max_entries=_FITS, ttl=CACHE_TTL_S)
@holding_slot
def per_slice_fit(
    key: str, name: str, params: tuple, by: tuple[str, ...], _calib, _test, _global
) -> calcore.PerSliceCalibration:
    """``calcore.fit_per_slice``: the method fitted on each slice's calibration rows."""
    return calcore.fit_per_slice(
        name, _calib, _test, list(by), params=dict(params), global_calibrator=_global
    )


@st.cache_resource(show_spinner=False, max_entries=8, ttl=CACHE_TTL_S)
def _slicing(key: str, by: tuple[str, ...], _preds) -> tuple[calcore.Slicing, tuple]:
    slicing = calcore.slicing_of(_preds.metadata, list(by))
    return slicing, tuple(slicing.row_groups())  # shared by every session: read-only


def slice_predictions(key: str, by: tuple[str, ...], values: tuple[str, ...], preds):
    """The rows of the slice with ``values`` (a ``SliceResult.values``), and its cache key.

    Every output of the page holds the same rows in the same order with the same metadata,
    so slicing the uncalibrated rows' key serves them all.
    """
    slicing, groups = _slicing(key.split("|")[0], by, preds)
    k = slicing.values.index(tuple(values))
    return preds.subset(groups[k]), f"{key}|slice={by!r}={k}"

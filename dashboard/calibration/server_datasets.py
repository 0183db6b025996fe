"""Opening a dataset of the server's data directory: streamed, never loaded whole.

A server dataset can be far larger than memory (the demo has 10 million rows), so the
page never materialises it: :func:`open_dataset` opens it with :func:`calcore.scan` and
reads, in one pass over the files, a seeded uniform sample of at most :func:`sample_rows`
rows per split (:meth:`calcore.PredictionStream.sample_splits`: bottom-k of per-row
uniforms keyed by row position, the same whatever the batching). The metadata columns
(for the Slices view) are read later, for the same rows (:func:`with_slice_columns`): in
the background once no session's script has run for a few seconds
(:func:`prefetch_slice_columns`), or when a page needs them first. The Metrics view,
where a review starts, does not wait for them (on the 100M-row demo the samples take
1.9 s without them, 2.6 s with them).

Every view works on the samples, as on a file loaded whole, and the page says so; the
Metrics view can also evaluate every test row, streamed (:func:`streamed_report`). Results
are cached by the dataset's fingerprint (relative paths, sizes and modification times of
its files), so a file replaced on the server is read again.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import Callable

import calcore
from dashboard.calibration.compute import CACHE_TTL_S, SLICE_METRICS, calcore_binning
from dashboard.calibration.data import Loaded
from dashboard.calibration.datadir import ServerDataset
from dashboard.calibration.shared import SharedCache
from dashboard.tuning import PREFETCH_QUIET_S

__all__ = [
    "ACTIVITY",
    "SAMPLE_ROWS_ENV",
    "STREAMED_METRICS",
    "STREAMED_SLICE_RESAMPLES",
    "Streamed",
    "open_dataset",
    "prefetch_slice_columns",
    "sample_rows",
    "slice_columns_read",
    "streamed_report",
    "streamed_sliced",
    "with_slice_columns",
]

#: Rows per split materialised for the views (override with the environment variable
#: ``CALCORE_SERVER_SAMPLE_ROWS``): a 500,000-row binary sample is 8 MB of scores and
#: keeps every view interactive; the resampling views sample further (200,000 rows).
DEFAULT_SAMPLE_ROWS = 500_000
SAMPLE_ROWS_ENV = "CALCORE_SERVER_SAMPLE_ROWS"
_SAMPLE_SEED = 0


def sample_rows(environ=None) -> int:
    """The sample size per split: ``CALCORE_SERVER_SAMPLE_ROWS`` or 500,000.

    Raises
    ------
    calcore.CalcoreError
        The variable is set to something that is not a positive integer.
    """
    text = (os.environ if environ is None else environ).get(SAMPLE_ROWS_ENV, "").strip()
    if not text:
        return DEFAULT_SAMPLE_ROWS
    if not text.isdigit() or int(text) < 1:
        raise calcore.CalcoreError(
            f"{SAMPLE_ROWS_ENV}={text[:40]!r} must be a positive whole number of rows."
        )
    return int(text)


@dataclass(frozen=True)
class Streamed:
    """The full data behind a server dataset's samples.

    Attributes
    ----------
    dataset : ServerDataset
    n_rows : dict of str to int
        Rows of each split, ``{"calib", "test"}`` with a split column, else ``{"all"}``
        (counted while sampling: exact, also for CSV).
    sample_rows : int
        The sample size per split asked for.
    plain : calcore.PredictionStream
        Every row of the dataset, without the slice columns.
    sliced : calcore.PredictionStream or None
        The same files with the metadata columns kept for slicing (None: there are
        none), scanned when the samples were drawn; the samples get these columns from
        :func:`with_slice_columns`.
    read_at : str
        When the samples were read (UTC, ``HH:MM:SS``): every session on the server shows
        the same time, the visible sign that they share one computation.
    read_seconds : float
        How long opening and sampling took.
    """

    dataset: ServerDataset
    n_rows: dict
    sample_rows: int
    plain: calcore.PredictionStream  # every row, without the slice columns
    sliced: calcore.PredictionStream | None
    read_at: str
    read_seconds: float

    @property
    def slice_columns(self) -> tuple[str, ...]:
        return () if self.sliced is None else self.sliced.slice_columns

    def evaluated(self, split: str | None) -> calcore.PredictionStream:
        """The rows of ``split`` (None: every row) for evaluation: the slice columns,
        which only the samples need, are not read."""
        return self.plain.with_split(split)

    def sampled(self, split: str) -> bool:
        """Whether the views see fewer rows of ``split`` than there are."""
        return self.n_rows[split] > self.sample_rows


def _detected(stream: calcore.PredictionStream, slice_columns, weight) -> list[str]:
    roles = stream.roles
    notes = [
        f"Label column {roles.label!r}; {len(roles.scores)} score column(s)"
        + (f" with prefix {roles.prefix!r}" if roles.prefix else "")
        + f"; classes {list(stream.class_names)[:10]}"
        + (" ..." if len(stream.class_names) > 10 else "")
        + ".",
        f"Split column: {roles.split!r}." if roles.split else "No split column.",
    ]
    if weight:
        notes.append(f"Row weights from column {weight!r}.")
    if slice_columns:
        notes.append(
            "Kept for slicing: "
            + ", ".join(map(repr, slice_columns))
            + " (read for the sampled rows when the Slices view first needs them)."
        )
    notes.append(
        "Columns are detected as calcore.scan detects them; rename a column in the files "
        "to change what is detected."
    )
    return notes


#: Opened datasets, their samples' slice columns and every-row reports, shared by all
#: sessions (computed once per key).
_OPENED = SharedCache(max_entries=4, ttl_s=CACHE_TTL_S)
_SLICE_COLUMNS = SharedCache(max_entries=4, ttl_s=CACHE_TTL_S)
_REPORTS = SharedCache(max_entries=64, ttl_s=CACHE_TTL_S)


def open_dataset(
    dataset: ServerDataset, n_sample: int, progress: Callable | None = None
) -> tuple[Loaded, Streamed]:
    """The dataset's samples as a :class:`Loaded` (what the page's views read), without
    their slice columns, and the streams behind them, cached by the dataset's fingerprint
    and ``n_sample``.

    Raises
    ------
    calcore.CalcoreError
        What :func:`calcore.scan` or a batch's validation says (file, column, row).
    """
    return _OPENED.get(
        (dataset.fingerprint, n_sample),
        lambda: _opened(dataset, n_sample, progress),
        what=f"the dataset {dataset.name!r}",
    )


def _opened(dataset: ServerDataset, n_sample: int, progress) -> tuple[Loaded, Streamed]:
    start = time.perf_counter()
    path = str(dataset.path)
    options = calcore.LoadOptions(decimal=dataset.decimal)
    first = calcore.scan(path, options=options)
    roles = first.roles
    taken = {roles.label, roles.split, first.weight_column, *roles.scores}
    metadata = [c for c in roles.ignored if c not in taken]
    notes, sliced = [], None
    if metadata:
        try:  # refused here rather than when the Slices view opens
            sliced = calcore.scan(path, options=replace(options, slice_columns=metadata))
        except calcore.CalcoreError as err:  # e.g. an NPZ array that is not one value per row
            metadata = []
            notes.append(f"No metadata kept for slicing: {err}")
    reading = first if progress is None else first.with_progress(progress)
    if roles.split:  # both splits' samples from one pass over the files
        sampled = reading.sample_splits(n_sample, seed=_SAMPLE_SEED)
    else:
        sampled = {"all": reading.sample(n_sample, seed=_SAMPLE_SEED)}
    samples = {name: sample for name, (sample, _) in sampled.items()}
    n_rows = {name: n for name, (_, n) in sampled.items()}
    read_at = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
    seconds = time.perf_counter() - start
    streamed = Streamed(dataset, n_rows, n_sample, first, sliced, read_at, seconds)
    notes = _detected(first, metadata, first.weight_column) + notes
    return Loaded(dataset.name, samples, tuple(notes), ()), streamed


def slice_columns_read(streamed: Streamed) -> bool:
    """Whether the samples' slice columns are in the server's cache (then attaching them
    costs nothing)."""
    return _SLICE_COLUMNS.peek(_slice_key(streamed)) is not None


def with_slice_columns(loaded: Loaded, streamed: Streamed) -> Loaded:
    """``loaded`` (the samples of :func:`open_dataset`) with their metadata: the slice
    columns of the sampled rows, read once for every session (about 1.4 s for the
    100M-row demo's three columns), from the split and slice columns alone where the
    files allow it (:meth:`calcore.PredictionStream.sample_slice_columns`).

    Raises
    ------
    calcore.CalcoreError
        The files changed since they were sampled, or a damaged chunk (file, row group).
    """
    stream = streamed.sliced
    if stream is None:
        return loaded

    def read() -> Loaded:  # cached whole: every rerun gets the same samples
        n, seed = streamed.sample_rows, _SAMPLE_SEED
        if "all" in streamed.n_rows:
            columns = {"all": stream.sample_slice_columns(n, seed=seed)}
        else:
            columns = stream.sample_slice_columns(n, seed=seed, splits=True)
        samples = {name: s.with_metadata(columns[name]) for name, s in loaded.splits.items()}
        return replace(loaded, splits=samples)

    what = f"the slice columns of {streamed.dataset.name!r}"
    return _SLICE_COLUMNS.get(_slice_key(streamed), read, what=what)


class _Activity:
    """Script runs in progress in every session of the server, and when the last ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._last_end = time.monotonic()

    @contextlib.contextmanager
    def run(self):
        """Count a script run (the page, or a fragment's rerun) while it lasts."""
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
                self._last_end = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last run ended, 0 while one is running."""
        with self._lock:
            return 0.0 if self._running else time.monotonic() - self._last_end


#: Every session's script runs (``dashboard/app.py`` and the view fragment count theirs).
ACTIVITY = _Activity()
_PREFETCHING: set = set()  # keys of the slice columns being read in the background
_PREFETCH_GUARD = threading.Lock()


def prefetch_slice_columns(loaded: Loaded, streamed: Streamed) -> bool:
    """Start reading the samples' slice columns in the background, unless they are read or
    being read; returns whether a read started.

    Called once the page is drawn; the read waits until no script has run for
    :data:`dashboard.tuning.PREFETCH_QUIET_S` (:data:`ACTIVITY`), so that it takes no CPU
    from the browser drawing the page or from the next rerun. The Slices view then finds
    the columns read (or waits only for the rest of the read) instead of reading them when
    it opens (about 1.4 s on the 100M-row demo, over the 2 s a view switch may take). The
    read is the one :func:`with_slice_columns` does, under the same key and lock, so it
    happens once per dataset whoever asks first. An error is not cached: the view reads
    again and reports it.
    """
    if streamed.sliced is None or slice_columns_read(streamed):
        return False
    key = _slice_key(streamed)
    with _PREFETCH_GUARD:
        if key in _PREFETCHING:
            return False
        _PREFETCHING.add(key)

    def read() -> None:
        with contextlib.suppress(AttributeError, OSError):  # Linux: this thread only
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            while ACTIVITY.quiet_for() < PREFETCH_QUIET_S:
                if slice_columns_read(streamed):
                    return  # a page read them meanwhile
                time.sleep(0.1)
            if _OPENED.peek((streamed.dataset.fingerprint, streamed.sample_rows)) is None:
                return  # the dataset left the cache meanwhile: nobody is looking at it
            with_slice_columns(loaded, streamed)
        except Exception:
            pass
        finally:
            with _PREFETCH_GUARD:
                _PREFETCHING.discard(key)

    # Started whatever calcore's worker policy allows (CALCORE_THREADS=1 too): it is the
    # read the Slices view would otherwise make the user wait for (wasted only if nobody
    # opens that view), once per dataset, after no script has run for PREFETCH_QUIET_S and
    # at the lowest priority, so it takes CPU that no page is using; within it calcore
    # keeps to the policy (with one worker it reads in line, on this thread alone).
    threading.Thread(target=read, name="calcore-slice-columns", daemon=True).start()
    return True


def _slice_key(streamed: Streamed) -> tuple:
    return streamed.dataset.fingerprint, streamed.sample_rows


#: The metrics evaluated on every test row: all of them (about 5 s per 8M binary rows on
#: 2 cores, ACE/TACE's equal-mass passes being most of it), point estimates only.
STREAMED_METRICS = tuple(calcore.METRICS)


def streamed_report(
    key: str, binning: str, bins, stream, calibrator=None, progress: Callable | None = None
) -> calcore.CalibrationReport:
    """``calcore.evaluate`` of every row of ``stream``, recalibrated by ``calibrator``;
    ``key`` names the dataset, the split and the method (with the binning: the cache key)."""
    b, k = calcore_binning(binning, bins)

    def evaluate():
        s = stream if calibrator is None else stream.with_transform(calibrator.transform)
        if progress is not None:
            s = s.with_progress(progress)
        return calcore.evaluate(s, bins=k, binning=b, n_resamples=0, metrics=STREAMED_METRICS)

    return _REPORTS.get((key, b, k), evaluate, what="this evaluation of every row")


#: Redrawn label sets of each slice's test on every test row: each costs a draw per row
#: (about 45 ms per 8M binary rows), and at this size nearly every miscalibrated slice
#: reaches the smallest p-value, 1 / (R + 1) = 0.01, anyway.
STREAMED_SLICE_RESAMPLES = 99


def streamed_sliced(
    key: str,
    by: tuple[str, ...],
    rank_by: str,
    binning: str,
    bins,
    stream,
    calibrator=None,
    progress: Callable | None = None,
) -> calcore.SlicedReport:
    """``calcore.evaluate_by`` of every row of ``stream`` (opened with its slice columns),
    recalibrated by ``calibrator`` (a ``calcore.PerSliceCalibrator`` gets each batch's
    slice columns); ``key`` names the dataset, the split and the method (the cache key, with the
    slicing and the binning). Point estimates; the slices' tests redraw
    :data:`STREAMED_SLICE_RESAMPLES` label sets."""
    b, k = calcore_binning(binning, bins)

    def evaluate():
        s = stream
        if calibrator is not None:
            per_slice = isinstance(calibrator, calcore.PerSliceCalibrator)
            s = s.with_transform(calibrator.transform, with_metadata=per_slice)
        if progress is not None:
            s = s.with_progress(progress)
        return calcore.evaluate_by(
            s, list(by), bins=k, binning=b, interval_resamples=0, seed=0, rank_by=rank_by,
            n_resamples=STREAMED_SLICE_RESAMPLES, metrics=SLICE_METRICS,
        )  # fmt: skip

    return _REPORTS.get(
        (key, "sliced", by, rank_by, b, k), evaluate, what="these slices of every row"
    )


class RowsProgress:
    """A progress callback for streamed passes: rows read, rows per second, passes.

    ``show(text, fraction)`` receives the words and, when ``total_rows`` is known, the
    fraction of the current pass read (else None), at most every ``every_s`` seconds:
    each call redraws a page element, and a browser redrawing 100 times during a
    4-second pass takes CPU from the pass (2 cores).
    """

    def __init__(
        self,
        show: Callable[[str, float | None], None],
        what: str,
        total_rows: int | None = None,
        *,
        every_s: float = 0.25,
    ) -> None:
        self.show, self.what, self.total, self.every_s = show, what, total_rows, every_s
        self.start = time.perf_counter()
        self.shown = -every_s
        self.rows = 0
        self.last_position = -1
        self.passes = 1

    def __call__(self, batch) -> None:
        if batch.position <= self.last_position:  # a new pass (or stream) starts again
            self.passes += 1
        self.last_position = batch.position
        self.rows += batch.preds.n_samples
        seconds = max(time.perf_counter() - self.start, 1e-9)
        if seconds - self.shown < self.every_s:
            return
        self.shown = seconds
        done = None
        if self.total:
            done = min((batch.position + batch.preds.n_samples) / self.total, 1.0)
        self.show(
            f"{self.what}: pass {self.passes}, {self.rows:,} rows read, "
            f"{self.rows / seconds:,.0f} rows/s",
            done,
        )

"""How many threads calcore works on, and the helpers that start them.

One policy: :func:`worker_count` is the number of threads calcore runs at once on
CPU-bound work (the CPUs this process may run on, or ``$CALCORE_THREADS``). Every place
in calcore and the dashboard that starts worker threads or counts CPUs asks it: the
helpers below, the CSV reader's pieces, the Parquet decoders, the dashboard's parallel
calls and its slots for heavy calls. The read-ahead of :mod:`calcore.io._prefetch` (a
second busy thread beside the caller's) starts only with more than one worker; with one,
the batches are read in line. The dashboard's background read of slice columns runs
whatever the count: it waits until no page is being computed and runs at the lowest
priority, to spare the Slices view that read (``dashboard.calibration.server_datasets``).

numpy releases the GIL inside its vectorised loops, so row ranges of a large
array can be processed by a few threads at once. Callers keep the results
independent of the split: per-row outputs are written to their rows, and any
reduction over rows is done afterwards on the full per-row arrays, so the
result is bit-identical whatever the number of threads.

BLAS is the exception: the iterative fits and the replicated dense products run it on
one thread (:func:`single_threaded_blas`, through ``threadpoolctl``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from calcore.foundation.limits import positive_setting
from calcore.foundation.tuning import MIN_THREADED_VALUES, ROW_RANGE_THREADS

__all__ = [
    "THREADS_ENV",
    "worker_count",
    "in_threads",
    "side_by_side",
    "concurrently",
    "single_threaded_blas",
]

THREADS_ENV = "CALCORE_THREADS"


def worker_count() -> int:
    """The number of threads calcore may keep busy at once.

    ``$CALCORE_THREADS`` when set (e.g. 1 on a server shared with other processes), else
    the CPUs this process may run on: ``os.sched_getaffinity(0)`` where it exists (a
    container or ``taskset`` limits it below the machine's count), else
    ``os.cpu_count()``.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    CalcoreError
        ``$CALCORE_THREADS`` is set but not a positive whole number.

    Examples
    --------
    >>> worker_count() >= 1
    True
    """
    value = positive_setting(
        THREADS_ENV,
        unit="threads",
        fix="Set it to e.g. 2, or unset it to use every CPU this process may run on.",
    )
    if value is not None:
        return value
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return max(os.cpu_count() or 1, 1)


def in_threads(run, n: int, size: int) -> list:
    """``[run(begin, end), ...]`` over consecutive row ranges covering ``0 .. n - 1``.

    Large inputs (``size`` elements) are split between up to
    :data:`~calcore.foundation.tuning.ROW_RANGE_THREADS` threads (and at most
    :func:`worker_count`); small ones run in one call.
    """
    workers = min(ROW_RANGE_THREADS, worker_count()) if size >= MIN_THREADED_VALUES else 1
    if workers < 2 or n < 2:
        return [run(0, n)]
    bounds = np.linspace(0, n, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, bounds[:-1], bounds[1:]))


def side_by_side(tasks, size: int) -> list:
    """``[task() for task in tasks]``, the tasks on threads of their own when they read
    ``size`` elements or more (they must be independent: each result is the same either
    way). An exception in a task is raised here.

    Examples
    --------
    >>> side_by_side([lambda: 1, lambda: 2], 10)
    [1, 2]
    """
    if size < MIN_THREADED_VALUES:
        return [task() for task in tasks]
    return concurrently(tasks)


def concurrently(tasks) -> list:
    """``[task() for task in tasks]``: the first task in this thread, the others on threads
    of their own, when :func:`worker_count` is 2 or more; in order here otherwise. The
    tasks must be independent (each result is the same either way). An exception in the
    first task is raised here, once the others have finished; one in another task, when
    its result is read.

    Examples
    --------
    >>> concurrently([lambda: 1, lambda: 2])
    [1, 2]
    """
    if len(tasks) < 2 or worker_count() < 2:
        return [task() for task in tasks]
    with ThreadPoolExecutor(len(tasks) - 1) as pool:
        later = [pool.submit(task) for task in tasks[1:]]
        first = tasks[0]()
        return [first] + [f.result() for f in later]


# -- one BLAS thread ---------------------------------------------------------------------
# Why: the iterative fits (L-BFGS-B over the L^2 + L parameters of matrix scaling and
# Dirichlet calibration) and the replicated dense products of the statistics engine make
# many short BLAS calls; with the BLAS's default thread pool every call wakes the pool,
# and when another process holds the other cores the wake-ups dominate (5,000 x 100
# Dirichlet fit on the loaded 2-core machine: 62 s with the default threads, 4.4 s on
# one). On an idle machine one thread loses little, and it makes fitted values
# independent of the thread count.
#
# threadpoolctl sets the limit on every loaded BLAS (OpenBLAS, MKL, BLIS, FlexiBLAS: each
# copy that numpy and scipy ship), and never loads one. The setting is global to the
# process: while a fit runs, BLAS calls of other Python threads also run on one thread
# (only their speed changes). Nested and concurrent uses are counted here, so the limits
# found by the first entry are restored when the last one leaves (threadpoolctl alone
# would restore each entry's own snapshot, and two overlapping fits could leave the
# process on one thread).
_blas_lock = threading.Lock()
_blas_depth = 0
_blas_limiter = None  # threadpoolctl's limiter of the outermost entry


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: every loaded BLAS runs on one thread inside, as before outside.

    Entering when no other use is active scans the loaded libraries (a few ms); callers
    adding many small blocks enter it once around them.

    Examples
    --------
    >>> with single_threaded_blas():
    ...     pass
    """
    global _blas_depth, _blas_limiter
    with _blas_lock:
        if _blas_depth == 0:
            from threadpoolctl import threadpool_limits  # loaded when first needed

            _blas_limiter = threadpool_limits(limits=1, user_api="blas")
        _blas_depth += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_depth -= 1
            if _blas_depth == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None

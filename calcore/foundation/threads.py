"""Split a row-wise numpy computation between threads.

numpy releases the GIL inside its vectorised loops, so row ranges of a large
array can be processed by a few threads at once. Callers keep the results
independent of the split: per-row outputs are written to their rows, and any
reduction over rows is done afterwards on the full per-row arrays, so the
result is bit-identical whatever the number of threads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["in_threads", "side_by_side"]

# Elements from which splitting the work between threads pays for starting them.
_MIN_THREADED = 4_000_000


def in_threads(run, n: int, size: int) -> list:
    """``[run(begin, end), ...]`` over consecutive row ranges covering ``0 .. n - 1``.

    Large inputs (``size`` elements) are split between up to 4 threads (numpy
    releases the GIL in the vectorised passes); small ones run in one call.
    """
    workers = min(4, os.cpu_count() or 1) if size >= _MIN_THREADED else 1
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
    if size < _MIN_THREADED or len(tasks) < 2 or (os.cpu_count() or 1) < 2:
        return [task() for task in tasks]
    with ThreadPoolExecutor(len(tasks) - 1) as pool:
        later = [pool.submit(task) for task in tasks[1:]]
        first = tasks[0]()
        return [first] + [f.result() for f in later]

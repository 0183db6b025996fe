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

__all__ = ["in_threads"]


def in_threads(run, n: int, size: int) -> list:
    """``[run(begin, end), ...]`` over consecutive row ranges covering ``0 .. n - 1``.

    Large inputs (``size`` elements) are split between up to 4 threads (numpy
    releases the GIL in the vectorised passes); small ones run in one call.
    """
    workers = min(4, os.cpu_count() or 1) if size >= 4_000_000 else 1
    if workers < 2 or n < 2:
        return [run(0, n)]
    bounds = np.linspace(0, n, workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, bounds[:-1], bounds[1:]))

"""Every constant of calcore chosen by measuring speed or memory, in one place.

Each constant trades one cost against another (a block's temporaries against the calls
per block, a thread's start against the work it takes over, one method against another
from some size on) and says the measurement that chose it (machine, what was run, the
figures) and where it is used. None of them changes a result: a block size or a switch
between two methods gives the same values (to rounding, where the comment says so), only
faster or in less memory. Change one by measuring again (``benchmarks/``; the machine of
the figures below is the 2-core development machine, often loaded by other jobs: "loaded"
figures are CPU seconds).

What is not here: limits that are not tuning (validation bounds, what a URL may ask:
:mod:`calcore._limits`), constants that change results (sample sizes of tests, numbers of
resamples, statistical thresholds: beside their functions), and the Parquet read-ahead
of :mod:`calcore.io._row_groups`.

This module imports nothing from calcore (every layer may read it).
"""

from __future__ import annotations

# -- threads (calcore._threads) -----------------------------------------------------------

#: Elements of an input from which :func:`calcore._threads.in_threads` and
#: :func:`~calcore._threads.side_by_side` split the work between threads: below it,
#: starting them costs more than they save.
MIN_THREADED_VALUES = 4_000_000
#: Threads at most of :func:`calcore._threads.in_threads` (row ranges of one array): more
#: split the memory bandwidth, which the vectorised passes are bound by, without gain.
ROW_RANGE_THREADS = 4

"""The limits of calcore's count options, each defined once with the check that enforces it.

A check names the argument as the caller wrote it (``evaluate(n_bootstrap=1)`` says
``n_bootstrap``, not the name of an inner helper's parameter), and the dashboard and
the CLI read the same bounds from here instead of restating them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from calcore.foundation.errors import CalcoreError

__all__ = [
    "CountLimit",
    "BINS",
    "N_BOOTSTRAP",
    "N_RESAMPLES",
    "SLICE_RESAMPLES",
    "BOOTSTRAP_RESAMPLES",
    "N_REPEATS",
    "ROWS",
    "CLASSES",
    "N_REPEATS_FOR_SPREAD",
    "MAX_TOTAL_WEIGHT",
    "CSV_FIRST_LINES_BYTES",
    "MIN_CALIBRATION_ROWS_PER_BIN",
]


@dataclass(frozen=True)
class CountLimit:
    """An integer option's allowed range ``[minimum, maximum]`` (``maximum`` None: unbounded).

    ``zero_means`` describes an allowed 0 below ``minimum`` (e.g. "no intervals").
    """

    minimum: int
    maximum: int | None = None
    zero_means: str | None = None

    def describe(self) -> str:
        rule = "a positive integer" if self.minimum == 1 else f"an integer >= {self.minimum}"
        if self.maximum is not None:
            rule = f"an integer from {self.minimum} to {self.maximum:,}"
        return rule if self.zero_means is None else f"0 ({self.zero_means}) or {rule}"

    def check(self, value, name: str) -> int:
        """``value`` as an int, or a :class:`CalcoreError` naming ``name`` and the rule."""
        ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        if ok:
            value = int(value)
            inside = value >= self.minimum and (self.maximum is None or value <= self.maximum)
            ok = inside or (value == 0 and self.zero_means is not None)
        if not ok:
            raise CalcoreError(f"{name} must be {self.describe()}; got {value!r}.")
        return value


#: Bins of a binned metric or diagram (a count, or points per bin).
BINS = CountLimit(1, 100_000)
#: Bootstrap replicates of ``evaluate`` and the CLI (0: point estimates only).
N_BOOTSTRAP = CountLimit(2, 100_000, zero_means="no intervals")
#: Resamples of a resampling protocol (consistency bands, validity curves).
N_RESAMPLES = CountLimit(1)
#: Redrawn label sets of each slice's test in ``evaluate_by`` (0: no tests).
SLICE_RESAMPLES = CountLimit(1, zero_means="no tests, slices ranked by their share")
#: Resamples of a bootstrap interval (at least two, for a spread).
BOOTSTRAP_RESAMPLES = CountLimit(2)
#: Repetitions of a learning-curve size.
N_REPEATS = CountLimit(1)
#: Rows of a sample, a batch or a simulation.
ROWS = CountLimit(1)
#: Classes of a simulated problem.
CLASSES = CountLimit(2)
#: Repetitions from which a spread is estimated.
N_REPEATS_FOR_SPREAD = CountLimit(2)

#: Bytes within which a CSV file's header line must end, and its first data line (counted
#: from its own start): 4 MiB holds the names of 200,000 columns, or a row of 150,000
#: scores. A longer first line (a NUL-filled or sparse file, a file that is not text) is
#: refused after reading this much, instead of the file being read whole to find a line end.
CSV_FIRST_LINES_BYTES = 4 << 20

# Row weights -------------------------------------------------------------------------

#: The largest total weight of the rows evaluated together: 2**53, the last integer from
#: which float64 sums of integer (frequency) weights are still exact. Equal-mass ranks
#: ``floor(k m / B)`` and bin counts are exact below it; above it (hashed or monetary
#: "weights" near 1e15-1e16) they round, and equal-mass metrics move by 0.01 or more.
MAX_TOTAL_WEIGHT = float(2**53)


#: Calibration rows per bin below which a binning calibrator's bins are too noisy to ship:
#: a bin's estimate of P(y | bin) from 50 rows has a standard error up to 0.07 (Gupta &
#: Ramdas 2021, Thm. 3: HB's guarantee needs ``n / B`` large; with 50 rows a bin its
#: epsilon at 90% is about 0.17). The verdict warns below it and the recommended set of
#: calibrators offers a binning method only above it, so the two never disagree.
MIN_CALIBRATION_ROWS_PER_BIN = 50

"""The limits of calcore's count options and of the files it reads, each defined once with
the check that enforces it.

A check names the argument as the caller wrote it (``evaluate(n_resamples=1)`` says
``n_resamples``, not the name of an inner helper's parameter), and the dashboard and
the CLI read the same bounds from here instead of restating them.

The decoded-size budget: files whose decoded values would not fit are refused before
reading. The budget is ``max_decoded_bytes`` when a loader is given one, else the
environment variable ``CALCORE_MAX_DECODED_BYTES`` (a whole number of bytes), else
:data:`DEFAULT_MAX_DECODED_BYTES`. What is counted, per format, before any value is
decoded:

* CSV: data lines x columns x 8 bytes (every column is parsed; a cell decodes to
  at least one 8-byte value). Lines are counted in the raw bytes.
* Parquet: the metadata's uncompressed size, and rows x columns read x 8 bytes.
* NPZ: the zip members' declared sizes, and each array's elements (from its
  ``.npy`` header) x max(item size, 8) bytes, since scores become float64.
"""

from __future__ import annotations

import numbers
import os
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
    "MAX_ITERATIONS",
    "MIN_CALIBRATION_ROWS_PER_BIN",
    "DEFAULT_MAX_DECODED_BYTES",
    "BUDGET_ENV",
    "positive_setting",
    "resolve_budget",
    "over_budget",
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

#: Most iterations an optimiser may be given (``max_iter`` of every calibrator): na-fir's default,
#: 5x the others'. These fits are convex and converge in tens to hundreds of iterations
#: (measured on 50,000 x 100: vs 12 iterations, 0.6 s; na-fir 483, 10 s; dirichlet 150-220
#: on 5,000 x 100), so a larger limit never changes a fit; it only let a link
#: (``m=na-fir:max_iter=1000000000``) hold the server. An iteration costs a pass over the
#: n x L scores (na-fir: ~20 ms on 50,000 x 100), so a fit that never converges stops
#: within 5,000 of them: no link can ask for more than the slowest default already allows.
MAX_ITERATIONS = 5_000

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


# The decoded-size budget of files ---------------------------------------------------

DEFAULT_MAX_DECODED_BYTES = 512 << 20
"""512 MiB: 67 million float64 cells, e.g. 50,000 rows x 1,000 classes (382 MiB) with
room to spare. The loader's peak memory is about the file itself plus 2 to 3 times the
decoded size (measured: a 429 MiB CSV of 50,000 x 1,000, 381 MiB decoded, peaks at
1.4 GiB resident, of which 0.15 GiB is the interpreter), so a few users loading at once
stay within a shared server's memory. Raise it per call or with ``CALCORE_MAX_DECODED_BYTES``."""

BUDGET_ENV = "CALCORE_MAX_DECODED_BYTES"


def positive_setting(name: str, *, unit: str, fix: str) -> int | None:
    """A positive whole number from the environment variable ``name``; None when unset.

    Parameters
    ----------
    name : str
        The variable (``CALCORE_MAX_DECODED_BYTES``, ``CALCORE_THREADS``).
    unit, fix : str
        What the number counts, and how to set it right, for the message.

    Raises
    ------
    CalcoreError
        The variable is set but not a positive whole number.

    Examples
    --------
    >>> positive_setting("CALCORE_EXAMPLE_UNSET", unit="rows", fix="Unset it.") is None
    True
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise CalcoreError(
            f"The environment variable {name}={text!r} is not a positive whole number "
            f"of {unit}. {fix}"
        )
    return value


def resolve_budget(max_decoded_bytes: int | None) -> int:
    """The budget in bytes: the argument, else ``$CALCORE_MAX_DECODED_BYTES``, else the default.

    Raises
    ------
    CalcoreError
        A budget (argument or environment variable) that is not a positive whole number.
    """
    if max_decoded_bytes is None:
        value = positive_setting(
            BUDGET_ENV,
            unit="bytes",
            fix=f"Set it to e.g. 2000000000, or unset it for the default "
            f"({DEFAULT_MAX_DECODED_BYTES:,}).",
        )
        return DEFAULT_MAX_DECODED_BYTES if value is None else value
    if (
        isinstance(max_decoded_bytes, bool)
        or not isinstance(max_decoded_bytes, int)
        or max_decoded_bytes <= 0
    ):
        raise CalcoreError(
            f"max_decoded_bytes must be a positive integer, got {max_decoded_bytes!r}."
        )
    return max_decoded_bytes


def over_budget(source: str, what: str, size: int, budget: int) -> CalcoreError:
    """The error for a file whose decoded ``size`` (described by ``what``) exceeds ``budget``."""
    return CalcoreError(
        f"{source}: {what} come to {size:,} bytes once decoded, more than the budget "
        f"max_decoded_bytes={budget:,}; refusing to read it. Load fewer rows or columns, or, if "
        f"the file is trusted and the machine has the memory, raise the budget "
        f"(max_decoded_bytes=... or the environment variable {BUDGET_ENV})."
    )

"""The decoded-size budget: files whose decoded values would not fit are refused before reading.

The budget is ``max_decoded_bytes`` when a loader is given one, else the
environment variable ``CALCORE_MAX_DECODED_BYTES`` (a whole number of bytes),
else :data:`DEFAULT_MAX_DECODED_BYTES`. What is counted, per format, before any
value is decoded:

* CSV: data lines x columns x 8 bytes (every column is parsed; a cell decodes to
  at least one 8-byte value). Lines are counted in the raw bytes.
* Parquet: the metadata's uncompressed size, and rows x columns read x 8 bytes.
* NPZ: the zip members' declared sizes, and each array's elements (from its
  ``.npy`` header) x max(item size, 8) bytes, since scores become float64.
"""

from __future__ import annotations

import os

from calcore.foundation.errors import CalcoreError

__all__ = ["DEFAULT_MAX_DECODED_BYTES", "BUDGET_ENV", "resolve_budget", "over_budget"]

DEFAULT_MAX_DECODED_BYTES = 512 << 20
"""512 MiB: 67 million float64 cells, e.g. 50,000 rows x 1,000 classes (382 MiB) with
room to spare. The loader's peak memory is about the file itself plus 2 to 3 times the
decoded size (measured: a 429 MiB CSV of 50,000 x 1,000, 381 MiB decoded, peaks at
1.4 GiB resident, of which 0.15 GiB is the interpreter), so a few users loading at once
stay within a shared server's memory. Raise it per call or with ``CALCORE_MAX_DECODED_BYTES``."""

BUDGET_ENV = "CALCORE_MAX_DECODED_BYTES"


def resolve_budget(max_decoded_bytes: int | None) -> int:
    """The budget in bytes: the argument, else ``$CALCORE_MAX_DECODED_BYTES``, else the default.

    Raises
    ------
    CalcoreError
        A budget (argument or environment variable) that is not a positive whole number.
    """
    if max_decoded_bytes is None:
        text = os.environ.get(BUDGET_ENV, "").strip()
        if not text:
            return DEFAULT_MAX_DECODED_BYTES
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value <= 0:
            raise CalcoreError(
                f"The environment variable {BUDGET_ENV}={text!r} is not a positive whole number "
                f"of bytes. Set it to e.g. 2000000000, or unset it for the default "
                f"({DEFAULT_MAX_DECODED_BYTES:,})."
            )
        return value
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

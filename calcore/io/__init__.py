"""Loading predictions from CSV, Parquet and NPZ files.

``load_predictions`` returns a validated :class:`~calcore.Predictions` whose
``load_report`` (:class:`LoadReport`) says what was detected and done;
``load_splits`` returns the calibration and test rows separately;
``inspect_table`` shows what detection finds (:class:`TableSchema`) without
validating every value, so a user can confirm or correct it first.
``decimal_comma_to_point`` converts, on request, a CSV whose numbers are written with a
decimal comma (which loading reports, naming the column and first cell).
"""

from calcore.foundation.limits import DEFAULT_MAX_DECODED_BYTES
from calcore.io._api import load_predictions, load_splits
from calcore.io._decimal import decimal_comma_to_point
from calcore.io._inspect import inspect_table
from calcore.io._load_report import LoadReport, TableSchema

__all__ = [
    "DEFAULT_MAX_DECODED_BYTES",
    "LoadReport",
    "TableSchema",
    "decimal_comma_to_point",
    "inspect_table",
    "load_predictions",
    "load_splits",
]

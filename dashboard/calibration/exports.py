"""Download payloads: CSV tables, recalibrated predictions and fitted calibrators.

Every text cell goes through :func:`calcore.io.export.safe_cell`, so a class or file name
such as ``=HYPERLINK(...)`` opens in a spreadsheet as text, not as a formula.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re

from calcore.io.export import predictions_csv_text, safe_cell

__all__ = ["calibrator_json", "predictions_csv", "safe_filename", "table_csv"]


def safe_filename(text: str) -> str:
    """A file name from untrusted text: letters, digits, dot, dash and underscore only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:80] or "data"


def _cell(value):
    if isinstance(value, str):
        return safe_cell(value)
    if isinstance(value, float) and math.isnan(value):
        return ""
    return value


def table_csv(rows: list[dict]) -> str:
    """Rows with the same keys as CSV text (header from the first row)."""
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=[safe_cell(k) for k in rows[0]])
        writer.writeheader()
        for row in rows:
            writer.writerow({safe_cell(k): _cell(v) for k, v in row.items()})
    return buffer.getvalue()


def predictions_csv(preds) -> str:
    """calcore's formula-safe CSV of predictions (labels as class indices)."""
    return predictions_csv_text(preds)


def calibrator_json(calibrator) -> str:
    """A fitted calibrator as strict JSON, loadable with ``calcore apply``."""
    return json.dumps(calibrator.to_dict(), indent=2, allow_nan=False)

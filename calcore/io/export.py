"""Writing predictions and calibrators to files people open elsewhere.

CSV cells are neutralised against formula injection: a text cell that a
spreadsheet could run as a formula (starting with ``=``, ``+``, ``-``, ``@``,
a tab, a carriage return or a line feed, their full-width forms ``＝ ＋ － ＠``,
or any of these after leading spaces) is prefixed with a single quote, as OWASP
recommends. Numbers are written with ``repr`` (shortest exact round trip).
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import IO

from calcore.foundation.errors import CalcoreError
from calcore.io._output import open_output
from calcore.predictions import Predictions

__all__ = [
    "safe_cell",
    "predictions_to_csv",
    "predictions_csv_text",
    "write_predictions_csv",
    "write_json",
]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_LEADING_SPACE = " \u00a0\u3000"


def safe_cell(text: str) -> str:
    """``text`` made inert for spreadsheets: a leading formula character gets a ``'`` prefix.

    Examples
    --------
    >>> safe_cell("=HYPERLINK(\\"http://x\\")")
    '\\'=HYPERLINK("http://x")'
    >>> safe_cell("cat")
    'cat'
    """
    text = str(text)
    risky = text.startswith(_FORMULA_START) or text.lstrip(_LEADING_SPACE).startswith(
        _FORMULA_START
    )
    return "'" + text if risky else text


def predictions_to_csv(
    preds: Predictions, out: IO[str], *, prefix: str = "p_", header: bool = True
) -> None:
    """Write ``label,<prefix><class>...`` rows: the label's class index, then the probabilities
    (and a last ``weight`` column when the predictions carry row weights).

    Labels are written as integer class indices, which no spreadsheet runs as a
    formula and which read back exactly; class names appear only in the header,
    behind ``prefix``. A prefix that could start a formula is refused, and
    header cells still go through :func:`safe_cell`. The file reads back with
    :func:`calcore.load_predictions` to the same probabilities, labels and
    class names (and weights). ``header=False`` writes the rows only (the next batch of a
    stream).
    """
    if not prefix or prefix.startswith(_FORMULA_START):
        raise CalcoreError(f"prefix must be non-empty and not start a formula; got {prefix!r}.")
    writer = csv.writer(out, lineterminator="\n")
    weights = preds.sample_weight
    if header:
        names = [safe_cell(prefix + name) for name in preds.class_names]
        writer.writerow(["label", *names] + (["weight"] if weights is not None else []))
    step = max(1, 1_000_000 // max(preds.n_classes, 1))
    for start in range(0, preds.n_samples, step):
        probs = preds.probs[start : start + step].tolist()
        labels = preds.labels[start : start + step].tolist()
        if weights is None:
            rows = ([label, *map(repr, row)] for label, row in zip(labels, probs, strict=True))
        else:
            w = weights[start : start + step].tolist()
            rows = (
                [label, *map(repr, row), repr(wi)]
                for label, row, wi in zip(labels, probs, w, strict=True)
            )
        writer.writerows(rows)


def write_predictions_csv(
    preds: Predictions, path: str | os.PathLike, *, prefix: str = "p_"
) -> None:
    """:func:`predictions_to_csv` into a file (UTF-8, ``\\n`` line ends), written as
    :func:`calcore.io._output.open_output` writes a path the user named (a regular file
    replaced whole, a link, device or FIFO written through)."""
    with open_output(path, text=True) as fh:
        predictions_to_csv(preds, fh, prefix=prefix)


def write_json(data, path: str | os.PathLike) -> None:
    """Strict JSON (no NaN/Infinity), UTF-8, indented; written as
    :func:`write_predictions_csv` writes its file."""
    text = json.dumps(data, indent=2, allow_nan=False)
    with open_output(path, text=True) as fh:
        fh.write(text + "\n")


def predictions_csv_text(preds: Predictions, *, prefix: str = "p_") -> str:
    """The CSV of :func:`predictions_to_csv` as a string (for downloads)."""
    buffer = io.StringIO()
    predictions_to_csv(preds, buffer, prefix=prefix)
    return buffer.getvalue()

"""A file read whole: columns detected, values read, then validated by :mod:`calcore.io._rows`.

:func:`prepare_table` is what :func:`calcore.load_predictions` and
:func:`calcore.load_splits` read; :func:`calcore.io._rows.build_predictions` validates
the rows they select.
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import DEFAULT_MAX_DECODED_BYTES, over_budget, resolve_budget
from calcore.foundation.validation import InputContext
from calcore.io._csv_stream import open_source_bounded
from calcore.io._detect import detect_columns, metadata_columns, read_table
from calcore.io._labels import split_of_rows
from calcore.io._rows import decide_kind, file_classes
from calcore.io._table import LabelRowNames, RawTable
from calcore.io.options import LoadOptions

__all__ = ["DEFAULT_MAX_DECODED_BYTES", "prepare_table"]


def _check_decoded_size(sc, budget: int) -> None:
    """Refuse a CSV/Parquet file whose cells would exceed the budget, before reading them."""
    if sc.source.file_format == "npz":
        return  # read_npz checked the array headers before loading anything
    if sc.source.file_format == "csv":
        n_columns = len(sc.columns)  # pandas parses every column
    else:
        used = {*sc.roles.scores, sc.roles.label, sc.roles.split, sc.weight, *metadata_columns(sc)}
        n_columns = len(used - {None})  # metadata columns are read too
    size = sc.n_rows * n_columns * 8
    if size > budget:
        what = f"{sc.n_rows:,} rows x {n_columns:,} columns x 8 bytes"
        raise over_budget(sc.source.name, what, size, budget)


def _open_table(path_or_buffer, options: LoadOptions, *, name, max_decoded_bytes: int):
    src = open_source_bounded(path_or_buffer, name=name)
    sc = detect_columns(src, options, max_decoded_bytes=max_decoded_bytes)
    if sc.roles.problems:
        raise CalcoreError.from_advice(sc.roles.problems[0])
    _check_decoded_size(sc, max_decoded_bytes)
    return read_table(sc)


def _split_values(table: RawTable) -> np.ndarray | None:
    if table.split is None:
        return None
    ctx = InputContext(table.source, row=LabelRowNames(table.row_names, table.roles.split))
    return split_of_rows(table.split, ctx=ctx)


def prepare_table(path_or_buffer, options: LoadOptions, *, name, max_decoded_bytes):
    """``(table, split values, classes, scores kind, reason)`` of a file read whole."""
    budget = resolve_budget(max_decoded_bytes)
    table = _open_table(path_or_buffer, options, name=name, max_decoded_bytes=budget)
    split_values = _split_values(table)
    classes = file_classes(table, options.positive_class)
    kind, reason = decide_kind(table, options.scores, percent=options.percent)
    return table, split_values, classes, kind, reason

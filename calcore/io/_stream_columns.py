"""The columns of a stream's files: detected in the first file, checked in every other.

:func:`calcore.scan` detects the roles of the columns (label, split, weight, scores) from
the first file's schema (Parquet, Arrow IPC), header and first rows (CSV) or arrays
(NPZ), as :func:`calcore.load_predictions` detects them, and checks that every other
file has the used columns with the same types (:class:`FilesLayout`), or every column in
the same order when they are all kept (:func:`columns_to_keep`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from calcore.foundation.errors import CalcoreError
from calcore.io._columns import Roles, pick_weight
from calcore.io._decimal import with_decimal, with_decimal_commas
from calcore.io._npz_stream import NpzArchive
from calcore.io._readers import arrow_rows, arrow_schema, csv_head_of, is_numeric_type

__all__ = [
    "FilesLayout",
    "arrow_columns",
    "csv_columns",
    "columns_to_keep",
    "npz_files_roles",
    "same_columns",
    "short_path",
]


def short_path(files, path: str) -> str:
    """A file's name in messages: its base name, or its path below the files' common folder."""
    if len(files) == 1:
        return os.path.basename(path)
    return os.path.relpath(path, os.path.commonpath(files))


def columns_to_keep(files, family: str, display: str) -> tuple[str, ...]:
    """The columns of the files, in the first file's order, for ``keep_columns``: every
    file must have the same (Parquet and IPC: with the same types), or the batches would
    not fit one output table."""
    if family == "npz":
        raise CalcoreError(
            f"{display}: an NPZ archive has no columns to keep; convert it to Parquet, Arrow "
            "IPC or CSV (e.g. with pandas) to keep columns beside the scores."
        )
    if family == "csv":
        first = csv_head_of(files[0], short_path(files, files[0])).layout.columns
        for path in files[1:]:
            got = csv_head_of(path, short_path(files, path)).layout.columns
            same_columns(files[0], tuple(first), path, tuple(got))
        return tuple(first)
    first = arrow_schema(files[0])
    for path in files[1:]:
        got = arrow_schema(path)
        same_columns(files[0], tuple(first.names), path, tuple(got.names))
        for a, b in zip(first, got, strict=True):
            if a.type != b.type:
                raise CalcoreError(
                    f"{path}: column {a.name!r} has type {b.type}, but {a.type} in {files[0]}. "
                    "Write every file with the same column types."
                )
    if len(set(first.names)) < len(first.names):
        twice = sorted({c for c in first.names if first.names.count(c) > 1})
        raise CalcoreError(f"{files[0]}: column {twice[0]!r} appears twice; rename one.")
    return tuple(first.names)


def same_columns(first_path: str, first: tuple, path: str, got: tuple) -> None:
    """Refuse a file whose columns are not the first file's, in its order, naming the
    first column that differs (not two lists of maybe thousands of names)."""
    if got == first:
        return
    missing = [c for c in first if c not in got]
    extra = [c for c in got if c not in first]
    if missing:
        why = f"has no column {missing[0]!r}"
    elif extra:
        why = f"has a column {extra[0]!r} that {first_path} has not"
    elif len(got) != len(first):  # the same names, one of them repeated
        why = f"has {len(got)} columns where {first_path} has {len(first)}"
    else:
        at = next(i for i, (a, b) in enumerate(zip(first, got, strict=True)) if a != b)
        why = f"has column {got[at]!r} where {first_path} has {first[at]!r} (column {at + 1})"
    raise CalcoreError(
        f"{path}: {why}. To keep every column, every file must have {first_path}'s columns "
        "in the same order."
    )


@dataclass(frozen=True)
class FilesLayout:
    """What :func:`scan` needs of a family of files to detect the roles of their columns."""

    columns: tuple[str, ...]
    is_numeric: Callable[[str], tuple[bool, str]]
    #: Checks that a file has the used columns (same types); returns its rows.
    rows_of: Callable[[str, list], int]
    #: Checks the types of the score and weight columns (Arrow files only).
    check_types: Callable = lambda roles, weight: None
    #: The roles with what the first rows' text says about them (CSV files only: numbers
    #: written with a decimal comma, as the whole-file loader reports them).
    text_problems: Callable = lambda roles: roles


def arrow_columns(files):
    """Columns and a numeric test from the first file's schema, and a check of each file
    (same types for the used columns) returning its rows."""
    first = arrow_schema(files[0])
    types = {f.name: f.type for f in first}

    def is_numeric(col: str) -> tuple[bool, str]:
        ok = is_numeric_type(types[col])
        return ok, "" if ok else f"not numeric (type {types[col]})"

    def check_file(path: str, used) -> int:
        schema = arrow_schema(path) if path != files[0] else first
        for col in used:
            if col not in schema.names:
                raise CalcoreError(
                    f"{path}: column {col!r} is missing (it is in {files[0]}). Every file must "
                    f"have the same columns."
                )
            got = schema.field(col).type
            if got != types[col]:
                raise CalcoreError(
                    f"{path}: column {col!r} has type {got}, but {types[col]} in {files[0]}. "
                    f"Write every file with the same column types."
                )
        return arrow_rows(path)

    def check_numeric(roles: Roles, weight: str | None) -> None:
        from calcore.io._parquet import non_numeric_scores

        name = short_path(files, files[0])
        if weight is not None and not is_numeric_type(types[weight]):
            raise CalcoreError(
                f"{name}, column {weight!r}: has type {types[weight]}, but weights must be "
                "numbers. Store them as floats or integers."
            )
        for col in roles.scores:
            if not is_numeric_type(types[col]):
                raise non_numeric_scores(name, col, types[col])

    return FilesLayout(tuple(first.names), is_numeric, check_file, check_numeric)


def csv_columns(files, decimal: str = "."):
    """Columns and a numeric test from the first file's header and first rows, and a check
    of each file's header returning its estimated rows (CSV files have no row count)."""
    from calcore.io._detect import numeric_in_preview

    first = csv_head_of(files[0], short_path(files, files[0]))
    layout = with_decimal(first.layout, decimal, short_path(files, files[0]))

    def check_file(path: str, used) -> int:
        head = first if path == files[0] else csv_head_of(path, short_path(files, path))
        missing = [c for c in used if c not in head.layout.columns]
        if missing:
            raise CalcoreError(
                f"{path}: column {missing[0]!r} is missing (it is in {files[0]}). Every file "
                f"must have the same columns."
            )
        return head.estimated_rows()

    def text_problems(roles: Roles) -> Roles:
        if decimal == ",":
            return roles  # asked for: read as numbers
        name = short_path(files, files[0])  # the file whose first rows were read
        return with_decimal_commas(roles, layout.columns, layout.preview, name, layout.delimiter)

    is_numeric = numeric_in_preview(layout.columns, layout.preview, True, decimal)
    return FilesLayout(layout.columns, is_numeric, check_file, text_problems=text_problems)


def npz_files_roles(files, display: str, label_column, weight_column, named=()):
    """Roles, weight array, rows and score columns of NPZ archives (every archive must
    have the first one's arrays, class names and score width, and the slice arrays
    ``named``, one value per row)."""
    from calcore.io._detect import npz_roles

    archives = [NpzArchive(p, short_path(files, p), label_column=label_column) for p in files]
    first = archives[0]
    weight = pick_weight(tuple(first.files), weight_column, display)
    if weight is not None:
        if weight in first.row_arrays(None) or weight == "class_names":
            raise CalcoreError(f"{display}: array {weight!r} cannot be the weights.")
    width = first.head.scores.shape[1]
    for a in archives:
        if weight is not None:
            if weight not in a.files:
                raise CalcoreError(f"{a.path}: no weight array {weight!r} (it is in {files[0]}).")
            a.check_weight(weight)
        for name in named:
            if name in first.row_arrays(weight) or name == "class_names":
                raise CalcoreError(
                    f"{a.path}: array {name!r} holds the scores, labels, split, weights or class "
                    "names; it cannot be a slice column."
                )
            a.check_slice_array(name)
        same = (
            a.head.score_name == first.head.score_name
            and a.head.scores.shape[1] == width
            and a.head.class_names == first.head.class_names
        )
        if not same:
            raise CalcoreError(
                f"{a.path}: its scores ({a.head.score_name!r}, {a.head.scores.shape[1]} "
                f"columns, class names {a.head.class_names}) differ from {files[0]}'s "
                f"({first.head.score_name!r}, {width} columns, {first.head.class_names}). "
                f"Save every archive with the same arrays."
            )
    roles = npz_roles(first.head, weight=weight)
    return roles, weight, sum(a.n_rows for a in archives), width

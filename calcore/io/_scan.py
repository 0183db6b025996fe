"""First pass over a file: columns, roles and preview, without reading every value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from calcore.io._columns import Roles, detect_roles
from calcore.io._csv import read_csv_columns, record_lines, scan_csv
from calcore.io._npz import peek_npz, read_npz
from calcore.io._parquet import read_parquet_columns, scan_parquet
from calcore.io._source import Source
from calcore.io._table import RawTable, RowNames

__all__ = ["Scan", "scan", "read_table", "npz_roles", "numeric_in_preview"]


@dataclass(frozen=True, eq=False)
class Scan:
    """A file's layout and column roles (see :class:`calcore.io.TableSchema`)."""

    source: Source
    delimiter: str | None
    columns: tuple[str, ...]
    n_rows: int
    preview: tuple[tuple[str, ...], ...]
    roles: Roles
    layout: Any  # CsvLayout, ParquetLayout or NpzContent


def numeric_in_preview(columns, preview, csv: bool):
    position = {c: j for j, c in enumerate(columns)}

    def is_numeric(col: str) -> tuple[bool, str]:
        j = position[col]
        values = [(i, row[j]) for i, row in enumerate(preview) if j < len(row) and row[j].strip()]
        for _, v in values:
            try:
                float(v)
                return True, ""
            except ValueError:
                pass
        if not values:
            return False, f"empty in the first {len(preview)} rows"
        i, v = values[0]
        where = f"line {i + 2}" if csv else f"row {i}"
        return False, f"not numeric ({where} holds {v!r})"

    return is_numeric


def _parquet_numeric(layout, preview_check):
    position = {c: j for j, c in enumerate(layout.columns)}

    def is_numeric(col: str) -> tuple[bool, str]:
        j = position[col]
        if layout.numeric[j]:
            return True, ""
        # A text column holding numbers is a mistyped score column: keep it
        # so that reading reports the type, instead of ignoring a class.
        ok, _ = preview_check(col)
        return ok, f"not numeric (type {layout.types[j]})"

    return is_numeric


def npz_roles(content, *, weight: str | None = None) -> Roles:
    """The roles of an archive's arrays (``weight``: the array of row weights, if any)."""
    k = content.scores.shape[1]
    names = content.class_names or (tuple(str(j) for j in range(k)) if k > 1 else ("1",))
    ignored = tuple(a for a in content.ignored if a != weight)
    return Roles(
        content.label_name,
        (content.label_name,),
        "split" if content.split is not None else None,
        (content.score_name,),
        None,
        names,
        ignored,
        ("not a probs/logits/labels/class_names/split array",) * len(ignored),
        (),
    )


def _npz_scan(src: Source, options: dict, *, peek: bool) -> Scan:
    read = peek_npz if peek else read_npz
    content = read(
        src, max_decoded_bytes=options["max_decoded_bytes"], label_column=options["label_column"]
    )
    n = content.n_rows
    roles = npz_roles(content)
    preview = tuple(
        (str(content.labels[i]), *(repr(float(v)) for v in content.scores[i]))
        for i in range(min(n, 5))
    )
    return Scan(src, None, content.names, n, preview, roles, content)


def scan(
    src: Source,
    *,
    label_column,
    split_column,
    score_columns,
    scores,
    max_decoded_bytes,
    peek: bool = False,
) -> Scan:
    """Detect layout and column roles; read values only for NPZ (whole arrays, or with
    ``peek`` the headers and first rows, for inspecting)."""
    options = dict(
        label_column=label_column,
        split_column=split_column,
        score_columns=score_columns,
        scores_kind=scores,
    )
    if src.file_format == "npz":
        options = dict(max_decoded_bytes=max_decoded_bytes, label_column=label_column)
        return _npz_scan(src, options, peek=peek)
    if src.file_format == "parquet":
        layout = scan_parquet(src, max_decoded_bytes=max_decoded_bytes)
        is_numeric = _parquet_numeric(
            layout, numeric_in_preview(layout.columns, layout.preview, False)
        )
        delimiter = None
    else:
        layout = scan_csv(src)
        is_numeric = numeric_in_preview(layout.columns, layout.preview, True)
        delimiter = layout.delimiter
    roles = detect_roles(layout.columns, source=src.name, is_numeric=is_numeric, **options)
    return Scan(src, delimiter, layout.columns, layout.n_rows, layout.preview, roles, layout)


def read_table(sc: Scan) -> RawTable:
    """Read the label, split and score values of a scanned file (no validation yet)."""
    src, roles = sc.source, sc.roles
    if src.file_format == "npz":
        c = sc.layout
        hint = (c.score_name, f"the archive's array is named {c.score_name!r}")
        return RawTable(
            src.name,
            "npz",
            None,
            sc.columns,
            roles,
            sc.n_rows,
            c.scores,
            c.labels,
            c.split,
            RowNames(csv=False),
            hint,
        )
    texts = [roles.label] + ([roles.split] if roles.split else [])
    lines = None
    if src.file_format == "parquet":
        scores, text = read_parquet_columns(src, sc.layout, floats=roles.scores, texts=texts)
    else:
        scores, text = read_csv_columns(src, sc.layout, floats=roles.scores, texts=texts)
        lines = record_lines(src, sc.layout, scores.shape[0])
    split = np.asarray(text[roles.split]) if roles.split else None
    return RawTable(
        src.name,
        src.file_format,
        sc.delimiter,
        sc.columns,
        roles,
        scores.shape[0],
        scores,
        np.asarray(text[roles.label]),
        split,
        RowNames(csv=src.file_format == "csv", lines=lines),
    )

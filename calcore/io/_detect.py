"""Detection, the first pass over a file read whole: columns, roles and preview, without
reading every value (:func:`detect_columns`), then the values of the used columns
(:func:`read_table`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.io._columns import Roles, detect_roles, pick_weight, weight_candidates
from calcore.io._csv import read_csv_columns, record_lines, scan_csv
from calcore.io._decimal import with_decimal, with_decimal_commas
from calcore.io._metadata import metadata_from_arrow, metadata_from_text
from calcore.io._npz import peek_npz, read_npz
from calcore.io._parquet import read_parquet_columns, scan_parquet
from calcore.io._source import Source
from calcore.io._table import RawTable, RowNames
from calcore.io.options import LoadOptions
from calcore.predictions.metadata import MetadataColumn, metadata_column

__all__ = [
    "Detected",
    "detect_columns",
    "read_table",
    "npz_roles",
    "numeric_in_preview",
    "metadata_columns",
]


@dataclass(frozen=True, eq=False)
class Detected:
    """A file's layout and column roles (see :class:`calcore.io.TableSchema`)."""

    source: Source
    delimiter: str | None
    columns: tuple[str, ...]
    n_rows: int
    preview: tuple[tuple[str, ...], ...]
    roles: Roles
    layout: Any  # CsvLayout, ParquetLayout or NpzContent
    weight: str | None = None  # the weight column (NPZ: array), if any
    slice_columns: tuple[str, ...] = ()  # NPZ: arrays named for slicing (checked when read)


def numeric_in_preview(columns, preview, csv: bool, decimal: str = "."):
    position = {c: j for j, c in enumerate(columns)}

    def is_numeric(col: str) -> tuple[bool, str]:
        j = position[col]
        values = [(i, row[j]) for i, row in enumerate(preview) if j < len(row) and row[j].strip()]
        for _, v in values:
            try:
                float(v.replace(",", ".") if decimal == "," else v)
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


def _npz_detected(
    src: Source, options: LoadOptions, *, max_decoded_bytes: int, peek: bool
) -> Detected:
    read = peek_npz if peek else read_npz
    content = read(src, max_decoded_bytes=max_decoded_bytes, label_column=options.label_column)
    n = content.n_rows
    weight = pick_weight(content.names, options.weight_column, src.name)
    if weight is not None and weight not in content.ignored:
        raise CalcoreError(
            f"{src.name}: array {weight!r} holds scores, labels, class names or the split; "
            f"it cannot be the weights."
        )
    roles = npz_roles(content, weight=weight)
    preview = tuple(
        (str(content.labels[i]), *(repr(float(v)) for v in content.scores[i]))
        for i in range(min(n, 5))
    )
    return Detected(src, None, content.names, n, preview, roles, content, weight)


def detect_columns(
    src: Source, options: LoadOptions, *, max_decoded_bytes: int, peek: bool = False
) -> Detected:
    """Detect a file's layout and the roles of its columns (label, split, weight, scores,
    slice columns); read values only for NPZ (whole arrays, or with ``peek`` the headers
    and first rows, for inspecting). ``options.slice_columns`` are kept as metadata
    whatever their values (never taken for scores)."""
    slice_columns, decimal = options.slice_columns, options.decimal
    named = dict(label_column=options.label_column, split_column=options.split_column)
    if src.file_format == "npz":
        sc = _npz_detected(src, options, max_decoded_bytes=max_decoded_bytes, peek=peek)
        named = slice_columns
        for name in named:
            if name not in sc.layout.ignored or name == sc.weight:
                raise CalcoreError(
                    f"{src.name}: slice column {name!r} is not an extra array of the archive "
                    f"(arrays: {list(sc.columns)}; the scores, labels, class names, split and "
                    "weights cannot be sliced by)."
                )
        return replace(sc, slice_columns=named)
    if src.file_format == "parquet":
        layout = scan_parquet(src, max_decoded_bytes=max_decoded_bytes)
        is_numeric = _parquet_numeric(
            layout, numeric_in_preview(layout.columns, layout.preview, False)
        )
        delimiter = None
    else:
        layout = with_decimal(scan_csv(src), decimal, src.name)
        is_numeric = numeric_in_preview(layout.columns, layout.preview, True, layout.decimal)
        delimiter = layout.delimiter
    found = []  # several weight columns: a problem the user fixes with a choice
    weight = pick_weight(layout.columns, options.weight_column, src.name, problems=found)
    unsure = weight_candidates(layout.columns) if found else ()
    sliced = checked_slice_columns(slice_columns, layout.columns, weight, src.name, **named)
    columns = tuple(c for c in layout.columns if c != weight and c not in sliced + unsure)
    roles = detect_roles(
        columns,
        source=src.name,
        is_numeric=is_numeric,
        score_columns=options.score_columns,
        scores_kind=options.scores,
        **named,
    )
    if found:
        roles = replace(
            roles,
            ignored=roles.ignored + unsure,
            ignored_reasons=roles.ignored_reasons + ("a possible weight column",) * len(unsure),
            problems=(*found, *roles.problems),
        )
    if delimiter not in (None, ",") and decimal == ".":
        roles = with_decimal_commas(roles, layout.columns, layout.preview, src.name, delimiter)
    if sliced:
        roles = replace(
            roles,
            ignored=roles.ignored + sliced,
            ignored_reasons=roles.ignored_reasons + ("a slice column",) * len(sliced),
        )
    return Detected(
        src, delimiter, layout.columns, layout.n_rows, layout.preview, roles, layout, weight
    )


def checked_slice_columns(
    names, columns, weight, source: str, *, label_column, split_column
) -> tuple[str, ...]:
    """The columns named for slicing, checked: present, and not the label, split or weight
    column (``label_column``, ``split_column``: as the caller named them, if it did)."""
    if not names:
        return ()
    names = (names,) if isinstance(names, str) else tuple(names)
    for name in names:
        if name not in columns:
            raise CalcoreError(
                f"{source}: slice column {name!r} is not a column (columns: {list(columns)})."
            )
        roles = {label_column: "label", split_column: "split", weight: "weight"}
        if name in roles:
            raise CalcoreError(
                f"{source}: column {name!r} is the {roles[name]} column; it cannot also be a "
                "slice column."
            )
    return tuple(dict.fromkeys(names))


def read_table(sc: Detected) -> RawTable:
    """Read the label, split and score values of a scanned file (no validation yet)."""
    src, roles = sc.source, sc.roles
    if src.file_format == "npz":
        c = sc.layout
        hint = (c.score_name, f"the archive's array is named {c.score_name!r}")
        weights = None if sc.weight is None else _npz_weights(src, sc.weight, sc.n_rows)
        extras = [a for a in c.ignored if a != sc.weight]
        metadata = _npz_metadata(src, extras, sc.n_rows, named=sc.slice_columns)
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
            weights,
            sc.weight,
            metadata,
        )
    texts = [roles.label] + ([roles.split] if roles.split else [])
    floats = [*roles.scores] + ([sc.weight] if sc.weight is not None else [])
    extras = metadata_columns(sc)
    lines = None
    if src.file_format == "parquet":
        _check_weight_type(src, sc.layout, sc.weight)
        readable = [c for c in extras if not _nested(sc.layout, c)]
        scores, text, raw = read_parquet_columns(
            src, sc.layout, floats=floats, texts=texts, extras=readable
        )
        metadata = {
            c: metadata_from_arrow(c, raw[c]) if c in raw else MetadataColumn(c, "other", None)
            for c in extras
        }
    else:
        scores, text = read_csv_columns(src, sc.layout, floats=floats, texts=texts + extras)
        lines = record_lines(src, sc.layout, scores.shape[0])
        metadata = {c: metadata_from_text(c, text.pop(c)) for c in extras}
    weights = None
    if sc.weight is not None:
        weights, scores = scores[:, -1].copy(), np.ascontiguousarray(scores[:, :-1])
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
        RowNames(
            csv=src.file_format == "csv",
            lines=lines,
            chunks=sc.layout.row_groups if src.file_format == "parquet" else (),
        ),
        None,
        weights,
        sc.weight,
        metadata,
    )


def metadata_columns(sc: Detected) -> list[str]:
    """The columns kept as metadata: every column that is not label, split, weight or score."""
    taken = {sc.roles.label, sc.roles.split}
    return [c for c in sc.roles.ignored if c not in taken]


#: Arrow types read as metadata of kind "other" without reading them (a list column can
#: hold far more than a value per row, and nothing in it can be sliced).
_NESTED_TYPES = ("list", "large_list", "fixed_size_list", "struct", "map")


def _nested(layout, column: str) -> bool:
    return layout.types[layout.columns.index(column)].startswith(_NESTED_TYPES)


def _check_weight_type(src: Source, layout, weight: str | None) -> None:
    if weight is None:
        return
    j = layout.columns.index(weight)
    if not layout.numeric[j]:
        raise CalcoreError(
            f"{src.name}, column {weight!r}: has type {layout.types[j]}, but weights must be "
            "numbers. Store them as floats or integers."
        )


def _npz_metadata(
    src: Source, names: list[str], n_rows: int, *, named: tuple[str, ...] = ()
) -> dict[str, MetadataColumn]:
    """The archive's other arrays of one value per row (numbers, booleans, text, datetimes),
    kept as metadata; arrays of any other shape stay ignored (and reported so), unless
    ``named`` for slicing: then they are an error."""
    import io

    out = {}
    with np.load(io.BytesIO(src.data), allow_pickle=False) as npz:
        for name in names:
            arr = npz[name]
            if arr.shape == (n_rows,) and arr.dtype.kind in "biufUM":
                out[name] = metadata_column(name, arr)
            elif name in named:
                raise CalcoreError(
                    f"{src.name}: slice column {name!r} has shape {arr.shape} and dtype "
                    f"{arr.dtype}; a slice column needs one number, boolean, string or datetime "
                    f"per row, shape ({n_rows},)."
                )
    return out


def _npz_weights(src: Source, key: str, n_rows: int) -> np.ndarray:
    """The archive's weight array (checked to be one number per row; values later)."""
    import io

    with np.load(io.BytesIO(src.data), allow_pickle=False) as npz:
        w = npz[key]
    if w.shape != (n_rows,) or not (
        np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)
    ):
        raise CalcoreError(
            f"{src.name}: array {key!r} has shape {w.shape} and dtype {w.dtype}; row weights "
            f"need shape ({n_rows},) and a numeric dtype."
        )
    return w

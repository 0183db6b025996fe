"""The file readers of a stream: one data file read batch by batch, as :class:`ReadSpec` says.

Parquet and Arrow IPC files are read one row group or record batch at a time with
pyarrow (row groups decoded ahead, :mod:`calcore.io._row_groups`), only the columns
asked for; CSV files in pieces of whole lines by the loader's own CSV reader
(:mod:`calcore.io._csv_stream`), so messages name file lines; NPZ archives a window of
rows at a time (:mod:`calcore.io._npz_stream`). A reader yields raw, unvalidated rows
(:class:`~calcore.io._table.RawTable`); :mod:`calcore.io._rows` validates them.
A reader knows one file and what to read of it, nothing of the stream's options.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import InputContext
from calcore.io._columns import Roles
from calcore.io._decimal import with_decimal
from calcore.io._files import CSV_EXTENSIONS, DATA_EXTENSIONS, IPC_EXTENSIONS
from calcore.io._labels import SPLITS, split_codes
from calcore.io._npz_stream import NpzArchive
from calcore.io._row_groups import row_group_chunks
from calcore.io._table import LabelRowNames, RawTable, RowNames, columns_to_matrix
from calcore.predictions.slicing_batches import used_dictionary_entries

__all__ = [
    "CSV_EXTENSIONS",
    "DATA_EXTENSIONS",
    "IPC_EXTENSIONS",
    "ReadSpec",
    "SliceBatch",
    "arrow_batches",
    "arrow_raw_table",
    "arrow_rows",
    "arrow_schema",
    "arrow_slice_batches",
    "csv_head_of",
    "encoded_labels",
    "file_format",
    "gone",
    "is_ipc",
    "is_numeric_type",
    "read_batches",
    "used_columns",
]


@dataclass(frozen=True)
class ReadSpec:
    """What to read of one data file: which file, which columns, how many rows at a time.

    Attributes
    ----------
    path : str
        The file.
    name : str
        Its name in messages (its path below the stream's common folder).
    family : {"arrow", "csv", "npz"}
        How to read it: Parquet and Arrow IPC (``"arrow"``), CSV or NPZ.
    roles : Roles
        The label, split and score columns (read into the raw table).
    batch_rows : int
        Rows per batch at most.
    weight : str or None
        The weight column (NPZ: array), read as float64.
    slice_columns : tuple of str
        Columns (NPZ: arrays) read as they are, for slicing.
    kept_columns : tuple of str
        Every column of the file, read into a table beside the rows (empty: none).
    decimal : {".", ","}
        A CSV file's decimal mark.
    label_column : str or None
        The label array asked for (NPZ archives only).
    """

    path: str
    name: str
    family: str
    roles: Roles
    batch_rows: int
    weight: str | None = None
    slice_columns: tuple[str, ...] = ()
    kept_columns: tuple[str, ...] = ()
    decimal: str = "."
    label_column: str | None = None


def read_batches(spec: ReadSpec) -> Iterator[tuple]:
    """``(raw table, weights or None, slice values, kept table or None)`` per batch of
    the file, in file order, not yet validated.

    Raises
    ------
    CalcoreError
        A file that vanished or cannot be read, naming it (and the row group).
    """
    read = {"arrow": _arrow_tables, "csv": _csv_tables, "npz": _npz_tables}
    return read[spec.family](spec)


def used_columns(roles: Roles, weight: str | None) -> list[str]:
    """The columns read: label, scores, split and weight."""
    used = [roles.label, *roles.scores] + ([roles.split] if roles.split else [])
    return used + ([weight] if weight is not None else [])


def is_ipc(path: str) -> bool:
    """Whether a data file is Arrow IPC (by its extension)."""
    return path.lower().endswith(IPC_EXTENSIONS)


def file_format(path: str) -> str:
    """``"parquet"``, ``"arrow"`` (IPC), ``"csv"`` or ``"npz"``: how :func:`calcore.scan`
    reads a data file (by its extension, else by its first bytes, as
    :func:`calcore.load_predictions` does)."""
    low = path.lower()
    if low.endswith((".parquet", ".pq")):
        return "parquet"
    if low.endswith(IPC_EXTENSIONS):
        return "arrow"
    if low.endswith(CSV_EXTENSIONS):
        return "csv"
    if low.endswith(".npz"):
        return "npz"
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise gone(path) from None
    if magic.startswith(b"PAR1"):
        return "parquet"
    if magic.startswith(b"ARROW1"):
        return "arrow"
    return "npz" if magic.startswith(b"PK\x03\x04") else "csv"


def arrow_rows(path: str) -> int:
    """The rows of a Parquet or Arrow IPC file, from its metadata."""
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    try:
        if is_ipc(path):
            with ipc.open_file(path) as reader:
                return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        return pq.ParquetFile(path).metadata.num_rows
    except FileNotFoundError:
        raise gone(path) from None


def _chunks(path: str, columns, batch_rows: int) -> list:
    """``(what, batches)`` per independently readable chunk of a file: Parquet row groups
    (decoded ahead, :mod:`calcore.io._row_groups`), Arrow IPC record batches; ``batches``
    yields Arrow tables or record batches of at most ``batch_rows`` rows."""
    import pyarrow.ipc as ipc

    if not is_ipc(path):
        return row_group_chunks(path, columns, batch_rows)
    reader = ipc.open_file(path)
    return [
        (f"record batch {i}", _sliced(lambda i=i: reader.get_batch(i), columns, batch_rows))
        for i in range(reader.num_record_batches)
    ]


def _sliced(read, columns, batch_rows: int):
    batch = read().select(columns)
    for start in range(0, batch.num_rows, batch_rows):
        yield batch.slice(start, batch_rows)


def gone(path: str) -> CalcoreError:
    """The error of a file removed while it is read."""
    return CalcoreError(f"{path}: the file disappeared while it was being read.")


def arrow_schema(path: str):
    """A Parquet or Arrow IPC file's schema (refused, naming the file, when unreadable)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    try:
        if is_ipc(path):
            with ipc.open_file(path) as reader:
                return reader.schema
        return pq.read_schema(path)
    except FileNotFoundError:
        raise gone(path) from None
    except UnicodeDecodeError as exc:  # bad bytes in a column name
        from calcore.io._parquet import non_utf8_name

        raise non_utf8_name(path, exc) from None
    except (pa.ArrowException, OSError) as exc:
        raise CalcoreError(
            f"{path}: not a readable {'Arrow IPC' if is_ipc(path) else 'Parquet'} file "
            f"({' '.join(str(exc).split())[:200]}). Re-export it or remove it from the directory."
        ) from None


def is_numeric_type(t) -> bool:
    """Whether an Arrow type holds numbers (integers, floats, decimals)."""
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def csv_head_of(path: str, name: str):
    """The header and first lines of a CSV file (:func:`calcore.io._csv_stream.csv_head`),
    ``name`` naming it in messages."""
    from calcore.io._csv_stream import csv_head

    try:
        return csv_head(path, name)
    except FileNotFoundError:
        raise gone(path) from None


def arrow_batches(path: str, name: str, columns: list[str], batch_rows: int):
    """``(table of one record batch, its row names)`` of a Parquet or Arrow IPC file, with
    ``columns`` only: the names number the file's rows (from the batch's first row) and,
    in a file of several chunks, name the row group or record batch; a damaged chunk is
    named (file, row group, rows)."""
    import pyarrow as pa

    from calcore.io._parquet import unreadable_chunk

    first_row = 0
    try:
        chunks = _chunks(path, columns, batch_rows)
    except FileNotFoundError:
        raise gone(path) from None
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise CalcoreError(
            f"{name}: cannot be read ({' '.join(str(exc).split())[:200]}). Re-export it."
        ) from None
    for what, reader in chunks:
        chunk = ((first_row, what),) if len(chunks) > 1 else ()
        while True:
            try:
                batch = next(reader)
            except StopIteration:
                break
            except FileNotFoundError:
                raise gone(path) from None
            except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
                raise unreadable_chunk(name, what, first_row, exc) from None
            yield (
                (batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])),
                RowNames(csv=False, first=first_row, chunks=chunk),
            )
            first_row += batch.num_rows


def arrow_raw_table(table, name: str, kind: str, roles, rows: RowNames) -> RawTable:
    """An Arrow table's columns as the reader's :class:`~calcore.io._table.RawTable`: the
    scores as one matrix, the labels (and split) encoded, rows named by ``rows``. Shared
    by the file reader and Spark's tasks (:mod:`calcore.spark._evaluate`), so a batch is
    validated the same way wherever it was read."""
    return RawTable(
        name,
        kind,
        None,
        tuple(table.column_names),
        roles,
        table.num_rows,
        columns_to_matrix(table, roles.scores),
        encoded_labels(table[roles.label], name, roles.label, rows),
        None
        if roles.split is None
        else encoded_labels(table[roles.split], name, roles.split, rows),
        rows,
    )


def _arrow_tables(spec: ReadSpec):
    """``(raw table, weights or None, slice columns, kept table or None)`` per record
    batch of a Parquet or Arrow IPC file."""
    import pyarrow as pa

    from calcore.io._parquet import check_utf8

    name, kept = spec.name, spec.kept_columns
    # every column when they are kept (in the files' order), else only the used ones
    columns = (
        list(kept) if kept else used_columns(spec.roles, spec.weight) + list(spec.slice_columns)
    )
    kind = "arrow" if is_ipc(spec.path) else "parquet"
    for table, rows in arrow_batches(spec.path, name, columns, spec.batch_rows):
        raw = arrow_raw_table(table, name, kind, spec.roles, rows)
        weights = None
        if spec.weight is not None:
            # decimals (and integers) as float64; a null becomes NaN, refused by name
            column = table[spec.weight].cast(pa.float64())
            weights = column.to_numpy(zero_copy_only=False)
        extras = {c: table[c] for c in spec.slice_columns}
        for c, values in extras.items():
            check_utf8(values, source=name, name=c, rows=rows)
        yield raw, weights, extras, (table if kept else None)


def _csv_tables(spec: ReadSpec):
    """``(raw table, weights or None, slice columns' text, kept table or None)`` per
    piece of a CSV file (see :mod:`calcore.io._csv_stream`): rows named by their file
    line."""
    from calcore.io._csv_stream import csv_pieces, read_piece

    roles, weight, path, batch_rows = spec.roles, spec.weight, spec.path, spec.batch_rows
    head = csv_head_of(path, spec.name)
    floats = [*roles.scores] + ([weight] if weight is not None else [])
    texts = [roles.label] + ([roles.split] if roles.split else [])
    extras = list(spec.slice_columns)
    kept = spec.kept_columns
    # kept columns: every cell's text but the scores' (read as numbers, the text of a
    # weight too: slower for that column, but its cells are written back as they were)
    as_text = [c for c in kept if c not in roles.scores] if kept else []
    name, decimal = spec.name, spec.decimal
    if decimal != head.layout.decimal:  # every file of the stream, as the first was checked
        head = replace(head, layout=with_decimal(head.layout, decimal, name))
    pieces = csv_pieces(path, name, head, head.piece_bytes(batch_rows))
    k = len(roles.scores)
    try:
        for src, layout in pieces:
            wanted = list(dict.fromkeys(texts + extras + as_text))
            values, text, lines = read_piece(src, layout, floats=floats, texts=wanted)
            # a piece is sized from the first lines' length: cut it into batches of at
            # most batch_rows rows, whatever the lines further down are like
            for a in range(0, values.shape[0], batch_rows):
                b = min(a + batch_rows, values.shape[0])
                if lines is None:
                    rows = RowNames(csv=True, first=layout.first_line + a)
                else:
                    rows = RowNames(csv=True, lines=lines[a:b], first=int(lines[a]))
                raw = RawTable(
                    name,
                    "csv",
                    layout.delimiter,
                    layout.columns,
                    roles,
                    b - a,
                    np.ascontiguousarray(values[a:b, :k]),
                    _factorized(text[roles.label][a:b]),
                    None if roles.split is None else _factorized(text[roles.split][a:b]),
                    rows,
                )
                weights = None if weight is None else values[a:b, k]
                table = _csv_kept_table(kept, roles.scores, values[a:b, :k], text, a, b)
                yield raw, weights, {c: np.asarray(text[c][a:b]) for c in extras}, table
    except FileNotFoundError:
        raise gone(path) from None


def _npz_tables(spec: ReadSpec):
    """``(raw table, weights or None, slice arrays, None)`` per window of rows of an NPZ
    archive."""
    name = spec.name
    archive = NpzArchive(spec.path, name, label_column=spec.label_column)
    extras = list(spec.slice_columns)
    windows = archive.windows(spec.batch_rows, weight=spec.weight, extras=extras)
    for c, weights, first_row, arrays in windows:
        raw = RawTable(
            name,
            "npz",
            None,
            tuple(archive.files),
            spec.roles,
            c.scores.shape[0],
            c.scores,
            _factorized(c.labels),
            None if c.split is None else _factorized(c.split),
            RowNames(csv=False, first=first_row),
            (c.score_name, f"the archive's array is named {c.score_name!r}"),
        )
        yield raw, weights, arrays, None  # refused by scan(keep_columns=True)


def _csv_kept_table(kept, scores, values: np.ndarray, text: dict, a: int, b: int):
    """The kept columns of rows ``a:b`` of a CSV piece as a pyarrow Table (None when the
    stream keeps none): the score columns as the float64 values read, every other column
    as text (no type guessed: the cells stay what they were, and every batch of a stream
    gets the same types whatever its cells look like)."""
    if not kept:
        return None
    import pyarrow as pa

    position = {c: j for j, c in enumerate(scores)}
    arrays = [
        pa.array(values[:, position[c]], pa.float64())
        if c in position
        else pa.array(text[c][a:b], pa.string())
        for c in kept
    ]
    return pa.Table.from_arrays(arrays, names=list(kept))


def _factorized(values: np.ndarray):
    """``(distinct texts, index of each row's text)``: labels by hashing rather than a sort
    of millions of strings (pandas' factorize; 2M labels in ~0.1 s)."""
    import pandas as pd

    index, distinct = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return np.asarray(distinct, dtype=object), index.astype(np.intp)


def encoded_labels(column, source: str, name: str, rows: RowNames):
    """``(distinct label texts, index of each row's label)`` of an Arrow label (or split)
    column; ``rows`` names its rows in messages.

    The distinct values are those the rows hold: a dictionary-encoded column (a pandas
    Categorical) keeps categories no row uses (the usual result of filtering a frame),
    and those are dropped here, never judged as labels or split values.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from calcore.io._parquet import check_utf8, text_column, valid_utf8

    if column.null_count:  # the full conversion names the first missing label's row
        text = text_column(column, source=source, name=name, rows=rows)
        distinct, index = np.unique(text, return_inverse=True)
        return distinct, index
    encoded = pc.dictionary_encode(column).combine_chunks()  # hashes bytes: no decoding
    index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp)
    values, index = used_dictionary_entries(encoded.dictionary, index)
    if not valid_utf8(values):  # checked on the few distinct values; the rows named
        check_utf8(column, source=source, name=name, rows=rows)
    if pa.types.is_floating(values.type):  # integral floats are class indices; else an error
        try:
            text_column(pa.chunked_array([values]), source=source, name=name)
        except CalcoreError:
            text_column(column, source=source, name=name, rows=rows)  # names the row
            raise
    distinct = text_column(pa.chunked_array([values]), source=source, name=name)
    return distinct, index


@dataclass(frozen=True, eq=False)
class SliceBatch:
    """The slice columns of a batch of a stream's rows (as in
    :class:`~calcore.io.stream.StreamBatch`, without the predictions)."""

    slice_values: dict
    file: str
    first_row: int
    split_codes: np.ndarray | None = None


def arrow_slice_batches(spec: ReadSpec, *, split: str | None, codes: bool) -> Iterator[SliceBatch]:
    """The slice columns of a Parquet or Arrow IPC file's batches, read with the split
    column alone (``split``: keep that split's rows; ``codes``: with each row's split
    code), without the scores and labels."""
    from calcore.io._parquet import check_utf8

    name, split_column = spec.name, spec.roles.split
    read_split = split_column is not None and (codes or split is not None)
    columns = ([split_column] if read_split else []) + list(spec.slice_columns)
    for table, rows in arrow_batches(spec.path, name, columns, spec.batch_rows):
        values = {c: table[c] for c in spec.slice_columns}
        for c, v in values.items():
            check_utf8(v, source=name, name=c, rows=rows)
        row_codes = None
        if read_split:
            ctx = InputContext(name, row=LabelRowNames(rows, split_column))
            encoded = encoded_labels(table[split_column], name, split_column, rows)
            row_codes = split_codes(*encoded, ctx=ctx)
        if split is not None:  # the stream's rows are one split's
            chosen = np.flatnonzero(row_codes == SPLITS.index(split))
            if chosen.size == 0:
                continue
            values = {c: v.take(chosen) for c, v in values.items()}
            row_codes = row_codes[chosen]
        yield SliceBatch(values, name, rows.first, row_codes if codes else None)

"""Seeded uniform samples of a stream, and the slice columns of the sampled rows.

Every row gets a uniform from ``(seed, position)``
(:func:`calcore.statistics.poisson.row_uniforms`), its position being counted within its
split when samples are drawn per split; the ``max_rows`` rows with the smallest uniforms
are kept (:class:`~calcore.io._bottom_k.BottomK`). Which rows are kept therefore depends
on the seed and on which rows belong to which split, and on nothing else: not on the
batching, nor on the scores and labels. That is what lets
:func:`sample_slice_columns` read the slice columns of a sample after the sample itself,
from the split column and the slice columns alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Iterator

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import ROWS
from calcore.foundation.validation import InputContext
from calcore.io._bottom_k import BottomK, n_batch_rows
from calcore.io._labels import SPLITS, split_codes
from calcore.io._prefetch import prefetched
from calcore.io._table import LabelRowNames
from calcore.predictions import Predictions, concat

__all__ = [
    "SliceBatch",
    "sample",
    "sample_slice_columns",
    "sample_splits",
    "slice_batches",
    "need_slice_columns",
]


def sample(stream, max_rows: int, *, seed: int) -> tuple[Predictions, int]:
    """See :meth:`calcore.PredictionStream.sample`."""
    ROWS.check(max_rows, "max_rows")
    rows = ((None, b.preds, b.slice_values) for b in stream.batches())
    kept = _kept(rows, max_rows, seed)
    return _predictions(stream, kept), kept.n_read


def sample_splits(stream, max_rows: int, *, seed: int) -> dict[str, tuple[Predictions, int]]:
    """See :meth:`calcore.PredictionStream.sample_splits`."""
    ROWS.check(max_rows, "max_rows")
    _need_split_column(stream)
    whole = replace(stream, split=None)
    rows = ((b.split_codes, b.preds, b.slice_values) for b in whole.batches())
    kept = _kept_by_split(stream, rows, max_rows, seed)
    return {split: (_predictions(stream, into), into.n_read) for split, into in kept.items()}


def sample_slice_columns(stream, max_rows: int, *, seed: int, splits: bool) -> dict:
    """See :meth:`calcore.PredictionStream.sample_slice_columns`."""
    ROWS.check(max_rows, "max_rows")
    need_slice_columns(stream)
    if splits:
        _need_split_column(stream)
        whole = replace(stream, split=None)
        kept = _kept_by_split(stream, _slice_values(whole, codes=True), max_rows, seed)
        return {split: _metadata(stream, into) for split, into in kept.items()}
    kept = _kept(_slice_values(stream, codes=False), max_rows, seed)
    if not kept.parts:
        raise CalcoreError(f"{stream.name}: no rows to sample.")
    return _metadata(stream, kept)


def need_slice_columns(stream) -> None:
    """Refuse a stream that reads no slice column."""
    if not stream.slice_columns:
        raise CalcoreError(f"{stream.name}: no slice columns to read (give slice_columns=).")


def _need_split_column(stream) -> None:
    if stream.roles.split is None:
        raise CalcoreError(
            f"{stream.name}: no split column to sample by (name one with split_column=)."
        )


def _kept(rows: Iterable, max_rows: int, seed: int) -> BottomK:
    """The bottom-k of ``(codes, predictions or None, slice values)`` batches, positions
    counted over every row offered."""
    kept = BottomK(max_rows, seed)
    for _, preds, values in rows:
        n = n_batch_rows(preds, values)
        kept.add(kept.n_read + np.arange(n, dtype=np.int64), preds, values)
    return kept


def _kept_by_split(stream, rows: Iterable, max_rows: int, seed: int) -> dict[str, BottomK]:
    """One bottom-k per split, positions counted within the split."""
    kept = [BottomK(max_rows, seed) for _ in SPLITS]
    for codes, preds, values in rows:
        for code, into in enumerate(kept):
            chosen = np.flatnonzero(codes == code)
            positions = into.n_read + np.arange(chosen.size, dtype=np.int64)
            into.add(positions, preds, values, rows=chosen)
    for split, into in zip(SPLITS, kept, strict=True):
        if not into.parts:
            raise CalcoreError(
                f"{stream.name}: no rows have split {split!r} in column {stream.roles.split!r}."
            )
    return dict(zip(SPLITS, kept, strict=True))


def _predictions(stream, kept: BottomK) -> Predictions:
    """The rows a sampler kept, with the slice columns as metadata."""
    parts = kept.rows()
    if not parts:
        raise CalcoreError(f"{stream.name}: no rows to sample.")
    preds = concat([q for _, _, q, _ in parts])
    if not stream.slice_columns:
        return preds
    return preds.with_metadata(_metadata(stream, kept))


def _metadata(stream, kept: BottomK) -> dict:
    """The kept rows' slice columns as metadata columns, typed as the loader types them
    (from the sampled values: a CSV column whose sampled cells are all numbers is
    numeric)."""
    parts = kept.rows()
    family = stream._options["family"]
    return {c: _metadata_column(family, c, [v[c] for *_, v in parts]) for c in stream.slice_columns}


def batch_metadata(stream, batch) -> dict:
    """A batch's slice columns as metadata columns (typed from the batch's values)."""
    family = stream._options["family"]
    return {c: _metadata_column(family, c, [batch.slice_values[c]]) for c in stream.slice_columns}


def _metadata_column(family: str, name: str, parts: list):
    """A metadata column from a slice column's values, batch by batch, built by the
    loader's own converter for the family (Arrow arrays, CSV text cells, NPZ arrays)."""
    from calcore.predictions.metadata import metadata_column, metadata_from_text

    if family == "arrow":
        import pyarrow as pa

        from calcore.io._metadata import metadata_from_arrow

        chunks = [c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])]
        return metadata_from_arrow(name, pa.chunked_array(chunks))
    values = np.concatenate(parts)
    if family == "csv":
        return metadata_from_text(name, values)
    return metadata_column(name, values)


@dataclass(frozen=True, eq=False)
class SliceBatch:
    """The slice columns of a batch of a stream's rows (as in
    :class:`~calcore.io.stream.StreamBatch`, without the predictions)."""

    slice_values: dict
    file: str
    first_row: int
    split_codes: np.ndarray | None = None


def slice_batches(stream, *, codes: bool = False) -> Iterator[SliceBatch]:
    """The slice columns of every batch of the stream's rows (``codes``: with each row's
    split code, for the rows of every split).

    Parquet and Arrow IPC files are read for the split and slice columns alone (on the
    100M-row demo, 1.4 s for the split and three slice columns, where sampling with them
    took 2.5 s); CSV and NPZ sources are read whole, validated as by
    :meth:`~calcore.PredictionStream.batches`.
    """
    if stream._options["family"] != "arrow":
        for b in stream.batches():
            yield SliceBatch(b.slice_values, b.file, b.first_row, b.split_codes if codes else None)
        return
    yield from prefetched(_arrow_slice_batches(stream, codes=codes))


def _slice_values(stream, *, codes: bool) -> Iterator[tuple]:
    """``(split codes or None, None, slice values)`` per batch (as the samplers take rows)."""
    for b in slice_batches(stream, codes=codes):
        yield b.split_codes, None, b.slice_values


def _arrow_slice_batches(stream, *, codes: bool) -> Iterator[SliceBatch]:
    from calcore.io._parquet import check_utf8
    from calcore.io.stream import arrow_batches, check_unchanged, encoded_labels, short_name

    split = stream.roles.split
    read_split = split is not None and (codes or stream.split is not None)
    columns = ([split] if read_split else []) + list(stream.slice_columns)
    for path in stream.files:
        check_unchanged(stream, path)
        name = short_name(stream, path)
        for table, rows in arrow_batches(stream, path, columns):
            values = {c: table[c] for c in stream.slice_columns}
            for c, v in values.items():
                check_utf8(v, source=name, name=c, rows=rows)
            row_codes = None
            if read_split:
                ctx = InputContext(name, row=LabelRowNames(rows, split))
                encoded = encoded_labels(table[split], name, split, rows)
                row_codes = split_codes(*encoded, ctx=ctx)
            if stream.split is not None:  # the stream's rows are one split's
                chosen = np.flatnonzero(row_codes == SPLITS.index(stream.split))
                if chosen.size == 0:
                    continue
                values = {c: v.take(chosen) for c, v in values.items()}
                row_codes = row_codes[chosen]
            yield SliceBatch(values, name, rows.first, row_codes if codes else None)

"""Seeded uniform samples of batches of rows, and the slice columns of the sampled rows.

Every row gets a uniform from ``(seed, position)``
(:func:`calcore.foundation.keyed_random.row_uniforms`), its position being counted within
its split when samples are drawn per split; the ``max_rows`` rows with the smallest uniforms
are kept (:class:`~calcore.io._bottom_k.BottomK`). Which rows are kept therefore depends
on the seed and on which rows belong to which split, and on nothing else: not on the
batching, nor on the scores and labels. That is what lets a stream read the slice
columns of a sample after the sample itself, from the split column and the slice
columns alone (:meth:`calcore.PredictionStream.sample_slice_columns`).

The samplers take an iterator of ``(split codes or None, predictions or None, slice
values)`` per batch, whoever reads them (:class:`calcore.PredictionStream`'s methods).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.io._bottom_k import BottomK, n_batch_rows
from calcore.io._labels import SPLITS

__all__ = [
    "batch_metadata",
    "bottom_k",
    "bottom_k_by_split",
    "kept_metadata",
    "need_slice_columns",
    "need_split_column",
]


def need_slice_columns(name: str, slice_columns) -> None:
    """Refuse a source that reads no slice column."""
    if not slice_columns:
        raise CalcoreError(f"{name}: no slice columns to read (give slice_columns=).")


def need_split_column(name: str, split_column: str | None) -> None:
    """Refuse a source without a split column to sample by."""
    if split_column is None:
        raise CalcoreError(f"{name}: no split column to sample by (name one with split_column=).")


def bottom_k(rows: Iterable, max_rows: int, seed: int) -> BottomK:
    """The bottom-k of ``(codes, predictions or None, slice values)`` batches, positions
    counted over every row offered."""
    kept = BottomK(max_rows, seed)
    for _, preds, values in rows:
        n = n_batch_rows(preds, values)
        kept.add(kept.n_read + np.arange(n, dtype=np.int64), preds, values)
    return kept


def bottom_k_by_split(
    rows: Iterable, max_rows: int, seed: int, name: str, split_column: str
) -> dict[str, BottomK]:
    """One bottom-k per split, positions counted within the split (``name`` and
    ``split_column`` name a split without rows)."""
    kept = [BottomK(max_rows, seed) for _ in SPLITS]
    for codes, preds, values in rows:
        for code, into in enumerate(kept):
            chosen = np.flatnonzero(codes == code)
            positions = into.n_read + np.arange(chosen.size, dtype=np.int64)
            into.add(positions, preds, values, rows=chosen)
    for split, into in zip(SPLITS, kept, strict=True):
        if not into.parts:
            raise CalcoreError(f"{name}: no rows have split {split!r} in column {split_column!r}.")
    return dict(zip(SPLITS, kept, strict=True))


def kept_metadata(kept: BottomK, family: str, slice_columns) -> dict:
    """The kept rows' slice columns as metadata columns, typed as the loader types them
    (from the sampled values: a CSV column whose sampled cells are all numbers is
    numeric)."""
    parts = kept.rows()
    return {c: _metadata_column(family, c, [v[c] for *_, v in parts]) for c in slice_columns}


def batch_metadata(values: dict, family: str, slice_columns) -> dict:
    """A batch's slice columns as metadata columns (typed from the batch's values)."""
    return {c: _metadata_column(family, c, [values[c]]) for c in slice_columns}


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

"""Writing a stream of predictions (e.g. recalibrated batches) to Parquet or CSV.

The output has the layout of :func:`calcore.export.predictions_to_csv`: a ``label``
column of class indices, then one probability column ``p_<class>`` per class, so it
reads back with :func:`calcore.load_predictions` or :func:`calcore.scan`. Batches are
written as they come (bounded memory) by :func:`calcore.io._output.open_output`: to a
temporary file beside a regular (or new) target, which replaces it only when every batch
was written, so a failure leaves no partial file behind, and never one that looks
complete; a symbolic link, device or FIFO is written through, never replaced.
"""

from __future__ import annotations

import os

from calcore._errors import CalcoreError
from calcore.export import predictions_to_csv
from calcore.io._output import check_output, open_output

__all__ = ["write_stream", "write_predictions", "OUTPUT_FORMATS"]

OUTPUT_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def _format(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in OUTPUT_FORMATS:
        raise CalcoreError(
            f"{path}: the output must end in .parquet, .pq or .csv (the format follows the name)."
        )
    return OUTPUT_FORMATS[ext]


def write_stream(stream, path, *, prefix: str = "p_") -> int:
    """Write every batch of ``stream`` to ``path``; return the number of rows written.

    Parameters
    ----------
    stream : PredictionStream
        E.g. ``calcore.scan(...).with_transform(calibrator.transform)``.
    path : str or os.PathLike
        ``.parquet``/``.pq`` (Parquet, one row group per batch) or ``.csv``.
    prefix : str, default "p_"
        Prefix of the probability columns.

    Raises
    ------
    CalcoreError
        An unknown output extension, or whatever reading the stream raises (the target is
        then left untouched).

    Examples
    --------
    >>> # write_stream(calcore.scan("logs/").with_transform(cal.transform), "out.parquet")
    """
    path = os.fspath(path)
    kind = _format(path)
    check_output(path)  # a directory or a missing folder: refused before reading anything
    with open_output(path, text=kind == "csv") as fh:
        if kind == "parquet":
            return _write_parquet(stream, fh, prefix)
        return _write_csv(stream, fh, prefix)


def _write_csv(stream, fh, prefix: str) -> int:
    rows = 0
    for b in stream.batches():
        predictions_to_csv(b.preds, fh, prefix=prefix, header=rows == 0)
        rows += b.preds.n_samples
    return rows


def _write_parquet(stream, fh, prefix: str) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    rows = 0
    try:
        for b in stream.batches():
            preds = b.preds
            columns = {"label": pa.array(preds.labels)}
            for j, name in enumerate(preds.class_names):
                columns[prefix + name] = pa.array(preds.probs[:, j])
            if preds.sample_weight is not None:  # kept, so that the file reads back weighted
                columns["weight"] = pa.array(preds.sample_weight)
            table = pa.table(columns)
            if writer is None:
                # page checksums: calcore verifies them when it reads the file back
                writer = pq.ParquetWriter(fh, table.schema, write_page_checksum=True)
            writer.write_table(table)
            rows += preds.n_samples
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise CalcoreError(f"{stream.name}: no rows to write.")
    return rows


class _OneBatch:
    """In-memory predictions seen as a stream of one batch."""

    def __init__(self, preds):
        self.name = "predictions"
        self._batch = type("Batch", (), {"preds": preds})()

    def batches(self):
        return iter([self._batch])


def write_predictions(preds, path, *, prefix: str = "p_") -> int:
    """:func:`write_stream` of in-memory predictions (Parquet or CSV by the extension)."""
    return write_stream(_OneBatch(preds), path, prefix=prefix)

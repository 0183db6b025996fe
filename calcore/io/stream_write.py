"""Writing a stream of predictions (e.g. recalibrated batches) to Parquet, CSV or Arrow IPC.

:func:`write_applied` (``calcore apply``) writes every column of the input's rows, the
score columns replaced (or, with a suffix, joined) by the calibrated probabilities; see
:class:`AppliedLayout`. :func:`write_stream` and :func:`write_predictions` (``calcore
calibrate --out``, ``apply`` on NPZ archives) write the predictions alone, in the layout
of :func:`calcore.io.export.predictions_to_csv`: a ``label`` column of class indices, then
one probability column ``p_<class>`` per class, so it reads back with
:func:`calcore.load_predictions` or :func:`calcore.scan`. Batches of either are written
as they come (bounded memory) by :func:`calcore.io._output.open_output`: to a temporary
file beside a regular (or new) target, which replaces it only when every batch was
written, so a failure leaves no partial file behind, and never one that looks complete;
a symbolic link, device or FIFO is written through, never replaced.
"""

from __future__ import annotations

import os

from calcore.foundation.errors import CalcoreError
from calcore.io._files import DATA_EXTENSIONS
from calcore.io._output import check_output, open_output
from calcore.io.export import predictions_to_csv

__all__ = [
    "write_stream",
    "write_predictions",
    "write_applied",
    "AppliedLayout",
    "OUTPUT_FORMATS",
    "APPLIED_FORMATS",
]

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


# -- calcore apply: every input column kept, the scores recalibrated ----------------------

#: Output formats of :func:`write_applied`, by the output's extension.
APPLIED_FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".feather": "ipc",
    ".ipc": "ipc",
}

#: The prefix of a probability column: the calibrated probabilities of logit columns
#: take it, so that nobody reads them as logits.
PROBABILITY_PREFIX = "p_"


def applied_format(path: str) -> str:
    """``"csv"``, ``"parquet"`` or ``"ipc"``: the format of ``apply``'s output, by its
    extension (refused when it names none of them)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in APPLIED_FORMATS:
        raise CalcoreError(
            f"{path}: the output must end in .csv, .parquet, .pq, .arrow, .feather or .ipc "
            "(the format follows the name)."
        )
    return APPLIED_FORMATS[ext]


class AppliedLayout:
    """The output's columns: every input column in order, the calibrated scores placed.

    Without a suffix each score column's values are replaced, in place, by the
    calibrated probabilities (a logit column ``logit_cat`` becomes ``p_cat``); with a
    suffix the input's columns are all kept and the calibrated columns follow the last
    score column, one per score column in its order, named ``<name><suffix>`` (logits:
    ``p_<class><suffix>``), so that the original score columns stay side by side.

    Parameters
    ----------
    stream : PredictionStream
        Opened with ``keep_columns=True``.
    suffix : str, optional
        See above.

    Raises
    ------
    CalcoreError
        An empty suffix, or a calibrated column's name that another input column
        already has (naming both).
    """

    def __init__(self, stream, suffix: str | None = None) -> None:
        if suffix is not None and not suffix:
            raise CalcoreError(
                "--suffix '': the calibrated columns would take the names of the original "
                "ones. Leave --suffix out to replace the scores, or give a suffix such as _cal."
            )
        self.source = stream.name
        self.inputs = tuple(stream.kept_columns)
        scores = stream.roles.scores
        # one score column holds P(positive class), the second class; else one per class
        self.classes = (1,) if len(scores) == 1 else tuple(range(len(scores)))
        renamed = stream.scores_kind == "logits"
        self.calibrated = {
            score: (PROBABILITY_PREFIX + stream.class_names[c] if renamed else score)
            + (suffix or "")
            for score, c in zip(scores, self.classes, strict=True)
        }
        self._check_collisions(suffix)
        self.columns = self._placed(scores, suffix)

    def _check_collisions(self, suffix: str | None) -> None:
        for score, name in self.calibrated.items():
            taken = [c for c in self.inputs if c == name and (suffix or c != score)]
            if not taken:
                continue
            if suffix:
                raise CalcoreError(
                    f"{self.source}: column {name!r} would collide with the calibrated column "
                    f"of {score!r}, named {name!r} under --suffix {suffix}. Choose another "
                    "--suffix or rename the column."
                )
            raise CalcoreError(
                f"{self.source}: column {name!r} would collide with the calibrated "
                f"probabilities of logit column {score!r}, which are named {name!r} (a "
                "probability column, not a logit). Rename that column, or give --suffix to "
                "keep the logits and name the probabilities apart."
            )

    def _placed(self, scores, suffix) -> tuple:
        """``(output name, input column or None, class index or None)`` per column."""
        position = {s: c for s, c in zip(scores, self.classes, strict=True)}
        if not suffix:
            return tuple(
                (self.calibrated[c], None, position[c]) if c in position else (c, c, None)
                for c in self.inputs
            )
        last = max(self.inputs.index(s) for s in scores)
        kept = [(c, c, None) for c in self.inputs]
        added = [(self.calibrated[s], None, position[s]) for s in scores]
        return tuple(kept[: last + 1] + added + kept[last + 1 :])

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.columns]

    def table(self, batch):
        """The output rows of one batch: its input columns, the calibrated scores placed."""
        import pyarrow as pa

        kept, probs = batch.input_table, batch.preds.probs
        if kept is None or kept.num_rows != probs.shape[0]:  # a bug, never the input's fault
            raise RuntimeError("a batch without its input columns, or with other rows")
        arrays = [
            kept.column(column) if column is not None else pa.array(probs[:, c], pa.float64())
            for _, column, c in self.columns
        ]
        return pa.Table.from_arrays(arrays, names=self.names)


def check_not_input(path, files) -> None:
    """Refuse an output that is one of the input ``files`` (the same file by device and
    inode: through a symbolic or hard link too), which writing would destroy.

    Raises
    ------
    CalcoreError
        Naming both paths.
    """
    try:
        out = os.stat(path)  # follows a symbolic link to the file it leads to
    except (FileNotFoundError, NotADirectoryError):
        return  # a new file is no input
    for name in files:
        st = os.stat(name)
        if (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino):
            same = "" if os.path.abspath(path) == os.path.abspath(name) else " (through a link)"
            raise CalcoreError(
                f"--out {path} is the input file {name}{same}: writing it would destroy the "
                "rows being read. Write to another file (and rename it afterwards if you "
                "must replace the input)."
            )


def check_not_in_folder(path, source) -> None:
    """Refuse an output that a directory ``source``'s next scan would read as one of its
    data files: the next run would recalibrate its own output again, beside the input.

    Raises
    ------
    CalcoreError
        Naming the output and the folder.
    """
    source = os.fspath(source)
    if not os.path.isdir(source):
        return
    folder = os.path.realpath(source)
    out = os.path.realpath(os.fspath(path))
    inside = os.path.relpath(out, folder)
    if inside.startswith(os.pardir) or not out.lower().endswith(DATA_EXTENSIONS):
        return
    if any(part.startswith((".", "_")) for part in inside.split(os.sep)):
        return  # hidden or _-prefixed: scans skip it
    raise CalcoreError(
        f"--out {path} is inside the input folder {source}: a later run would read it as "
        "input. Write it outside the folder (or under a name starting with '_' or '.', "
        "which scans skip)."
    )


def write_applied(stream, path, *, suffix: str | None = None) -> int:
    """Write every batch of ``stream`` with all its input columns, the scores calibrated.

    Parameters
    ----------
    stream : PredictionStream
        Opened with ``keep_columns=True`` and a transform, e.g.
        ``calcore.scan(path, keep_columns=True).with_transform(calibrator.transform)``.
    path : str or os.PathLike
        ``.csv``, ``.parquet``/``.pq`` (one row group per batch) or Arrow IPC (``.arrow``,
        ``.feather``, ``.ipc``; file format). Written by :func:`open_output`: whole or
        not at all.
    suffix : str, optional
        Keep the original scores and add the calibrated ones (see :class:`AppliedLayout`).

    Returns
    -------
    int
        The rows written: those of the stream, in its order.

    Notes
    -----
    Parquet and IPC outputs keep the input's column types; the columns of a CSV input
    are its cells' text (and the scores float64). A CSV output writes each cell's text
    as read (quoted only where needed) and numbers as their shortest exact text. An IPC
    output holds dictionary-encoded columns decoded (an IPC file cannot change a
    column's dictionary between batches). The input's schema metadata (e.g. pandas')
    is not kept: it describes the input's columns.

    Raises
    ------
    CalcoreError
        An unknown extension, a name collision (:class:`AppliedLayout`), an output that
        is an input file, a column that CSV cannot hold, no rows, or what reading the
        stream raises; the output is then left as it was.
    """
    path = os.fspath(path)
    kind = applied_format(path)
    layout = AppliedLayout(stream, suffix)
    check_output(path)  # a directory or a missing folder: refused before reading anything
    check_not_input(path, stream.files)
    rows = 0
    with open_output(path) as fh:
        writer = _TableWriter(fh, kind, stream.name)
        try:
            for b in stream.batches():
                table = layout.table(b)
                writer.write(table)
                rows += table.num_rows
        finally:
            writer.close()
        if rows == 0:
            raise CalcoreError(f"{stream.name}: no rows to write.")
    return rows


class _TableWriter:
    """Arrow tables appended to an open binary file as CSV, Parquet or Arrow IPC."""

    def __init__(self, fh, kind: str, source: str) -> None:
        self.fh, self.kind, self.source = fh, kind, source
        self.writer = None
        self.schema = None

    def write(self, table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from calcore.io._csv_write import csv_header, csv_rows

        if self.kind == "ipc":
            table = _dictionaries_decoded(table)
        if self.schema is None:
            self.schema = table.schema
            if self.kind == "csv":
                self.fh.write(csv_header(table.column_names).encode("utf-8"))
            elif self.kind == "parquet":
                # page checksums: calcore verifies them when it reads the file back
                self.writer = pq.ParquetWriter(self.fh, self.schema, write_page_checksum=True)
            else:
                self.writer = pa.ipc.new_file(self.fh, self.schema)
        elif not table.schema.equals(self.schema):
            table = table.cast(self.schema)  # e.g. nullability differing between files
        if self.kind == "csv":
            self.fh.write(csv_rows(table, source=self.source))
        else:
            self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _dictionaries_decoded(table):
    import pyarrow as pa

    if not any(pa.types.is_dictionary(t) for t in table.schema.types):
        return table
    arrays = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return pa.Table.from_arrays(arrays, names=table.column_names)

"""Streamed sources: predictions read batch by batch at bounded memory.

``calcore.scan(path)`` opens a Parquet, Arrow IPC, CSV or NPZ file, a directory of
them (hive-partitioned or not) or a glob, and returns a :class:`PredictionStream`:
its :meth:`~PredictionStream.batches` yields validated :class:`~calcore.Predictions`
of at most ``batch_rows`` rows, in a fixed order (files sorted by path, then row
groups, then rows), so that every row has a stable position. The stream can be read
any number of times (each call reopens the files). :func:`calcore.evaluate`
accumulates the statistics of a report over it (:mod:`calcore.statistics`).

Reading: the files of a directory are its ``.parquet``/``.pq``, Arrow IPC (``.arrow``,
``.feather``, ``.ipc``), ``.csv``/``.tsv`` and ``.npz`` files at any depth (hive
partition folders such as ``date=2026-11-01/`` are folders like any other; hidden and
``_``-prefixed files and folders such as ``_SUCCESS`` are skipped); one stream holds one
format (Parquet and IPC may mix). Parquet and IPC files are read one row group or record
batch at a time with pyarrow, only the label, split, weight and score columns. pyarrow
was chosen over DuckDB for this because calcore already depends on it, and the
row-group loop names the file and row group of a damaged chunk. Measured on this
2-core machine for 100 million binary rows in one 1 GB file: see
``benchmarks/bench_scale.py``. CSV files are read in pieces of whole lines by the
loader's own CSV reader (:mod:`calcore.io._csv_stream`), so messages name file lines;
NPZ archives a window of rows at a time (:mod:`calcore.io._npz_stream`).

Columns are detected as :func:`calcore.load_predictions` detects them (same rules,
same messages), from the first file's schema; every other file must have the same
types for those columns. Values are validated batch by batch with the loader's
checks; a message names the file, the column and the file's row (0-based). The
scores' kind (probabilities or logits) is decided on the first batch and then held:
a later batch that contradicts it is an error, never a silent switch.

The size budget of :func:`load_predictions` does not apply: nothing here is held
beyond one batch.
"""

from __future__ import annotations

import glob as globlib
import os
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Sequence

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import ROWS
from calcore.foundation.tuning import DEFAULT_BATCH_ROWS, MAX_BATCH_VALUES, MAX_KEPT_CELLS
from calcore.foundation.validation import InputContext, check_sample_weight
from calcore.io._columns import Roles, detect_roles, pick_weight
from calcore.io._files import check_regular
from calcore.io._labels import SPLITS, class_labels, split_codes
from calcore.io._load_report import SCORES_AUTO_SAW, scores_note, with_terms
from calcore.io._prefetch import prefetched
from calcore.io._table import (
    LabelRowNames,
    RawTable,
    RowNames,
    SelectedRowNames,
    columns_to_matrix,
)
from calcore.predictions import Predictions
from calcore.predictions.slicing_batches import used_dictionary_entries

__all__ = ["PredictionStream", "StreamBatch", "scan", "source_files", "DEFAULT_BATCH_ROWS"]


@dataclass(frozen=True, eq=False)
class StreamBatch:
    """One batch of a stream: validated rows and where they come from.

    ``position`` is the index of the batch's first row in the whole stream (files in
    order, rows of the split selected or not), the key of per-row randomness.
    ``first_row`` is where the batch starts in its file: a 0-based row, or for CSV the
    file line (the header is line 1).
    """

    preds: Predictions
    file: str
    first_row: int
    position: int
    #: The raw values of the stream's slice columns for the batch's rows (Arrow arrays,
    #: CSV text cells or NPZ arrays), read by :class:`calcore.slicing_batches.BatchSlicer`.
    slice_values: dict = field(default_factory=dict, repr=False)
    #: Each row's split as a code into ``calcore.io._labels.SPLITS`` (0: calib, 1: test),
    #: None when the files have no split column.
    split_codes: np.ndarray | None = field(default=None, repr=False)
    #: Every column of the batch's rows as read, in the files' order, when the stream
    #: keeps them (``scan(..., keep_columns=True)``), else None: a pyarrow Table, the
    #: same rows as ``preds`` in the same order. Parquet and IPC columns have the file's
    #: types; a CSV file's score columns are the float64 values read (before ``percent``
    #: divides them) and every other column is its cells' text (``""`` when empty).
    input_table: object = field(default=None, repr=False)

    @property
    def weights(self) -> np.ndarray | None:
        """The rows' weights (``preds.sample_weight``), None without a weight column."""
        return self.preds.sample_weight


@dataclass(frozen=True, eq=False)
class PredictionStream:
    """A source of predictions too large to hold in memory, read in batches.

    Attributes
    ----------
    name : str
        What the user passed, for messages.
    files : tuple of str
        The data files, in reading order.
    roles : Roles
        Detected label, split and score columns (as :func:`calcore.inspect_table`).
    class_names : tuple of str
    n_rows_in_files : int
        Rows of every file (from the metadata), before any split selection; for CSV
        files an estimate from the size of the first lines (``rows_estimated``).
    split : str or None
        The split read (``"calib"``, ``"test"``) or None for every row.
    batch_rows : int
    weight_column : str or None
        Column of row weights (frequency weights), if any.
    slice_columns : tuple of str
        Columns (NPZ: arrays) read with every batch for slicing
        (:func:`calcore.evaluate_by`), in ``StreamBatch.slice_values``.
    notes : tuple of str
        What :func:`scan` detected and decided, in the words of a loaded file's report
        (:meth:`calcore.io.LoadReport.messages`): the scores' kind and why, the columns
        kept for slicing and those ignored. Settled once, on the first batch, for the
        whole stream (a command or a page shows them once, not per batch).
    scores_kind : {"probs", "logits"} or None
        What the score columns hold, decided with ``notes``.

    Examples
    --------
    >>> import os, tempfile, calcore
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "preds.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("label,p_a,p_b\\na,0.9,0.1\\nb,0.3,0.7\\nb,0.6,0.4\\n")
    >>> stream = calcore.scan(path)
    >>> stream.class_names, [batch.preds.n_samples for batch in stream.batches()]
    (('a', 'b'), [3])
    >>> calcore.evaluate(stream, bins=5).accuracy
    0.6666666666666666
    >>> folder.cleanup()
    """

    name: str
    files: tuple[str, ...]
    roles: Roles
    class_names: tuple[str, ...]
    n_rows_in_files: int
    split: str | None
    batch_rows: int
    _options: dict = field(repr=False, default_factory=dict)
    progress: Callable[[StreamBatch], None] | None = field(default=None, repr=False)
    weight_column: str | None = None
    transform: Callable | None = field(default=None, repr=False)
    fingerprints: tuple = field(default=(), repr=False)
    rows_estimated: bool = False
    slice_columns: tuple[str, ...] = ()
    #: Whether ``transform`` gets each batch's slice columns as metadata.
    transform_metadata: bool = False
    notes: tuple[str, ...] = ()
    #: What the score columns hold, as decided on the first batch: ``"probs"`` or
    #: ``"logits"`` (None when no row was read).
    scores_kind: str | None = None

    def with_progress(self, callback: Callable[[StreamBatch], None]) -> "PredictionStream":
        """The same stream, calling ``callback(batch)`` for every batch read (every pass)."""
        return replace(self, progress=callback)

    def with_transform(
        self, transform: Callable, *, with_metadata: bool = False
    ) -> "PredictionStream":
        """The stream of ``transform(preds)`` for every batch, e.g. a fitted calibrator's
        ``transform``: recalibrated predictions evaluated or written at bounded memory.

        ``with_metadata``: ``preds`` carries the batch's slice columns as metadata (typed
        as :func:`calcore.load_predictions` types them, from the batch's values), for a
        transform that needs them (:class:`calcore.PerSliceCalibrator`).

        On a stream that already has a transform the two compose: ``transform`` is applied
        to the first one's output (a calibrator's output keeps its input's metadata).

        Raises
        ------
        CalcoreError
            ``with_metadata`` on a stream opened without slice columns.
        """
        if with_metadata:
            from calcore.io._sampling import need_slice_columns

            need_slice_columns(self)
        if self.transform is not None:
            first, then = self.transform, transform

            def transform(preds):
                return then(first(preds))

            with_metadata = with_metadata or self.transform_metadata
        return replace(self, transform=transform, transform_metadata=with_metadata)

    def with_split(self, split: str | None) -> "PredictionStream":
        """The same files, reading the rows of ``split`` (``"calib"``, ``"test"``) or every
        row (None): what ``scan(..., split=split)`` opens, without detecting the columns
        again. The class names stay the stream's.

        Raises
        ------
        CalcoreError
            An unknown split, or a split asked of files without a split column.
        """
        from calcore.io._load import check_options

        check_options(self._options["scores"], split, None, self._options["percent"])
        _check_split_column(self.name, self.roles, split)
        return replace(self, split=split)

    def sample(self, max_rows: int, *, seed: int = 0) -> tuple[Predictions, int]:
        """A seeded uniform sample of at most ``max_rows`` rows, and the number of rows read.

        Every row gets a uniform from ``(seed, position)``
        (:func:`calcore.statistics.poisson.row_uniforms`); the ``max_rows`` rows with the
        smallest are kept (bottom-k sampling), so the sample does not depend on the
        batching and memory holds at most twice ``max_rows`` rows (plus one batch). The
        sample keeps the stream's order and the rows' weights (``sample_weight``), if any;
        rows are drawn without regard to them. The stream's ``slice_columns`` become the
        sample's ``metadata``, typed as :func:`calcore.load_predictions` types them (from
        the sampled values: a CSV column whose sampled cells are all numbers is numeric).

        Raises
        ------
        CalcoreError
            An empty stream, or what reading a batch raises (file, column, row).
        """
        from calcore.io._sampling import sample

        return sample(self, max_rows, seed=seed)

    def sample_splits(self, max_rows: int, *, seed: int = 0) -> dict[str, tuple[Predictions, int]]:
        """``{"calib": (sample, rows), "test": (sample, rows)}`` in one pass over the files.

        Each split's sample is exactly ``self.with_split(split).sample(max_rows,
        seed=seed)``: a row's position is counted within its split. Reading the files
        once instead of once per split halves the time to open a large dataset.

        Raises
        ------
        CalcoreError
            Files without a split column, a split without rows, or what reading a batch
            raises.
        """
        from calcore.io._sampling import sample_splits

        return sample_splits(self, max_rows, seed=seed)

    def sample_slice_columns(self, max_rows: int, *, seed: int = 0, splits: bool = False) -> dict:
        """The slice columns of the rows :meth:`sample` keeps (``splits=True``: of each
        split's sample of :meth:`sample_splits`), read without the scores and labels.

        The rows a sample keeps depend only on the seed and on each row's split, so a
        sample can be drawn from a stream without slice columns (faster: on the 100M-row
        demo, 1.9 s instead of 2.6 s) and its slice columns read later, when they are
        needed. Parquet and Arrow IPC files are then read for the split and slice
        columns alone; CSV and NPZ sources are read whole.

        Returns
        -------
        dict
            ``{column: MetadataColumn}`` equal to ``self.sample(max_rows,
            seed=seed)[0].metadata``; with ``splits``, ``{"calib": {...}, "test":
            {...}}``, each equal to that split's sample's ``metadata``.

        Raises
        ------
        CalcoreError
            A stream without slice columns (or without a split column, with ``splits``),
            no rows, or what reading a batch raises (file, column, row).

        Examples
        --------
        >>> import os, tempfile, calcore
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = os.path.join(folder.name, "preds.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("label,p_a,p_b,country\\na,0.9,0.1,fr\\nb,0.3,0.7,de\\nb,0.6,0.4,fr\\n")
        >>> stream = calcore.scan(path, slice_columns=["country"])
        >>> kept = stream.sample_slice_columns(2, seed=1)["country"]
        >>> kept.values.tolist() == stream.sample(2, seed=1)[0].metadata["country"].values.tolist()
        True
        >>> folder.cleanup()
        """
        from calcore.io._sampling import sample_slice_columns

        return sample_slice_columns(self, max_rows, seed=seed, splits=splits)

    def slice_batches(self):
        """The slice columns of every batch of the stream's rows, without the predictions.

        Parquet and Arrow IPC files are read for the split and slice columns alone; CSV
        and NPZ sources are read whole (and validated, as by :meth:`batches`). Used for
        the passes that cut a column into quantile ranges before the rows are evaluated.

        Returns
        -------
        iterator of calcore.io._sampling.SliceBatch
            ``slice_values``, ``file`` and ``first_row`` per batch, as in
            :class:`StreamBatch`.

        Raises
        ------
        CalcoreError
            A stream without slice columns, or what reading a batch raises.
        """
        from calcore.io._sampling import need_slice_columns, slice_batches

        need_slice_columns(self)
        return slice_batches(self)

    def batches(self, *, read_ahead: bool = True) -> Iterator[StreamBatch]:
        """Validated batches of rows, in a fixed order; reopens the files on every call.

        With ``read_ahead`` the next batch is read and validated on a thread while the
        caller works on this one (same batches, same order).

        Raises
        ------
        CalcoreError
            A file that vanished or cannot be read (naming it and the row group), a
            value that fails validation (naming the file, column and row).
        """
        batches = prefetched(self._batches()) if read_ahead else self._batches()
        if self.progress is None and self.transform is None:
            return batches
        return self._reporting(batches)

    def _reporting(self, batches):
        for b in batches:
            if self.progress is not None:
                self.progress(b)
            if self.transform is not None:
                preds = b.preds
                if self.transform_metadata:
                    from calcore.io._sampling import batch_metadata

                    preds = preds.with_metadata(batch_metadata(self, b))
                b = replace(b, preds=self.transform(preds))
            yield b

    def _batches(self, state: "_KindState | None" = None) -> Iterator[StreamBatch]:
        state = state or _KindState(self._options["scores"])
        position = 0
        for path in self.files:
            for preds, first_row, extras, codes, kept in _file_batches(self, path, state):
                name = short_name(self, path)
                yield StreamBatch(preds, name, first_row, position, extras, codes, kept)
                position += preds.n_samples


def short_name(stream: PredictionStream, path: str) -> str:
    return _short_path(stream.files, path)


def _short_path(files, path: str) -> str:
    """A file's name in messages: its base name, or its path below the files' common folder."""
    if len(files) == 1:
        return os.path.basename(path)
    return os.path.relpath(path, os.path.commonpath(files))


def source_files(source) -> tuple[str, ...]:
    """The data files of a path, directory or glob, sorted (refused when there are none,
    or when one is not a regular file: a FIFO or device would block or never end)."""
    text = os.fspath(source)
    if any(ch in text for ch in "*?["):
        hits = globlib.glob(text, recursive=True)  # a FIFO too: refused below, not skipped
        found = sorted(p for p in hits if os.path.exists(p) and not os.path.isdir(p))
        found = [p for p in found if not os.path.basename(p).startswith((".", "_"))]
    elif os.path.isdir(text):
        found = _data_files(text)
    elif os.path.exists(text):
        found = [text]
    else:
        raise CalcoreError(f"{text}: no such file or directory.")
    for path in found:
        try:
            check_regular(path)
        except FileNotFoundError:  # a broken link, or removed since it was listed
            raise CalcoreError(f"{path}: no such file (a broken link?).") from None
    if not found:
        raise CalcoreError(
            f"{text}: no data files found. Give a Parquet, Arrow IPC, CSV or NPZ file, a "
            f"directory of them or a glob such as 'logs/*.parquet'."
        )
    return tuple(found)


IPC_EXTENSIONS = (".arrow", ".feather", ".ipc")
CSV_EXTENSIONS = (".csv", ".tsv", ".txt")
DATA_EXTENSIONS = (".parquet", ".pq", *IPC_EXTENSIONS, ".csv", ".tsv", ".npz")


def _is_ipc(path: str) -> bool:
    return path.lower().endswith(IPC_EXTENSIONS)


def _format(path: str) -> str:
    """``"parquet"``, ``"arrow"`` (IPC), ``"csv"`` or ``"npz"``: by extension, else by the
    first bytes (as :func:`calcore.load_predictions` does)."""
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
        raise _gone(path) from None
    if magic.startswith(b"PAR1"):
        return "parquet"
    if magic.startswith(b"ARROW1"):
        return "arrow"
    return "npz" if magic.startswith(b"PK\x03\x04") else "csv"


def file_format(path: str) -> str:
    """``"parquet"``, ``"arrow"`` (IPC), ``"csv"`` or ``"npz"``: how :func:`scan` reads a
    data file (by its extension, else by its first bytes)."""
    return _format(path)


#: Formats whose files can share a stream: Arrow-typed files together, else one format.
_FAMILY = {"parquet": "arrow", "arrow": "arrow", "csv": "csv", "npz": "npz"}


def _family(files: Sequence[str], display: str) -> str:
    """The files' family; a workbook among them (any name but Parquet's and IPC's) is
    refused as the whole-file loader refuses one: save it as CSV."""
    from calcore.io._source import refuse_spreadsheet_file

    for p in files:
        if _format(p) in ("csv", "npz"):
            refuse_spreadsheet_file(p, _short_path(files, p))
    families = {_FAMILY[_format(p)] for p in files}
    if len(families) > 1:
        kinds = sorted({_format(p) for p in files})
        raise CalcoreError(
            f"{display}: the files mix formats ({', '.join(kinds)}). Scan one format at a "
            f"time (Parquet and Arrow IPC files may be mixed), e.g. with a glob such as "
            f"'logs/*.parquet'."
        )
    return families.pop()


def _n_rows(path: str) -> int:
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    try:
        if _is_ipc(path):
            with ipc.open_file(path) as reader:
                return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
        return pq.ParquetFile(path).metadata.num_rows
    except FileNotFoundError:
        raise _gone(path) from None


def _chunks(path: str, columns, batch_rows: int) -> list:
    """``(what, batches)`` per independently readable chunk of a file: Parquet row groups
    (decoded ahead, :mod:`calcore.io._row_groups`), Arrow IPC record batches; ``batches``
    yields Arrow tables or record batches of at most ``batch_rows`` rows."""
    import pyarrow.ipc as ipc

    from calcore.io._row_groups import row_group_chunks

    if not _is_ipc(path):
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


def _gone(path: str) -> CalcoreError:
    return CalcoreError(f"{path}: the file disappeared while it was being read.")


def _fingerprint(path: str) -> tuple[int, int]:
    """Size and modification time of a file (ns): what a rewrite changes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _gone(path) from None
    return st.st_size, st.st_mtime_ns


def check_unchanged(stream: "PredictionStream", path: str) -> None:
    """Refuse a file rewritten since :func:`scan` looked at it: the passes over a stream
    (profile, ranks, sums) must all see the same rows, or the result would mix two files."""
    if not stream.fingerprints:
        return
    before = stream.fingerprints[stream.files.index(path)]
    if _fingerprint(path) != before:
        raise CalcoreError(
            f"{path}: the file changed since the stream was opened (size or modification "
            "time); no result was computed. Scan it again once it is no longer being written."
        )


def _data_files(folder: str) -> list[str]:
    """Every data file (Parquet, Arrow IPC, CSV, NPZ) below ``folder``, by name, sorted.

    Hidden and ``_``-prefixed files and folders (``_SUCCESS``, ``.crc``, ``_temporary``)
    are skipped, and other files are not ours to read. Listed by name rather than with
    ``pyarrow.dataset``, which opens every file to unify schemas and fails on a stray one.
    """
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        out += [
            os.path.join(root, f)
            for f in names
            if f.lower().endswith(DATA_EXTENSIONS) and not f.startswith((".", "_"))
        ]
    return sorted(out)


def _schema(path: str):
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    try:
        if _is_ipc(path):
            with ipc.open_file(path) as reader:
                return reader.schema
        return pq.read_schema(path)
    except FileNotFoundError:
        raise _gone(path) from None
    except UnicodeDecodeError as exc:  # bad bytes in a column name
        from calcore.io._parquet import non_utf8_name

        raise non_utf8_name(path, exc) from None
    except (pa.ArrowException, OSError) as exc:
        raise CalcoreError(
            f"{path}: not a readable {'Arrow IPC' if _is_ipc(path) else 'Parquet'} file "
            f"({' '.join(str(exc).split())[:200]}). Re-export it or remove it from the directory."
        ) from None


def _numeric(t) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def scan(
    source,
    *,
    label_column: str | None = None,
    scores: str = "auto",
    split_column: str | None = None,
    split: str | None = None,
    renormalize: bool = False,
    positive_class: str | None = None,
    score_columns: Sequence[str] | None = None,
    weight_column: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    percent: bool = False,
    slice_columns: Sequence[str] | None = None,
    keep_columns: bool = False,
    decimal: str = ".",
) -> PredictionStream:
    """Open predictions stored as Parquet, Arrow IPC, CSV or NPZ for streamed evaluation.

    Parameters
    ----------
    source : str or os.PathLike
        A ``.parquet``, Arrow IPC (``.arrow``, ``.feather``, ``.ipc``), ``.csv``/``.tsv``
        or ``.npz`` file, a directory of them (searched recursively; hive partition
        folders such as ``date=2026-11-01/`` are fine) or a glob (``"logs/*.parquet"``,
        ``"logs/**/*.csv"``). The files of one stream share a format (Parquet and IPC
        may mix) and the used columns.
    label_column, split_column, split, renormalize, positive_class, score_columns :
        As in :func:`calcore.load_predictions`.
    scores : {"auto", "probs", "logits"}, default "auto"
        As in :func:`calcore.load_predictions`, decided on the first batch: values that
        look like percentages there (every value in [0, 100], some above 1, every row
        summing to 100; a single column in [0, 100] with some value above 1) are refused
        with ``"auto"`` rather than read as logits.
    weight_column : str or False, optional
        Column (NPZ: array) of row weights (frequency weights: finite, >= 0). Default: a
        column named ``weight``, ``weights``, ``sample_weight`` or ``example_weight`` (any
        case), if any; ``False``: no weights.
    batch_rows : int, default 2,000,000
        Rows per batch, at most ``MAX_BATCH_VALUES / n_score_columns`` (16.7M values, so a
        1,000-class file reads 16,777 rows at a time); memory is a few times
        ``rows x columns x 8`` bytes. Arrow IPC files are read a record batch at a time, so
        their record batches should be of a similar size; CSV files in pieces of about
        ``batch_rows`` lines (64 KiB to 256 MiB).
    percent : bool, default False
        As in :func:`calcore.load_predictions`: the scores are probabilities in percent,
        every batch is divided by 100 before it is validated (an error with logits).
    slice_columns : sequence of str, optional
        Columns (NPZ: arrays of one value per row) read with every batch, for
        :func:`calcore.evaluate_by` on the stream; never taken for scores. Only these
        are read: a stream keeps no other metadata.
    keep_columns : bool, default False
        Also read every column of the files, in their order, into each batch's
        ``input_table`` (what ``calcore apply`` writes back beside the recalibrated
        scores). Every file must then have the first file's columns, in its order (and,
        Parquet and IPC, its types); batches are shorter, so that the cells of a batch
        stay within :data:`MAX_KEPT_CELLS`. Not for NPZ archives, which have no columns.
    decimal : {".", ","}, default "."
        As in :func:`calcore.load_predictions`: ``","`` reads CSV numbers written with a
        decimal comma (``0,25``), exactly; without it such files are refused naming the
        first file, its column and first cell. Parquet, IPC and NPZ files store numbers.

    Returns
    -------
    PredictionStream

    Raises
    ------
    CalcoreError
        No such path, no data file, files of several formats, an unreadable file,
        undetectable columns, or a column missing from a file or whose type differs between
        files (naming both files and the column).

    Examples
    --------
    >>> import calcore
    >>> # report = calcore.evaluate(calcore.scan("logs/*.parquet"), bins=15)
    """
    from calcore.io._decimal import check_decimal
    from calcore.io._load import check_options

    check_options(scores, split, None, percent)  # the checks of load_predictions
    check_decimal(decimal)
    ROWS.check(batch_rows, "batch_rows")
    files = source_files(source)
    display = _display(source, files)
    family = _family(files, display)
    named = (slice_columns,) if isinstance(slice_columns, str) else tuple(slice_columns or ())
    named = tuple(dict.fromkeys(str(c) for c in named))
    if family == "npz":
        roles, weight, n_rows, n_score_columns = _npz_roles(
            files, display, label_column, weight_column, named
        )
    else:
        from calcore.io._scan import checked_slice_columns

        layout = _arrow_columns(files) if family == "arrow" else _csv_columns(files, decimal)
        weight = pick_weight(layout.columns, weight_column, display)
        taken = dict(label_column=label_column, split_column=split_column)
        named = checked_slice_columns(named, layout.columns, weight, taken, display)
        roles = detect_roles(
            tuple(c for c in layout.columns if c != weight and c not in named),
            source=display,
            is_numeric=layout.is_numeric,
            label_column=label_column,
            split_column=split_column,
            score_columns=score_columns,
            scores_kind=scores,
        )
        roles = layout.text_problems(roles)
        if roles.problems:
            raise CalcoreError.from_advice(roles.problems[0])
        layout.check_types(roles, weight)
        n_rows = sum(layout.rows_of(path, _used(roles, weight) + list(named)) for path in files)
        n_score_columns = len(roles.scores)
    _check_split_column(display, roles, split)
    kept_columns = _kept_columns(files, family, display) if keep_columns else ()
    if kept_columns:
        batch_rows = min(batch_rows, max(1, MAX_KEPT_CELLS // len(kept_columns)))
    used = _used(roles, weight)
    fingerprints = tuple(_fingerprint(path) for path in files)
    # NPZ: 1-D scores with both class names are a two-class file (as in load_predictions)
    binary = n_score_columns == 1 and len(roles.class_names) < 2
    names = roles.class_names
    options = dict(
        scores=scores,
        renormalize=renormalize,
        positive_class=positive_class,
        binary=binary,
        used=used,
        family=family,
        label_column=label_column,
        percent=percent,
        extras=list(named),
        kept_columns=kept_columns,
        decimal=decimal,
    )
    stream = PredictionStream(
        display,
        files,
        roles,
        names,
        n_rows,
        split,
        max(1, min(batch_rows, MAX_BATCH_VALUES // max(n_score_columns, 1))),
        options,
        weight_column=weight,
        fingerprints=fingerprints,
        rows_estimated=family == "csv",
        slice_columns=named,
    )
    # The class names (and the scores' kind) come from the first batch with rows.
    state = _KindState(scores)
    for b in stream._batches(state):
        names = b.preds.class_names
        break
    notes = scan_notes(display, roles, state.decided, percent=percent, kept=named)
    kind = None if state.decided is None else state.decided[0]
    options = {**options, "names": names}
    return replace(stream, class_names=names, _options=options, notes=notes, scores_kind=kind)


def scan_notes(display: str, roles: Roles, decided, *, percent: bool, kept) -> tuple[str, ...]:
    """The notes of :attr:`PredictionStream.notes`, worded as a loaded file's report says
    them (``decided``: the scores' kind and reason, None when no row was read)."""
    notes = []
    if decided is not None:
        kind, reason = decided
        notes.append(scores_note(kind, reason, percent=percent))
    if kept:
        notes.append("Kept for slicing (not scores): " + ", ".join(map(repr, kept)) + ".")
    for col, why in zip(roles.ignored, roles.ignored_reasons, strict=True):
        if col not in kept:
            notes.append(with_terms(f"{display}: column {col!r} was ignored ({why})."))
    return tuple(notes)


def _kept_columns(files, family: str, display: str) -> tuple[str, ...]:
    """The columns of the files, in the first file's order, for ``keep_columns``: every
    file must have the same (Parquet and IPC: with the same types), or the batches would
    not fit one output table."""
    if family == "npz":
        raise CalcoreError(
            f"{display}: an NPZ archive has no columns to keep; convert it to Parquet, Arrow "
            "IPC or CSV (e.g. with pandas) to keep columns beside the scores."
        )
    if family == "csv":
        first = _csv_head(files, files[0]).layout.columns
        for path in files[1:]:
            got = _csv_head(files, path).layout.columns
            _same_columns(files[0], tuple(first), path, tuple(got))
        return tuple(first)
    first = _schema(files[0])
    for path in files[1:]:
        got = _schema(path)
        _same_columns(files[0], tuple(first.names), path, tuple(got.names))
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


def _same_columns(first_path: str, first: tuple, path: str, got: tuple) -> None:
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


def _check_split_column(name: str, roles: Roles, split: str | None) -> None:
    if split is not None and roles.split is None:
        raise CalcoreError(
            f"{name}: split={split!r} was requested but there is no split "
            f"column (name one with split_column=)."
        )


def _used(roles: Roles, weight: str | None) -> list[str]:
    """The columns read: label, scores, split and weight."""
    used = [roles.label, *roles.scores] + ([roles.split] if roles.split else [])
    return used + ([weight] if weight is not None else [])


@dataclass(frozen=True)
class _Layout:
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


def _arrow_columns(files):
    """Columns and a numeric test from the first file's schema, and a check of each file
    (same types for the used columns) returning its rows."""
    first = _schema(files[0])
    types = {f.name: f.type for f in first}

    def is_numeric(col: str) -> tuple[bool, str]:
        ok = _numeric(types[col])
        return ok, "" if ok else f"not numeric (type {types[col]})"

    def check_file(path: str, used) -> int:
        schema = _schema(path) if path != files[0] else first
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
        return _n_rows(path)

    def check_numeric(roles: Roles, weight: str | None) -> None:
        from calcore.io._parquet import non_numeric_scores

        name = _short_path(files, files[0])
        if weight is not None and not _numeric(types[weight]):
            raise CalcoreError(
                f"{name}, column {weight!r}: has type {types[weight]}, but weights must be "
                "numbers. Store them as floats or integers."
            )
        for col in roles.scores:
            if not _numeric(types[col]):
                raise non_numeric_scores(name, col, types[col])

    return _Layout(tuple(first.names), is_numeric, check_file, check_numeric)


def _csv_columns(files, decimal: str = "."):
    """Columns and a numeric test from the first file's header and first rows, and a check
    of each file's header returning its estimated rows (CSV files have no row count)."""
    from calcore.io._decimal import with_decimal
    from calcore.io._scan import numeric_in_preview

    first = _csv_head(files, files[0])
    layout = with_decimal(first.layout, decimal, _short_path(files, files[0]))

    def check_file(path: str, used) -> int:
        head = first if path == files[0] else _csv_head(files, path)
        missing = [c for c in used if c not in head.layout.columns]
        if missing:
            raise CalcoreError(
                f"{path}: column {missing[0]!r} is missing (it is in {files[0]}). Every file "
                f"must have the same columns."
            )
        return head.estimated_rows()

    def text_problems(roles: Roles) -> Roles:
        from calcore.io._decimal import with_decimal_commas

        if decimal == ",":
            return roles  # asked for: read as numbers
        name = _short_path(files, files[0])  # the file whose first rows were read
        return with_decimal_commas(roles, layout.columns, layout.preview, name, layout.delimiter)

    is_numeric = numeric_in_preview(layout.columns, layout.preview, True, decimal)
    return _Layout(layout.columns, is_numeric, check_file, text_problems=text_problems)


def _csv_head(files, path: str):
    from calcore.io._csv_stream import csv_head

    try:
        return csv_head(path, _short_path(files, path))
    except FileNotFoundError:
        raise _gone(path) from None


def _npz_roles(files, display: str, label_column, weight_column, named=()):
    """Roles, weight array, rows and score columns of NPZ archives (every archive must
    have the first one's arrays, class names and score width, and the slice arrays
    ``named``, one value per row)."""
    from calcore.io._npz_stream import NpzArchive
    from calcore.io._scan import npz_roles

    archives = [NpzArchive(p, _short_path(files, p), label_column=label_column) for p in files]
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


def _display(source, files) -> str:
    return os.fspath(source) if len(files) > 1 else os.path.basename(files[0])


@dataclass
class _KindState:
    """The scores' kind, decided on the first batch and then held for the whole stream."""

    requested: str
    decided: tuple[str, str] | None = None


def _file_batches(stream: PredictionStream, path: str, state: _KindState):
    """``(preds, first row, slice values, split codes, kept table or None)`` of the file's
    batches, validated (weights in ``preds.sample_weight``)."""
    check_unchanged(stream, path)
    read = {"arrow": _arrow_tables, "csv": _csv_tables, "npz": _npz_tables}
    for raw, weights, extras, kept in read[stream._options["family"]](stream, path):
        validated = _validate_batch(stream, raw, state)
        if validated is not None:
            preds, selected, codes = validated
            w = _batch_weights(stream, weights, raw, selected)
            if w is not None:
                w.setflags(write=False)
                preds = replace(preds, sample_weight=w)
            if selected is not None:
                extras = {c: v.take(selected) for c, v in extras.items()}
                kept = None if kept is None else kept.take(selected)
            yield preds, raw.row_names.first, extras, codes, kept


def arrow_batches(stream: PredictionStream, path: str, columns: list[str]):
    """``(table of one record batch, its row names)`` of a Parquet or Arrow IPC file, with
    ``columns`` only: the names number the file's rows (from the batch's first row) and,
    in a file of several chunks, name the row group or record batch; a damaged chunk is
    named (file, row group, rows)."""
    import pyarrow as pa

    from calcore.io._parquet import unreadable_chunk

    name = short_name(stream, path)
    first_row = 0
    try:
        chunks = _chunks(path, columns, stream.batch_rows)
    except FileNotFoundError:
        raise _gone(path) from None
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
                raise _gone(path) from None
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


def _arrow_tables(stream: PredictionStream, path: str):
    """``(raw table, weights or None, slice columns)`` per record batch of a Parquet or
    Arrow IPC file."""
    import pyarrow as pa

    from calcore.io._parquet import check_utf8

    opts, roles = stream._options, stream.roles
    name = short_name(stream, path)
    kept = opts.get("kept_columns")
    # every column when they are kept (in the files' order), else only the used ones
    columns = list(kept) if kept else opts["used"] + opts["extras"]
    for table, rows in arrow_batches(stream, path, columns):
        raw = arrow_raw_table(table, name, "arrow" if _is_ipc(path) else "parquet", roles, rows)
        weights = None
        if stream.weight_column is not None:
            # decimals (and integers) as float64; a null becomes NaN, refused by name
            column = table[stream.weight_column].cast(pa.float64())
            weights = column.to_numpy(zero_copy_only=False)
        extras = {c: table[c] for c in opts["extras"]}
        for c, values in extras.items():
            check_utf8(values, source=name, name=c, rows=rows)
        yield raw, weights, extras, (table if kept else None)


def _csv_tables(stream: PredictionStream, path: str):
    """``(raw table, weights or None, slice columns' text)`` per piece of a CSV file (see
    :mod:`calcore.io._csv_stream`): rows named by their file line."""
    from calcore.io._csv_stream import csv_pieces, read_piece

    roles, weight = stream.roles, stream.weight_column
    head = _csv_head(stream.files, path)
    floats = [*roles.scores] + ([weight] if weight is not None else [])
    texts = [roles.label] + ([roles.split] if roles.split else [])
    extras = stream._options["extras"]
    kept = stream._options.get("kept_columns")
    # kept columns: every cell's text but the scores' (read as numbers, the text of a
    # weight too: slower for that column, but its cells are written back as they were)
    as_text = [c for c in kept if c not in roles.scores] if kept else []
    name = short_name(stream, path)
    decimal = stream._options.get("decimal", ".")
    if decimal != head.layout.decimal:  # every file of the stream, as the first was checked
        from calcore.io._decimal import with_decimal

        head = replace(head, layout=with_decimal(head.layout, decimal, name))
    pieces = csv_pieces(path, name, head, head.piece_bytes(stream.batch_rows))
    k = len(roles.scores)
    try:
        for src, layout in pieces:
            wanted = list(dict.fromkeys(texts + extras + as_text))
            values, text, lines = read_piece(src, layout, floats=floats, texts=wanted)
            # a piece is sized from the first lines' length: cut it into batches of at
            # most batch_rows rows, whatever the lines further down are like
            for a in range(0, values.shape[0], stream.batch_rows):
                b = min(a + stream.batch_rows, values.shape[0])
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
        raise _gone(path) from None


def _npz_tables(stream: PredictionStream, path: str):
    """``(raw table, weights or None, slice arrays)`` per window of rows of an NPZ archive."""
    from calcore.io._npz_stream import NpzArchive

    name = short_name(stream, path)
    archive = NpzArchive(path, name, label_column=stream._options["label_column"])
    extras = stream._options["extras"]
    windows = archive.windows(stream.batch_rows, weight=stream.weight_column, extras=extras)
    for c, weights, first_row, arrays in windows:
        raw = RawTable(
            name,
            "npz",
            None,
            tuple(archive.files),
            stream.roles,
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


def _class_indices(raw: RawTable, selected, opts, ctx):
    """Class names and label indices of a batch's (selected) rows.

    The labels are mapped through their distinct values (``raw.labels`` holds them
    dictionary-encoded: ``(distinct texts, index per row)``), which is what makes 10
    million labels cost milliseconds instead of a sort of 10 million strings. A bad value
    is re-checked on the rows themselves, so that the message names its first row.
    """
    distinct, index = raw.labels
    if selected is not None:
        # only the values the selected rows use (a split may lack a class); counted,
        # not sorted, and renumbered through a table: O(rows)
        index = index[selected]
        used = np.flatnonzero(np.bincount(index, minlength=len(distinct)))
        renumbered = np.zeros(len(distinct), dtype=np.intp)
        renumbered[used] = np.arange(used.size)
        distinct, index = distinct[used], renumbered[index]
    options = dict(binary=opts["binary"], positive_class=opts["positive_class"])
    try:
        names, per_value, _ = class_labels(
            distinct, raw.roles.class_names, ctx=InputContext(raw.source), **options
        )
    except CalcoreError:
        class_labels(distinct[index], raw.roles.class_names, ctx=ctx, **options)  # names the row
        raise
    return names, per_value[index]


def _batch_weights(stream, weights, raw: RawTable, selected):
    """The weights of a batch's ``selected`` rows (None: every row; None without a weight
    column), validated."""
    column = stream.weight_column
    if column is None:
        return None
    rows = raw.row_names
    w = np.asarray(weights)
    if selected is not None:  # only the selected rows' weights count (as when loading)
        w, rows = w[selected], SelectedRowNames(raw.row_names, selected)
    return check_sample_weight(
        w,
        w.shape[0],
        source=raw.source,
        row=rows,
        column=column,
        allow_all_zero=True,  # checked on the whole stream
    )


def _validate_batch(stream, raw: RawTable, state):
    """The selected rows of one batch as Predictions, their indices in the batch (None:
    every row) and their split codes (None without a split column), or None when the
    split leaves none."""
    from calcore.io._load import FIRST_ROWS, decide_kind, score_context, validate_scores

    opts = stream._options
    selected = codes = None
    if raw.roles.split is not None:  # validated also when every row is read
        ctx = InputContext(raw.source, row=LabelRowNames(raw.row_names, raw.roles.split))
        codes = split_codes(*raw.split, ctx=ctx)
        if stream.split is not None:
            selected = np.flatnonzero(codes == SPLITS.index(stream.split))
            if selected.size == 0:
                return None
            codes = codes[selected]
    rows = raw.row_names if selected is None else SelectedRowNames(raw.row_names, selected)
    ctx = InputContext(raw.source, row=LabelRowNames(rows, raw.roles.label))
    names = opts.get("names")
    got, labels = _class_indices(raw, selected, opts, ctx)
    if names is not None and got != names:
        raise CalcoreError(
            f"{raw.source}: the labels of rows from {raw.row_names(0)} make the classes "
            f"{list(got)}, but the first rows of the stream made {list(names)}. Give "
            f"positive_class= (binary files with text labels) so that every batch agrees."
        )
    percent = opts["percent"]
    if state.decided is None:
        kind, reason = decide_kind(raw, opts["scores"], percent=percent, scope=FIRST_ROWS)
        if reason.startswith(SCORES_AUTO_SAW):  # from values: those of this batch
            reason += FIRST_ROWS
        state.decided = kind, reason
    kind, reason = state.decided
    scores = raw.scores if selected is None else raw.scores[selected]
    probs, logits, _, _ = validate_scores(
        scores,
        kind=kind,
        auto=opts["scores"] == "auto" and not percent,
        ctx=score_context(raw, selected),
        renormalize=opts["renormalize"],
        reason=reason,
        percent=percent,
    )
    for arr in (probs, labels, logits):
        if arr is not None:
            arr.setflags(write=False)
    preds = Predictions(
        np.ascontiguousarray(probs, dtype=np.float64),
        np.asarray(labels, dtype=np.int64),
        got,
        logits,
    )
    return preds, selected, codes


def concatenate_batches(parts: list) -> Predictions:
    """Batches of one stream (same classes) as one Predictions, in order: kept for its
    importers, :func:`calcore.predictions.concat` (which calcore's code calls)."""
    from calcore.predictions import concat

    return concat(parts)


def validated_rows(reader, raw: RawTable, weights, decided: tuple[str, str]):
    """One batch read elsewhere (an engine's task) validated as :func:`scan`'s batches are.

    Parameters
    ----------
    reader : object with ``_options``, ``split`` and ``weight_column``
        The stream's settled reading options (class names, scores' kind request,
        percent, renormalize, binary, positive class), as :func:`scan` made them.
    raw : RawTable
        The batch's scores, dictionary-encoded labels (:func:`encoded_labels`) and split;
        its ``row_names`` name a bad row (file and row).
    weights : ndarray or None
        The weight column's values (float64, NaN for a null).
    decided : (str, str)
        The scores' kind and why, decided once for the whole source.

    Returns
    -------
    (Predictions, ndarray or None) or None
        The selected rows (weights in ``sample_weight``) and their indices in the batch
        (None: every row); None when the split leaves none.

    Raises
    ------
    CalcoreError
        A bad label, score, split value or weight, naming the row.
    """
    validated = _validate_batch(reader, raw, _KindState(reader._options["scores"], decided))
    if validated is None:
        return None
    preds, selected, _ = validated
    w = _batch_weights(reader, weights, raw, selected)
    if w is not None:
        w.setflags(write=False)
        preds = replace(preds, sample_weight=w)
    return preds, selected

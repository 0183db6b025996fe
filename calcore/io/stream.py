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
format (Parquet and IPC may mix). Each file is read by :mod:`calcore.io._readers`, told
what to read by a :class:`~calcore.io._readers.ReadSpec`: Parquet and IPC files one row
group or record batch at a time with pyarrow, only the label, split, weight and score
columns (pyarrow rather than DuckDB: calcore already depends on it, and the row-group
loop names the file and row group of a damaged chunk; 100 million binary rows in one
1 GB file: see ``benchmarks/bench_scale.py``); CSV files in pieces of whole lines by the
loader's own CSV reader, so messages name file lines; NPZ archives a window of rows at a
time. Samples are drawn by :mod:`calcore.io._sampling` from the batches read here.

Columns are detected as :func:`calcore.load_predictions` detects them (same rules,
same messages), from the first file's schema; every other file must have the same
types for those columns. Values are validated batch by batch with the loader's checks
(:mod:`calcore.io._rows`, the same code as a file loaded whole); a message names the
file, the column and the file's row (0-based). The scores' kind (probabilities or
logits) is decided on the first batch and then held: a later batch that contradicts it
is an error, never a silent switch.

The size budget of :func:`load_predictions` does not apply: nothing here is held
beyond one batch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Sequence

import numpy as np

from calcore.foundation.deprecation import renamed_function
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import ROWS
from calcore.foundation.tuning import DEFAULT_BATCH_ROWS, MAX_BATCH_VALUES, MAX_KEPT_CELLS
from calcore.io._bottom_k import BottomK
from calcore.io._columns import Roles, detect_roles, pick_weight
from calcore.io._files import source_files
from calcore.io._load_report import scores_note, with_terms
from calcore.io._prefetch import prefetched
from calcore.io._readers import (
    ReadSpec,
    SliceBatch,
    arrow_slice_batches,
    file_format,
    gone,
    read_batches,
    used_columns,
)
from calcore.io._rows import BatchRules, KindState, validate_batch
from calcore.io._sampling import (
    batch_metadata,
    bottom_k,
    bottom_k_by_split,
    kept_metadata,
    need_slice_columns,
    need_split_column,
)
from calcore.io._source import refuse_spreadsheet_file
from calcore.io._stream_columns import (
    arrow_columns,
    columns_to_keep,
    csv_columns,
    npz_files_roles,
    short_path,
)
from calcore.io.options import LoadOptions, check_split, options_from
from calcore.predictions import Predictions, concat

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
    #: CSV text cells or NPZ arrays), read by
    #: :class:`calcore.predictions.slicing_batches.BatchSlicer`.
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
    options : LoadOptions
        The options the stream was opened with.
    family : {"arrow", "csv", "npz"}
        How its files are read (Parquet and Arrow IPC: ``"arrow"``).

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
    #: The options the stream was opened with (:class:`calcore.LoadOptions`).
    options: LoadOptions = field(default_factory=LoadOptions, repr=False)
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
    #: How the files are read: ``"arrow"`` (Parquet, Arrow IPC), ``"csv"`` or ``"npz"``.
    family: str = "arrow"
    #: A single score column holding P(positive class) (the binary shortcut).
    binary: bool = False
    #: Every column of the files, in their order, read into ``StreamBatch.input_table``
    #: (``scan(keep_columns=True)``); empty: none.
    kept_columns: tuple[str, ...] = ()
    #: Whether ``class_names`` are those of the first rows read, which every batch must
    #: then make too (False while :func:`scan` reads the first batch).
    classes_settled: bool = field(default=False, repr=False)

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
            need_slice_columns(self.name, self.slice_columns)
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
        check_split(split)
        _check_split_column(self.name, self.roles, split)
        return replace(self, split=split)

    def sample(self, max_rows: int, *, seed: int = 0) -> tuple[Predictions, int]:
        """A seeded uniform sample of at most ``max_rows`` rows, and the number of rows read.

        Every row gets a uniform from ``(seed, position)``
        (:func:`calcore.foundation.keyed_random.row_uniforms`); the ``max_rows`` rows with the
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
        ROWS.check(max_rows, "max_rows")
        rows = ((None, b.preds, b.slice_values) for b in self.batches())
        kept = bottom_k(rows, max_rows, seed)
        return self._sampled(kept), kept.n_read

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
        ROWS.check(max_rows, "max_rows")
        need_split_column(self.name, self.roles.split)
        whole = replace(self, split=None)
        rows = ((b.split_codes, b.preds, b.slice_values) for b in whole.batches())
        kept = bottom_k_by_split(rows, max_rows, seed, self.name, self.roles.split)
        return {split: (self._sampled(into), into.n_read) for split, into in kept.items()}

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
        ROWS.check(max_rows, "max_rows")
        need_slice_columns(self.name, self.slice_columns)
        if splits:
            need_split_column(self.name, self.roles.split)
            whole = replace(self, split=None)
            rows = whole._slice_rows(codes=True)
            kept = bottom_k_by_split(rows, max_rows, seed, self.name, self.roles.split)
            return {split: self._metadata(into) for split, into in kept.items()}
        kept = bottom_k(self._slice_rows(codes=False), max_rows, seed)
        if not kept.parts:
            raise CalcoreError(f"{self.name}: no rows to sample.")
        return self._metadata(kept)

    def _sampled(self, kept: BottomK) -> Predictions:
        """The rows a sampler kept, with the slice columns as metadata."""
        parts = kept.rows()
        if not parts:
            raise CalcoreError(f"{self.name}: no rows to sample.")
        preds = concat([q for _, _, q, _ in parts])
        if not self.slice_columns:
            return preds
        return preds.with_metadata(self._metadata(kept))

    def _metadata(self, kept: BottomK) -> dict:
        return kept_metadata(kept, self.family, self.slice_columns)

    def _slice_rows(self, *, codes: bool) -> Iterator[tuple]:
        """``(split codes or None, None, slice values)`` per batch, as samplers take rows."""
        for b in self._slice_batches(codes=codes):
            yield b.split_codes, None, b.slice_values

    def slice_batches(self):
        """The slice columns of every batch of the stream's rows, without the predictions.

        Parquet and Arrow IPC files are read for the split and slice columns alone; CSV
        and NPZ sources are read whole (and validated, as by :meth:`batches`). Used for
        the passes that cut a column into quantile ranges before the rows are evaluated.

        Returns
        -------
        iterator of calcore.io._readers.SliceBatch
            ``slice_values``, ``file`` and ``first_row`` per batch, as in
            :class:`StreamBatch`.

        Raises
        ------
        CalcoreError
            A stream without slice columns, or what reading a batch raises.
        """
        need_slice_columns(self.name, self.slice_columns)
        return self._slice_batches(codes=False)

    def _slice_batches(self, *, codes: bool) -> Iterator[SliceBatch]:
        """The slice columns of every batch of the stream's rows (``codes``: with each
        row's split code, for the rows of every split).

        Parquet and Arrow IPC files are read for the split and slice columns alone (on the
        100M-row demo, 1.4 s for the split and three slice columns, where sampling with
        them took 2.5 s); CSV and NPZ sources are read whole, validated as by
        :meth:`batches`.
        """
        if self.family != "arrow":
            for b in self.batches():
                yield SliceBatch(
                    b.slice_values, b.file, b.first_row, b.split_codes if codes else None
                )
            return
        yield from prefetched(self._arrow_slice_batches(codes=codes))

    def _arrow_slice_batches(self, *, codes: bool) -> Iterator[SliceBatch]:
        for path in self.files:
            check_unchanged(self, path)
            yield from arrow_slice_batches(self._read_spec(path), split=self.split, codes=codes)

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
                    values = b.slice_values
                    preds = preds.with_metadata(
                        batch_metadata(values, self.family, self.slice_columns)
                    )
                b = replace(b, preds=self.transform(preds))
            yield b

    def _batches(self, state: KindState | None = None) -> Iterator[StreamBatch]:
        state = state or KindState(self.options.scores)
        rules = self._rules()
        position = 0
        for path in self.files:
            check_unchanged(self, path)
            spec = self._read_spec(path)
            for raw, weights, extras, kept in read_batches(spec):
                validated = validate_batch(rules, raw, weights, state)
                if validated is None:
                    continue
                preds, selected, codes = validated
                if selected is not None:
                    extras = {c: v.take(selected) for c, v in extras.items()}
                    kept = None if kept is None else kept.take(selected)
                first_row = raw.row_names.first
                yield StreamBatch(preds, spec.name, first_row, position, extras, codes, kept)
                position += preds.n_samples

    def _read_spec(self, path: str) -> ReadSpec:
        """What a reader reads of one of the stream's files (:mod:`calcore.io._readers`)."""
        return ReadSpec(
            path,
            short_name(self, path),
            self.family,
            self.roles,
            self.batch_rows,
            weight=self.weight_column,
            slice_columns=self.slice_columns,
            kept_columns=self.kept_columns,
            decimal=self.options.decimal,
            label_column=self.options.label_column,
        )

    def _rules(self) -> BatchRules:
        """What every batch is checked against (:func:`calcore.io._rows.validate_batch`)."""
        return BatchRules(
            self.options,
            self.split,
            self.weight_column,
            self.binary,
            self.class_names if self.classes_settled else None,
        )


def short_name(stream: PredictionStream, path: str) -> str:
    return short_path(stream.files, path)


#: Formats whose files can share a stream: Arrow-typed files together, else one format.
_FAMILY = {"parquet": "arrow", "arrow": "arrow", "csv": "csv", "npz": "npz"}


def _family(files: Sequence[str], display: str) -> str:
    """The files' family; a workbook among them (any name but Parquet's and IPC's) is
    refused as the whole-file loader refuses one: save it as CSV."""
    for p in files:
        if file_format(p) in ("csv", "npz"):
            refuse_spreadsheet_file(p, short_path(files, p))
    families = {_FAMILY[file_format(p)] for p in files}
    if len(families) > 1:
        kinds = sorted({file_format(p) for p in files})
        raise CalcoreError(
            f"{display}: the files mix formats ({', '.join(kinds)}). Scan one format at a "
            f"time (Parquet and Arrow IPC files may be mixed), e.g. with a glob such as "
            f"'logs/*.parquet'."
        )
    return families.pop()


def _fingerprint(path: str) -> tuple[int, int]:
    """Size and modification time of a file (ns): what a rewrite changes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise gone(path) from None
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
    options: LoadOptions | None = None,
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
    options : LoadOptions, optional
        Every option above but ``split``, ``batch_rows`` and ``keep_columns``, as one
        object (:class:`calcore.LoadOptions`), instead of keyword arguments.

    Returns
    -------
    PredictionStream

    Raises
    ------
    CalcoreError
        No such path, no data file, files of several formats, an unreadable file,
        undetectable columns, or a column missing from a file or whose type differs between
        files (naming both files and the column).
    TypeError
        ``options`` together with a keyword argument it holds.

    Examples
    --------
    >>> import calcore
    >>> # report = calcore.evaluate(calcore.scan("logs/*.parquet"), bins=15)
    """
    options = options_from(options, "scan", locals())  # the keyword arguments
    check_split(split)
    ROWS.check(batch_rows, "batch_rows")
    label_column, split_column = options.label_column, options.split_column
    scores, percent, decimal = options.scores, options.percent, options.decimal
    files = source_files(source)
    display = _display(source, files)
    family = _family(files, display)
    named = tuple(dict.fromkeys(str(c) for c in options.slice_columns))
    if family == "npz":
        roles, weight, n_rows, n_score_columns = npz_files_roles(
            files, display, label_column, options.weight_column, named
        )
    else:
        from calcore.io._detect import checked_slice_columns  # loads pandas: on use

        layout = arrow_columns(files) if family == "arrow" else csv_columns(files, decimal)
        weight = pick_weight(layout.columns, options.weight_column, display)
        named = checked_slice_columns(
            named, layout.columns, weight, display, label_column=label_column,
            split_column=split_column,
        )  # fmt: skip
        roles = detect_roles(
            tuple(c for c in layout.columns if c != weight and c not in named),
            source=display,
            is_numeric=layout.is_numeric,
            label_column=label_column,
            split_column=split_column,
            score_columns=options.score_columns,
            scores_kind=scores,
        )
        roles = layout.text_problems(roles)
        if roles.problems:
            raise CalcoreError.from_advice(roles.problems[0])
        layout.check_types(roles, weight)
        used = used_columns(roles, weight) + list(named)
        n_rows = sum(layout.rows_of(path, used) for path in files)
        n_score_columns = len(roles.scores)
    _check_split_column(display, roles, split)
    kept_columns = columns_to_keep(files, family, display) if keep_columns else ()
    if kept_columns:
        batch_rows = min(batch_rows, max(1, MAX_KEPT_CELLS // len(kept_columns)))
    fingerprints = tuple(_fingerprint(path) for path in files)
    stream = PredictionStream(
        display,
        files,
        roles,
        roles.class_names,
        n_rows,
        split,
        max(1, min(batch_rows, MAX_BATCH_VALUES // max(n_score_columns, 1))),
        options,
        weight_column=weight,
        fingerprints=fingerprints,
        rows_estimated=family == "csv",
        slice_columns=named,
        family=family,
        # NPZ: 1-D scores with both class names are a two-class file (as in load_predictions)
        binary=n_score_columns == 1 and len(roles.class_names) < 2,
        kept_columns=kept_columns,
    )
    # The class names (and the scores' kind) come from the first batch with rows.
    state = KindState(scores)
    names = roles.class_names
    for b in stream._batches(state):
        names = b.preds.class_names
        break
    notes = scan_notes(display, roles, state.decided, percent=percent, kept=named)
    kind = None if state.decided is None else state.decided[0]
    return replace(stream, class_names=names, classes_settled=True, notes=notes, scores_kind=kind)


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


def _check_split_column(name: str, roles: Roles, split: str | None) -> None:
    if split is not None and roles.split is None:
        raise CalcoreError(
            f"{name}: split={split!r} was requested but there is no split "
            f"column (name one with split_column=)."
        )


def _display(source, files) -> str:
    return os.fspath(source) if len(files) > 1 else os.path.basename(files[0])


#: Deprecated for one release: calcore.predictions.concat is the one join of rows.
concatenate_batches = renamed_function(
    "calcore.io.stream.concatenate_batches", "calcore.predictions.concat", concat
)

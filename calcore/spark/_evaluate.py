"""calcore's statistics on Spark: ``calcore.evaluate(calcore.from_spark(df, ...))``.

:func:`from_spark` settles, once and on the driver, what :func:`calcore.scan` settles
on its first batch: the columns' roles, the class names and what the scores hold
(partitions never decide alone). It returns a :class:`SparkStream`, which
:func:`calcore.evaluate` and :func:`calcore.evaluate_by` take as they take a scanned
stream. Its passes (:mod:`calcore.statistics.engine`) run as Spark jobs instead of
loops over files:

* **one pass, one job**: ``DataFrame.mapInArrow`` over the rows sorted by position
  within each partition; each task rebuilds the pass's plan from flat arrays shipped in
  the closure (bin edges, the rank finders' searched prefixes, the KDE score moments),
  validates its Arrow batches with the embedded reader's own code (a bad value is named
  by file and row) and folds them with calcore's own phases
  (:func:`calcore.statistics.passes.partition_states`);
* each task returns its lanes' states as rows ``(first position, partition, lane,
  state)``, the state the bytes of a versioned ``.npz`` of flat arrays (never a pickle);
  the driver collects them with ``toArrow()`` (Spark Connect too: no SparkContext, no
  RDD) and merges them **in the order of each partition's first row position**, so the
  float sums do not depend on which task finished first;
* Poisson bootstrap weights and redrawn labels are keyed by each row's position,
  computed inside Spark (:func:`calcore.spark.with_row_positions`), so they are the
  embedded engine's whatever the partitioning.

Decisions and limits (written here, said in messages):

* the job's arrays carry the driver's calcore version; a task of another calcore refuses
  them (:class:`calcore.statistics.engine.StateVersionError`), and so does the driver a
  state of another version;
* with ``split=``, a row's position is its position among every row of the files (the
  embedded reader counts the selected split's rows only): the bootstrap and the test of
  calibration then draw other (equally valid) numbers than ``scan(..., split=...)``;
* on a Spark source :func:`calcore.evaluate_by` reads quantile-range slice columns
  (``"age:q4"``) to the driver (that column only) to cut them, and leaves out the change
  between the first and last periods of a datetime column (a note says so).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np

from calcore._errors import CalcoreError, quoted
from calcore.io.stream import PredictionStream

__all__ = ["from_spark", "SparkStream", "SparkEngine", "task_states", "SOURCE_NAME"]

#: How a DataFrame is named in messages when ``from_spark`` is given no ``name``.
SOURCE_NAME = "Spark DataFrame"
#: The most distinct labels collected to the driver to settle the class names.
MAX_LABEL_VALUES = 10_000

_STATE_SCHEMA = "first long, part long, seq long, lane string, state binary"


@dataclass(frozen=True, eq=False)
class SparkStream(PredictionStream):
    """A streamed source whose passes run as Spark jobs (:func:`from_spark` makes it).

    :func:`calcore.evaluate` and :func:`calcore.evaluate_by` take it as they take a
    :class:`~calcore.io.stream.PredictionStream`; reading its batches on the driver
    (``batches()``, ``sample()``, transforms) is refused: the rows stay in Spark.
    """

    engine: object = field(default=None, repr=False)

    def batches(self, *, read_ahead: bool = True):
        raise CalcoreError(
            f"{self.name}: a Spark source is read by Spark jobs (calcore.evaluate, "
            "calcore.evaluate_by); its rows are not brought to the driver batch by batch. "
            "Read a sample with df.sample(...).toArrow() and calcore.Predictions if you need "
            "rows in memory."
        )

    def with_transform(self, transform, *, with_metadata: bool = False):
        raise CalcoreError(
            f"{self.name}: transforms (a calibrator's) are applied on Spark with "
            "calcore.spark.apply(df, fitted); evaluate its output with from_spark."
        )

    def with_split(self, split):
        raise CalcoreError(f"{self.name}: call from_spark(df, ..., split={split!r}) instead.")

    def sample(self, max_rows: int, *, seed: int = 0):
        raise CalcoreError(f"{self.name}: samples of a Spark source are not drawn yet.")

    def slice_batches(self):
        """The slice columns of the selected rows, read to the driver (one Arrow table):
        for the quantile ranges' passes of :func:`calcore.evaluate_by`."""
        return self.engine.slice_batches()


class _PositionRows:
    """Names a row of a Spark batch by its file and row (from its position and the
    files' offsets), or by its position when the positions are key hashes."""

    csv = False
    lines = None
    first = None
    chunks = ()
    numbering = "0-based row indices"

    def __init__(self, positions, starts, files, source):
        self.positions, self.starts, self.files, self.source = positions, starts, files, source

    def place(self, i: int) -> tuple[str, str]:
        p = int(self.positions[i])
        if not self.starts:
            return self.source, f"row at position {p}"
        k = max(bisect.bisect_right(self.starts, p) - 1, 0)
        return self.files[k], f"row {p - self.starts[k]} (0-based)"

    def __call__(self, i: int) -> str:
        file, row = self.place(i)
        return row if not self.starts else f"{row} of {file}"


def _read_plan(stream: "SparkStream", offsets) -> str:
    """What a task needs to read its Arrow batches as the embedded reader reads a file's."""
    opts = stream._options
    roles = stream.roles
    return json.dumps(
        {
            "source": stream.name,
            "label": roles.label,
            "split_column": roles.split,
            "scores": list(roles.scores),
            "roles_class_names": list(roles.class_names),
            "weight": stream.weight_column,
            "slices": list(stream.slice_columns),
            "split": stream.split,
            "decided": list(opts["decided"]),
            "options": {k: opts[k] for k in _TASK_OPTIONS},
            "class_names": list(stream.class_names),
            "offsets": offsets,
            "position": opts["position_column"],
        },
        allow_nan=False,
    )


_TASK_OPTIONS = ("scores", "renormalize", "positive_class", "binary", "percent", "names")


def _task_batches(plan: dict, batches, seen: dict):
    """The Arrow batches of a task as validated batches for the passes."""
    import pyarrow as pa

    from calcore.io._columns import Roles
    from calcore.io._table import RawTable, columns_to_matrix
    from calcore.io.stream import encoded_labels, validated_rows

    fields = Roles.__dataclass_fields__
    roles = SimpleNamespace(
        label=plan["label"],
        split=plan["split_column"],
        scores=tuple(plan["scores"]),
        class_names=tuple(plan["roles_class_names"]),
    )
    for name in fields:
        if not hasattr(roles, name):
            setattr(roles, name, None)
    options = dict(plan["options"])
    options["names"] = tuple(options["names"]) if options["names"] is not None else None
    reader = SimpleNamespace(_options=options, split=plan["split"], weight_column=plan["weight"])
    decided = tuple(plan["decided"])
    offsets = plan["offsets"] or []
    starts, files = [o for o, _ in offsets], [f for _, f in offsets]
    source = plan["source"]
    for record in batches:
        if record.num_rows == 0:
            continue
        table = pa.Table.from_batches([record])
        positions = table[plan["position"]].to_numpy().astype(np.int64)
        rows = _PositionRows(positions, starts, files, source)
        where = rows.place(0)[0]
        raw = RawTable(
            where,
            "parquet",
            None,
            tuple(table.column_names),
            roles,
            table.num_rows,
            columns_to_matrix(table, roles.scores),
            encoded_labels(table[roles.label], where, roles.label, rows),
            None
            if roles.split is None
            else encoded_labels(table[roles.split], where, roles.split, rows),
            rows,
        )
        weights = None
        if plan["weight"] is not None:
            weights = table[plan["weight"]].cast(pa.float64()).to_numpy(zero_copy_only=False)
        validated = validated_rows(reader, raw, weights, decided)
        if "first" not in seen:
            seen["first"] = int(positions[0])
        if validated is None:
            continue
        preds, selected = validated
        if selected is not None:
            positions = positions[selected]
        values = {
            c: table[c] if selected is None else table[c].take(selected) for c in plan["slices"]
        }
        file, first_row = rows.place(0 if selected is None else int(selected[0]))
        yield SimpleNamespace(
            preds=preds,
            positions=positions,
            position=int(positions[0]),
            file=file,
            first_row=first_row,
            slice_values=values,
            weights=preds.sample_weight,
        )


def task_states(read_plan: str, job: bytes, driver_version: str, batches):
    """The map of one pass, run in each Spark task: fold the partition, yield its states.

    Parameters
    ----------
    read_plan : str
        JSON: the roles, class names, scores' kind and options settled on the driver.
    job : bytes
        :func:`calcore.statistics.engine.pack` of
        :func:`calcore.statistics.passes.pass_job` (the phase and its plan).
    driver_version : str
        The driver's ``calcore.__version__``.
    batches : iterator of pyarrow.RecordBatch
        The partition's rows, sorted by position.

    Yields
    ------
    pyarrow.RecordBatch
        One row per lane: ``(first, part, seq, lane, state)``; none for an empty partition.

    Raises
    ------
    CalcoreError
        Another calcore version than the driver's; a bad value (file and row named).
    """
    import pyarrow as pa

    import calcore
    from calcore.statistics.engine import StateVersionError, pack, unpack
    from calcore.statistics.passes import partition_states

    if calcore.__version__ != driver_version:
        raise CalcoreError(
            f"this Spark worker runs calcore {calcore.__version__} ({calcore.__file__}), the "
            f"driver calcore {driver_version}: statistics are merged only between the same "
            f"calcore. Install calcore {driver_version} on the workers "
            "(calcore.spark.check_workers(spark) says what each runs)."
        )
    try:
        arrays = unpack(job, where="the pass the Spark driver planned")
    except StateVersionError as exc:
        raise CalcoreError(str(exc)) from None
    plan = json.loads(read_plan)
    seen: dict = {}
    states, kinds = partition_states(arrays, _task_batches(plan, batches, seen))
    if "first" not in seen:
        return
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
        part = context.partitionId() if context is not None else 0
    except Exception:
        part = 0
    lanes, blobs = [], []
    for key, entry, state in states:
        lanes.append(json.dumps({"lane": key, "entry": entry}, allow_nan=False))
        blobs.append(pack(state))
    if kinds is not None:
        lanes.append(json.dumps({"kinds": kinds}))
        blobs.append(pack({}))
    n = len(lanes)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array([seen["first"]] * n, pa.int64()),
            pa.array([part] * n, pa.int64()),
            pa.array(range(n), pa.int64()),
            pa.array(lanes, pa.string()),
            pa.array(blobs, pa.binary()),
        ],
        names=["first", "part", "seq", "lane", "state"],
    )


class SparkEngine:
    """Runs the passes of :mod:`calcore.statistics.passes` as Spark jobs (one per pass).

    ``run_pass(lanes, phase)`` is what :class:`~calcore.statistics.passes` calls for a
    stream with an ``engine``: the pass's job (plan) to every task, the states back, merged
    on the driver in the order of the partitions' first row positions. Large states (the
    bound the driver computes before the job, :mod:`calcore.spark._merge`) are first merged
    in groups inside the same job, so the driver receives a bounded number of them.
    """

    def __init__(self, df, stream_name: str, read_plan: str, position: str, slice_columns,
                 split_column, split):  # fmt: skip
        self.df = df.sortWithinPartitions(position)
        self.name = stream_name
        self.read_plan = read_plan
        self.position = position
        self.slice_columns = tuple(slice_columns)
        self.split_column, self.split = split_column, split
        self.jobs = 0
        #: One entry a job: the pass, the tasks' states (count, total and largest bytes),
        #: the plan's bytes shipped to every task (benchmarks/bench_spark.py reads it).
        self.pass_log: list[dict] = []
        #: Groups of a two-level merge forced for the accumulating pass (tests); None:
        #: decided per pass by the state's bound (:func:`calcore.spark._merge.merge_groups`).
        self.merge_groups: int | None = None

    def run_pass(self, lanes, phase: str) -> None:
        """One pass as one Spark job: the tasks fold their partitions; their states are
        merged on the driver (small states), or first in groups inside the same job
        (large ones: :mod:`calcore.spark._merge`), then on the driver."""
        import calcore
        from calcore.spark import _merge
        from calcore.spark._apply import spark_error
        from calcore.statistics.engine import pack
        from calcore.statistics.passes import pass_job

        bounds = _merge.state_bounds(lanes, phase)
        forced = self.merge_groups if phase == "accumulate" else None
        groups = _merge.merge_groups(
            bounds, lanes, self.name, _merge.max_result_bytes(self.df.sparkSession), forced
        )
        job = pack(pass_job(lanes, phase))
        read_plan, version = self.read_plan, calcore.__version__

        def run(batches):  # a closure pickled by value: its cargo is text and bytes
            from calcore.spark._evaluate import task_states

            yield from task_states(read_plan, job, version, batches)

        states = self.df.mapInArrow(run, _STATE_SCHEMA)
        if groups:  # large states: merged in groups inside the same job first
            states = _merge.two_level(states, groups, job, version)
        try:
            table = states.toArrow()
        except CalcoreError:
            raise
        except Exception as exc:  # Spark's errors: calcore's message inside, else shortened
            too_large = _merge.result_size_error(exc, bounds, lanes, self.name, groups)
            raise (too_large or spark_error(exc, self.name)) from None
        self.jobs += 1
        sizes = [len(b) for b in table["state"].to_pylist()]
        self.pass_log.append(
            {"phase": phase, "plan_bytes": len(job), "states": len(sizes),
             "state_bytes": sum(sizes), "largest_state_bytes": max(sizes, default=0),
             "state_bounds": bounds, "groups": groups}
        )  # fmt: skip
        _merge.merge_rows(lanes, phase, table, self.name)

    def slice_batches(self):
        """The slice columns (and split) of every row, read to the driver as one batch."""
        from calcore._validation import InputContext
        from calcore.io._labels import SPLITS, split_codes
        from calcore.io._table import RowNames
        from calcore.io.stream import encoded_labels
        from calcore.spark._apply import spark_error

        columns = list(self.slice_columns) + ([self.split_column] if self.split_column else [])
        try:
            table = self.df.select(*columns).toArrow()
        except Exception as exc:
            raise spark_error(exc, self.name) from None
        values = {c: table[c] for c in self.slice_columns}
        if self.split is not None and table.num_rows:
            rows = RowNames(csv=False, first=0)
            codes = split_codes(
                *encoded_labels(table[self.split_column], self.name, self.split_column, rows),
                ctx=InputContext(self.name),
            )
            keep = np.flatnonzero(codes == SPLITS.index(self.split))
            values = {c: v.take(keep) for c, v in values.items()}
        yield SimpleNamespace(slice_values=values, file=self.name, first_row=0)


def _distinct_labels(df, label: str, source: str) -> np.ndarray:
    """The label column's distinct values as text (one small job), as the reader reads them."""
    from calcore.io._table import RowNames
    from calcore.io.stream import encoded_labels

    table = df.select(label).distinct().limit(MAX_LABEL_VALUES + 1).toArrow()
    if table.num_rows > MAX_LABEL_VALUES:
        raise CalcoreError(
            f"{source}: label column {quoted(label)} has more than {MAX_LABEL_VALUES:,} "
            "distinct values; name the label column (label_column=) if this is not it."
        )
    distinct, index = encoded_labels(table[label], source, label, RowNames(csv=False, first=0))
    return np.asarray(distinct)[index]


def from_spark(
    df,
    *,
    label_column: str | None = None,
    score_columns=None,
    weight_column=None,
    split_column: str | None = None,
    split: str | None = None,
    class_names=None,
    scores: str = "auto",
    row_key: str | None = None,
    slice_columns=None,
    positive_class: str | None = None,
    percent: bool = False,
    renormalize: bool = False,
    name: str | None = None,
) -> SparkStream:
    """A Spark DataFrame of predictions as a source for :func:`calcore.evaluate` and
    :func:`calcore.evaluate_by`, whose passes run as Spark jobs.

    Everything :func:`calcore.scan` decides is decided here, once, on the driver: the
    columns' roles (from the Spark schema), the class names (from the label column's
    distinct values, one small job, or ``class_names``) and what the scores hold (from
    the first 10,000 rows). Tasks read their rows with those decisions.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Read straight from Parquet files (``spark.read.parquet(path)``), so that each
        row's position is its file's offset plus its row index, as the embedded engine
        numbers it; otherwise give ``row_key``. Classic or Spark Connect.
    label_column, score_columns, split_column, split, scores, positive_class, percent, \
renormalize :
        As in :func:`calcore.scan`.
    weight_column : str or False, optional
        As in :func:`calcore.scan` (default: a column named like a weight).
    class_names : sequence of str, optional
        The classes, in score-column order; default: from the score columns' names or
        the labels, as :func:`calcore.scan` settles them.
    row_key : str, optional
        A column identifying each row, hashed into its position (tables without a stable
        file order; see :func:`calcore.spark.with_row_positions`).
    slice_columns : sequence of str, optional
        Columns to slice by with :func:`calcore.evaluate_by`.
    name : str, optional
        How the source is named in messages (default: the first input file's folder, or
        ``"Spark DataFrame"``).

    Returns
    -------
    SparkStream

    Raises
    ------
    CalcoreError
        Undetectable columns, a label column with too many values, a DataFrame without
        file positions and no ``row_key``, or Spark's error (shortened, with the path).

    Examples
    --------
    >>> import calcore, calcore.spark
    >>> spark = calcore.spark.session(master="local[2]")  # doctest: +SKIP
    >>> src = calcore.from_spark(spark.read.parquet("logs/"))  # doctest: +SKIP
    >>> calcore.evaluate(src, n_bootstrap=200).conf_ece  # doctest: +SKIP
    0.0213
    """
    from calcore._validation import InputContext
    from calcore.io._columns import detect_roles, pick_weight
    from calcore.io._labels import class_labels
    from calcore.io._load import check_options
    from calcore.io._scan import checked_slice_columns
    from calcore.spark._apply import decide_scores_kind, numeric_columns, spark_error
    from calcore.spark._positions import (
        POSITION_COLUMN,
        file_offsets,
        local_path,
        with_row_positions,
    )

    check_options(scores, split, None, percent)
    named = (slice_columns,) if isinstance(slice_columns, str) else tuple(slice_columns or ())
    try:
        files = [] if row_key is not None else df.inputFiles()
    except Exception:
        files = []
    source = name or (local_path(files[0]).rsplit("/", 1)[0] if files else SOURCE_NAME)
    try:
        columns = tuple(c for c in df.columns if c != POSITION_COLUMN)
        weight = pick_weight(columns, weight_column, source)
        taken = dict(label_column=label_column, split_column=split_column)
        named = checked_slice_columns(named, columns, weight, taken, source)
        roles = detect_roles(
            tuple(c for c in columns if c != weight and c not in named),
            source=source,
            is_numeric=numeric_columns(df),
            label_column=label_column,
            split_column=split_column,
            score_columns=score_columns,
            scores_kind=scores,
        )
        if roles.problems:
            raise CalcoreError.from_advice(roles.problems[0])
        if split is not None and roles.split is None:
            raise CalcoreError(
                f"{source}: split={split!r} but no split column was found; name it (split_column=)."
            )
        offsets = None
        if row_key is None and files:
            offsets = file_offsets(df.sparkSession, files)
        positioned = with_row_positions(df, row_key=row_key, offsets=offsets)
        decided = decide_scores_kind(df, roles, scores, percent, source, with_reason=True)
        binary = len(roles.scores) == 1 and len(roles.class_names) < 2
        if class_names is not None:
            names = tuple(map(str, class_names))
        else:
            distinct = _distinct_labels(df, roles.label, source)
            names, _, _ = class_labels(
                distinct,
                roles.class_names,
                binary=binary,
                positive_class=positive_class,
                ctx=InputContext(source),
            )
    except CalcoreError:
        raise
    except Exception as exc:  # Spark's own: an unreadable path, a schema it refuses
        raise spark_error(exc, source) from None
    named_offsets = None
    if offsets:
        named_offsets = sorted((o, local_path(f)) for f, o in offsets.items())
    options = dict(
        scores=scores,
        renormalize=renormalize,
        positive_class=positive_class,
        binary=binary,
        percent=percent,
        names=tuple(names),
        decided=tuple(decided),
        position_column=POSITION_COLUMN,
        used=[],
        extras=list(named),
        family="spark",
        label_column=label_column,
        kept_columns=(),
        decimal=".",
    )
    stream = SparkStream(
        source,
        tuple(local_path(f) for f in files),
        roles,
        tuple(names),
        0,
        split,
        1,
        options,
        weight_column=weight,
        rows_estimated=True,
        slice_columns=named,
        scores_kind=decided[0],
    )
    plan = _read_plan(stream, named_offsets)
    engine = SparkEngine(positioned, source, plan, POSITION_COLUMN, named, roles.split, split)
    return replace(stream, engine=engine)

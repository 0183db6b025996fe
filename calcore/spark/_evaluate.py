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
* with ``split=``, a row's position counts the selected split's rows only, as the
  embedded reader counts them: the selected rows of the files before (one job) plus
  those before it in its file, a running count over a window partitioned by file
  (:func:`calcore.spark._positions.with_split_positions`; a shuffle by file in every
  pass, exact whatever the partitioning). Which values of the split column select the
  split is decided on the driver by the reader's own mapping of the column's distinct
  values; every row still reaches the tasks, which name a bad split value by file and row;
* :func:`calcore.evaluate_by`'s ranking beyond the model's own curve is computed as the
  embedded engine computes it: the curve is fitted on a seeded sample drawn by one job
  (:meth:`SparkStream.sample`: each task's bottom-k, then the driver's) and shipped to
  the tasks as the JSON a calibrator saves (:meth:`SparkStream.with_transform`);
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

from calcore.foundation.errors import CalcoreError, quoted
from calcore.foundation.validation import frozen_array
from calcore.io.options import LoadOptions
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
        """The stream with a fitted calibrator's ``transform`` applied in the tasks.

        Only a fitted calcore calibrator's own ``transform`` method travels: as the JSON
        text it saves (``to_dict``), rebuilt in each task and applied to the validated
        rows of every batch (their weights kept). Other functions, and transforms that
        read the slice columns (``with_metadata``), are refused.
        """
        from calcore.spark._apply import saved_calibrator_text

        fitted = getattr(transform, "__self__", None)
        if (
            with_metadata
            or getattr(transform, "__name__", None) != "transform"
            or (fitted is None or not hasattr(fitted, "to_dict"))
        ):
            raise CalcoreError(
                f"{self.name}: on Spark only a fitted calcore calibrator's transform is applied "
                "to a source's rows (without its slice columns); apply others with "
                "calcore.spark.apply(df, fitted) and evaluate its output with from_spark."
            )
        return replace(self, engine=self.engine.with_transform(saved_calibrator_text(fitted)))

    def with_split(self, split):
        raise CalcoreError(f"{self.name}: call from_spark(df, ..., split={split!r}) instead.")

    def sample(self, max_rows: int, *, seed: int = 0):
        """A seeded uniform sample of at most ``max_rows`` rows and the number of rows read:
        the rows :meth:`calcore.PredictionStream.sample` keeps from the same files (the
        bottom-k of uniforms keyed by position), in position order. One count of the rows
        (Parquet footers, or the split column) gives a bound on the uniforms that ``max_rows``
        rows pass but for a chance of ~1e-15; one job then sends the driver each task's
        bottom-k of the rows below it (about ``max_rows`` rows in all), and the driver keeps
        the bottom-k of those (short of rows, the job runs again without the bound). The
        slice columns are not read into the sample (its ``metadata`` is empty)."""
        from calcore.foundation.limits import ROWS

        ROWS.check(max_rows, "max_rows")
        return self.engine.sample(int(max_rows), int(seed))

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


def _read_plan(stream: "SparkStream", offsets, decided, position, split_position) -> str:
    """What a task needs to read its Arrow batches as the embedded reader reads a file's
    (``decided``: the scores' kind and why; ``position`` and ``split_position``: the
    columns of row positions, within the file and within the split read, if any)."""
    options = stream.options
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
            "decided": list(decided),
            "options": {
                "scores": options.scores,
                "renormalize": options.renormalize,
                "positive_class": options.positive_class,
                "percent": options.percent,
                "binary": stream.binary,
            },
            "class_names": list(stream.class_names),
            "offsets": offsets,
            "position": position,
            "split_position": split_position,
            "transform": None,
        },
        allow_nan=False,
    )


def _task_batches(plan: dict, batches, seen: dict):
    """The Arrow batches of a task as validated batches for the passes."""
    import pyarrow as pa

    from calcore.io._columns import Roles
    from calcore.io._readers import arrow_raw_table
    from calcore.io._rows import BatchRules, validated_rows

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
    binary = options.pop("binary")
    reader = BatchRules(
        LoadOptions(**options),
        split=plan["split"],
        weight_column=plan["weight"],
        binary=binary,
        names=tuple(plan["class_names"]),
    )
    decided = tuple(plan["decided"])
    offsets = plan["offsets"] or []
    starts, files = [o for o, _ in offsets], [f for _, f in offsets]
    source = plan["source"]
    transform = None
    if plan.get("transform") is not None:  # a fitted calibrator, as the JSON it saves
        from calcore.calibrators._saved import calibrator_from_saved, parse_json

        where = "the calibrator shipped by the Spark driver"
        transform = calibrator_from_saved(
            parse_json(plan["transform"], source=where), source=where
        ).transform
    for record in batches:
        if record.num_rows == 0:
            continue
        table = pa.Table.from_batches([record])
        positions = table[plan["position"]].to_numpy().astype(np.int64)
        rows = _PositionRows(positions, starts, files, source)
        where = rows.place(0)[0]
        raw = arrow_raw_table(table, where, "parquet", roles, rows)
        weights = None
        if plan["weight"] is not None:
            weights = table[plan["weight"]].cast(pa.float64()).to_numpy(zero_copy_only=False)
        validated = validated_rows(reader, raw, weights, decided)
        if "first" not in seen:
            seen["first"] = int(positions[0])
        if validated is None:
            continue
        preds, selected = validated
        if transform is not None:
            preds = transform(preds)
        if plan["split_position"] is not None:  # positions among the selected split's rows
            positions = table[plan["split_position"]].to_numpy().astype(np.int64)
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

    from calcore.foundation.version import __version__ as calcore_version
    from calcore.foundation.version import installed_at
    from calcore.spark._merge import state_batches, task_partition
    from calcore.statistics.engine import StateVersionError, unpack
    from calcore.statistics.passes import partition_states

    if calcore_version != driver_version:
        raise CalcoreError(
            f"this Spark worker runs calcore {calcore_version} ({installed_at()}), the "
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
    yield from state_batches(seen["first"], task_partition(), states, kinds)


def task_sample(
    read_plan: str, k: int, seed: int, below: float, driver_version: str, batches
):  # fmt: skip
    """The map of :meth:`SparkEngine.sample`, run in each Spark task: the partition's
    bottom-k rows (:class:`calcore.io._bottom_k.BottomK`, uniforms keyed by position) of
    those whose uniform is at most ``below``, as one row: :func:`calcore.statistics.engine.pack`
    of the rows read and the kept rows' positions, probabilities, labels, logits and
    weights."""
    import pyarrow as pa

    from calcore.foundation.version import __version__ as calcore_version
    from calcore.io._bottom_k import BottomK
    from calcore.predictions import concat
    from calcore.statistics.engine import pack

    if calcore_version != driver_version:
        raise CalcoreError(
            f"this Spark worker runs calcore {calcore_version}, the driver calcore "
            f"{driver_version}: install calcore {driver_version} on the workers."
        )
    from calcore.foundation.keyed_random import row_uniforms

    kept, n_read = BottomK(k, seed), 0
    for batch in _task_batches(json.loads(read_plan), batches, {}):
        n_read += batch.preds.n_samples
        rows = np.flatnonzero(row_uniforms(batch.positions, seed) <= below)
        if rows.size:
            kept.add(batch.positions[rows], batch.preds.subset(rows), {})
    parts = kept.rows()
    arrays = {"n_read": np.array(n_read, np.int64)}
    if parts:
        preds = concat([q for _, _, q, _ in parts])
        arrays.update(
            positions=np.concatenate([p for p, _, _, _ in parts]),
            probs=preds.probs,
            labels=preds.labels,
            normalized=np.array(bool(preds.normalized)),
        )
        if preds.logits is not None:
            arrays["logits"] = preds.logits
        if preds.sample_weight is not None:
            arrays["weights"] = preds.sample_weight
    yield pa.RecordBatch.from_arrays([pa.array([pack(arrays)], pa.binary())], names=["rows"])


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
        #: The split's rows (a boolean Column), None for every row.
        self.selected = None
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
        from calcore.foundation.version import __version__ as calcore_version
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
        read_plan, version = self.read_plan, calcore_version

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

    def with_transform(self, saved: str) -> "SparkEngine":
        """This engine with a fitted calibrator (its saved JSON text) applied in the tasks
        to every batch's validated rows."""
        import copy

        plan = json.loads(self.read_plan)
        plan["transform"] = saved
        other = copy.copy(self)  # its passes logged in the same pass_log
        other.read_plan = json.dumps(plan, allow_nan=False)
        return other

    def sample(self, k: int, seed: int):
        """``(Predictions, rows read)``: the ``k`` rows of smallest ``(uniform, position)``,
        in position order, as :meth:`calcore.PredictionStream.sample` draws them (a count, then
        one job)."""
        from calcore.foundation.keyed_random import row_uniforms
        from calcore.foundation.version import __version__ as calcore_version
        from calcore.io._bottom_k import bottom_k_cut, rows_at_or_below
        from calcore.predictions import Predictions, concat, take
        from calcore.spark._apply import spark_error
        from calcore.statistics.engine import unpack

        read_plan, version = self.read_plan, calcore_version

        def drawn(below: float):
            def run(batches):  # a closure pickled by value: its cargo is text and numbers
                from calcore.spark._evaluate import task_sample

                yield from task_sample(read_plan, k, seed, below, version, batches)

            try:
                table = self.df.mapInArrow(run, "rows binary").toArrow()
            except CalcoreError:
                raise
            except Exception as exc:
                raise spark_error(exc, self.name) from None
            self.jobs += 1
            where = f"{self.name}: a Spark task's sample"
            return [unpack(b, where=where) for b in table["rows"].to_pylist()]

        # Tasks send only the rows whose uniform is below a bound that k of the n rows
        # pass but for a chance of ~1e-15 (k + 8 sd), so the driver receives about k rows
        # however many partitions there are; fewer than k: drawn again without a bound.
        try:
            rows = self.df if self.selected is None else self.df.where(self.selected)
            n = rows.count()  # Parquet footers, or the split column alone
        except Exception as exc:
            raise spark_error(exc, self.name) from None
        below = 1.0 if n <= k else min(1.0, (k + 8.0 * np.sqrt(k) + 16.0) / n)
        parts = drawn(below)
        n_read = sum(int(p["n_read"]) for p in parts)
        parts = [p for p in parts if "positions" in p]
        if below < 1.0 and sum(p["positions"].size for p in parts) < min(k, n_read):
            parts = [p for p in drawn(1.0) if "positions" in p]
        if not parts:
            raise CalcoreError(f"{self.name}: no rows to sample.")
        positions = np.concatenate([p["positions"] for p in parts])
        u = row_uniforms(positions, seed)
        keep = np.arange(positions.size)
        if positions.size > k:  # the bottom-k of the tasks' bottom-k: ties by position
            keep = rows_at_or_below(positions, u, bottom_k_cut([(positions, u)], k))
        keep = keep[np.argsort(positions[keep], kind="stable")]  # position order

        names = tuple(json.loads(self.read_plan)["class_names"])

        def part_preds(p):  # a task's arrays, validated by the task: no second check
            def frozen(name):  # unpacked from the task's bytes: ours to freeze in place
                return frozen_array(p[name], owned=True) if name in p else None

            return Predictions(
                frozen("probs"), frozen("labels"), names, frozen("logits"), None,
                bool(p["normalized"]), frozen("weights"),
            )  # fmt: skip

        return take(concat([part_preds(p) for p in parts]), keep), n_read

    def slice_batches(self):
        """The slice columns (and split) of every row, read to the driver as one batch."""
        from calcore.foundation.validation import InputContext
        from calcore.io._labels import SPLITS, split_codes
        from calcore.io._readers import encoded_labels
        from calcore.io._table import RowNames
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
    from calcore.io._readers import encoded_labels
    from calcore.io._table import RowNames

    table = df.select(label).distinct().limit(MAX_LABEL_VALUES + 1).toArrow()
    if table.num_rows > MAX_LABEL_VALUES:
        raise CalcoreError(
            f"{source}: label column {quoted(label)} has more than {MAX_LABEL_VALUES:,} "
            "distinct values; name the label column (label_column=) if this is not it."
        )
    distinct, index = encoded_labels(table[label], source, label, RowNames(csv=False, first=0))
    return np.asarray(distinct)[index]


def _split_selection(df, column: str, split: str, source: str):
    """A boolean Column: the rows of ``column`` that the embedded reader reads as ``split``.

    The column's distinct non-null values (one small job) are mapped on the driver by the
    reader's own code (:func:`calcore.io._labels.split_codes`), one value at a time; the
    Column is ``column IN (the values of the split)``. Unknown values and nulls select
    nothing here: the tasks read every row and name the first bad one by file and row.
    """
    from pyspark.sql import functions as F

    from calcore.foundation.validation import InputContext
    from calcore.io._labels import SPLITS, split_codes
    from calcore.io._readers import encoded_labels
    from calcore.io._table import RowNames

    col = F.col(column)
    table = df.select(col).where(col.isNotNull()).distinct().limit(MAX_LABEL_VALUES + 1)
    table = table.toArrow()
    values = table[column]
    keep = []
    if table.num_rows <= MAX_LABEL_VALUES:  # more: unknown values, refused by the tasks
        try:
            texts, index = encoded_labels(values, source, column, RowNames(csv=False, first=0))
        except CalcoreError:  # a value no split can be: the tasks name its row
            texts, index = [], np.zeros(0, dtype=np.intp)
        raw = values.to_pylist()
        for i, j in enumerate(index):
            try:
                code = split_codes([texts[j]], np.zeros(1, np.intp), ctx=InputContext(source))
            except CalcoreError:
                continue
            if code[0] == SPLITS.index(split):
                keep.append(raw[i])
    return col.isin(keep) if keep else F.lit(False)


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
    options: LoadOptions | None = None,
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
    options : calcore.LoadOptions, optional
        The reading options as one object, as :func:`calcore.scan` takes them, instead of
        the keywords above (both given: TypeError). Its ``decimal`` must stay ``"."``: a
        DataFrame's numbers are typed, a decimal mark is a CSV's.

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
    >>> calcore.evaluate(src, n_resamples=200).conf_ece  # doctest: +SKIP
    0.0213
    """
    from calcore.foundation.validation import InputContext
    from calcore.io._columns import detect_roles, pick_weight
    from calcore.io._detect import checked_slice_columns
    from calcore.io._labels import class_labels
    from calcore.io.options import check_split, options_from
    from calcore.io.stream import scan_notes
    from calcore.spark._apply import decide_scores_kind, numeric_columns, spark_error
    from calcore.spark._positions import (
        POSITION_COLUMN,
        SPLIT_POSITION_COLUMN,
        file_offsets,
        local_path,
        with_row_positions,
        with_split_positions,
    )

    options = options_from(options, "from_spark", locals())  # checked as every loader does
    if options.decimal != ".":
        raise CalcoreError(
            f"from_spark: decimal={options.decimal!r} is for CSV text; a DataFrame's numbers "
            "are typed. Leave decimal out of the LoadOptions."
        )
    check_split(split)
    try:
        files = [] if row_key is not None else df.inputFiles()
    except Exception:
        files = []
    source = name or (local_path(files[0]).rsplit("/", 1)[0] if files else SOURCE_NAME)
    try:
        ours = (POSITION_COLUMN, SPLIT_POSITION_COLUMN)
        columns = tuple(c for c in df.columns if c not in ours)
        weight = pick_weight(columns, options.weight_column, source)
        named = checked_slice_columns(
            options.slice_columns, columns, weight, source,
            label_column=options.label_column, split_column=options.split_column,
        )
        roles = detect_roles(
            tuple(c for c in columns if c != weight and c not in named),
            source=source,
            is_numeric=numeric_columns(df),
            label_column=options.label_column,
            split_column=options.split_column,
            score_columns=options.score_columns,
            scores_kind=options.scores,
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
        split_position = selected = None
        if split is not None:
            selected = _split_selection(df, roles.split, split, source)
        if split is not None and row_key is None and files:
            positioned = with_split_positions(positioned, selected, files=files)
            split_position = SPLIT_POSITION_COLUMN
        decided = decide_scores_kind(
            df, roles, options.scores, options.percent, source, with_reason=True
        )
        binary = len(roles.scores) == 1 and len(roles.class_names) < 2
        if class_names is not None:
            names = tuple(map(str, class_names))
        else:
            distinct = _distinct_labels(df, roles.label, source)
            names, _, _ = class_labels(
                distinct,
                roles.class_names,
                binary=binary,
                positive_class=options.positive_class,
                ctx=InputContext(source),
            )
    except CalcoreError:
        raise
    except Exception as exc:  # Spark's own: an unreadable path, a schema it refuses
        raise spark_error(exc, source) from None
    named_offsets = None
    if offsets:
        named_offsets = sorted((o, local_path(f)) for f, o in offsets.items())
    options = replace(options, slice_columns=named)  # as checked against the columns
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
        notes=scan_notes(source, roles, tuple(decided), percent=options.percent, kept=named),
        family="spark",
        binary=binary,
        classes_settled=True,
    )
    plan = _read_plan(stream, named_offsets, decided, POSITION_COLUMN, split_position)
    engine = SparkEngine(positioned, source, plan, POSITION_COLUMN, named, roles.split, split)
    engine.selected = selected
    return replace(stream, engine=engine)

"""Two-level merge of a Spark pass's states: bounded bytes at the driver.

Every task of a pass (:class:`calcore.spark._evaluate.SparkEngine`) returns its lanes'
states; the driver collects them and merges them in the order of each partition's first
row position. A state does not grow with the rows but does grow with classes x
resamples: with ``n_resamples=200`` and every metric one partition's accumulating state
measured ~315 MB (binary), ~290 MB (10 classes), ~830 MB (100 classes), mostly the
bootstrap's KDE-ECE moments (``R x 2 x 7`` per kept cell of each KDE problem) and the
redrawn labels' KDE sums. Spark aborts a job whose results exceed
``spark.driver.maxResultSize`` (1 GiB by default), so a one-level merge fails from ~3
such partitions on, and the driver would hold every partition's state anyway.

Decisions
---------
* **Two levels, one job.** When the states are large, the pass's job does not end at the
  tasks' states: they are shuffled into ``G`` groups (``repartition(G, group)``), sorted
  within each group by ``(first position, partition, lane)``
  (``sortWithinPartitions``) and merged there by a second ``mapInArrow``
  (:func:`group_states`), which emits one state per lane and group; the driver collects
  the ``G`` group states and merges them as it merges the tasks' states today
  (:func:`merge_rows`). DataFrame API only (Spark Connect too): no SparkContext, RDD or
  second job.
* **The merge is calcore's own**: a group task rebuilds the driver's lanes from the
  pass's job (:func:`calcore.statistics.passes.job_lanes`) and merges with
  :func:`calcore.statistics.passes.merge_pass` (cell sums add, rank finders' counts and
  kept KDE cells are unions, min/max stay min/max, slices are matched by their entry),
  then exports :func:`calcore.statistics.engine.lane_state`. Nothing is re-implemented
  on flat arrays, so the two levels cannot disagree with the one-level merge on what a
  sum means, only in the order of additions.
* **Order and determinism.** A group holds the states whose partition's first row
  position hashes to it (``pmod(xxhash64(first), G)``): contiguous position ranges would
  need the first positions' distribution before the job (after a shuffle every
  partition's first row is near position 0, and ``row_key`` positions are 64-bit hashes),
  a global rank a single-partition window or a second job. Within a group, states merge
  in order of ``(first, partition)``; the driver merges the groups in order of their
  smallest first position. The order depends on the partitioning only, so a result is
  the same run to run; it differs from the one-level merge (and the embedded engine) by
  the rounding of a sum added in another order: ~1e-16 relative, well under the 1e-9
  absolute the tests require.
* **When.** The driver bounds one task's state before the job (:func:`state_bounds`):
  the packed size of its own lanes' accumulating states (they are built from the same
  plan), the bootstrap's and redraws' KDE sums counted at every cell of their layouts (a
  task keeps only the cells its scores fall in, so this is an upper bound: measured 1.3x
  the largest state for binary data, 1.6-2x for 10 classes, 8-11x for 100 classes, whose
  class-wise scores pile up near 0). The number of partitions is not asked for:
  ``df.rdd.getNumPartitions()`` does not exist on Spark Connect and, on a shuffled
  DataFrame with adaptive execution, runs the shuffle. So the bound alone decides: below
  :data:`ONE_LEVEL_STATE_BYTES` the states merge in one level (today's path; 256
  partitions then stay under :data:`DRIVER_RESULT_BYTES`); from it on, in two levels with
  ``G = DRIVER_RESULT_BYTES // bound`` groups (at least 1, at most :data:`MAX_GROUPS`),
  so that the driver receives at most ``max(DRIVER_RESULT_BYTES, bound)`` bytes whatever
  the number of partitions. Profile and selection passes merge in one level: their
  states (group sizes, score moments, rank finders' 16-bit prefix counts: under 2 MB for
  100 classes) do not grow with resamples.
* **Refused before the job** when the merged state's *floor* (its dense sums, which every
  task and the merged state hold whatever their kept cells) exceeds
  ``spark.driver.maxResultSize``: the state must reach the driver whole. The upper bound
  alone does not refuse a pass (it may be 10x the real state); when Spark aborts the job
  for ``maxResultSize`` anyway, its error is given as calcore's, with the state's size,
  its cause and the fixes (:func:`result_size_error`).
* **Memory of a group task**: its lanes' running sums plus one incoming partition's state
  (unpacked, then merged and dropped), plus the Arrow batch Spark hands it (capped by
  ``spark.sql.execution.arrow.maxRecordsPerBatch`` and ``maxBytesPerBatch``).

Costs: a shuffle of the tasks' states (written to and read from the executors' local
disks: the bytes the one-level path would have sent to the driver) and one more stage
of ``G`` tasks, each merging ``~P / G`` states. The driver then unpacks and merges ``G``
states instead of ``P``.
"""

from __future__ import annotations

import json

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.tuning import DRIVER_RESULT_BYTES, MAX_GROUPS, ONE_LEVEL_STATE_BYTES

__all__ = [
    "ONE_LEVEL_STATE_BYTES",
    "DRIVER_RESULT_BYTES",
    "MAX_GROUPS",
    "state_bounds",
    "merge_groups",
    "result_size_error",
    "max_result_bytes",
    "group_states",
    "merge_rows",
    "state_batches",
    "task_partition",
]

#: Bytes an ``.npz`` entry adds to its array's (zip headers, ``.npy`` header), at most.
_NPZ_ENTRY_BYTES = 512

_STATE_SCHEMA = "first long, part long, seq long, lane string, state binary"


# ------------------------------------------------------------------ the bound
def _packed_bytes(arrays: dict) -> int:
    return sum(np.asarray(a).nbytes + len(name) + _NPZ_ENTRY_BYTES for name, a in arrays.items())


def _kept_cells_extra(problems, layouts, *, cells_axis: int) -> int:
    """Bytes a task's kept-cell KDE sums may add over the driver's (every layout cell).
    ``cells_axis``: where the kept cells are in ``moments`` (first in replicated
    :class:`~calcore.statistics.kde_cells.KDESums`, last in the redrawn positives')."""
    extra = 0
    for (moments, cells), layout in zip(problems, layouts, strict=True):
        if cells is None:
            continue
        others = np.delete(np.asarray(moments.shape), cells_axis)
        per_cell = int(np.prod(others, dtype=np.int64)) * 8 + 8  # moments + index
        extra += per_cell * max(layout.n_cells - int(np.asarray(cells).size), 0)
    return extra


def lane_bounds(lane) -> tuple[int, int]:
    """``(floor, bound)``: bytes a started lane's packed accumulating state takes at least
    (its dense sums, the same in every task) and at most (its kept-cell KDE sums at every
    cell of their layouts)."""
    from calcore.statistics.engine import lane_state

    floor = _packed_bytes(lane_state("accumulate", lane)) + 4096  # + header and directory
    extra = 0
    for stats in (lane.stats, lane.boot, lane.boot2):
        if stats is None:
            continue
        for key, problems in stats.kde.items():
            pairs = [(s.moments, s.cells) for s in problems]
            extra += _kept_cells_extra(pairs, stats.kde_specs[key].layouts, cells_axis=0)
    if lane.redrawn is not None:
        for key, problems in lane.redrawn.positives.items():
            extra += _kept_cells_extra(problems, lane.redrawn.kde_specs[key].layouts, cells_axis=-1)
    return floor, floor + extra


def state_bounds(lanes, phase: str) -> tuple[int, int] | None:
    """``(floor, bound)`` of one pass's packed states, before the job (None: not bounded,
    the profile and selection passes).

    ``bound``: one task's state at most, every lane the driver planned (a task holds a
    subset) with every kept KDE cell; before any lane exists (statistics in one pass:
    fixed bins, no KDE-ECE), one lane started as the driver would start it (with slices
    each slice's lane is that big; their number is not known before the job). ``floor``:
    what the driver receives at least, whatever the merge (every lane's dense sums once).
    """
    from calcore.statistics.passes import started_lane

    if phase != "accumulate":
        return None
    started = [lane for lane in lanes.lanes.values() if lane.stats is not None]
    if not started:
        started = [started_lane(lanes)]
    pairs = [lane_bounds(lane) for lane in started]
    return sum(f for f, _ in pairs), sum(b for _, b in pairs)


def max_result_bytes(spark) -> int | None:
    """``spark.driver.maxResultSize`` in bytes (None: unlimited, ``0``); 1 GiB, Spark's
    default, when it cannot be read."""
    try:
        text = spark.conf.get("spark.driver.maxResultSize", "1g")
    except Exception:
        text = "1g"
    return parse_bytes(text or "1g")


def parse_bytes(text: str) -> int | None:
    """Spark's size strings (``"1g"``, ``"512m"``, ``"2048"`` bytes) in bytes; None for 0.

    Examples
    --------
    >>> parse_bytes("1g"), parse_bytes("512m"), parse_bytes("100"), parse_bytes("0")
    (1073741824, 536870912, 100, None)
    """
    text = str(text).strip().lower().removesuffix("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
    scale = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        return 1 << 30
    return None if value <= 0 else value


def _megabytes(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def _cause(lanes) -> str:
    """What makes a state large, in words."""
    parts = []
    r = lanes.bootstrap[0] if lanes.bootstrap else 0
    if lanes.kde and r:
        parts.append(
            f"KDE-ECE ({', '.join(lanes.kde)}) with {r:,} resamples keeps 7 moments per cell "
            "per resample, for all points and the positive ones, in each KDE problem"
            + (f" ({len(lanes.names):,} class-wise)" if "kde_ece_classwise" in lanes.kde else "")
        )
    if lanes.redraws and lanes.kde:
        parts.append(
            f"the calibration test's {lanes.redraws[0]:,} redrawn label sets keep 7 moments per "
            "cell of each KDE problem"
        )
    if r and not parts:
        parts.append(f"{r:,} resamples keep every bin's sums per resample")
    if len(lanes.lanes) > 1:
        parts.append(f"{len(lanes.lanes):,} slices keep a state each")
    return "; ".join(parts) or "the statistics' sums"


def _fixes(size: int) -> str:
    return (
        "Ask for fewer resamples (n_resamples=; evaluate_by's interval_resamples=), leave "
        "kde_ece and kde_ece_classwise out of metrics=, or raise spark.driver.maxResultSize "
        f"(and the driver's memory, spark.driver.memory) above {_megabytes(2 * size)}."
    )


def merge_groups(bounds, lanes, name: str, max_result, forced=None) -> int:
    """The second level's number of groups for a pass (0: merge in one level).

    Parameters
    ----------
    bounds : (int, int) or None
        :func:`state_bounds`: ``(floor, bound)``.
    lanes : _Lanes
        The driver's lanes (what makes the state large, in the message).
    name : str
        The source, in the message.
    max_result : int or None
        ``spark.driver.maxResultSize`` in bytes (None: unlimited).
    forced : int, optional
        Groups to use whatever the bound (tests).

    Raises
    ------
    CalcoreError
        The merged state alone exceeds ``spark.driver.maxResultSize`` (its floor does).
    """
    if bounds is None:
        return 0 if forced is None else max(int(forced), 1)
    floor, bound = bounds
    if max_result is not None and floor > max_result:
        raise CalcoreError(
            f"{name}: the statistics of this pass take at least {_megabytes(floor)} (up to "
            f"{_megabytes(bound)} in a Spark task; {_cause(lanes)}), over "
            f"spark.driver.maxResultSize ({_megabytes(max_result)}): the merged state must "
            f"reach the driver whole. {_fixes(bound)} Nothing was run."
        )
    if forced is not None:
        return max(int(forced), 1)
    if bound < ONE_LEVEL_STATE_BYTES:
        return 0
    return int(min(max(DRIVER_RESULT_BYTES // bound, 1), MAX_GROUPS))


def result_size_error(exc: Exception, bounds, lanes, name: str, groups: int):
    """Spark's abort for ``spark.driver.maxResultSize`` as calcore's message (None for
    another error): the states were larger than the driver may receive."""
    text = str(exc)
    if "maxResultSize" not in text:
        return None
    floor, bound = bounds if bounds is not None else (0, 0)
    how = f"merged in {groups} group(s) first" if groups else "merged on the driver"
    size = f" (each up to {_megabytes(bound)}; {_cause(lanes)})" if bound else ""
    return CalcoreError(
        f"{name}: Spark refused to send this pass's statistics to the driver: their states"
        f"{size}, {how}, exceed spark.driver.maxResultSize. {_fixes(max(bound, floor))}"
    )


# ------------------------------------------------------------------ the second level
def _check_version(driver_version: str) -> None:
    from calcore.foundation.version import __version__ as calcore_version
    from calcore.foundation.version import installed_at

    if calcore_version != driver_version:
        raise CalcoreError(
            f"this Spark worker runs calcore {calcore_version} ({installed_at()}), the "
            f"driver calcore {driver_version}: statistics are merged only between the same "
            f"calcore. Install calcore {driver_version} on the workers "
            "(calcore.spark.check_workers(spark) says what each runs)."
        )


def _rows(batches):
    """``(first, part, seq, lane, state)`` of the Arrow batches, one row at a time."""
    for batch in batches:
        cols = [batch.column(i) for i in range(5)]
        for i in range(batch.num_rows):
            yield tuple(c[i].as_py() for c in cols)


def _parts(rows, where: str):
    """The rows of each partition's states (contiguous, in order) as ``(first, states,
    kinds)``, one partition unpacked at a time."""
    from calcore.statistics.engine import unpack

    current, states, kinds = None, [], [None]
    for first, part, _, lane, state in rows:
        if (first, part) != current:
            if current is not None:
                yield current[0], states, kinds[0]
            current, states, kinds = (first, part), [], [None]
        key = json.loads(lane)
        if "kinds" in key:
            kinds[0] = key["kinds"]
            continue
        arrays = unpack(state, where=f"{where}: a Spark task's state")
        states.append((int(key["lane"]), key["entry"], arrays))
    if current is not None:
        yield current[0], states, kinds[0]


def task_partition() -> int:
    """The running Spark task's partition (0 outside a task)."""
    try:
        from pyspark import TaskContext

        context = TaskContext.get()
        return context.partitionId() if context is not None else 0
    except Exception:
        return 0


def state_batches(first: int, part: int, states, kinds):
    """The rows a task (or a group merge) sends back, one Arrow batch a lane (a large
    state is never copied into a batch with others): ``(first, part, seq, lane, state)``,
    the slice columns' kinds last."""
    import pyarrow as pa

    from calcore.statistics.engine import pack

    rows = [(json.dumps({"lane": k, "entry": e}, allow_nan=False), s) for k, e, s in states]
    if kinds is not None:
        rows.append((json.dumps({"kinds": kinds}), {}))
    for seq, (lane, arrays) in enumerate(rows):
        yield pa.RecordBatch.from_arrays(
            [
                pa.array([first], pa.int64()),
                pa.array([part], pa.int64()),
                pa.array([seq], pa.int64()),
                pa.array([lane], pa.string()),
                pa.array([pack(arrays)], pa.binary()),
            ],
            names=["first", "part", "seq", "lane", "state"],
        )


def merge_group(job: dict, rows, where: str = "the stream"):
    """Merge the states of some partitions in the order given, as the driver would.

    Parameters
    ----------
    job : dict of str to ndarray
        The pass's :func:`calcore.statistics.passes.pass_job` (header checked).
    rows : iterable of (first, part, seq, lane, state)
        The partitions' rows as their tasks wrote them, sorted by ``(first, part, seq)``.
    where : str
        The source, in messages.

    Returns
    -------
    first : int or None
        The smallest first position (None: no rows).
    states : list of (int, tuple or None, dict)
        The merged state of each lane.
    kinds : list or None
        The slice columns' kinds (None without slices).
    """
    from calcore.statistics.passes import job_lanes, lanes_states, merge_pass

    lanes, phase, slicer = job_lanes(job)
    firsts = []

    def parts():
        for first, states, kinds in _parts(rows, where):
            firsts.append(first)
            yield f"position {first:,}", states, kinds

    merge_pass(lanes, phase, parts())
    if not firsts:
        return None, [], None
    return (
        min(firsts),
        lanes_states(lanes, phase, slicer),
        None if slicer is None else slicer.kinds(),
    )


def group_states(job: bytes, driver_version: str, batches):
    """The second level's map, run in each group task: merge the group's states.

    Parameters
    ----------
    job : bytes
        :func:`calcore.statistics.engine.pack` of the pass's job.
    driver_version : str
        The driver's ``calcore.__version__``.
    batches : iterator of pyarrow.RecordBatch
        The group's states ``(first, part, seq, lane, state)``, sorted by
        ``(first, part, seq)``.

    Yields
    ------
    pyarrow.RecordBatch
        One row a lane, ``first`` the group's smallest first position, ``part`` the
        group task's partition.
    """
    from calcore.statistics.engine import StateVersionError, unpack

    _check_version(driver_version)
    try:
        arrays = unpack(job, where="the pass the Spark driver planned")
    except StateVersionError as exc:
        raise CalcoreError(str(exc)) from None
    name = json.loads(str(arrays["job/spec"]))["name"]
    first, states, kinds = merge_group(arrays, _rows(batches), name)
    if first is None:
        return
    yield from state_batches(first, task_partition(), states, kinds)


def two_level(states_df, groups: int, job: bytes, version: str):
    """``states_df`` (the tasks' states) shuffled into ``groups`` groups and merged there:
    the DataFrame of the groups' states (same schema)."""
    from pyspark.sql import functions as F

    def run(batches):  # pickled by value: text and bytes
        from calcore.spark._merge import group_states

        yield from group_states(job, version, batches)

    group = F.pmod(F.xxhash64(F.col("first")), F.lit(groups))
    return (
        states_df.repartition(groups, group)
        .sortWithinPartitions("first", "part", "seq")
        .mapInArrow(run, _STATE_SCHEMA)
    )


# ------------------------------------------------------------------ the driver
def merge_rows(lanes, phase: str, table, name: str) -> None:
    """Merge the collected states (an Arrow table ``(first, part, seq, lane, state)``)
    into the driver's lanes, in order of ``(first, part, seq)``."""
    from calcore.statistics.passes import merge_pass

    columns = [table[c].to_pylist() for c in ("first", "part", "seq", "lane", "state")]
    rows = sorted(zip(*columns, strict=True), key=lambda r: r[:3])
    merge_pass(
        lanes,
        phase,
        [(f"position {first:,}", states, kinds) for first, states, kinds in _parts(rows, name)],
    )

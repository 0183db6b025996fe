"""A fitted calibrator applied on Spark: a stateless ``mapInArrow`` map.

The calibrator travels to the tasks as the JSON text calcore saves (``to_dict``), and
each task rebuilds it with the loader that reads saved calibrators (every field checked),
never as a pickle of the fitted object. Each Arrow batch is turned into probabilities by
the embedded reader's own validation (:func:`calcore.io._rows.validate_scores`), mapped
by ``transform``, and written back with the layout of ``calcore apply``
(:class:`calcore.io.stream_write.AppliedLayout`): every input column kept, in order,
the scores replaced (or, with a suffix, the calibrated columns added after them). A row's
calibrated values therefore equal those of the embedded ``calcore apply`` bit for bit,
however Spark partitions the rows.
"""

from __future__ import annotations

import bisect
import json
import os
from types import SimpleNamespace

import numpy as np

from calcore.foundation.errors import CalcoreError, quoted

__all__ = ["apply", "apply_files", "check_apply_files", "plan_for_stream", "applied_batches"]
__all__ += ["HIDDEN_POSITION", "spark_error", "numeric_columns", "decide_scores_kind"]
__all__ += ["saved_calibrator_text"]

#: The position column the CLI adds to name rows in messages; never written out.
HIDDEN_POSITION = "__calcore_position"


def saved_calibrator_text(fitted) -> str:
    """The calibrator's saved JSON text, refused for what the map cannot apply yet."""
    from calcore.calibrators.per_slice import PerSliceCalibrator

    if isinstance(fitted, PerSliceCalibrator):
        raise CalcoreError(
            f"{fitted.method} per slice of {' x '.join(fitted.by)}: a per-slice calibrator "
            "is not applied on Spark yet (its slice columns must be typed as calcore types "
            "them); apply it with the embedded engine (calcore apply without --engine)."
        )
    if not hasattr(fitted, "to_dict"):
        raise CalcoreError(
            f"fitted must be a fitted calcore calibrator (calcore.make_calibrator(...).fit), "
            f"not {type(fitted).__name__}."
        )
    return json.dumps(fitted.to_dict(), allow_nan=False)


def _expected_classes(n_scores: int) -> int:
    return 2 if n_scores == 1 else n_scores  # one column: P(positive) of two classes


def _check_classes(calibrator, roles, source: str) -> None:
    k = _expected_classes(len(roles.scores))
    names = calibrator.class_names or ()
    if len(names) != k:
        raise CalcoreError(
            f"{source}: the score columns [{', '.join(map(quoted, roles.scores))}] hold "
            f"{k} classes; the calibrator was fitted on {len(names)} "
            f"({', '.join(map(str, names))}). Apply a calibrator fitted on this model's "
            "scores, or name the score columns (score_columns=[...])."
        )


def _check_class_names(calibrator, names, source: str) -> None:
    """The embedded transform's check, made once on the driver before any task starts."""
    if tuple(names) != tuple(calibrator.class_names):
        raise CalcoreError(
            f"{source}: {calibrator.name} was fitted on classes {list(calibrator.class_names)}, "
            f"but these predictions have classes {list(names)}; apply it to data with the "
            "same classes in the same order."
        )


def _plan(saved: str, layout, roles, kind: str, *, source: str, class_names, percent: bool,
          renormalize: bool, offsets=None) -> str:  # fmt: skip
    """Everything a task needs, as JSON text (no pickled object travels)."""
    return json.dumps(
        {
            "calibrator": saved,
            "source": source,
            "scores": list(roles.scores),
            "kind": kind,
            "class_names": list(class_names),
            "percent": bool(percent),
            "renormalize": bool(renormalize),
            "columns": [list(c) for c in layout.columns],
            # (offset, file) sorted: names a bad row by its file and row (CLI only)
            "offsets": offsets,
        },
        allow_nan=False,
    )


class _RowNamer:
    """``ctx.row`` of a batch: by file and row when positions came along, else the
    batch's 0-based row (Spark does not say where a row of a DataFrame came from)."""

    def __init__(self, positions, offsets, batch: int):
        self.positions, self.batch = positions, batch
        self.starts = [o for o, _ in offsets] if offsets else None
        self.files = [f for _, f in offsets] if offsets else None

    def __call__(self, i: int) -> str:
        if self.positions is None or self.starts is None:
            return f"row {i} (0-based) of Spark batch {self.batch}"
        p = int(self.positions[i])
        k = bisect.bisect_right(self.starts, p) - 1
        return f"row {p - self.starts[k]} (0-based) of {self.files[k]}"


def applied_batches(plan_text: str, batches):
    """The map run on Spark's workers: each Arrow batch with its scores calibrated.

    Parameters
    ----------
    plan_text : str
        The JSON made on the driver (the saved calibrator, the columns, the kind).
    batches : iterator of pyarrow.RecordBatch

    Yields
    ------
    pyarrow.RecordBatch
        The batch in the output layout (no position column).

    Raises
    ------
    CalcoreError
        A score that fails validation, naming the file and row (or the batch row).

    Examples
    --------
    >>> df.mapInArrow(lambda b: applied_batches(plan, b), schema)  # doctest: +SKIP
    """
    import pyarrow as pa

    from calcore.calibrators._saved import calibrator_from_saved, parse_json
    from calcore.foundation.validation import InputContext
    from calcore.io._rows import validate_scores
    from calcore.io._table import columns_to_matrix
    from calcore.predictions import Predictions

    plan = json.loads(plan_text)
    calibrator = calibrator_from_saved(
        parse_json(plan["calibrator"], source="the calibrator shipped by the driver"),
        source="the calibrator shipped by the driver",
    )
    scores, names = plan["scores"], tuple(plan["class_names"])
    offsets = plan["offsets"]
    for number, batch in enumerate(batches):
        n = batch.num_rows
        if n == 0:
            continue
        table = pa.Table.from_batches([batch])
        positions = None
        if HIDDEN_POSITION in table.column_names:
            positions = table[HIDDEN_POSITION].to_numpy()
        ctx = InputContext(plan["source"], scores, _RowNamer(positions, offsets, number))
        probs, logits, _, _ = validate_scores(
            columns_to_matrix(table, scores),
            kind=plan["kind"],
            auto=False,
            ctx=ctx,
            renormalize=plan["renormalize"],
            percent=plan["percent"],
        )
        # as the embedded reader builds a batch; labels are not read (no calibrator's
        # map uses them), so every row gets class 0
        preds = Predictions(
            np.ascontiguousarray(probs, dtype=np.float64), np.zeros(n, np.int64), names, logits
        )
        out = calibrator.transform(preds).probs
        arrays = [
            table[column] if column is not None else pa.array(out[:, c], pa.float64())
            for _, column, c in plan["columns"]
        ]
        names_out = [name for name, _, _ in plan["columns"]]
        yield from pa.Table.from_arrays(arrays, names=names_out).to_batches()


def _output_schema(df, columns):
    from pyspark.sql.types import DoubleType, StructField, StructType

    fields = {f.name: f for f in df.schema.fields}
    return StructType(
        [
            StructField(name, fields[column].dataType, fields[column].nullable)
            if column is not None
            else StructField(name, DoubleType(), True)
            for name, column, _ in columns
        ]
    )


def _map(df, plan_text: str, columns):
    # A closure pickled by value: its only cargo is the plan's text.
    def run(batches):
        from calcore.spark._apply import applied_batches

        yield from applied_batches(plan_text, batches)

    return df.mapInArrow(run, _output_schema(df, columns))


def _layout(source, kept, roles, kind, class_names, suffix):
    from calcore.io.stream_write import AppliedLayout

    # AppliedLayout reads these attributes of a stream; the DataFrame's are the same facts
    shim = SimpleNamespace(
        name=source,
        kept_columns=tuple(kept),
        roles=roles,
        scores_kind=kind,
        class_names=tuple(class_names),
    )
    return AppliedLayout(shim, suffix)


def numeric_columns(df):
    """``is_numeric(column)`` for role detection, from the DataFrame's Spark types."""
    from pyspark.sql.types import NumericType

    types = {f.name: f.dataType for f in df.schema.fields}

    def is_numeric(column: str) -> tuple[bool, str]:
        if isinstance(types[column], NumericType):
            return True, ""
        return False, f"its Spark type is {types[column].simpleString()}"

    return is_numeric


def decide_scores_kind(df, roles, scores: str, percent: bool, source: str, *,
                       with_reason: bool = False):  # fmt: skip
    """What the score columns hold, decided once on the driver from the first rows (as
    :func:`calcore.scan` decides on its first batch): partitions never decide alone.
    ``with_reason``: ``(kind, reason)``, the reason worded as the embedded reader's."""
    from calcore.io._columns import LOGIT_PREFIXES
    from calcore.io._rows import FIRST_ROWS, decide_kind
    from calcore.io._table import RawTable, RowNames, columns_to_matrix

    if not with_reason and scores != "auto" and not percent:
        return scores
    if not with_reason and roles.prefix is not None and roles.prefix.lower() in LOGIT_PREFIXES:
        if not percent:
            return "logits"
    head = df.select(*roles.scores).limit(10_000).toArrow()
    raw = RawTable(
        source, "parquet", None, tuple(df.columns), roles, head.num_rows,
        columns_to_matrix(head, roles.scores), np.empty(0), None, RowNames(csv=False, first=0),
    )  # fmt: skip
    kind, reason = decide_kind(raw, scores, percent=percent, scope=FIRST_ROWS)
    if reason.startswith("scores='auto' saw"):  # from values: those of the first rows
        reason += FIRST_ROWS
    return (kind, reason) if with_reason else kind


def apply(
    df,
    fitted,
    *,
    score_columns=None,
    label_column: str | None = None,
    split_column: str | None = None,
    scores: str = "auto",
    percent: bool = False,
    renormalize: bool = False,
    suffix: str | None = None,
):
    """A fitted calibrator applied to a Spark DataFrame, as ``calcore apply`` does.

    A stateless ``mapInArrow`` map: the calibrator's saved JSON is shipped to the tasks
    and rebuilt there by calcore's loader (never a pickle). The result holds every
    column of ``df`` in order; the score columns hold the calibrated probabilities
    (logit columns ``logit_cat`` become probability columns ``p_cat``), or, with
    ``suffix``, the calibrated columns are added after the last score column. Each row
    gets exactly the values the embedded ``calcore apply`` writes for it.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Predictions: score columns (one per class, or one of P(positive) for a binary
        model) among any other columns, which are passed through.
    fitted : Calibrator
        A fitted calibrator (``calcore.make_calibrator("ts").fit(preds)`` or
        :func:`calcore.calibrators.read_calibrator`). Per-slice calibrators are refused.
    score_columns : sequence of str, optional
        The score columns, in class order (default: detected as ``calcore.scan`` does:
        ``p_*``/``logit_*`` prefixes, else the numeric columns beside the label).
    label_column, split_column : str, optional
        Named when detection needs them; their values are not read.
    scores : {"auto", "probs", "logits"}
        What the score columns hold; ``"auto"`` decides once, on the driver, from the
        prefix or the first 10,000 rows.
    percent : bool
        The probabilities are in percent (rows sum to 100).
    renormalize : bool
        Rescale rows that do not sum to 1 instead of refusing them.
    suffix : str, optional
        Keep the score columns and add ``<column><suffix>`` ones.

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy: nothing runs until it is written or collected.

    Raises
    ------
    CalcoreError
        No score columns found, a class count that differs from the calibrator's, a
        name collision of the layout, a per-slice calibrator; while the result is
        computed, a bad score (inside Spark's error, naming the batch row).

    Examples
    --------
    >>> import calcore, calcore.spark
    >>> spark = calcore.spark.session(master="local[2]")  # doctest: +SKIP
    >>> calib = calcore.load_predictions("calib.parquet")  # doctest: +SKIP
    >>> ts = calcore.make_calibrator("ts").fit(calib)  # doctest: +SKIP
    >>> out = calcore.spark.apply(spark.read.parquet("logs/"), ts)  # doctest: +SKIP
    >>> out.write.parquet("logs_calibrated/")  # doctest: +SKIP
    """
    from calcore.io._columns import detect_roles

    source = "Spark DataFrame"
    saved = saved_calibrator_text(fitted)
    columns = [c for c in df.columns if c != HIDDEN_POSITION]
    roles = detect_roles(
        columns,
        source=source,
        is_numeric=numeric_columns(df),
        label_column=label_column,
        split_column=split_column,
        score_columns=score_columns,
        scores_kind=scores,
    )
    if roles.problems:
        raise CalcoreError(roles.problems[0])
    _check_classes(fitted, roles, source)
    kind = decide_scores_kind(df, roles, scores, percent, source)
    if roles.prefix:  # p_cat, p_dog name the classes (labels are not read here)
        _check_class_names(fitted, roles.class_names, source)
    names = roles.class_names if roles.prefix else tuple(fitted.class_names)
    layout = _layout(source, columns, roles, kind, names, suffix)
    plan = _plan(saved, layout, roles, kind, source=source, class_names=fitted.class_names,
                 percent=percent, renormalize=renormalize)  # fmt: skip
    return _map(df, plan, layout.columns)


def plan_for_stream(stream, calibrator, *, suffix: str | None, renormalize: bool,
                    percent: bool, offsets) -> tuple[str, tuple]:  # fmt: skip
    """The plan of ``calcore apply --engine spark`` from the embedded reader's decisions
    (roles, class names, scores' kind of :func:`calcore.scan`), so that both engines
    read the same files the same way. Returns ``(plan text, output columns)``."""
    from calcore.io.stream_write import AppliedLayout

    saved = saved_calibrator_text(calibrator)
    _check_classes(calibrator, stream.roles, stream.name)
    _check_class_names(calibrator, stream.class_names, stream.name)
    layout = AppliedLayout(stream, suffix)
    plan = _plan(saved, layout, stream.roles, stream.scores_kind, source=stream.name,
                 class_names=stream.class_names, percent=percent, renormalize=renormalize,
                 offsets=offsets)  # fmt: skip
    return plan, layout.columns


def check_apply_files(stream, out) -> None:
    """What ``calcore apply --engine spark`` refuses before a Spark session starts.

    Raises
    ------
    CalcoreError
        A file other than Parquet (naming it), or an ``out`` that exists.
    """
    not_parquet = [f for f in stream.files if not f.lower().endswith((".parquet", ".pq"))]
    if not_parquet:
        raise CalcoreError(
            f"{not_parquet[0]}: --engine spark reads Parquet files; apply CSV, Arrow IPC and "
            "NPZ files without --engine spark (the embedded engine)."
        )
    if os.path.exists(out):
        raise CalcoreError(
            f"--out {out} exists; Spark writes a new directory of Parquet part files: give "
            "a path that does not exist yet."
        )


def apply_files(spark, stream, calibrator, out, *, suffix=None, renormalize=False,
                percent=False) -> int:  # fmt: skip
    """``calcore apply --engine spark``: the Parquet files of ``stream`` calibrated by
    Spark into the directory ``out`` (Parquet part files). Returns the rows written.

    Raises
    ------
    CalcoreError
        What :func:`check_apply_files` refuses, or what Spark or the map raise
        (calcore's message from a task, naming the file and row; else Spark's,
        shortened, with the source).
    """
    from calcore.spark._positions import file_offsets, local_path, with_row_positions

    check_apply_files(stream, out)
    files = [os.path.abspath(f) for f in stream.files]
    try:
        df = spark.read.parquet(*files)
        offsets = file_offsets(spark, df.inputFiles())
        named = sorted((o, local_path(f)) for f, o in offsets.items())
        plan, columns = plan_for_stream(stream, calibrator, suffix=suffix, percent=percent,
                                        renormalize=renormalize, offsets=named)  # fmt: skip
        df = with_row_positions(df, column=HIDDEN_POSITION, offsets=offsets)
        _map(df, plan, columns).write.parquet(os.path.abspath(out))
    except CalcoreError:
        raise
    except Exception as exc:  # Spark's errors: the calcore message inside, else shortened
        raise spark_error(exc, stream.name) from None
    # a map keeps every row: the files' row counts (Parquet footers), not one more job
    return stream.n_rows_in_files


def spark_error(exc: Exception, source: str) -> CalcoreError:
    """A Spark failure as one line: calcore's own message when a task raised one (it
    names the file and row), else Spark's first line, shortened, with the source."""
    text = str(exc)
    for line in text.splitlines():
        if "CalcoreError: " in line:
            return CalcoreError(line.split("CalcoreError: ", 1)[1].strip())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    short = " ".join((lines[0] if lines else type(exc).__name__).split())[:300]
    return CalcoreError(f"{source}: Spark failed: {short}")

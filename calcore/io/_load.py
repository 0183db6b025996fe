"""Entry points: :func:`load_predictions`, :func:`load_splits`, :func:`inspect_table`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from calcore._errors import CalcoreError, CalcoreWarning
from calcore._softmax import log_softmax_rows
from calcore._validation import (
    InputContext,
    check_binary_probs,
    check_class_names,
    check_logits,
    check_probs,
    check_sample_weight,
    probability_sum_tolerance,
)
from calcore.io._budget import DEFAULT_MAX_DECODED_BYTES, over_budget, resolve_budget
from calcore.io._columns import LOGIT_PREFIXES, PROB_PREFIXES
from calcore.io._labels import class_labels, split_of_rows
from calcore.io._load_report import LoadReport
from calcore.io._scan import read_table, scan
from calcore.io._source import open_source
from calcore.io._table import LabelRowNames, RawTable, SelectedRowNames
from calcore.predictions import Predictions

__all__ = ["DEFAULT_MAX_DECODED_BYTES"]


@dataclass(frozen=True, eq=False)
class _Classes:
    names: tuple[str, ...]
    labels: np.ndarray  # (n_rows,) int64, every row of the file
    kind: str


def check_options(scores, split, max_decoded_bytes) -> int:
    """Check the options; return the decoded-size budget in bytes."""
    if scores not in ("auto", "probs", "logits"):
        raise CalcoreError(f"scores must be 'auto', 'probs' or 'logits', got {scores!r}.")
    if split not in (None, "calib", "test"):
        raise CalcoreError(f"split must be None, 'calib' or 'test', got {split!r}.")
    return resolve_budget(max_decoded_bytes)


def _check_decoded_size(sc, budget: int) -> None:
    """Refuse a CSV/Parquet file whose cells would exceed the budget, before reading them."""
    if sc.source.file_format == "npz":
        return  # read_npz checked the array headers before loading anything
    if sc.source.file_format == "csv":
        n_columns = len(sc.columns)  # pandas parses every column
    else:
        n_columns = len({*sc.roles.scores, sc.roles.label, sc.roles.split, sc.weight} - {None})
    size = sc.n_rows * n_columns * 8
    if size > budget:
        what = f"{sc.n_rows:,} rows x {n_columns:,} columns x 8 bytes"
        raise over_budget(sc.source.name, what, size, budget)


def _open_table(
    path_or_buffer,
    *,
    name,
    label_column,
    split_column,
    score_columns,
    scores,
    max_decoded_bytes,
    weight_column=None,
):
    src = open_source(path_or_buffer, name=name)
    sc = scan(
        src,
        label_column=label_column,
        split_column=split_column,
        score_columns=score_columns,
        scores=scores,
        max_decoded_bytes=max_decoded_bytes,
        weight_column=weight_column,
    )
    if sc.roles.problems:
        raise CalcoreError(sc.roles.problems[0])
    _check_decoded_size(sc, max_decoded_bytes)
    return read_table(sc)


def _classes(table: RawTable, positive_class) -> _Classes:
    roles, binary = table.roles, table.scores.shape[1] == 1
    ctx = InputContext(table.source, row=LabelRowNames(table.row_names, roles.label))
    if positive_class is not None and not binary:
        raise CalcoreError(
            f"{table.source}: positive_class={positive_class!r} only applies to a file with a "
            f"single score column; this one has {table.scores.shape[1]}."
        )
    names = roles.class_names
    if binary and len(names) == 2:  # NPZ: 1-D scores with both class names given
        names, labels, kind = class_labels(table.labels, names, binary=False, ctx=ctx)
        return _Classes(names, labels, kind)
    if not binary:
        names = check_class_names(names, table.scores.shape[1], ctx=InputContext(table.source))
    names, labels, kind = class_labels(
        table.labels, names, binary=binary, positive_class=positive_class, ctx=ctx
    )
    return _Classes(
        check_class_names(names, len(names), ctx=InputContext(table.source)), labels, kind
    )


def decide_kind(table: RawTable, scores: str) -> tuple[str, str]:
    """``(kind, reason)``: the caller's choice, the NPZ array name, the prefix, or the values.

    A probability prefix (``p_``, ``prob_``, ...) or a logit prefix (``logit_``,
    ``logits_``) says what the columns hold: values that contradict it are then an
    error of validation (e.g. "probability 2.5 is greater than 1"), never a silent
    switch of kind. Without such a prefix, values outside [0, 1] mean logits,
    unless every row still sums to 1, which only probabilities do (then the
    out-of-range value is reported).
    """
    if scores != "auto":
        return scores, f"scores={scores!r} was given"
    if table.kind_hint is not None:
        return table.kind_hint
    s, prefix = table.scores, table.roles.prefix
    if prefix is not None and prefix.lower() in LOGIT_PREFIXES:
        return "logits", f"the score columns are named '{prefix}*', which means logits"
    outside = (s < 0) | (s > 1)  # NaN compares False: left for validation to report
    if outside.any():
        i, j = divmod(int(np.argmax(outside)), s.shape[1])
        where = f"{table.row_names(i)}, column {table.roles.scores[j]!r}"
        first = f"{float(s[i, j])!r} at {where}"
        if prefix is not None and prefix.lower() in PROB_PREFIXES:
            return "probs", (
                f"the score columns are named '{prefix}*', which means probabilities "
                f"(although a value is outside [0, 1]: {first})"
            )
        if _rows_sum_to_one(s):
            return "probs", (
                f"scores='auto' saw every row sum to 1, which only probabilities do "
                f"(although a value is outside [0, 1]: {first})"
            )
        return "logits", f"scores='auto' saw values outside [0, 1] (first: {first})"
    if s.shape[1] == 1:
        return "probs", "scores='auto' saw one column with every value in [0, 1]"
    return "probs", _ALL_IN_RANGE + " and rows that sum to 1"


_ALL_IN_RANGE = "scores='auto' saw every value in [0, 1]"
#: How a stream qualifies a kind decided from its first batch (later rows may differ).
FIRST_ROWS = " (in the first rows read, which decide for the whole stream)"


def _basis(reason: str) -> str:
    """The part of a probabilities ``reason`` that an error message repeats."""
    if reason.startswith(_ALL_IN_RANGE):
        return "every value is in [0, 1]" + (FIRST_ROWS if reason.endswith(FIRST_ROWS) else "")
    return reason.split(" (although")[0].replace(", which means probabilities", "")


def _rows_sum_to_one(s: np.ndarray) -> bool:
    """Whether a matrix of two or more rows and columns has every row summing to 1."""
    if s.shape[0] < 2 or s.shape[1] < 2:
        return False
    sums = s.sum(axis=1)
    tol = probability_sum_tolerance(s.shape[1], s.dtype)
    return bool(np.all(np.abs(sums - 1.0) <= tol))  # NaN rows compare False


def score_context(table: RawTable, rows) -> InputContext:
    row = table.row_names if rows is None else SelectedRowNames(table.row_names, rows)
    if table.file_format == "npz":
        return InputContext(f"{table.source}, array {table.kind_hint[0]!r}", None, row)
    return InputContext(table.source, table.roles.scores, row)


def validate_scores(scores, *, kind, auto, ctx, renormalize, reason=""):
    """Return (probs, logits or None, renormalized rows, max deviation or None)."""
    if scores.shape[1] == 1:
        if kind == "probs":
            return check_binary_probs(scores[:, 0], ctx=ctx), None, 0, None
        z = np.column_stack([np.zeros(len(scores)), scores[:, 0]])  # softmax([0, z]) = [1-s, s]
        names = ("reference logit 0", *(ctx.columns or ("column 0",)))
        z = check_logits(z, ctx=InputContext(ctx.source, names, ctx.row))
    elif kind == "probs":
        try:
            probs, info = check_probs(scores, ctx=ctx, renormalize=renormalize)
        except CalcoreError as exc:
            if not auto or not np.isfinite(scores).all():  # NaN/inf: the kind is not the issue
                raise
            raise CalcoreError(
                f"{exc} (scores='auto' read them as probabilities because {_basis(reason)}; "
                f"if they are logits, pass scores='logits' or name the columns logit_*.)"
            ) from None
        if info is None:
            return probs, None, 0, float(np.abs(probs.sum(axis=1) - 1.0).max())
        return probs, None, info.n_rows, info.max_deviation
    else:
        z = check_logits(scores, ctx=ctx)
    probs = log_softmax_rows(z)  # the same computation as Predictions.from_logits
    np.exp(probs, out=probs)
    return probs, z, 0, None


def _frozen(arr):
    if arr is not None:
        arr.setflags(write=False)
    return arr


def build_predictions(
    table, classes, kind, reason, *, auto, rows, split, split_values, renormalize
) -> Predictions:
    """Validate the selected rows and wrap them in Predictions with a LoadReport."""
    scores = table.scores if rows is None else table.scores[rows]
    labels = classes.labels if rows is None else classes.labels[rows]
    ctx = score_context(table, rows)
    probs, logits, n_renorm, deviation = validate_scores(
        scores, kind=kind, auto=auto, ctx=ctx, renormalize=renormalize, reason=reason
    )
    if n_renorm:
        reason = reason.replace(" and rows that sum to 1", f"; {n_renorm} row(s) renormalised")
    counts = np.bincount(labels, minlength=len(classes.names))
    roles = table.roles
    weights = _row_weights(table, rows)
    split_counts = ()
    if split_values is not None:
        split_counts = tuple(
            (s, int(np.count_nonzero(split_values == s))) for s in ("calib", "test")
        )
    report = LoadReport(
        source=table.source,
        file_format=table.file_format,
        delimiter=table.delimiter,
        label_column=roles.label,
        label_kind=classes.kind,
        class_columns=roles.scores,
        class_names=classes.names,
        prefix=roles.prefix,
        binary_shortcut=table.scores.shape[1] == 1,
        scores_kind=kind,
        scores_reason=reason,
        split_column=roles.split,
        split_selected=split,
        split_counts=split_counts,
        ignored_columns=roles.ignored,
        ignored_reasons=roles.ignored_reasons,
        n_rows_in_file=table.n_rows,
        n_rows_loaded=len(labels),
        renormalized_rows=n_renorm,
        max_row_deviation=deviation,
        absent_classes=tuple(n for n, c in zip(classes.names, counts, strict=True) if c == 0),
        row_numbering=table.row_names.numbering,
        weight_column=table.weight_column if weights is not None else None,
        total_weight=None if weights is None else float(weights.sum()),
    )
    for message in report.warnings():
        warnings.warn(message, CalcoreWarning, stacklevel=3)  # the caller of load_*
    return Predictions(
        _frozen(np.ascontiguousarray(probs, dtype=np.float64)),
        _frozen(np.array(labels, dtype=np.int64)),
        classes.names,
        _frozen(logits),
        report,
        sample_weight=_frozen(weights),
    )


def _row_weights(table: RawTable, rows) -> np.ndarray | None:
    """The selected rows' weights, checked (finite, >= 0, not all 0), naming a bad cell."""
    if table.weights is None:
        return None
    w = table.weights if rows is None else table.weights[rows]
    row = table.row_names if rows is None else SelectedRowNames(table.row_names, rows)
    return check_sample_weight(w, len(w), source=table.source, row=row, column=table.weight_column)


def _split_values(table: RawTable) -> np.ndarray | None:
    if table.split is None:
        return None
    ctx = InputContext(table.source, row=LabelRowNames(table.row_names, table.roles.split))
    return split_of_rows(table.split, ctx=ctx)


def prepare_table(
    path_or_buffer,
    *,
    name,
    label_column,
    split_column,
    score_columns,
    scores,
    max_decoded_bytes,
    positive_class,
    weight_column=None,
):
    table = _open_table(
        path_or_buffer,
        name=name,
        label_column=label_column,
        split_column=split_column,
        score_columns=score_columns,
        scores=scores,
        max_decoded_bytes=max_decoded_bytes,
        weight_column=weight_column,
    )
    split_values = _split_values(table)
    classes = _classes(table, positive_class)
    kind, reason = decide_kind(table, scores)
    return table, split_values, classes, kind, reason

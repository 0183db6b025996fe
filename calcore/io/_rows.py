"""Rows read from a file, validated: one place for the loader and the stream.

A file loaded whole (:func:`calcore.load_predictions`) and a stream's batches
(:func:`calcore.scan`) go through the same checks here: the scores' kind is decided
(:func:`decide_kind`), the scores validated as probabilities or logits
(:func:`validate_scores`), the labels mapped to classes and the weights checked, and a
message names the file, the column and the file's row. Nothing here reads a file (no
pandas or pyarrow), so the stream imports it when calcore is imported.

:func:`check_rows` is the one validation of rows' scores and weights, for both. What
stays two ways, on purpose, is what the two sources know: a file loaded whole decides
the scores' kind and its classes on every row of the file (:func:`build_predictions`:
a split that lacks a class keeps it, and the report names the classes never seen),
refuses weights that are all 0, and reports what it did (:class:`LoadReport`); a stream
decides them on its first batch (its messages say so: :data:`FIRST_ROWS`), then holds
every later batch to them (:func:`validate_batch`), and accepts a batch of zero weights.
A file is therefore not loaded by collecting a stream's batches: the messages of the two
differ where what they know differs (and a loaded file may be an upload, which a stream
cannot read).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from calcore.foundation.errors import LOGITS_FIX, CalcoreError, CalcoreWarning
from calcore.foundation.softmax import log_softmax_rows
from calcore.foundation.validation import (
    InputContext,
    check_binary_probs,
    check_class_names,
    check_logits,
    check_probs,
    check_sample_weight,
    frozen_array,
    probability_sum_tolerance,
)
from calcore.io._columns import LOGIT_PREFIXES, PROB_PREFIXES
from calcore.io._labels import SPLITS, class_labels, split_codes
from calcore.io._load_report import PERCENT_SAYS, SCORES_AUTO_SAW, LoadReport
from calcore.io._table import LabelRowNames, RawTable, SelectedRowNames
from calcore.io.options import PERCENT_LOGITS_FIX, LoadOptions
from calcore.predictions import Predictions

__all__ = [
    "BatchRules",
    "FIRST_ROWS",
    "KindState",
    "CheckedRows",
    "build_predictions",
    "check_rows",
    "decide_kind",
    "file_classes",
    "looks_like_percent",
    "score_context",
    "validate_batch",
    "validate_scores",
    "validated_rows",
]


@dataclass(frozen=True, eq=False)
class _Classes:
    names: tuple[str, ...]
    labels: np.ndarray  # (n_rows,) int64, every row of the file
    kind: str


def file_classes(table: RawTable, positive_class) -> _Classes:
    """The class names and every row's class index of a file read whole."""
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


def decide_kind(
    table: RawTable, scores: str, *, percent: bool = False, scope: str = ""
) -> tuple[str, str]:
    """``(kind, reason)``: the caller's choice, the NPZ array name, the prefix, or the values.

    A probability prefix (``p_``, ``prob_``, ...) or a logit prefix (``logit_``,
    ``logits_``) says what the columns hold: values that contradict it are then an
    error of validation (e.g. "probability 2.5 is greater than 1"), never a silent
    switch of kind. Without such a prefix, values outside [0, 1] mean logits,
    unless every row still sums to 1, which only probabilities do (then the
    out-of-range value is reported), or the values look like percentages (see
    :func:`looks_like_percent`), which are refused rather than guessed.

    ``percent=True`` means probabilities (in percent) unless the caller, the NPZ
    array name or the prefix says logits, which is then an error. ``scope`` qualifies
    what "every row" covers in messages (a stream decides on its first rows).
    """
    if percent:
        return _percent_kind(table, scores)
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
                f"{SCORES_AUTO_SAW} every row sum to 1, which only probabilities do "
                f"(although a value is outside [0, 1]: {first})"
            )
        if looks_like_percent(s):
            raise _percentages(table, scope)
        return "logits", f"{SCORES_AUTO_SAW} values outside [0, 1] (first: {first})"
    if s.shape[1] == 1:
        return "probs", f"{SCORES_AUTO_SAW} one column with every value in [0, 1]"
    return "probs", _ALL_IN_RANGE + " and rows that sum to 1"


_ALL_IN_RANGE = f"{SCORES_AUTO_SAW} every value in [0, 1]"
#: How a stream qualifies a kind decided from its first batch (later rows may differ).
FIRST_ROWS = " (in the first rows read, which decide for the whole stream)"


def _basis(reason: str) -> str:
    """The part of a probabilities ``reason`` that an error message repeats."""
    if reason.startswith(_ALL_IN_RANGE):
        return "every value is in [0, 1]" + (FIRST_ROWS if reason.endswith(FIRST_ROWS) else "")
    basis = reason.split(" (although")[0].replace(", which means probabilities", "")
    # said without the option's syntax: the message also reaches people without Python
    return basis.replace(f"{SCORES_AUTO_SAW} every row sum to 1", "every row sums to 1")


def _percent_kind(table: RawTable, scores: str) -> tuple[str, str]:
    """The kind with ``percent=True``: probabilities, unless something says logits."""
    if scores == "probs":
        return "probs", "scores='probs' was given"
    hint, prefix = table.kind_hint, table.roles.prefix
    said = None
    if hint is not None and hint[0] == "logits":
        said = hint[1]
    elif prefix is not None and prefix.lower() in LOGIT_PREFIXES:
        said = f"the score columns are named '{prefix}*'"
    if said is not None:
        raise CalcoreError(
            f"{table.source}: scores in percent are probabilities, but {said}, which means "
            f"logits. {PERCENT_LOGITS_FIX}",
            option="percent_logits",
            fix=PERCENT_LOGITS_FIX,
        )
    if hint is not None:
        return hint
    if prefix is not None and prefix.lower() in PROB_PREFIXES:
        return "probs", f"the score columns are named '{prefix}*', which means probabilities"
    return "probs", PERCENT_SAYS


#: How to load percentages, in the refusal of scores='auto'.
PERCENT_FIX = (
    "Either divide by 100 when writing the file or pass scores='probs', percent=True "
    "(--scores probs --percent on the command line); if they really are logits, pass "
    "scores='logits'."
)


#: How far (in percentage points) a row of percentages may miss 100: rounding to two
#: decimals leaves up to 0.005 per column.
PERCENT_SUM_TOLERANCE = 0.5


def looks_like_percent(s: np.ndarray) -> bool:
    """Whether score values look like probabilities in percent rather than logits.

    Every value is in [0, 100], and with two or more columns every row sums to 100
    within half a percentage point (percentages rounded to two decimals, such as
    33.33 + 33.33 + 33.33, miss 100 by more than the float tolerance), which
    non-negative logits have no reason to do. A single column (binary shortcut) cannot
    sum to anything, so there values in [0, 100] with some above 1 are enough: read as
    logits, a column without a negative value would have every row predict the positive
    class, while percentages are never negative (``scores="logits"`` reads such a column as logits).
    """
    if s.size == 0 or not ((s >= 0) & (s <= 100)).all():  # NaN compares False: not percent
        return False
    if s.shape[1] == 1:
        return bool((s > 1).any())
    tol = max(PERCENT_SUM_TOLERANCE, 100 * probability_sum_tolerance(s.shape[1], s.dtype))
    return bool(np.all(np.abs(s.sum(axis=1) - 100.0) <= tol))


def _percentages(table: RawTable, scope: str) -> CalcoreError:
    """The refusal of score columns that look like percentages, naming the first value > 1."""
    s, columns = table.scores, table.roles.scores
    i, j = divmod(int(np.argmax(s > 1)), s.shape[1])
    first = f"{table.row_names(i)}, column {columns[j]!r} holds {float(s[i, j])!r}"
    if s.shape[1] == 1:
        what = f"score column {columns[0]!r} looks like percentages"
        why = (
            f"every value is in [0, 100]{scope}, none negative (as logits, every row "
            f"would predict the positive class)"
        )
    else:
        shown = ", ".join(repr(c) for c in columns[:10])
        more = f", ... ({len(columns)} in all)" if len(columns) > 10 else ""
        what = f"score columns {shown}{more} look like percentages"
        why = f"every value is in [0, 100] and every row sums to 100{scope}"
    return CalcoreError(
        f"{table.source}: the {what}, not logits: {why}, and {first}. {PERCENT_FIX}",
        option="percent_auto",
        fix=PERCENT_FIX,
    )


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


def validate_scores(scores, *, kind, auto, ctx, renormalize, reason="", percent=False):
    """Return (probs, logits or None, renormalized rows, max deviation or None).

    ``percent=True``: the scores are probabilities in percent, divided by 100 here,
    before the checks (a new array: the caller's is left as read).
    """
    if percent:
        scores = np.divide(scores, 100.0)
    if kind == "probs":
        try:
            return _checked_probs(
                scores, auto=auto, ctx=ctx, renormalize=renormalize, reason=reason
            )
        except CalcoreError as exc:
            note = _percent_note(scores, percent)
            if not note:
                raise
            if note.endswith(PERCENT_NOTE_FIX):
                raise exc.extended(note, option="percent", fix=PERCENT_NOTE_FIX) from None
            raise exc.extended(note) from None
    if scores.shape[1] == 1:
        z = np.column_stack([np.zeros(len(scores)), scores[:, 0]])  # softmax([0, z]) = [1-s, s]
        names = ("reference logit 0", *(ctx.columns or ("column 0",)))
        z = check_logits(z, ctx=InputContext(ctx.source, names, ctx.row))
    else:
        z = check_logits(scores, ctx=ctx)
    probs = log_softmax_rows(z)  # the same computation as Predictions.from_logits
    np.exp(probs, out=probs)
    return probs, z, 0, None


#: How to read as logits scores that detection read as probabilities (option
#: ``"scores_logits"``).
LOGITS_AUTO_FIX = "If they are logits, pass scores='logits' or name the columns logit_*."


def _checked_probs(scores, *, auto, ctx, renormalize, reason):
    """Validated probabilities: (probs, None, renormalized rows, max deviation or None)."""
    if scores.shape[1] == 1:
        return check_binary_probs(scores[:, 0], ctx=ctx), None, 0, None
    try:
        probs, info = check_probs(scores, ctx=ctx, renormalize=renormalize)
    except CalcoreError as exc:
        if not auto or not np.isfinite(scores).all() or looks_like_percent(scores):
            raise  # NaN/inf, or percentages (noted by the caller): the kind is not the issue
        # the reason replaces the error's own logits advice (said once, with the names)
        kept = [(o, f) for o, f in exc.fixes if o != "scores_logits"]
        text = str(exc).replace(f" {LOGITS_FIX}", "")
        error = CalcoreError(
            text, option=kept[0][0] if kept else None, fix=kept[0][1] if kept else None,
            also=kept[1:],
        )  # fmt: skip
        raise error.extended(
            f"(They were read as probabilities because {_basis(reason)}.) {LOGITS_AUTO_FIX}",
            option="scores_logits",
            fix=LOGITS_AUTO_FIX,
        ) from None
    if info is None:
        return probs, None, 0, float(np.abs(probs.sum(axis=1) - 1.0).max())
    return probs, None, info.n_rows, info.max_deviation


#: How to read percentages, after a probability error (a program with its own control
#: shows its own words instead: ``CalcoreError.fix``).
PERCENT_NOTE_FIX = (
    "divide by 100 when writing the file, or pass percent=True (--percent on the command line)."
)


def _percent_note(scores, percent: bool) -> str:
    """What a probability error adds about percentages ("" when nothing applies)."""
    if not np.isfinite(scores).all():  # a NaN or empty cell: percentages are not the issue
        return ""
    rows = "" if scores.shape[1] == 1 else ", rows summing to 100"
    if percent:
        return (
            f"(Read as percentages, the file's values were divided by 100: percentages must "
            f"lie in [0, 100]{rows}.)"
        )
    if looks_like_percent(scores):
        return f"These look like percentages (every value in [0, 100]{rows}): {PERCENT_NOTE_FIX}"
    return ""


def build_predictions(
    table, classes, kind, reason, options: LoadOptions, *, rows, split, split_values
) -> Predictions:
    """Validate the selected rows of a file read whole (:func:`check_rows`) and wrap them
    in Predictions with a LoadReport."""
    percent = options.percent
    checked = check_rows(
        table,
        rows,
        classes.labels if rows is None else classes.labels[rows],
        table.weights,
        table.weight_column,
        kind=kind,
        reason=reason,
        options=options,
        auto=options.scores == "auto" and table.kind_hint is None and not percent,
        whole=True,
    )
    labels, weights = checked.labels, checked.weights
    n_renorm, deviation = checked.renormalized, checked.max_deviation
    if n_renorm:
        reason = reason.replace(" and rows that sum to 1", f"; {n_renorm} row(s) renormalised")
    counts = np.bincount(labels, minlength=len(classes.names))
    roles = table.roles
    metadata = {
        name: col if rows is None else col.take(rows) for name, col in table.metadata.items()
    }
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
        percent=percent,
        metadata_columns=tuple(
            (name, col.summary(), col.sliceable) for name, col in metadata.items()
        ),
    )
    for message in report.warnings():
        warnings.warn(message, CalcoreWarning, stacklevel=3)  # the caller of load_*
    return Predictions(
        checked.probs,
        labels,
        classes.names,
        checked.logits,
        report,
        sample_weight=weights,
        metadata=metadata,
    )


@dataclass(frozen=True, eq=False)
class CheckedRows:
    """Rows that passed :func:`check_rows`: read-only arrays, and what renormalising did."""

    probs: np.ndarray
    labels: np.ndarray
    logits: np.ndarray | None
    weights: np.ndarray | None
    renormalized: int
    max_deviation: float | None


def check_rows(
    raw: RawTable,
    selected,
    labels: np.ndarray,
    weights,
    weight_column: str | None,
    *,
    kind: str,
    reason: str,
    options: LoadOptions,
    auto: bool,
    whole: bool,
) -> CheckedRows:
    """The one validation of read rows, for a file loaded whole and a stream's batches.

    The ``selected`` rows of ``raw`` (None: every row), whose class indices are
    ``labels``: their scores validated as ``kind`` (probabilities or logits, divided by
    100 with ``options.percent``, renormalised on request), their weights (the column
    ``weight_column``'s values ``weights``; None without one) checked finite and >= 0;
    a message names the file, the column and the file's row.

    What differs between the two callers is said by the arguments, not by two copies of
    the checks: ``auto`` (whether a probability error explains why the values were read
    as probabilities: a loaded NPZ archive's array name is no guess, so it says nothing
    there) and ``whole`` (weights all 0 are refused in a file loaded whole; a stream
    checks that on all its batches together, one batch of zero weights is fine).
    """
    scores = raw.scores if selected is None else raw.scores[selected]
    probs, logits, n_renorm, deviation = validate_scores(
        scores,
        kind=kind,
        auto=auto,
        ctx=score_context(raw, selected),
        renormalize=options.renormalize,
        reason=reason,
        percent=options.percent,
    )
    w = None
    if weight_column is not None and weights is not None:
        w, rows = np.asarray(weights), raw.row_names
        if selected is not None:  # only the selected rows' weights count
            w, rows = w[selected], SelectedRowNames(raw.row_names, selected)
        w = check_sample_weight(
            w, w.shape[0], source=raw.source, row=rows, column=weight_column,
            allow_all_zero=not whole,
        )  # fmt: skip
    return CheckedRows(
        # the loader's own arrays (never the caller's): frozen in place
        frozen_array(np.ascontiguousarray(probs, dtype=np.float64), owned=True),
        frozen_array(np.array(labels, dtype=np.int64), owned=True),
        frozen_array(logits, owned=True),
        frozen_array(w, owned=True),
        n_renorm,
        deviation,
    )


@dataclass(frozen=True)
class BatchRules:
    """What every batch of a stream is checked against, settled when it was opened.

    Attributes
    ----------
    options : LoadOptions
        The stream's options (scores, percent, renormalize, positive class...).
    split : str or None
        The split read (``"calib"``, ``"test"``), None for every row.
    weight_column : str or None
        The weight column, if any.
    binary : bool
        A single score column holding P(positive class).
    names : tuple of str or None
        The class names the stream's first rows made (None: not yet known).
    """

    options: LoadOptions
    split: str | None = None
    weight_column: str | None = None
    binary: bool = False
    names: tuple[str, ...] | None = None


@dataclass
class KindState:
    """The scores' kind, decided on the first batch and then held for the whole stream."""

    requested: str
    decided: tuple[str, str] | None = None


def _class_indices(raw: RawTable, selected, rules: BatchRules, ctx):
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
    options = dict(binary=rules.binary, positive_class=rules.options.positive_class)
    try:
        names, per_value, _ = class_labels(
            distinct, raw.roles.class_names, ctx=InputContext(raw.source), **options
        )
    except CalcoreError:
        class_labels(distinct[index], raw.roles.class_names, ctx=ctx, **options)  # names the row
        raise
    return names, per_value[index]


def validate_batch(rules: BatchRules, raw: RawTable, weights, state: KindState):
    """The selected rows of one batch as Predictions (weights in ``sample_weight``),
    their indices in the batch (None: every row) and their split codes (None without a
    split column), or None when the split leaves none.

    ``state`` holds the scores' kind: decided on the first batch (and kept there), then
    held for every later one.
    """
    options = rules.options
    selected = codes = None
    if raw.roles.split is not None:  # validated also when every row is read
        ctx = InputContext(raw.source, row=LabelRowNames(raw.row_names, raw.roles.split))
        codes = split_codes(*raw.split, ctx=ctx)
        if rules.split is not None:
            selected = np.flatnonzero(codes == SPLITS.index(rules.split))
            if selected.size == 0:
                return None
            codes = codes[selected]
    rows = raw.row_names if selected is None else SelectedRowNames(raw.row_names, selected)
    ctx = InputContext(raw.source, row=LabelRowNames(rows, raw.roles.label))
    names = rules.names
    got, labels = _class_indices(raw, selected, rules, ctx)
    if names is not None and got != names:
        raise CalcoreError(
            f"{raw.source}: the labels of rows from {raw.row_names(0)} make the classes "
            f"{list(got)}, but the first rows of the stream made {list(names)}. Give "
            f"positive_class= (binary files with text labels) so that every batch agrees."
        )
    percent = options.percent
    if state.decided is None:
        kind, reason = decide_kind(raw, options.scores, percent=percent, scope=FIRST_ROWS)
        if reason.startswith(SCORES_AUTO_SAW):  # from values: those of this batch
            reason += FIRST_ROWS
        state.decided = kind, reason
    kind, reason = state.decided
    checked = check_rows(
        raw,
        selected,
        labels,
        weights,
        rules.weight_column,
        kind=kind,
        reason=reason,
        options=options,
        auto=options.scores == "auto" and not percent,
        whole=False,
    )
    preds = Predictions(
        checked.probs, checked.labels, got, checked.logits, sample_weight=checked.weights
    )
    return preds, selected, codes


def validated_rows(rules: BatchRules, raw: RawTable, weights, decided: tuple[str, str]):
    """One batch read elsewhere (an engine's task) validated as :func:`calcore.scan`'s
    batches are.

    Parameters
    ----------
    rules : BatchRules
        The stream's settled rules (options, split, weight column, class names, binary),
        as :func:`calcore.scan` made them.
    raw : RawTable
        The batch's scores, dictionary-encoded labels
        (:func:`calcore.io._readers.encoded_labels`) and split; its ``row_names`` name a
        bad row (file and row).
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
    validated = validate_batch(rules, raw, weights, KindState(rules.options.scores, decided))
    if validated is None:
        return None
    preds, selected, _ = validated
    return preds, selected

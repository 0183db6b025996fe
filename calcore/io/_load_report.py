"""What the loader detected and did: :class:`TableSchema` and :class:`LoadReport`.

Both are frozen dataclasses of plain values (strings, numbers, tuples), so they
pickle (``st.cache_data``) and compare by value.
"""

from __future__ import annotations

from dataclasses import dataclass

from calcore.foundation.errors import Advice

__all__ = ["LoadReport", "NOTE_TERMS", "TableSchema", "scores_note", "with_terms"]

#: How detection's reason for the scores' kind begins when it looked at the values.
SCORES_AUTO_SAW = "scores='auto' saw"
#: The reason when ``percent=True`` alone decided the kind.
PERCENT_SAYS = "percent=True says the scores are probabilities in percent"
#: What a note adds when the scores were divided by 100.
PERCENT_GIVEN = "(percent=True)"
#: What inspection suggests for values that look like percentages.
PERCENT_SUGGESTED = "read them with percent=True"
#: Why a column was ignored when the caller listed the score columns.
NOT_IN_SCORE_COLUMNS = "not in score_columns"

#: The phrases of the load report's notes (and of :class:`TableSchema`'s reason) that
#: speak of an option in Python's terms, with the option each is about: a program with
#: its own means to the same end (the command line's flags, the dashboard's controls)
#: replaces the phrase, whole, by its own words for the option
#: (:func:`calcore.foundation.errors.reworded`). Each is written once, here.
NOTE_TERMS = (
    ("scores_auto", SCORES_AUTO_SAW),
    ("scores_given", "scores='probs' was given"),
    ("scores_given", "scores='logits' was given"),
    ("percent_says", PERCENT_SAYS),
    ("percent_given", PERCENT_GIVEN),
    ("percent_suggested", PERCENT_SUGGESTED),
    ("score_columns_given", NOT_IN_SCORE_COLUMNS),
)


def with_terms(text: str) -> str:
    """``text`` as an :class:`~calcore.foundation.errors.Advice` naming the options of the
    :data:`NOTE_TERMS` phrases it holds, or ``text`` itself when it holds none.

    Examples
    --------
    >>> note = with_terms("Scores read as logits: scores='auto' saw values outside [0, 1].")
    >>> note.fixes
    (('scores_auto', "scores='auto' saw"),)
    >>> type(with_terms("No split column: all rows loaded.")).__name__
    'str'
    """
    found = [(option, phrase) for option, phrase in NOTE_TERMS if phrase in text]
    if not found:
        return text
    (option, phrase), *also = found
    return Advice(text, option=option, fix=phrase, also=also)


def scores_note(kind: str, reason: str, *, percent: bool) -> str:
    """The note on the scores' kind, as a loaded file's report and a stream say it."""
    tail = f"; scores divided by 100 {PERCENT_GIVEN}." if percent else "."
    return with_terms(f"Scores read as {kind}: {reason}{tail}")


@dataclass(frozen=True)
class TableSchema:
    """What auto-detection finds in a file, before any value is validated.

    Produced by :func:`calcore.io.inspect_table`; the dashboard shows it and lets
    the user correct it (``label_column=``, ``score_columns=``, ``split_column=``,
    ``scores=``) before calling :func:`calcore.io.load_predictions`.

    Attributes
    ----------
    source : str
        The name used in messages (file name or ``"<upload>"``).
    file_format : {"csv", "parquet", "npz"}
    delimiter : str or None
        The CSV delimiter sniffed from the header line; ``None`` for other formats.
    columns : tuple of str
        All column names (NPZ: array names), in file order.
    n_rows : int
        Data rows in the file (for CSV: non-blank lines after the header).
    label_column : str or None
        The detected label column; ``None`` when none or several candidates match.
    label_candidates : tuple of str
        Columns whose name marks them as labels (several means ambiguous).
    class_columns : tuple of str
        Score columns, one per class, as named in the file.
    class_names : tuple of str
        Class names: ``class_columns`` with the common prefix stripped (binary
        shortcut: the two derived names are only known after reading labels,
        so this holds the single column's class).
    prefix : str or None
        The prefix stripped from ``class_columns`` (e.g. ``"p_"``).
    split_column : str or None
    ignored_columns : tuple of str
        Columns that are neither label, split, weight nor score columns.
    ignored_reasons : tuple of str
        Why each ignored column was ignored (same order).
    scores_guess : {"probs", "logits"} or None
        Guess from the preview rows; ``None`` when they do not decide.
    scores_reason : str
        Why.
    preview : tuple of dict of str to str
        The first rows, cells as text.
    problems : tuple of str
        Detection problems that loading would raise as errors (e.g. no label column).
    weight_column : str or None
        The column (NPZ: array) of row weights, if any.

    Examples
    --------
    >>> import calcore
    >>> schema = calcore.inspect_table(b"label,p_a,p_b\\na,0.9,0.1\\nb,0.3,0.7\\n")
    >>> schema.file_format, schema.columns, schema.prefix, schema.problems
    ('csv', ('label', 'p_a', 'p_b'), 'p_', ())
    """

    source: str
    file_format: str
    delimiter: str | None
    columns: tuple[str, ...]
    n_rows: int
    label_column: str | None
    label_candidates: tuple[str, ...]
    class_columns: tuple[str, ...]
    class_names: tuple[str, ...]
    prefix: str | None
    split_column: str | None
    ignored_columns: tuple[str, ...]
    ignored_reasons: tuple[str, ...]
    scores_guess: str | None
    scores_reason: str
    preview: tuple[dict[str, str], ...]
    problems: tuple[str, ...]
    weight_column: str | None = None


@dataclass(frozen=True)
class LoadReport:
    """What :func:`calcore.io.load_predictions` detected and did.

    Attributes
    ----------
    source : str
        The name used in messages.
    file_format : {"csv", "parquet", "npz"}
    delimiter : str or None
    label_column : str
        Column (NPZ: array) holding the labels.
    label_kind : {"names", "indices"}
        Whether labels were class names or integer column indices.
    class_columns : tuple of str
        Score columns as named in the file.
    class_names : tuple of str
        The classes of the returned predictions.
    prefix : str or None
        Prefix stripped from the score column names.
    binary_shortcut : bool
        One score column holding P(positive class) was expanded to ``[1 - p, p]``.
    scores_kind : {"probs", "logits"}
    scores_reason : str
        Why that kind: given by the caller, the NPZ array name, or what
        ``scores="auto"`` saw ("values outside [0, 1]" / "rows sum to 1").
    split_column : str or None
    split_selected : {"calib", "test"} or None
        ``None``: all rows were loaded.
    split_counts : tuple of (str, int)
        Rows per split in the whole file (empty without a split column).
    ignored_columns : tuple of str
    ignored_reasons : tuple of str
        Why each column is not a score (a kept metadata column is listed here too).
    n_rows_in_file : int
    n_rows_loaded : int
    renormalized_rows : int
        Rows rescaled because of ``renormalize=True``.
    max_row_deviation : float or None
        Largest ``|row sum - 1|`` before renormalisation (probabilities only).
    absent_classes : tuple of str
        Classes that no loaded row has as its label.
    row_numbering : str
        How rows are numbered in messages (CSV: file lines, header = line 1).
    weight_column : str or None
        Column (NPZ: array) of row weights, if any; the predictions then carry them
        as ``sample_weight``.
    total_weight : float or None
        Sum of the loaded rows' weights.
    percent : bool
        The scores were probabilities in percent, divided by 100 before validation
        (``percent=True``).
    metadata_columns : tuple of (str, str, bool)
        Each other column (CSV, Parquet): its name, its summary (kind, number of values,
        missing: :meth:`calcore.MetadataColumn.summary`) and whether its values were kept
        for slicing.

    Examples
    --------
    >>> import calcore
    >>> preds = calcore.load_predictions(b"label,p_a,p_b\\na,0.9,0.1\\nb,0.3,0.7\\n")
    >>> report = preds.load_report
    >>> report.label_kind, report.class_names, report.scores_kind, report.n_rows_loaded
    ('names', ('a', 'b'), 'probs', 2)
    >>> report.messages()[0]
    'Read 2 of 2 rows from <upload> (csv, delimiter comma).'
    """

    source: str
    file_format: str
    delimiter: str | None
    label_column: str
    label_kind: str
    class_columns: tuple[str, ...]
    class_names: tuple[str, ...]
    prefix: str | None
    binary_shortcut: bool
    scores_kind: str
    scores_reason: str
    split_column: str | None
    split_selected: str | None
    split_counts: tuple[tuple[str, int], ...]
    ignored_columns: tuple[str, ...]
    ignored_reasons: tuple[str, ...]
    n_rows_in_file: int
    n_rows_loaded: int
    renormalized_rows: int
    max_row_deviation: float | None
    absent_classes: tuple[str, ...]
    row_numbering: str
    weight_column: str | None = None
    total_weight: float | None = None
    percent: bool = False
    metadata_columns: tuple[tuple[str, str, bool], ...] = ()

    def warnings(self) -> list[str]:
        """The notes that also went out as :class:`~calcore.CalcoreWarning` (those that
        speak of an option as :class:`~calcore.foundation.errors.Advice`, as in
        :meth:`messages`)."""
        out = []
        if self.renormalized_rows:
            out.append(
                f"{self.source}: {self.renormalized_rows} row(s) did not sum to 1 and were "
                f"renormalised (largest deviation {self.max_row_deviation:.3g})."
            )
        if self.absent_classes:
            out.append(
                f"{self.source}: {len(self.absent_classes)} class(es) never occur as a label "
                f"in the loaded rows: {_short(self.absent_classes)}."
            )
        described = {name: (summary, kept) for name, summary, kept in self.metadata_columns}
        for col, why in zip(self.ignored_columns, self.ignored_reasons, strict=True):
            summary, kept = described.get(col, (None, False))
            if kept:
                continue  # kept for slicing: listed by messages(), nothing lost
            detail = f"; {summary}" if summary else ""
            out.append(with_terms(f"{self.source}: column {col!r} was ignored ({why}{detail})."))
        return out

    def messages(self) -> list[str]:
        """Human-readable notes on what was detected and done, warnings included.

        A note that speaks of an option (``scores='auto' saw ...``, ``(percent=True)``)
        is an :class:`~calcore.foundation.errors.Advice` naming it (:data:`NOTE_TERMS`), so that the
        command line and the dashboard can say it in their own terms."""
        kind = (
            "binary: one column of P(positive)" if self.binary_shortcut else "one column per class"
        )
        out = [
            f"Read {self.n_rows_loaded} of {self.n_rows_in_file} rows from {self.source} "
            f"({self.file_format}{_delim(self.delimiter)}).",
            f"Labels: column {self.label_column!r} ({_LABEL_KINDS[self.label_kind]}).",
            f"Classes ({len(self.class_names)}): {_short(self.class_names)} from "
            f"{_short(self.class_columns)} ({kind}"
            + (f", prefix {self.prefix!r} stripped)." if self.prefix else ")."),
            scores_note(self.scores_kind, self.scores_reason, percent=self.percent),
        ]
        if self.split_column is None:
            out.append("No split column: all rows loaded.")
        else:
            counts = ", ".join(f"{k}: {n}" for k, n in self.split_counts)
            chosen = (
                "all rows loaded"
                if self.split_selected is None
                else f"'{self.split_selected}' rows loaded"
            )
            out.append(f"Split column {self.split_column!r} ({counts}); {chosen}.")
        if self.weight_column is not None:
            out.append(
                f"Rows weighted by column {self.weight_column!r} (total weight "
                f"{self.total_weight:,.6g}): every metric, reliability diagram and calibrator "
                "fit uses them (the views that do not take weights yet say so)."
            )
        kept = [f"{name}: {summary}" for name, summary, k in self.metadata_columns if k]
        if kept:
            out.append("Kept for slicing (not scores): " + "; ".join(kept) + ".")
        if self.max_row_deviation is not None and not self.renormalized_rows:
            out.append(f"Largest |row sum - 1|: {self.max_row_deviation:.3g}.")
        out.append(f"Rows are numbered as {self.row_numbering}.")
        return out + self.warnings()


_LABEL_KINDS = {"names": "class names", "indices": "integer indices"}


def _short(names: tuple[str, ...], limit: int = 10) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _delim(delimiter: str | None) -> str:
    if delimiter is None:
        return ""
    return ", delimiter " + {",": "comma", ";": "semicolon", "\t": "tab"}.get(
        delimiter, repr(delimiter)
    )

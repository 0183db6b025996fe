""":func:`inspect_table`: what auto-detection finds, for a person to confirm."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from calcore.foundation.errors import quoted
from calcore.foundation.limits import resolve_budget
from calcore.io._columns import LOGIT_PREFIXES, PROB_PREFIXES
from calcore.io._load_report import PERCENT_SUGGESTED, TableSchema
from calcore.io._rows import looks_like_percent
from calcore.io.options import LoadOptions, options_from

__all__ = ["inspect_table"]

_PREVIEW_ROWS = 5


def _guess(sc) -> tuple[str | None, str]:
    """Probabilities or logits, as loading decides: from the prefix, else the preview rows."""
    roles = sc.roles
    if sc.source.file_format == "npz":
        name = roles.scores[0]
        return name, f"the archive's array is named {quoted(name)}"
    if not roles.scores:
        return None, "no score columns found"
    if roles.prefix in PROB_PREFIXES:
        return "probs", f"the score columns are named '{roles.prefix}*'"
    if roles.prefix in LOGIT_PREFIXES:
        return "logits", f"the score columns are named '{roles.prefix}*'"
    position = {c: j for j, c in enumerate(sc.columns)}
    cols = [position[c] for c in roles.scores]
    try:
        values = np.array([[float(row[j]) for j in cols] for row in sc.preview], dtype=np.float64)
    except (ValueError, IndexError):
        return None, "the first rows have non-numeric or missing score cells"
    if values.size == 0 or not np.isfinite(values).all():
        return None, "the first rows have empty, NaN or infinite score cells"
    if looks_like_percent(values):  # loading refuses them with scores="auto"
        rows = "" if values.shape[1] == 1 else " and rows that sum to 100"
        return None, (
            f"values in [0, 100]{rows} in the first rows: percentages, to be divided by 100 "
            f"({PERCENT_SUGGESTED})"
        )
    if ((values < 0) | (values > 1)).any():
        return "logits", "values outside [0, 1] in the first rows"
    if values.shape[1] == 1 or np.allclose(values.sum(axis=1), 1.0, rtol=0, atol=1e-4):
        return "probs", "values in [0, 1] and rows sum to 1 in the first rows"
    return None, "values in [0, 1] but rows do not sum to 1: neither probabilities nor logits"


def inspect_table(
    path_or_buffer,
    *,
    name: str | None = None,
    label_column: str | None = None,
    split_column: str | None = None,
    score_columns: Sequence[str] | None = None,
    max_decoded_bytes: int | None = None,
    weight_column: str | bool | None = None,
    decimal: str = ".",
    options: LoadOptions | None = None,
) -> TableSchema:
    """Describe a file's columns and what :func:`load_predictions` would detect.

    Only the header and the first 100 rows are parsed (NPZ: the arrays are
    read), so this is fast on large files and does not validate every value.

    Parameters
    ----------
    path_or_buffer : str, os.PathLike, bytes or binary file-like
        As in :func:`load_predictions`.
    name : str, optional
        Name used in messages.
    label_column, split_column, score_columns, weight_column : optional
        The user's corrections, as in :func:`load_predictions`.
    decimal : {".", ","}, default "."
        As in :func:`load_predictions`.
    max_decoded_bytes : int, optional
        Size budget, as in :func:`load_predictions` (NPZ and Parquet are
        checked here; CSV when it is loaded). NPZ arrays are read only up to the
        preview rows: their values beyond them are checked when the file is loaded.
    options : LoadOptions, optional
        The options of :func:`load_predictions` as one object, instead of the keyword
        arguments above: detection uses its columns, ``scores`` (which prefix to take when
        a file has both ``p_*`` and ``logit_*`` columns), ``slice_columns`` and
        ``decimal``; the rest applies to the values, which inspection does not read.

    Returns
    -------
    TableSchema
        Detection problems (no label column, ambiguous columns) are listed in
        ``problems`` instead of raised, so that a user can fix them.

    Raises
    ------
    CalcoreError
        Problems no choice of columns can fix: empty file, header without rows,
        blank or duplicate column names, non-UTF-8 header, unreadable file,
        pickled or oversized NPZ arrays, a named column that does not exist.
    TypeError
        ``options`` together with a keyword argument it holds.

    Examples
    --------
    >>> import calcore
    >>> schema = calcore.inspect_table(b"id,label,p_a,p_b\\n7,a,0.9,0.1\\n8,b,0.3,0.7\\n")
    >>> schema.label_column, schema.class_names, schema.scores_guess, schema.ignored_columns
    ('label', ('a', 'b'), 'probs', ('id',))
    """
    # pandas/pyarrow: loaded when a file is read
    from calcore.io._csv_stream import open_source_bounded
    from calcore.io._detect import detect_columns

    options = options_from(options, "inspect_table", locals())  # the keyword arguments
    max_decoded_bytes = resolve_budget(max_decoded_bytes)
    src = open_source_bounded(path_or_buffer, name=name)
    # NPZ: headers and the preview rows only; loading checks every value
    sc = detect_columns(src, options, max_decoded_bytes=max_decoded_bytes, peek=True)
    guess, why = _guess(sc)
    roles = sc.roles
    preview = tuple(
        {c: (row[j] if j < len(row) else "") for j, c in enumerate(sc.columns)}
        for row in sc.preview[:_PREVIEW_ROWS]
    )
    if src.file_format == "npz":
        preview = tuple(
            dict(zip((roles.label, *roles.class_names), row, strict=False))
            for row in sc.preview[:_PREVIEW_ROWS]
        )
    return TableSchema(
        source=src.name,
        file_format=src.file_format,
        delimiter=sc.delimiter,
        columns=sc.columns,
        n_rows=sc.n_rows,
        label_column=roles.label,
        label_candidates=roles.label_candidates,
        class_columns=roles.scores,
        class_names=roles.class_names,
        prefix=roles.prefix,
        split_column=roles.split,
        ignored_columns=roles.ignored,
        ignored_reasons=roles.ignored_reasons,
        scores_guess=guess,
        scores_reason=why,
        preview=preview,
        problems=roles.problems,
        weight_column=sc.weight,
    )

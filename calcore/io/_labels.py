"""Labels to class indices (multiclass and the binary shortcut) and split values."""

from __future__ import annotations

import numpy as np

from calcore.foundation.errors import CalcoreError, quoted, quoted_list
from calcore.foundation.validation import (
    InputContext,
    check_label_names,
    index_label,
    reads_as_integer,
)

__all__ = ["SPLITS", "SPLIT_VALUES", "class_labels", "split_codes", "split_of_rows"]

SPLIT_VALUES = {
    "calib": "calib",
    "calibration": "calib",
    "cal": "calib",
    "val": "calib",
    "validation": "calib",
    "test": "test",
    "eval": "test",
}


#: The two splits, in the order of :func:`split_codes`.
SPLITS = ("calib", "test")


def split_codes(distinct, index: np.ndarray, *, ctx: InputContext) -> np.ndarray:
    """Each row's split as a code into :data:`SPLITS` (0: calib, 1: test), int8.

    Parameters
    ----------
    distinct : sequence
        The column's distinct values (any case; see :data:`SPLIT_VALUES`).
    index : ndarray of int
        Each row's index into ``distinct``: only the few distinct values are mapped,
        which keeps a streamed pass over 100M rows from spending seconds on text.

    Raises
    ------
    CalcoreError
        The first row with an unknown value, named by ``ctx``.
    """
    lookup = {name: code for code, name in enumerate(SPLITS)}
    per_value = np.array(
        [lookup.get(SPLIT_VALUES.get(str(u).strip().lower(), ""), -1) for u in distinct],
        dtype=np.int8,
    )
    unknown = per_value < 0
    # judged on the rows: a distinct value no row holds (an unused category) is no error
    if unknown.any() and unknown[index].any():
        i = int(np.argmax(unknown[index]))
        raise CalcoreError(
            f"{ctx.where(i)}: split value {quoted(distinct[index[i]])} is not known. Use calib, "
            f"calibration, cal, val or validation for calibration rows and test or eval for "
            f"test rows (any case)."
        )
    return per_value[index]


def split_of_rows(values: np.ndarray, *, ctx: InputContext) -> np.ndarray:
    """Map split values (any case) to ``"calib"``/``"test"``; returns an array of str.

    Raises
    ------
    CalcoreError
        The first unknown value, named by row.
    """
    import pandas as pd  # not at import: `import calcore` loads no pandas

    # pandas.factorize hashes: np.unique sorted the text and took 60% of a streamed pass
    inverse, uniq = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return np.asarray(SPLITS, dtype=object)[split_codes(uniq, inverse, ctx=ctx)]


def _check_binary_index_forms(values: np.ndarray, uniq, column_class: str, ctx) -> None:
    """Refuse a label that ``int()`` reads as 0 or 1 but that is not written ``0`` or ``1``
    (``" 1"``, ``"+1"``, ``"01"``, ``"١"``): the binary shortcut would take it for a class
    name, unlike the 0/1 it was meant as."""
    for u in uniq:
        if (
            u != column_class
            and reads_as_integer(u)
            and index_label(u) is None
            and int(u) in (0, 1)
        ):
            i = int(np.argmax(np.asarray(values).astype(str) == u))
            fix = f"Write {int(u)}, or pass positive_class='<label value>' if the labels are names."
            raise CalcoreError(
                f"{ctx.where(i)}: label {quoted(u, code_points=not u.isascii())} is written like "
                f"the class index {int(u)} but not as one: an index is written with the ASCII "
                f"digits 0-9 only, without sign, spaces, underscores or leading zeros. {fix}",
                option="positive_class_index",  # a program without the option: fix the file
                fix=fix,
            )


#: How to say which label a single score column is for, in calcore's terms (option
#: ``"positive_class"``).
POSITIVE_FIX = "Pass positive_class='<label value>' to say which label the score column is for."


def _binary_names(values: np.ndarray, column_class: str, positive_class, ctx) -> tuple[str, str]:
    uniq = [str(u) for u in np.unique(values)]
    if positive_class is None:
        _check_binary_index_forms(values, uniq, column_class, ctx)
    if positive_class is None and set(uniq) <= {"0", "1"}:
        # 0/1 labels: 1 is the class of the score column.
        return ("0", "1") if column_class == "1" else (f"not {column_class}", column_class)
    positive = column_class if positive_class is None else str(positive_class)
    others = [u for u in uniq if u != positive]
    if len(others) > 1:
        problem = (
            f"{ctx.source}: one score column, so the problem is binary, but the labels take "
            f"the values [{quoted_list(uniq, limit=10, what='values')}] and P({quoted(positive)}) "
            f"is the score."
        )
        if positive_class is None and positive not in uniq:
            fix = POSITIVE_FIX
            raise CalcoreError(f"{problem} {fix}", option="positive_class", fix=fix)
        raise CalcoreError(f"{problem} A single score column only works for two classes.")
    return (others[0] if others else f"not {positive}"), positive


def class_labels(
    values: np.ndarray,
    class_names: tuple[str, ...],
    *,
    binary: bool,
    positive_class=None,
    ctx: InputContext,
) -> tuple[tuple[str, ...], np.ndarray, str]:
    """Class names of the predictions, label indices, and ``"names"``/``"indices"``.

    Parameters
    ----------
    values : ndarray of str, shape (n_samples,)
        Labels as read from the file.
    class_names : tuple of str
        One per score column (one name for the binary shortcut).
    binary : bool
        One score column holding P(positive class).
    positive_class : str, optional
        Binary shortcut: the label value the score column is for (default: the
        column's class name; with 0/1 labels, 1).
    ctx : InputContext
        Names label rows in messages.

    Notes
    -----
    Binary shortcut naming: labels ``0``/``1`` give classes
    ``("not <name>", "<name>")`` (``("0", "1")`` when the column is named
    ``1``); two string labels give ``(<other label>, <positive label>)``; a
    single label value ``v`` gives ``("not v", v)`` or ``(v, <positive>)``.
    """
    if not binary:
        labels, kind = check_label_names(values, class_names, ctx=ctx)
        return class_names, labels, kind
    names = _binary_names(values, class_names[-1], positive_class, ctx)
    text = np.asarray(values).astype(str)
    if set(np.unique(text)) <= {"0", "1"} and positive_class is None:
        return names, (text == "1").astype(np.int64), "indices"
    return names, (text == names[1]).astype(np.int64), "names"

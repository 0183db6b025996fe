"""The file preview and the user's corrections of what the loader detected.

Shown before anything is computed: the first rows, the detected label, class, scores-kind
(and whether they are percentages) and split columns (each editable), and the ignored
columns with the reason. Widget keys carry the file's digest, so a new file starts from
its own detection.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import streamlit as st

import calcore
from calcore import LoadOptions
from calcore.io._load_report import with_terms
from dashboard.calibration.messages import page_message
from dashboard.text import escape_markdown as esc

__all__ = ["load_options"]

DETECT = "(detected)"
NONE = "(none)"
SCORES = {"auto": "detect", "probs": "probabilities", "logits": "logits"}


def _key(digest: str, what: str) -> str:
    return f"data.{digest[:16]}.{what}"


#: Columns shown in the preview grid (the rest are counted in a caption).
PREVIEW_COLUMNS = 12


def load_options(
    schema, digest: str, *, expanded: bool, recheck: Callable[[LoadOptions], tuple] | None = None
) -> LoadOptions:
    """Preview ``schema`` (calcore.TableSchema) and return the user's corrections.

    The detection problems shown at the top are those left with the user's current
    choices: ``recheck(options)`` gives them (``inspect`` with those options), so a
    problem fixed through a menu disappears on that run. Without ``recheck`` they are
    ``schema``'s. Each is worded for this page (:func:`page_message`).
    """
    if schema.file_format == "npz":
        title = f"Data: {schema.n_rows:,} rows, {len(schema.class_names)} classes (NPZ)"
    else:
        title = (
            f"Data: {schema.n_rows:,} rows, {len(schema.class_columns)} score columns "
            f"({schema.file_format.upper()})"
        )
    with st.expander(title, expanded=expanded or bool(schema.problems)):
        problems_slot = st.container()  # filled once the choices below are read
        options = _choices(schema, digest)
    with problems_slot:
        for problem in _problems(schema, options, recheck):
            st.warning(esc(page_message(problem)))
    return options


def _problems(schema, options: LoadOptions, recheck) -> tuple:
    """The detection problems that the user's choices leave (see :func:`load_options`)."""
    if recheck is None or options == LoadOptions():
        return schema.problems
    try:
        return recheck(options)
    except calcore.CalcoreError as err:  # a choice no column fits (split = label column)
        return (err,)


def _choices(schema, digest: str) -> LoadOptions:
    """The preview grid and the correction widgets; the user's choices."""
    if schema.preview:
        frame = pd.DataFrame(list(schema.preview))
        if frame.shape[1] > PREVIEW_COLUMNS:
            # a 1,000-column grid is unreadable; the counts say what is left out
            st.caption(f"The first {PREVIEW_COLUMNS} of {frame.shape[1]:,} columns.")
            frame = frame.iloc[:, :PREVIEW_COLUMNS]
        st.dataframe(frame, hide_index=True, key="table.preview")
    if schema.file_format == "npz":
        st.caption(
            f"NPZ arrays: {esc(', '.join(schema.columns))}. Label array "
            f"{esc(schema.label_column)}; scores: {esc(schema.scores_reason)}."
        )
        return LoadOptions(percent=_percent(st, digest))
    cols = list(schema.columns)
    a, b, c = st.columns(3)
    label = a.selectbox(
        "Label column",
        [DETECT, *cols],
        format_func=lambda v: f"{DETECT}: {schema.label_column}" if v == DETECT else v,
        key=_key(digest, "label"),
    )
    split = b.selectbox(
        "Split column",
        [DETECT, NONE, *cols],
        format_func=lambda v: f"{DETECT}: {schema.split_column or 'none'}" if v == DETECT else v,
        key=_key(digest, "split"),
    )
    kind = c.radio(
        "Scores are",
        list(SCORES),
        format_func=SCORES.get,
        horizontal=True,
        key=_key(digest, "scores"),
        help=f"Detection: {schema.scores_guess or 'unclear'} ({_said(schema.scores_reason)}).",
    )
    percent = _percent(c, digest)
    scores = st.multiselect(
        "Score columns, one per class, in class order",
        cols,
        default=[col for col in schema.class_columns if col in cols],
        key=_key(digest, "score_columns"),
    )
    left, right = st.columns(2)
    weight = left.selectbox(
        "Weight column (row weights)",
        [DETECT, NONE, *cols],
        format_func=lambda v: f"{DETECT}: {schema.weight_column or 'none'}" if v == DETECT else v,
        key=_key(digest, "weight"),
        help="Frequency weights: every metric counts a row as often as its weight.",
    )
    renormalize = right.checkbox(
        "Renormalise probability rows that do not sum to 1 (reported)",
        key=_key(digest, "renormalize"),
    )
    if schema.ignored_columns:
        st.caption(
            "Ignored columns: "
            + esc(
                "; ".join(
                    f"{col} ({_said(why)})"
                    for col, why in zip(
                        schema.ignored_columns, schema.ignored_reasons, strict=False
                    )
                )
            )
        )
    detected = list(schema.class_columns)
    return LoadOptions(
        label_column=None if label == DETECT else label,
        score_columns=None if scores == detected else tuple(scores),
        scores=kind,
        split_column=None if split in (DETECT, NONE) else split,
        renormalize=bool(renormalize),
        # "(none)": no weights even where a column is named like one
        weight_column={DETECT: None, NONE: False}.get(weight, weight),
        percent=percent,
    )


def _said(text: str) -> str:
    """A reason of calcore's detection in the page's terms (its options named as controls)."""
    return page_message(with_terms(text))


def _percent(where, digest: str) -> bool:
    """The "percentages" checkbox (in ``where``: the page or a column)."""
    return bool(
        where.checkbox(
            "Scores are percentages (divide by 100)",
            key=_key(digest, "percent"),
            help="Probabilities written in percent (rows sum to 100) are divided by 100 "
            "before they are checked.",
        )
    )

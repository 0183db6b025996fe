"""Which column is the label, which are scores, which is the split, which are ignored.

Rules (documented in :func:`calcore.io.load_predictions`):

* **Label**: ``label_column`` if given, else the one column named ``label``,
  ``y``, ``target``, ``true_label`` or ``class`` (case-insensitive).
* **Split**: ``split_column`` if given, else a column named ``split``
  (case-insensitive), else none.
* **Weight**: ``weight_column`` if given, else the one column named ``weight``,
  ``weights``, ``sample_weight`` or ``example_weight`` (case-insensitive), else none;
  it is never a score column.
* **Scores**: ``score_columns`` if given. Else, if some remaining columns start
  with a known prefix (``p_``, ``prob_``, ``proba_``, ``probs_``, ``score_``,
  ``logit_``, ``logits_``; case-insensitive), the score columns are the
  columns with that prefix and every other column is ignored. Else every
  remaining column is a score column, except identifier columns (``id``,
  ``index``, ``idx``, ``sample_id``, ``image_id``, ``file``, ``filename``,
  ``path``) and columns whose first values are not numbers.
* **Class names**: the score column names, with the prefix stripped when all
  score columns carry the same known prefix.

Ignored columns are always reported (and warned about), never dropped silently.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable, Sequence

from calcore.foundation.errors import CalcoreError, advice, quoted, quoted_list
from calcore.io._load_report import NOT_IN_SCORE_COLUMNS

__all__ = [
    "Roles",
    "detect_roles",
    "check_header_names",
    "not_a_column",
    "pick_weight",
    "weight_candidates",
    "WEIGHT_NAMES",
    "LABEL_NAMES",
    "PREFIXES",
    "PROB_PREFIXES",
    "LOGIT_PREFIXES",
]

LABEL_NAMES = ("label", "y", "target", "true_label", "class")
SPLIT_NAMES = ("split",)
ID_NAMES = frozenset({"id", "index", "idx", "sample_id", "image_id", "file", "filename", "path"})
# Longest first is not needed (no prefix is a prefix of another once the
# underscore is included) but keeps the intent obvious.
PREFIXES = ("probs_", "proba_", "prob_", "p_", "logits_", "logit_", "score_")
PROB_PREFIXES = frozenset({"probs_", "proba_", "prob_", "p_"})
LOGIT_PREFIXES = frozenset({"logits_", "logit_"})


WEIGHT_NAMES = ("weight", "weights", "sample_weight", "example_weight")


def pick_weight(columns, weight_column, source: str, *, problems=None) -> str | None:
    """The weight column: the one named, else the one with a weight name, else none;
    ``weight_column=False``: none, whatever the names (a ``weight`` column is then an
    ordinary column).

    With a list ``problems``, several columns with a weight name are a detection problem
    appended to it (an :class:`~calcore.foundation.errors.Advice`; none is picked) rather than an
    error: a caller that inspects the file (the dashboard's Data panel, with its Weight
    column menu) can then still show the columns to choose from.

    Raises
    ------
    CalcoreError
        ``weight_column`` is not a column, or several columns have a weight name (without
        ``problems``).
    """
    if weight_column is False:
        return None
    if weight_column is not None:
        if weight_column not in columns:
            raise not_a_column(source, "weight_column", weight_column, columns)
        return weight_column
    found = [c for c in columns if c.lower() in WEIGHT_NAMES]
    if len(found) > 1:
        problem = advice(
            f"{source}: several weight columns [{quoted_list(found)}].",
            "Pass weight_column='<name>' (or weight_column=False for none).",
            "weight_column",
        )
        if problems is None:
            raise CalcoreError.from_advice(problem)
        problems.append(problem)
        return None
    return found[0] if found else None


def weight_candidates(columns) -> tuple[str, ...]:
    """The columns with a weight name (several: none is taken for weights or scores)."""
    return tuple(c for c in columns if c.lower() in WEIGHT_NAMES)


@dataclass(frozen=True)
class Roles:
    """Column roles found in a header (see the module docstring for the rules).

    ``problems`` holds the messages that loading raises (the first one) and
    :func:`~calcore.io.inspect_table` shows instead of raising.
    """

    label: str | None
    label_candidates: tuple[str, ...]
    split: str | None
    scores: tuple[str, ...]
    prefix: str | None
    class_names: tuple[str, ...]
    ignored: tuple[str, ...]
    ignored_reasons: tuple[str, ...]
    problems: tuple[str, ...]


def _alike(name: str) -> str:
    """The text a name prints as: its canonical composition (NFC), under which ``'é'``
    written as U+00E9 and as ``e`` + U+0301 are the same."""
    return unicodedata.normalize("NFC", name)


def not_a_column(source: str, option: str, name: str, columns: Sequence[str]) -> CalcoreError:
    """The message for an option (``label_column=``, ...) that names no column: the
    columns, and the code points of a column that prints like ``name`` but differs."""
    message = (
        f"{source}: {option}={quoted(name)} is not a column; columns are "
        f"[{quoted_list(columns, what='columns')}]."
    )
    twin = next((c for c in columns if _alike(c) == _alike(str(name))), None)
    if twin is not None:
        message += (
            f" Column {quoted(twin, code_points=True)} prints alike but is written with other "
            f"code points than {quoted(name, code_points=True)} (Unicode normalisation): pass "
            f"the name as the file writes it."
        )
    return CalcoreError(message)


def check_header_names(columns: Sequence[str], *, source: str) -> None:
    """Raise on blank or duplicate column names (pandas would rename them silently),
    and on names that print alike but differ in their code points (NFC vs NFD)."""
    blank = [j + 1 for j, c in enumerate(columns) if not c.strip()]
    if blank:
        fix = (
            "Give every column a name; a blank first name usually means the file was written "
            "with its index (use index=False in DataFrame.to_csv)."
        )
        raise CalcoreError(
            f"{source}: header (line 1) has blank column name(s) at position(s) {blank[:20]} "
            f"(1-based). {fix}",
            option="header_names",  # fixed in the file, whatever reads it
            fix=fix,
        )
    seen: dict[str, int] = {}
    dupes = []
    for j, c in enumerate(columns):
        if c in seen:
            dupes.append(f"{quoted(c)} (positions {seen[c] + 1} and {j + 1})")
        seen.setdefault(c, j)
    if dupes:
        shown = ", ".join(dupes[:5]) + (f", ... ({len(dupes):,} names)" if len(dupes) > 5 else "")
        raise CalcoreError(
            f"{source}: header (line 1) has duplicate column name(s): {shown}. "
            f"Rename the columns so that each name is used once."
        )
    _check_look_alikes(columns, source=source)


def _check_look_alikes(columns: Sequence[str], *, source: str) -> None:
    """Raise on two names that differ only in their Unicode composition: they print the
    same, so neither a person nor a label written either way can tell them apart."""
    first: dict[str, int] = {}
    for j, c in enumerate(columns):
        k = first.setdefault(_alike(c), j)
        if k != j:
            raise CalcoreError(
                f"{source}: header (line 1) has column names that print alike but are written "
                f"with different code points: {quoted(columns[k], code_points=True)} (position "
                f"{k + 1}) and {quoted(c, code_points=True)} (position {j + 1}), the same text "
                f"in Unicode's composed form (NFC). Rename one of them, or remove the column "
                f"that repeats the other."
            )


def _prefix_of(column: str) -> str | None:
    low = column.lower()
    return next((p for p in PREFIXES if low.startswith(p) and len(column) > len(p)), None)


def _pick_label(columns, label_column, source) -> tuple[str | None, tuple[str, ...], str | None]:
    if label_column is not None:
        if label_column not in columns:
            raise not_a_column(source, "label_column", label_column, columns)
        return label_column, (label_column,), None
    found = tuple(c for c in columns if c.lower() in LABEL_NAMES)
    if len(found) == 1:
        return found[0], found, None
    if not found:
        return (
            None,
            found,
            advice(
                f"{source}: no label column found; columns are "
                f"[{quoted_list(columns, limit=30, what='columns')}]. A label "
                f"column is named one of {list(LABEL_NAMES)} (any case).",
                "Otherwise pass label_column='<name>'.",
                "label_column",
            ),
        )
    return (
        None,
        found,
        advice(
            f"{source}: label column is ambiguous: [{quoted_list(found)}] all look like labels.",
            "Pass label_column='<name>' to choose one.",
            "label_column",
        ),
    )


def _pick_split(columns, split_column, label, source) -> str | None:
    if split_column is not None:
        if split_column not in columns:
            raise not_a_column(source, "split_column", split_column, columns)
        if split_column == label:
            raise CalcoreError(f"{source}: split_column and label column are both {quoted(label)}.")
        return split_column
    found = [c for c in columns if c.lower() in SPLIT_NAMES and c != label]
    if len(found) > 1:
        fix = "Pass split_column='<name>'."
        raise CalcoreError(
            f"{source}: several split columns [{quoted_list(found)}]. {fix}",
            option="split_column",
            fix=fix,
        )
    return found[0] if found else None


def _prefix_groups(rest, scores_kind) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for c in rest:
        p = _prefix_of(c)
        if p is not None:
            groups.setdefault(p, []).append(c)
    if len(groups) > 1 and scores_kind in ("probs", "logits"):
        # A file with both p_* and logit_* columns: the requested kind decides.
        unwanted = LOGIT_PREFIXES if scores_kind == "probs" else PROB_PREFIXES
        groups = {p: cols for p, cols in groups.items() if p not in unwanted}
    return groups


def _pick_scores(rest, score_columns, scores_kind, is_numeric, source):
    """Return (scores, prefix, ignored, reasons, problem)."""
    if score_columns is not None:
        available = set(rest)
        missing = [c for c in score_columns if c not in available]
        if missing:
            raise CalcoreError(
                f"{source}: score_columns [{quoted_list(missing)}] are not columns (or are the "
                f"label/split column); available: [{quoted_list(rest, what='columns')}]."
            )
        scores = tuple(score_columns)
        prefixes = {_prefix_of(c) for c in scores}
        prefix = prefixes.pop() if len(prefixes) == 1 else None
        chosen = set(scores)
        ignored = tuple(c for c in rest if c not in chosen)
        return scores, prefix, ignored, (NOT_IN_SCORE_COLUMNS,) * len(ignored), None
    groups = _prefix_groups(rest, scores_kind)
    if len(groups) > 1:
        return (
            (),
            None,
            (),
            (),
            advice(
                f"{source}: score columns are ambiguous: prefixes {sorted(groups)} are all used.",
                "Pass score_columns=[...] (or scores='probs'/'logits' to choose p_* or logit_*).",
                "score_columns",
            ),
        )
    if groups:
        ((prefix, scores),) = groups.items()
        chosen = set(scores)
        ignored = tuple(c for c in rest if c not in chosen)
        reason = f"it does not start with the score prefix {quoted(prefix)}"
        return tuple(scores), prefix, ignored, (reason,) * len(ignored), None
    scores, ignored, reasons = [], [], []
    for c in rest:
        numeric, why = is_numeric(c)
        if c.lower() in ID_NAMES:
            ignored.append(c)
            reasons.append("an identifier column")
        elif not numeric:
            ignored.append(c)
            reasons.append(why)
        else:
            scores.append(c)
    return tuple(scores), None, tuple(ignored), tuple(reasons), None


def detect_roles(
    columns: Sequence[str],
    *,
    source: str,
    is_numeric: Callable[[str], tuple[bool, str]],
    label_column: str | None = None,
    split_column: str | None = None,
    score_columns: Sequence[str] | None = None,
    scores_kind: str = "auto",
) -> Roles:
    """Assign roles to the columns of a table.

    Parameters
    ----------
    columns : sequence of str
        Column names, in file order (already checked by :func:`check_header_names`).
    source : str
        Name used in messages.
    is_numeric : callable
        ``is_numeric(column) -> (bool, reason)``: whether the column's first
        values are numbers; only used for columns without a known prefix.
    label_column, split_column, score_columns, scores_kind
        The caller's choices; ``None``/``"auto"`` means detect.

    Returns
    -------
    Roles

    Raises
    ------
    CalcoreError
        A named column that does not exist. Detection failures (no or several
        label columns, no score columns) are returned in ``Roles.problems``.
    """
    problems = []
    label, candidates, problem = _pick_label(columns, label_column, source)
    if problem:
        problems.append(problem)
    split = _pick_split(columns, split_column, label, source)
    rest = [c for c in columns if c not in (label, split) and c not in candidates]
    scores, prefix, ignored, reasons, problem = _pick_scores(
        rest, score_columns, scores_kind, is_numeric, source
    )
    if problem:
        problems.append(problem)
    elif not scores:
        problems.append(
            advice(
                f"{source}: no score columns found among [{quoted_list(rest, what='columns')}].",
                "Give one numeric column per class (e.g. p_cat, p_dog) or pass "
                "score_columns=[...].",
                "score_columns",
            )
        )
    if candidates and label is None:
        # Ambiguous label candidates are neither scores nor silently ignored.
        ignored = ignored + candidates
        reasons = reasons + ("a possible label column",) * len(candidates)
    class_names = tuple(c[len(prefix) :] for c in scores) if prefix else tuple(scores)
    return Roles(
        label, candidates, split, scores, prefix, class_names, ignored, reasons, tuple(problems)
    )

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

from dataclasses import dataclass
from typing import Callable, Sequence

from calcore._errors import CalcoreError

__all__ = [
    "Roles",
    "detect_roles",
    "check_header_names",
    "pick_weight",
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


def pick_weight(columns, weight_column, source: str) -> str | None:
    """The weight column: the one named, else the one with a weight name, else none;
    ``weight_column=False``: none, whatever the names (a ``weight`` column is then an
    ordinary column).

    Raises
    ------
    CalcoreError
        ``weight_column`` is not a column, or several columns have a weight name.
    """
    if weight_column is False:
        return None
    if weight_column is not None:
        if weight_column not in columns:
            raise CalcoreError(
                f"{source}: weight_column={weight_column!r} is not a column; columns are "
                f"{list(columns)[:20]}."
            )
        return weight_column
    found = [c for c in columns if c.lower() in WEIGHT_NAMES]
    if len(found) > 1:
        raise CalcoreError(f"{source}: several weight columns {found}; pass weight_column=.")
    return found[0] if found else None


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


def check_header_names(columns: Sequence[str], *, source: str) -> None:
    """Raise on blank or duplicate column names (pandas would rename them silently)."""
    blank = [j + 1 for j, c in enumerate(columns) if not c.strip()]
    if blank:
        raise CalcoreError(
            f"{source}: header (line 1) has blank column name(s) at position(s) {blank} "
            f"(1-based). Give every column a name; a blank first name usually means the "
            f"file was written with its index (use index=False in DataFrame.to_csv)."
        )
    seen: dict[str, int] = {}
    dupes = []
    for j, c in enumerate(columns):
        if c in seen:
            dupes.append(f"{c!r} (positions {seen[c] + 1} and {j + 1})")
        seen.setdefault(c, j)
    if dupes:
        raise CalcoreError(
            f"{source}: header (line 1) has duplicate column name(s): {', '.join(dupes)}. "
            f"Rename the columns so that each name is used once."
        )


def _prefix_of(column: str) -> str | None:
    low = column.lower()
    return next((p for p in PREFIXES if low.startswith(p) and len(column) > len(p)), None)


def _pick_label(columns, label_column, source) -> tuple[str | None, tuple[str, ...], str | None]:
    if label_column is not None:
        if label_column not in columns:
            raise CalcoreError(
                f"{source}: label_column={label_column!r} is not a column; columns are "
                f"{list(columns)}."
            )
        return label_column, (label_column,), None
    found = tuple(c for c in columns if c.lower() in LABEL_NAMES)
    if len(found) == 1:
        return found[0], found, None
    if not found:
        return (
            None,
            found,
            (
                f"{source}: no label column found; columns are {list(columns)[:30]}. A label "
                f"column is named one of {list(LABEL_NAMES)} (any case); otherwise pass "
                f"label_column='<name>'."
            ),
        )
    return (
        None,
        found,
        (
            f"{source}: label column is ambiguous: {list(found)} all look like labels. Pass "
            f"label_column='<name>' to choose one."
        ),
    )


def _pick_split(columns, split_column, label, source) -> str | None:
    if split_column is not None:
        if split_column not in columns:
            raise CalcoreError(
                f"{source}: split_column={split_column!r} is not a column; columns are "
                f"{list(columns)}."
            )
        if split_column == label:
            raise CalcoreError(f"{source}: split_column and label column are both {label!r}.")
        return split_column
    found = [c for c in columns if c.lower() in SPLIT_NAMES and c != label]
    if len(found) > 1:
        raise CalcoreError(f"{source}: several split columns {found}; pass split_column='<name>'.")
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
                f"{source}: score_columns {missing} are not columns (or are the label/split "
                f"column); available: {list(rest)}."
            )
        scores = tuple(score_columns)
        prefixes = {_prefix_of(c) for c in scores}
        prefix = prefixes.pop() if len(prefixes) == 1 else None
        chosen = set(scores)
        ignored = tuple(c for c in rest if c not in chosen)
        return scores, prefix, ignored, ("not in score_columns",) * len(ignored), None
    groups = _prefix_groups(rest, scores_kind)
    if len(groups) > 1:
        return (
            (),
            None,
            (),
            (),
            (
                f"{source}: score columns are ambiguous: prefixes {sorted(groups)} are all used. "
                f"Pass score_columns=[...] (or scores='probs'/'logits' to choose p_* or logit_*)."
            ),
        )
    if groups:
        ((prefix, scores),) = groups.items()
        chosen = set(scores)
        ignored = tuple(c for c in rest if c not in chosen)
        reason = f"it does not start with the score prefix {prefix!r}"
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
            f"{source}: no score columns found among {rest}. Give one numeric column per class "
            f"(e.g. p_cat, p_dog) or pass score_columns=[...]."
        )
    if candidates and label is None:
        # Ambiguous label candidates are neither scores nor silently ignored.
        ignored = ignored + candidates
        reasons = reasons + ("a possible label column",) * len(candidates)
    class_names = tuple(c[len(prefix) :] for c in scores) if prefix else tuple(scores)
    return Roles(
        label, candidates, split, scores, prefix, class_names, ignored, reasons, tuple(problems)
    )

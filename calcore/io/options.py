"""How to read a source's columns: :class:`LoadOptions`, shared by every front door.

:func:`calcore.load_predictions`, :func:`calcore.load_splits`, :func:`calcore.scan`,
:func:`calcore.inspect_table` and :func:`calcore.from_spark` take the same options, either
as keyword arguments or as one ``options=LoadOptions(...)``; inside calcore only the
object travels. Each option is
checked once, when the object is made, with the messages the loaders always gave.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.io._decimal import check_decimal

__all__ = ["LoadOptions", "PERCENT_LOGITS_FIX", "check_split", "options_from"]

#: How to undo percent=True with logits, in calcore's terms (option ``"percent_logits"``).
PERCENT_LOGITS_FIX = (
    "Drop percent=True, or pass scores='probs' (or 'auto') if the values really are percentages."
)


@dataclass(frozen=True, kw_only=True)
class LoadOptions:
    """What a loader is told about a source's columns (the default: detect everything).

    Every option is as documented in :func:`calcore.load_predictions`:

    - ``label_column`` (str or None): the column (NPZ: array) of true labels; None: the
      one column named ``label``, ``y``, ``target``, ``true_label`` or ``class``.
    - ``scores`` ({"auto", "probs", "logits"}): how to read the score columns.
    - ``split_column`` (str or None): the column saying which rows are for calibration
      and which for testing; None: a column named ``split``, if any.
    - ``renormalize`` (bool): rescale probability rows whose sum is off, instead of
      refusing them.
    - ``positive_class`` (str or None): with a single score column, the label whose
      probability it holds.
    - ``score_columns`` (tuple of str or None): the score columns, one per class, in class
      order (overrides detection); a list is kept as a tuple.
    - ``weight_column`` (str, False or None): the column of row weights; None: one named
      ``weight``, ``weights``, ``sample_weight`` or ``example_weight``, if any; False: no
      weights, whatever the names.
    - ``percent`` (bool): the scores are probabilities in percent (divided by 100).
    - ``slice_columns`` (tuple of str): columns kept for slicing, never taken for scores;
      a single name or a list is kept as a tuple.
    - ``decimal`` ({".", ","}): the decimal mark of a CSV's numbers.

    What to read (``split``), how much (``max_decoded_bytes``, ``batch_rows``) and what to
    call the source (``name``) stay arguments of the function that reads it.

    Raises
    ------
    CalcoreError
        An unknown ``scores`` or ``decimal``, a ``percent`` that is not True or False,
        ``percent=True`` with ``scores="logits"``.

    Examples
    --------
    >>> import io, calcore
    >>> options = calcore.LoadOptions(label_column="y", score_columns=["p_no", "p_yes"])
    >>> options.score_columns
    ('p_no', 'p_yes')
    >>> data = io.BytesIO(b"y,p_no,p_yes\\nno,0.8,0.2\\nyes,0.3,0.7\\n")
    >>> calcore.load_predictions(data, options=options).class_names
    ('no', 'yes')
    """

    label_column: str | None = None
    scores: str = "auto"
    split_column: str | None = None
    renormalize: bool = False
    positive_class: str | None = None
    score_columns: tuple[str, ...] | None = None
    weight_column: str | bool | None = None
    percent: bool = False
    slice_columns: tuple[str, ...] = ()
    decimal: str = "."

    def __post_init__(self) -> None:
        if self.scores not in ("auto", "probs", "logits"):
            raise CalcoreError(f"scores must be 'auto', 'probs' or 'logits', got {self.scores!r}.")
        if not isinstance(self.percent, (bool, np.bool_)):  # 0/1 or "yes": a typo, not a choice
            raise CalcoreError(f"percent must be True or False, got {self.percent!r}.")
        if self.percent and self.scores == "logits":
            raise CalcoreError(
                f"Scores in percent are probabilities (divided by 100), and logits are not "
                f"percentages: the options say both. {PERCENT_LOGITS_FIX}",
                option="percent_logits",
                fix=PERCENT_LOGITS_FIX,
            )
        check_decimal(self.decimal)
        # sequences kept as tuples: the object stays hashable and cannot change later
        if self.score_columns is not None and not isinstance(self.score_columns, tuple):
            object.__setattr__(self, "score_columns", tuple(self.score_columns))
        named = self.slice_columns
        named = (named,) if isinstance(named, str) else tuple(named or ())
        object.__setattr__(self, "slice_columns", named)


_DEFAULTS = {f.name: f.default for f in fields(LoadOptions)}


def options_from(options: LoadOptions | None, function: str, arguments: dict) -> LoadOptions:
    """The options of a call of ``function``: ``options`` itself, or a :class:`LoadOptions`
    of its keyword arguments named as the fields (``arguments``: the function's
    ``locals()`` on entry; the others, such as ``split`` or ``name``, are not options).

    Raises
    ------
    TypeError
        ``options`` and a keyword argument with another value than its default, both
        given: which one should win is not for calcore to guess.
    """
    given = {k: arguments[k] for k in _DEFAULTS if k in arguments}
    if options is None:
        return LoadOptions(**given)
    if not isinstance(options, LoadOptions):
        raise TypeError(
            f"{function}: options must be a calcore.LoadOptions, got {type(options).__name__}."
        )
    also = [k for k, v in given.items() if not _is_default(v, _DEFAULTS[k])]
    if also:
        raise TypeError(
            f"{function}: give the loading options either as keyword arguments or as "
            f"options=LoadOptions(...), not both (got options= and {', '.join(also)}=). "
            f"Put {', '.join(also)} in the LoadOptions."
        )
    return options


def _is_default(value, default) -> bool:
    """Whether a keyword argument was left as the function's default (None for a
    sequence whose field defaults to ``()``)."""
    if value is default or (value is None and default == ()):
        return True
    if isinstance(value, (bool, np.bool_)) or isinstance(default, bool):
        return False  # weight_column=False is a choice, not the default None
    return type(value) is type(default) and value == default


def check_split(split) -> None:
    """``split`` (what rows to read): None, ``"calib"`` or ``"test"``."""
    if split not in (None, "calib", "test"):
        raise CalcoreError(f"split must be None, 'calib' or 'test', got {split!r}.")

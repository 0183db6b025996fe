"""The error and warning classes every user-facing calcore failure goes through.

The dashboard catches only :class:`CalcoreError`, so a genuine bug (any other
exception) still fails loudly in the tests instead of being shown as user error.
"""

from __future__ import annotations

__all__ = ["CalcoreError", "CalcoreWarning"]


class CalcoreError(ValueError):
    """Invalid input or arguments given to calcore.

    The message is meant for a person: it names the file, column and first
    offending row where there is one, states the rule, and says how to fix it.

    Examples
    --------
    >>> import calcore
    >>> try:
    ...     calcore.Predictions.from_probs([[0.9, 0.2]], [0])
    ... except calcore.CalcoreError as err:
    ...     print(err)
    probs, row 0 (0-based): probabilities sum to 1.1, not 1 ...
    """


class CalcoreWarning(UserWarning):
    """Something the user should know about but that does not stop the computation
    (rows renormalised, classes that never occur, tied argmax rows, ...).

    Examples
    --------
    >>> import warnings, calcore
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     preds = calcore.load_predictions(b"label,p_a,p_b\\na,0.9,0.1\\na,0.8,0.2\\n")
    >>> print(caught[0].category.__name__, caught[0].message)
    CalcoreWarning <upload>: 1 class(es) never occur as a label in the loaded rows: 'b'.
    """

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
    """


class CalcoreWarning(UserWarning):
    """Something the user should know about but that does not stop the computation
    (rows renormalised, classes that never occur, tied argmax rows, ...)."""

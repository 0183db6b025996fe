"""The error and warning classes every user-facing calcore failure goes through.

The dashboard catches only :class:`CalcoreError`, so a genuine bug (any other
exception) still fails loudly in the tests instead of being shown as user error.
"""

from __future__ import annotations

from typing import Iterable

__all__ = [
    "Advice",
    "CalcoreError",
    "EmptySplitError",
    "CalcoreWarning",
    "LOGITS_FIX",
    "quoted",
    "quoted_list",
    "QUOTED_CHARS",
    "reworded",
]

#: Characters of one piece of user text (a name, a value) shown in a message; the rest
#: is counted, not shown, so that a 100 KB column name still gives a readable line.
#: (A limit of messages, not of input: it lives here because ``calcore.foundation.limits``
#: imports this module.)
QUOTED_CHARS = 80
#: Code points listed after a name shown with ``code_points=True``.
_CODE_POINTS_SHOWN = 12


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

    Attributes
    ----------
    option : str or None
        The option of calcore's loader that fixes the problem (``"label_column"``,
        ``"decimal"``, ...), when one does: a program with its own controls (the
        dashboard) points at the control instead of the option.
    fix : str or None
        The sentence of the message that says how to fix it in calcore's terms
        ("Pass label_column='<name>' to choose one."), to be replaced as a whole.
    also : tuple of (str, str)
        Further ``(option, fix)`` pairs of the message, when it says more than one way
        out (a probability error of scores read as probabilities by detection also says
        how to read them as logits); :attr:`fixes` lists them all.
    """

    option: str | None = None
    fix: str | None = None
    also: tuple[tuple[str, str], ...] = ()

    def __init__(
        self,
        *args,
        option: str | None = None,
        fix: str | None = None,
        also: Iterable[tuple[str, str]] = (),
    ):
        super().__init__(*args)
        if option is not None:
            self.option = option
        if fix is not None:
            self.fix = fix
        also = tuple((o, f) for o, f in also)
        if also:
            self.also = also

    @property
    def fixes(self) -> tuple[tuple[str, str], ...]:
        """Every ``(option, fix)`` pair of the message: :attr:`option` and :attr:`fix`
        first (when both are set), then :attr:`also`."""
        first = ((self.option, self.fix),) if self.option and self.fix else ()
        return first + tuple(self.also)

    def extended(
        self, text: str, *, option: str | None = None, fix: str | None = None
    ) -> "CalcoreError":
        """A :class:`CalcoreError` with ``text`` after this message, keeping its fixes.

        Parameters
        ----------
        text : str
            What to add (a sentence or a parenthesis).
        option, fix : str, optional
            The option and the sentence of ``text`` that fixes the problem, if any: they
            come after this error's own.

        Examples
        --------
        >>> err = CalcoreError("f.csv: rows do not sum to 1. Pass renormalize=True.",
        ...                    option="renormalize", fix="Pass renormalize=True.")
        >>> fix = "If they are logits, pass scores='logits'."
        >>> more = err.extended(fix, option="scores_logits", fix=fix)
        >>> [option for option, _ in more.fixes]
        ['renormalize', 'scores_logits']
        """
        pairs = self.fixes + (((option, fix),) if option and fix else ())
        first = pairs[0] if pairs else (None, None)
        return CalcoreError(f"{self} {text}", option=first[0], fix=first[1], also=pairs[1:])

    @classmethod
    def from_advice(cls, message: str) -> "CalcoreError":
        """The error for a message that may be an :class:`Advice` (its option and fix kept)."""
        return cls(
            str(message), option=getattr(message, "option", None), fix=getattr(message, "fix", None)
        )


#: How to read scores that fail as probabilities as logits, in calcore's terms (the
#: ``"scores_logits"`` option of :class:`CalcoreError`).
LOGITS_FIX = "If these are logits, load them as logits (scores='logits')."


class Advice(str):
    """A message (a ``str``) that also names the option that fixes it and the sentence
    that says so, as :class:`CalcoreError` does: what detection reports without raising
    (``TableSchema.problems``), and the notes of a load report that speak of an option
    (``LoadReport.messages()``: "scores='auto' saw ...").

    Examples
    --------
    >>> a = Advice("f.csv: no label column. Pass label_column='<name>'.",
    ...            option="label_column", fix="Pass label_column='<name>'.")
    >>> a.option, a.endswith(a.fix), isinstance(a, str)
    ('label_column', True, True)
    >>> b = Advice("Read as probs: scores='auto' saw ...; divided by 100 (percent=True).",
    ...            option="scores_auto", fix="scores='auto' saw",
    ...            also=[("percent_given", "(percent=True)")])
    >>> [option for option, _ in b.fixes]
    ['scores_auto', 'percent_given']
    """

    option: str | None
    fix: str | None
    also: tuple[tuple[str, str], ...]

    def __new__(
        cls,
        text: str,
        *,
        option: str | None = None,
        fix: str | None = None,
        also: Iterable[tuple[str, str]] = (),
    ):
        obj = super().__new__(cls, text)
        obj.option, obj.fix = option, fix
        obj.also = tuple((o, f) for o, f in also)
        return obj

    def __reduce__(self):  # pickled with its options (st.cache_data, processes)
        return _advice, (str(self), self.option, self.fix, self.also)

    @property
    def fixes(self) -> tuple[tuple[str, str], ...]:
        """Every ``(option, text)`` pair, as :attr:`CalcoreError.fixes`."""
        first = ((self.option, self.fix),) if self.option and self.fix else ()
        return first + tuple(self.also)


def _advice(text, option, fix, also) -> Advice:
    return Advice(text, option=option, fix=fix, also=also)


def reworded(message, words: dict) -> str:
    """``message`` with each of its options' sentences replaced by ``words[option]``.

    Every message about an option is written for Python ("pass label_column='<name>'");
    a program with other means to the same end (the command line's flags, the dashboard's
    menus) shows its own words instead, by option, so that nothing depends on the
    wording of the rest of the message. A sentence whose option ``words`` lacks is kept.

    Parameters
    ----------
    message : CalcoreError, Advice or str
        Its ``fixes`` (or ``option`` and ``fix``) say which text is about which option;
        a plain ``str`` (or an exception without them) is returned as it is.
    words : dict of str to str
        Option -> the text that replaces the option's sentence.

    Returns
    -------
    str

    Examples
    --------
    >>> fix = "Pass decimal=',' to read them."
    >>> err = CalcoreError(f"a.csv: column 'p' has decimal commas. {fix}",
    ...                    option="decimal", fix=fix)
    >>> reworded(err, {"decimal": "Add --decimal , to read them."})
    "a.csv: column 'p' has decimal commas. Add --decimal , to read them."
    """
    text = str(message)
    pairs = getattr(message, "fixes", None)
    if pairs is None:  # an object with one fix at most
        option, fix = getattr(message, "option", None), getattr(message, "fix", None)
        pairs = ((option, fix),) if option and fix else ()
    for option, fix in pairs:
        replacement = words.get(option)
        if replacement is not None and fix in text:
            text = text.replace(fix, replacement)
    return text


def advice(problem: str, fix: str, option: str) -> Advice:
    """``problem`` followed by ``fix``, as an :class:`Advice` naming ``option``."""
    return Advice(f"{problem} {fix}", option=option, fix=fix)


class EmptySplitError(CalcoreError):
    """No row of the requested split: ``source`` has no ``split`` rows in its split column
    ``column``. A :class:`CalcoreError`; the CLI, which picks the test rows by default,
    catches it to say which ``--split`` to give instead.

    Examples
    --------
    >>> err = EmptySplitError("f.csv: no rows have split 'test'.", source="f.csv", split="test")
    >>> isinstance(err, CalcoreError), err.split
    (True, 'test')
    """

    def __init__(self, message: str, *, source: str, split: str, column: str | None = None):
        super().__init__(message)
        self.source, self.split, self.column = source, split, column


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


def quoted(text, *, code_points: bool = False) -> str:
    """User text as a message shows it: ``repr`` of at most :data:`QUOTED_CHARS` characters.

    Every message that quotes a name or a value from the input goes through here, so
    none can grow to the size of the input.

    Parameters
    ----------
    text : object
        The name or value (``str()`` of it is shown).
    code_points : bool, default False
        Also list the code points, for text that prints like other text (``'é'`` as
        U+00E9 or as ``e`` + U+0301, digits of other scripts, look-alike letters).

    Returns
    -------
    str
        ``'name'``, ``'first 80 characters…' (100,000 characters)`` for long text, and
        `` (U+0065 U+0301)`` after it with ``code_points``.

    Examples
    --------
    >>> print(quoted("p_cat"), quoted("x" * 100_000)[-30:])
    'p_cat' xxxxxxx'… (100,000 characters)
    >>> print(quoted("e\u0301", code_points=True))
    'e\u0301' (U+0065 U+0301)
    """
    text = str(text)
    shown = repr(text[:QUOTED_CHARS])
    if len(text) > QUOTED_CHARS:
        shown += f"… ({len(text):,} characters)"
    if code_points:
        points = " ".join(f"U+{ord(ch):04X}" for ch in text[:_CODE_POINTS_SHOWN])
        shown += f" ({points}{' …' if len(text) > _CODE_POINTS_SHOWN else ''})"
    return shown


def quoted_list(items: Iterable, *, limit: int = 20, what: str = "names") -> str:
    """The first ``limit`` items of ``items`` quoted with :func:`quoted`, comma-separated,
    followed by ``, ... (N names)`` when there are more.

    Examples
    --------
    >>> print(quoted_list(["a", "b"]), "|", quoted_list(range(30), limit=2, what="columns"))
    'a', 'b' | '0', '1', ... (30 columns)
    """
    items = list(items)
    shown = ", ".join(quoted(item) for item in items[:limit])
    return shown + (f", ... ({len(items):,} {what})" if len(items) > limit else "")

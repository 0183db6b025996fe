"""calcore's messages in the page's terms: the control on this page that fixes a problem.

calcore speaks to Python and the command line ("pass label_column='<name>'"); on the page
the same problem is fixed with a menu. A :class:`calcore.CalcoreError` (or a detection
problem, :class:`calcore._errors.Advice`) names the option that fixes it (``option``) and
the sentence saying so (``fix``); here that sentence is replaced, whole, by the page's
own, so nothing depends on the wording of the rest of the message. A message without an
option, or with one the page has no control for, is shown as calcore wrote it.
"""

from __future__ import annotations

__all__ = ["DECIMAL_LABEL", "PAGE_FIXES", "page_message"]

#: The checkbox that reads a decimal-comma CSV (:mod:`dashboard.calibration.decimals`).
DECIMAL_LABEL = "Numbers use a decimal comma (0,25 = 0.25)"

#: calcore option -> what to do on this page instead.
PAGE_FIXES = {
    "label_column": "Pick it in the Label column menu under Data.",
    "split_column": "Pick it in the Split column menu under Data.",
    "score_columns": "Choose them in the Score columns box under Data (one column per class).",
    "weight_column": "Pick one (or (none)) in the Weight column menu under Data.",
    "decimal": f"Tick “{DECIMAL_LABEL}” above the Data panel to read them as numbers.",
    "file": "Save it as CSV (File > Save As > CSV UTF-8) and upload that.",
    "renormalize": "Fix the scores, or tick “Renormalise probability rows that do not sum to "
    "1 (reported)” under Data to rescale those rows.",
    "percent": "tick “Scores are percentages (divide by 100)” under Data.",
    "percent_auto": "Tick “Scores are percentages (divide by 100)” under Data (if they really "
    "are logits, choose logits under “Scores are”).",
}


def page_message(message) -> str:
    """``message`` (an exception or a text) with calcore's fix replaced by the page's.

    Parameters
    ----------
    message : calcore.CalcoreError, calcore._errors.Advice or str
        What calcore said; ``option`` and ``fix`` attributes, when present, say which
        option fixes it and which sentence says so.

    Returns
    -------
    str
        The text to show (still untrusted: escape it before rendering).

    Examples
    --------
    >>> import calcore
    >>> err = calcore.CalcoreError(
    ...     "f.csv: label column is ambiguous. Pass label_column='<name>' to choose one.",
    ...     option="label_column", fix="Pass label_column='<name>' to choose one.")
    >>> page_message(err)
    'f.csv: label column is ambiguous. Pick it in the Label column menu under Data.'
    >>> page_message("f.csv: 2 rows renormalised.")
    'f.csv: 2 rows renormalised.'
    """
    text = str(message)
    option, fix = getattr(message, "option", None), getattr(message, "fix", None)
    page = PAGE_FIXES.get(option)
    if page is None or not fix or fix not in text:
        return text
    return text.replace(fix, page)

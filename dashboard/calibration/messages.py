"""calcore's messages in the page's terms: the control on this page that fixes a problem.

calcore speaks to Python and the command line ("pass label_column='<name>'"); on the page
the same problem is fixed with a menu. A :class:`calcore.CalcoreError` (or a detection
problem, :class:`calcore.foundation.errors.Advice`) names the option that fixes it (``option``) and
the sentence saying so (``fix``); here that sentence is replaced, whole, by the page's
own, so nothing depends on the wording of the rest of the message. A message without an
option, or with one the page has no control for, is shown as calcore wrote it.
"""

from __future__ import annotations

from calcore.foundation.errors import reworded

__all__ = ["DATASET_FIXES", "DECIMAL_LABEL", "PAGE_FIXES", "dataset_message", "page_message"]

#: The checkbox that reads a decimal-comma CSV (:mod:`dashboard.calibration.decimals`).
DECIMAL_LABEL = "Numbers use a decimal comma (0,25 = 0.25)"

#: The page's words for its controls (:mod:`dashboard.calibration.preview`).
_SCORES_ARE = "“Scores are” under Data"
_PERCENT = "“Scores are percentages (divide by 100)” under Data"

#: calcore option -> what to do on this page instead. Options without a control on the
#: page (``positive_class``, the array names of an NPZ archive, the file's encoding) say
#: what to change in the file.
PAGE_FIXES = {
    "label_column": "Pick it in the Label column menu under Data.",
    "split_column": "Pick it in the Split column menu under Data.",
    "score_columns": "Choose them in the Score columns box under Data (one column per class).",
    "weight_column": "Pick one (or (none)) in the Weight column menu under Data.",
    "decimal": f"Tick “{DECIMAL_LABEL}” above the Data panel to read them as numbers.",
    "file": "Save it as CSV (File > Save As > CSV UTF-8) and upload that.",
    "renormalize": "Fix the scores, or tick “Renormalise probability rows that do not sum to "
    "1 (reported)” under Data to rescale those rows.",
    "percent": f"tick {_PERCENT}.",
    "percent_auto": f"Tick {_PERCENT} (if they really are logits, choose logits under "
    f"{_SCORES_ARE}).",
    "scores_logits": f"If they are logits, choose logits under {_SCORES_ARE} (or name the "
    f"columns logit_* in the file).",
    "percent_logits": f"Untick {_PERCENT}, or choose probabilities (or detect) under "
    f"{_SCORES_ARE} if the values really are percentages.",
    "positive_class": "Name the score column after the label whose probability it holds "
    "(p_<label>, e.g. p_spam for the label spam), or give one score column per class.",
    "positive_class_index": "Write the label as the class index (0 or 1, in plain digits) in "
    "the file, or write the labels as names and name the score column after the label whose "
    "probability it holds (p_<label>).",
    "label_array": "Save the true labels in the archive as an array named labels.",
    "encoding": "Re-save the file as UTF-8 (in Excel: File > Save As > CSV UTF-8) and upload that.",
    "header_names": "Give every column a name in the file; a blank first name usually means "
    "the row numbers were saved as a column (the index, in pandas): name that column or leave "
    "it out.",
    "decimal_drop": f"Untick “{DECIMAL_LABEL}”.",
    # what the loader's notes say of an option (calcore.io._load_report.NOTE_TERMS)
    "scores_auto": f"detection (change it under {_SCORES_ARE}) saw",
    "scores_given": f"as chosen under {_SCORES_ARE}",
    "percent_says": f"{_PERCENT} is ticked",
    "percent_given": "(as ticked under Data)",
    "percent_suggested": f"tick {_PERCENT}",
    "score_columns_given": "not chosen in the Score columns box under Data",
}


#: calcore option -> what to do for a dataset on the server, which the page opens as
#: detected (no Data panel): what to change in the files (decimal commas: the box the page
#: offers above the dataset, :func:`dashboard.calibration.decimals.dataset_decimal_choice`).
DATASET_FIXES = {
    "label_column": "Name the label column label in the files (datasets on the server are "
    "read as detected).",
    "split_column": "Keep one column named split in the files.",
    "score_columns": "Name the score columns after their classes in the files (p_<class>, "
    "or logit_<class> for logits).",
    "weight_column": "Keep one column with a weight name in the files.",
    "decimal": f"Tick “{DECIMAL_LABEL}” above to read them as numbers (or save the files "
    "with a point as the decimal mark).",
    "decimal_drop": f"Untick “{DECIMAL_LABEL}” above.",
    "file": "Save it as CSV (File > Save As > CSV UTF-8) in the data directory.",
    "renormalize": "Fix the scores in the files (each row must sum to 1).",
    "percent": "divide them by 100 in the files.",
    "percent_auto": "Divide them by 100 in the files (if they really are logits, name the "
    "columns logit_<class>).",
    "scores_logits": "If they are logits, name the columns logit_<class> in the files.",
    "positive_class": PAGE_FIXES["positive_class"],
    "positive_class_index": PAGE_FIXES["positive_class_index"],
    "label_array": PAGE_FIXES["label_array"],
    "header_names": PAGE_FIXES["header_names"],
    "encoding": "Re-save the files as UTF-8 (in Excel: File > Save As > CSV UTF-8).",
    "scores_auto": "detection saw",
}


def dataset_message(message) -> str:
    """``message`` with calcore's fix replaced by what to change in a server dataset's files
    (:data:`DATASET_FIXES`), as :func:`page_message` does for an upload.

    Examples
    --------
    >>> import calcore
    >>> fix = "Pass renormalize=True."
    >>> dataset_message(calcore.CalcoreError(f"a.csv: rows do not sum to 1. {fix}",
    ...                                      option="renormalize", fix=fix))
    'a.csv: rows do not sum to 1. Fix the scores in the files (each row must sum to 1).'
    """
    return page_message(message, fixes=DATASET_FIXES)


def page_message(message, *, fixes: dict | None = None) -> str:
    """``message`` (an exception or a text) with calcore's fix replaced by the page's.

    Parameters
    ----------
    message : calcore.CalcoreError, calcore.foundation.errors.Advice or str
        What calcore said; ``option`` and ``fix`` attributes (an error's ``fixes``: every
        such pair), when present, say which option fixes it and which sentence says so.
    fixes : dict, optional
        The page's words by option (default :data:`PAGE_FIXES`).

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
    return reworded(message, PAGE_FIXES if fixes is None else fixes)

"""The notes of reports that computed different metrics of the same rows, said once.

``evaluate(metrics=...)`` words some notes with the metrics they are about in
parentheses ("Intervals of the calibration errors (ACE, TACE) are bias-corrected ...").
A report combined from parts (:meth:`calcore.CalibrationReport.combined_with`) should
read as one evaluation of all its metrics: :func:`merged_notes` joins such notes. It
lives beside the evaluator that writes them, so their wording and their merging change
together; the evaluator writes its other notes one per kind of metric, so that reports
of disjoint metrics carry disjoint notes.
"""

from __future__ import annotations

from calcore.metrics.registry import METRICS

__all__ = ["merged_notes"]

#: Metric keys and labels in the registry's order (the order the notes list them in).
_METRIC_ORDER = {name: i for i, (k, spec) in enumerate(METRICS.items()) for name in (k, spec.label)}


def merged_notes(notes) -> tuple[str, ...]:
    """``notes`` as one evaluation of all their metrics words them.

    Notes that differ only in the metrics they list in parentheses become one listing
    all of them in the registry's order, where the first of them stood. Other notes are
    kept as they are, in their order, each once.

    Parameters
    ----------
    notes : iterable of str

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> merged_notes([
    ...     "Intervals of the calibration errors (ACE, TACE) are bias-corrected.",
    ...     "Intervals of the calibration errors (conf-ECE) are bias-corrected.",
    ...     "Bootstrap intervals keep the full sample's bins.",
    ...     "Bootstrap intervals keep the full sample's bins.",
    ... ])
    ('Intervals of the calibration errors (conf-ECE, ACE, TACE) are bias-corrected.', \
"Bootstrap intervals keep the full sample's bins.")
    """
    merged: dict = {}
    for note in dict.fromkeys(notes):
        parts = _bracketed(note)
        key = note if parts is None else (parts[0], parts[2])
        if parts is None or key not in merged:
            merged[key] = note if parts is None else parts
        else:
            before, items, after = merged[key]
            union = sorted(set(items) | set(parts[1]), key=_METRIC_ORDER.__getitem__)
            merged[key] = (before, tuple(union), after)
    return tuple(
        m if isinstance(m, str) else f"{m[0]}({', '.join(m[1])}){m[2]}" for m in merged.values()
    )


def _bracketed(note: str):
    """``(before, items, after)`` around the note's first parenthesis when it holds a list
    of metric keys or labels (nested parentheses kept: "KDE-ECE (CW)"), else None."""
    start = note.find("(")
    depth, end = 0, -1
    for i in range(max(start, 0), len(note)):
        depth += {"(": 1, ")": -1}.get(note[i], 0)
        if depth == 0:
            end = i
            break
    if start < 0 or end < 0:
        return None
    items, depth, item = [], 0, ""
    for ch in note[start + 1 : end] + ",":
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(item.strip())
            item = ""
        else:
            item += ch
    if not all(i in _METRIC_ORDER for i in items):
        return None
    return note[:start], tuple(items), note[end + 1 :]

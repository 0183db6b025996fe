"""Cached calls into calcore for the dashboard (no metric is computed here).

Return values are frozen dataclasses defined in this importable module (not in the
Streamlit script, whose ``__main__`` module is rebuilt on every rerun), so
``st.cache_data`` can pickle them.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import streamlit as st

import calcore
import calcore.io

__all__ = ["EVAL_SPLIT", "Analysis", "Loaded", "analyse", "load"]

EVAL_SPLIT = "test"


@dataclass(frozen=True)
class Loaded:
    """A loaded file: the rows to evaluate plus what the loader wants the user to know."""

    preds: Any  # calcore.Predictions
    split_label: str  # e.g. "the test split", for the page heading
    split_sizes: dict[str, int]
    notes: tuple[str, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Analysis:
    metrics: dict[str, Any]
    diagram: Any  # calcore.ReliabilityDiagram
    warnings: tuple[str, ...]


def _load_warnings(splits: dict) -> tuple[str, ...]:
    """Warnings of every split's load report, in order, without duplicates.

    Read from the structured reports rather than by catching ``warnings``: the
    warnings machinery is process-global and not safe with concurrent sessions.
    """
    out = []
    for preds in splits.values():
        report = getattr(preds, "load_report", None)
        if report is not None:
            out.extend(report.warnings())
    return tuple(dict.fromkeys(out))


@st.cache_data(show_spinner="Loading predictions…", max_entries=8)
def load(_data: bytes, digest: str, name: str) -> Loaded:
    """Load a file's predictions; ``digest`` (of ``_data``) is the cache key."""
    buffer = io.BytesIO(_data)
    buffer.name = name
    # calcore's warnings also reach the server log; the page reads them from the load reports.
    splits = calcore.io.load_splits(buffer, name=name)
    if EVAL_SPLIT in splits:
        preds, label = splits[EVAL_SPLIT], f"the {EVAL_SPLIT} split"
    elif "all" in splits:  # no split column: one entry with every row
        preds, label = splits["all"], "all rows (the file has no split column)"
    else:  # a split column without test rows
        (which, preds), *_ = splits.items()
        label = f"the {which} split (the file has no {EVAL_SPLIT} rows)"
    report = getattr(preds, "load_report", None)
    notes = tuple(report.messages()) if report is not None else ()
    sizes = {k: v.n_samples for k, v in splits.items()}
    return Loaded(preds, label, sizes, notes, _load_warnings(splits))


@st.cache_data(show_spinner="Evaluating…", max_entries=32)
def analyse(_preds, digest: str, bins: int) -> Analysis:
    """calcore's metrics and confidence reliability diagram; ``digest`` keys the cache."""
    report = calcore.evaluate(_preds, bins=bins, binning="equal-width")
    diagram = calcore.reliability_diagram(
        _preds, view="confidence", bins=bins, binning="equal-width"
    )
    return Analysis(report.as_dict(), diagram, tuple(report.notes))

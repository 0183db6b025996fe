"""The "decimal comma" choice: a CSV whose numbers are written ``0,25`` is read as numbers
only when the user ticks the box that the page offers for it (never silently).

calcore finds such a file and says so (naming the file, column and first cell); the box
appears above the Data panel for that file, and when ticked the file is converted
exactly, text to text (:func:`calcore.io.decimal_comma_to_point`), then loaded as any
file. The converted bytes have their own digest, so results of the two readings are
never mixed up in the caches.
"""

from __future__ import annotations

import streamlit as st

import calcore
import calcore.io
from dashboard.calibration.controls import FileBytes, content_digest
from dashboard.calibration.data import LoadOptions, inspect
from dashboard.calibration.messages import DECIMAL_LABEL, page_message
from dashboard.text import escape_markdown as esc

__all__ = ["decimal_choice", "decimal_key"]


def decimal_key(digest: str) -> str:
    """The checkbox's key for the file with this digest (the file as uploaded)."""
    return f"data.{digest[:16]}.decimal"


@st.cache_data(show_spinner="Reading the decimal commas…", max_entries=2)
def _converted(_data: bytes, digest: str, name: str) -> tuple[bytes, str]:
    data = calcore.io.decimal_comma_to_point(_data, name=name)
    return data, content_digest(data)


def _has_decimal_commas(file: FileBytes) -> bool:
    try:
        schema = inspect(file.data, file.digest, file.name, LoadOptions())
    except calcore.CalcoreError:
        return False  # the page reports it when it loads the file
    return any(getattr(p, "option", None) == "decimal" for p in schema.problems)


def decimal_choice(file: FileBytes) -> FileBytes:
    """``file``, or the file with its decimal commas read as points when the user ticked
    the box (shown only for a file with decimal commas, or while it is ticked)."""
    key = decimal_key(file.digest)
    if not st.session_state.get(key) and not _has_decimal_commas(file):
        return file
    ticked = st.checkbox(
        DECIMAL_LABEL,
        key=key,
        help="This file writes numbers with a decimal comma (0,25). Ticked, every number "
        "with a decimal comma in those columns is read with a point (0.25), text to text, "
        "before the file is loaded; other cells are left as they are.",
    )
    if not ticked:
        return file
    try:
        data, digest = _converted(file.data, file.digest, file.name)
    except calcore.CalcoreError as err:
        st.error(esc(page_message(err)))
        return file
    return FileBytes(file.name, data, file.is_upload, digest)

"""The "decimal comma" choice: a CSV whose numbers are written ``0,25`` is read as numbers
only when the user ticks the box that the page offers for it (never silently).

calcore finds such a file and says so (naming the file, column and first cell); the box
appears above the Data panel for that file, and when ticked the file is converted
exactly, text to text (:func:`calcore.io.decimal_comma_to_point`), then loaded as any
file. The converted bytes have their own digest, so results of the two readings are
never mixed up in the caches.

A dataset on the server (:mod:`dashboard.calibration.datadir`) gets the same offer: when
the first lines of its first CSV file write numbers with a decimal comma (the file
:func:`calcore.scan` would name), the box appears above it; ticked, the dataset is
streamed with ``decimal=","`` (pandas' parser reads the commas exactly, every file and
every pass) under its own fingerprint, so results of the two readings never mix either.

The choice is not in the share link. A link carries the view (source, methods, binning,
split, view, slices), not how a file is read: an upload's corrections in the Data panel
and its decimal box are not in it either. A link to a server dataset with decimal commas
reopens it with the box offered again (and the message pointing at it): one tick
restores the view.
"""

from __future__ import annotations

import hashlib

import streamlit as st

import calcore
import calcore.io
from calcore import LoadOptions
from calcore.io._decimal import decimal_comma_file
from dashboard.calibration.controls import FileBytes, content_digest
from dashboard.calibration.data import inspect
from dashboard.calibration.datadir import ServerDataset
from dashboard.calibration.messages import DECIMAL_LABEL, page_message
from dashboard.text import escape_markdown as esc

__all__ = ["dataset_decimal_choice", "dataset_decimal_key", "decimal_choice", "decimal_key"]


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


#: The box's help for a server dataset.
_HELP_DATASET = (
    "The dataset's CSV files write numbers with a decimal comma (0,25). Ticked, they are "
    "read with the comma as the decimal mark, exactly; a number written with a point is "
    "then refused, naming its file, row and column."
)


def dataset_decimal_key(dataset: ServerDataset) -> str:
    """The checkbox's key for a server dataset: by its name, so that the choice stays when
    its files change (its fingerprint changes then)."""
    digest = hashlib.blake2b(dataset.name.encode(), digest_size=8).hexdigest()
    return f"data.server.{digest}.decimal"


@st.cache_data(show_spinner=False, max_entries=64)
def _dataset_has_decimal_commas(first_csv: str, fingerprint: str) -> bool:
    """Whether the first lines of the dataset's first CSV file have decimal commas (the
    file :func:`calcore.scan` reads its columns from); ``fingerprint`` keys the cache."""
    try:
        return bool(decimal_comma_file(first_csv))
    except (calcore.CalcoreError, OSError):
        return False  # the page reports it when it opens the dataset


def dataset_decimal_choice(dataset: ServerDataset) -> ServerDataset:
    """``dataset``, or the dataset read with a decimal comma when the user ticked the box
    (shown only for a dataset whose CSV files have decimal commas, or while it is ticked)."""
    key = dataset_decimal_key(dataset)
    csv_files = dataset.csv_files()
    if not st.session_state.get(key) and not (
        csv_files and _dataset_has_decimal_commas(csv_files[0], dataset.fingerprint)
    ):
        return dataset
    ticked = st.checkbox(DECIMAL_LABEL, key=key, help=_HELP_DATASET)
    return dataset.read_with_decimal(",") if ticked else dataset

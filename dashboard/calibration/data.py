"""Loading files into calcore Predictions, and choosing the calibration and test rows.

Everything is cached by the BLAKE2b digest of the file's bytes plus the loading options,
never by file name: two people uploading different files called ``preds.csv`` never share results.
Loaded predictions are kept with ``st.cache_resource`` (shared, not copied: ``Predictions``
are immutable with read-only arrays), so a 400 MB upload is not pickled on every rerun.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import streamlit as st

import calcore
import calcore.io
from calcore import LoadOptions
from calcore.evaluation import random_split
from calcore.predictions import concat
from dashboard.calibration.compute import CACHE_TTL_S
from dashboard.calibration.memory import budgeted
from dashboard.calibration.messages import page_message

__all__ = ["Loaded", "Split", "choose_split", "inspect", "load"]


@dataclass(frozen=True)
class Loaded:
    """One file's rows by split (``{"calib", "test"}`` or ``{"all"}``) and the loader's messages."""

    name: str
    splits: dict
    notes: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def has_split_column(self) -> bool:
        return "all" not in self.splits

    @property
    def any(self) -> calcore.Predictions:
        return next(iter(self.splits.values()))


@dataclass(frozen=True)
class Split:
    """The rows calibrators are fitted on and the rows everything is evaluated on."""

    calib: calcore.Predictions | None  # None: nothing to fit on (no calibrators possible)
    test: calcore.Predictions
    description: str
    key: str  # cache key of (calib, test)
    warning: str | None = None
    #: A server dataset's streams (dashboard.calibration.server_datasets.Streamed) when ``calib``
    #: and ``test`` are samples of it; None for files loaded whole.
    streamed: object | None = None
    mode: str = ""  # the split mode (SPLIT_MODES) that chose the rows


def rows_key(digest: str, options: LoadOptions) -> str:
    """The cache key of the rows a file gives with ``options``: its digest, plus a digest of
    the options when they differ from detection (another label, score or weight column
    gives other rows, so results computed for one must not be reused for the other)."""
    if options == LoadOptions():
        return digest
    return f"{digest}+{hashlib.blake2b(repr(options).encode(), digest_size=8).hexdigest()}"


def _buffer(data: bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(data)
    buffer.name = name
    return buffer


@st.cache_data(show_spinner=False, max_entries=16)
def inspect(_data: bytes, digest: str, name: str, options: LoadOptions) -> calcore.TableSchema:
    """What detection finds in the file (header and first rows only) with the user's
    corrections ``options`` (the Weight column menu fixes "several weight columns": its
    choice is rechecked too); ``digest`` keys the cache."""
    return calcore.inspect_table(_buffer(_data, name), name=name, options=options)


def load(data: bytes, digest: str, name: str, options: LoadOptions) -> Loaded:
    """Every split of the file; warnings come from the structured load reports.

    Parsed once per (digest, options) for every session, and counted in the server's byte
    budget (``dashboard.calibration.memory``). Python's ``warnings`` machinery is
    process-global and not safe with concurrent sessions, so the page reads calcore's
    messages from ``Predictions.load_report``.
    """
    return budgeted(_load, data, digest, name, options)


@st.cache_resource(show_spinner="Loading predictions…", max_entries=8, ttl=CACHE_TTL_S)
def _load(_data: bytes, digest: str, name: str, options: LoadOptions) -> Loaded:
    splits = calcore.io.load_splits(_buffer(_data, name), name=name, options=options)
    notes, warns = [], []
    for preds in splits.values():
        report = preds.load_report
        if report is not None:  # in the page's terms: its controls, not calcore's options
            notes.extend(page_message(m) for m in report.messages())
            warns.extend(page_message(m) for m in report.warnings())
    # a message can be repeated per split; keep the first of each
    warns = list(dict.fromkeys(warns))
    notes = [m for m in dict.fromkeys(notes) if m not in warns]
    return Loaded(name, splits, tuple(notes), tuple(warns))


def choose_split(
    loaded: Loaded,
    *,
    mode: str,
    test_fraction: float,
    seed: int,
    digest: str,
    second: Loaded | None = None,
    second_digest: str | None = None,
) -> Split:
    """The calibration and test rows for ``mode`` (see ``dashboard.calibration.state.SPLIT_MODES``).

    Raises
    ------
    calcore.CalcoreError
        A mode the file cannot satisfy (e.g. a split column without test rows).
    """
    splits = loaded.splits
    if mode == "column":
        if not loaded.has_split_column:
            raise calcore.CalcoreError(
                f"{loaded.name}: the file has no split column. Choose 'a seeded random split' or "
                "'a second file for the test set' under Calibration vs evaluation data, or add a "
                "column 'split' with values calib/test."
            )
        if "test" not in splits or "calib" not in splits:
            have = ", ".join(sorted(splits))
            raise calcore.CalcoreError(
                f"{loaded.name}: the split column has only {have} rows; calibrators need both "
                "calib and test rows. Choose a random split instead."
            )
        return Split(
            splits["calib"],
            splits["test"],
            f"split column: {splits['calib'].n_samples:,} calib / "
            f"{splits['test'].n_samples:,} test rows",
            f"{digest}:column",
        )
    everything = _all_rows(loaded, digest)
    if mode == "random" and everything.n_samples < 2:
        return Split(
            None,
            everything,
            f"{everything.n_samples} row: too few to split, so no calibrator is fitted",
            f"{digest}:all",
            warning=(
                f"{loaded.name} has a single row: the metrics below describe it alone, and "
                "no calibrator can be fitted."
            ),
        )
    if mode == "random":
        key = f"{digest}:random:{test_fraction}:{seed}"
        calib, test = budgeted(_random_split, key, test_fraction, seed, everything)
        return Split(
            calib,
            test,
            f"random split (seed {seed}): {calib.n_samples:,} calib / {test.n_samples:,} test rows",
            key,
        )
    if mode == "second-file":
        if second is None:
            raise calcore.CalcoreError(
                "Upload the test file in the sidebar (Calibration vs evaluation data), or choose "
                "another split."
            )
        test = _all_rows(second, second_digest or "")
        if test.class_names != everything.class_names:
            raise calcore.CalcoreError(
                f"{second.name}: its classes {list(test.class_names)} differ from "
                f"{loaded.name}'s {list(everything.class_names)}; both files must list the same "
                "classes in the same order."
            )
        return Split(
            everything,
            test,
            f"calibration file: {everything.n_samples:,} rows; test file: {test.n_samples:,} rows",
            f"{digest}:second:{second_digest}",
        )
    # mode == "same"
    return Split(
        everything,
        everything,
        f"in-sample: the same {everything.n_samples:,} rows for fitting and evaluation",
        f"{digest}:same",
        warning=(
            "Calibrators are fitted and evaluated on the SAME rows. Their metrics are "
            "optimistic (binning methods in particular look near-perfect in-sample); use a "
            "split before drawing conclusions."
        ),
    )


def _all_rows(loaded: Loaded, digest: str) -> calcore.Predictions:
    """Every row of a file: its single split, or calib + test rows (calib first)."""
    if "all" in loaded.splits or len(loaded.splits) == 1:
        return loaded.any
    return budgeted(_joined, digest, loaded)


@st.cache_resource(show_spinner=False, max_entries=8, ttl=CACHE_TTL_S)
def _joined(digest: str, _loaded: Loaded) -> calcore.Predictions:
    return concat([_loaded.splits["calib"], _loaded.splits["test"]])


@st.cache_resource(show_spinner=False, max_entries=8, ttl=CACHE_TTL_S)
def _random_split(key: str, test_fraction: float, seed: int, _rows) -> tuple:
    """The calibration and test rows of a random split, copied once per key (not on every
    rerun: two copies of the table, 16 MB for 20,000 x 100)."""
    return random_split(_rows, test_fraction=test_fraction, seed=seed)

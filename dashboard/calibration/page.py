"""The calibration page: data in, calibrators fitted, every diagnostic on the test rows.

Data flows one way: file -> calcore ``Predictions`` -> calibrators fitted on the
calibration rows -> calcore diagnostics on the test rows -> figures -> page. The page
computes nothing itself; the only errors it catches are ``calcore.CalcoreError`` (bad
input or settings, shown in plain words), so genuine bugs still surface in tests.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import streamlit as st

import calcore
from calcore import LoadOptions
from dashboard.calibration import controls
from dashboard.calibration.context import build_context
from dashboard.calibration.data import choose_split, inspect, load, rows_key
from dashboard.calibration.datadir import DataDirectory, ServerDataset, data_directory
from dashboard.calibration.decimals import dataset_decimal_choice, decimal_choice
from dashboard.calibration.downloads import downloads
from dashboard.calibration.explain import EXPLAIN
from dashboard.calibration.messages import dataset_message, page_message
from dashboard.calibration.preview import load_options
from dashboard.calibration.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.calibration.server_datasets import (
    ACTIVITY,
    RowsProgress,
    Streamed,
    open_dataset,
    prefetch_slice_columns,
    sample_rows,
    slice_columns_read,
    with_slice_columns,
)
from dashboard.calibration.state import Settings, settings_from_query, settings_to_query
from dashboard.calibration.views import RENDERERS
from dashboard.calibration.views._common import VIEW_TOP, scroll_to_view_top
from dashboard.calibration.workspace import WORKSPACE_ENV, Workspace, workspace_from_env
from dashboard.guard import bugs_as_messages
from dashboard.text import escape_markdown as esc

KEY_RESTORED = "app.restored_from_url"
KEY_LAST = "app.last_settings"  # the main page's settings, restored after a lab visit


def restore_from_url() -> Settings:
    """On a session's first run, the URL's settings become the widgets' initial values."""
    query = {k: st.query_params.get_all(k) for k in st.query_params}
    settings = settings_from_query(query, samples=SAMPLES, default_sample=DEFAULT_SAMPLE)
    controls.restore(settings, recommend="m" not in query)  # no method named: recommend
    st.session_state[KEY_RESTORED] = settings
    return settings


def sync_url(settings: Settings) -> None:
    wanted = settings_to_query(settings)
    current = {k: st.query_params.get_all(k) for k in st.query_params}
    as_lists = {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}
    if as_lists != current:
        st.query_params.from_dict(wanted)


def show_messages(warnings, notes, notes_into=None) -> None:
    """The loader's warnings (boxes: they may need the user) and its notes, in an expander
    in ``notes_into`` (the column beside the data's facts, :func:`facts_row`), else here."""
    for message in warnings:
        st.warning(esc(message))
    if notes:
        with (notes_into or st).expander(f"What the loader detected ({len(notes)})"):
            st.markdown("\n".join(f"- {esc(m)}" for m in notes))


class Facts:
    """The data's facts (which file or dataset, when it was read, which rows, the split) as
    one caption, a line each, in one slot: lines are added, or replaced (a progress line),
    as the page learns them. Lines are Markdown: the caller escapes what it quotes.

    One caption rather than one per fact: Streamlit puts 16 px between elements, which on
    a server dataset's four facts was a third of their height (issue 34: the results above
    the fold at 1440 x 900).
    """

    def __init__(self, where) -> None:
        self._slot = where.empty()
        self._lines: list[str] = []

    def add(self, line: str) -> int:
        """Append ``line``; its index, for :meth:`replace`."""
        self._lines.append(line)
        self._show()
        return len(self._lines) - 1

    def replace(self, index: int, line: str) -> None:
        """Put ``line`` in place of the line at ``index``."""
        self._lines[index] = line
        self._show()

    def _show(self) -> None:
        # a Markdown hard line break ("  \n") between facts: one paragraph, no gaps;
        # an emptied line (a reading that failed) leaves no blank line
        self._slot.caption("  \n".join(line for line in self._lines if line))


def facts_row() -> tuple[Facts, object]:
    """The data's :class:`Facts` and, in a column beside them, a place for the loader's
    notes (:func:`show_messages`).

    Why a row: stacked one under the other these took four to six lines of the first
    screen (about 120-230 px) before the results; side by side they take two to four short
    lines, so the verdict and the head of the metrics table fit above the fold at
    1440 x 900 (issue 34). Nothing in them needs the user: warnings stay boxes in the page's
    flow.
    """
    facts, notes = st.columns([2, 1])
    return Facts(facts), notes


#: The files (digests) whose Data panel opened because something needed the user.
KEY_DATA_NEEDS_USER = "data.needs_user"


def _open_data_panel(needs_user: set, digest: str) -> None:
    """Open the Data panel of this file from now on (one rerun, the first time)."""
    if digest not in needs_user:
        needs_user.add(digest)
        st.rerun()


def render_calibration() -> None:
    st.set_page_config(page_title="calibration-lens", layout="wide")
    first_run = KEY_RESTORED not in st.session_state
    from_url = restore_from_url() if first_run else st.session_state[KEY_RESTORED]
    if (
        not first_run
        and controls.KEY_METHODS not in st.session_state
        and KEY_LAST in st.session_state
    ):
        # back from another page: Streamlit dropped the state of the widgets that were not
        # on screen, so put the last settings back (an upload must be chosen again)
        controls.restore(st.session_state[KEY_LAST])
    st.title("calibration-lens")
    st.markdown(EXPLAIN["intro"])  # one paragraph for a newcomer, as the Simulation lab has
    if first_run and from_url.dropped:
        st.warning("Ignored in the link: " + esc("; ".join(from_url.dropped)))

    # Each sidebar section in a keyed container, so a section whose content changes (source,
    # split mode, chosen methods) leaves the other sections' elements where they were.
    data_dir, workspace = _data_directory(), _workspace()
    with st.sidebar, st.container(key="section.data"):
        source = controls.data_source(data_dir, workspace)
    if source.error:
        st.error(esc(source.error))
    if first_run and from_url.dataset and data_dir is None:
        st.info(
            f"This link names the dataset **{esc(from_url.dataset)}** on the server, but this "
            "server has no data directory (CALCORE_DATA_DIR): a bundled sample is shown instead."
        )
    if first_run and from_url.kept and workspace is None:
        st.info(
            "This link names a file kept on the server, but this server keeps no files "
            "(CALCORE_WORKSPACE_DIR): upload the file again in the sidebar."
        )
    if not source.chosen:
        if from_url.upload_name:
            st.info(
                f"This link was made with the uploaded file **{esc(from_url.upload_name)}**. "
                "Upload the same file in the sidebar to restore the view."
            )
        elif source.error is None:
            st.info("Upload a predictions file in the sidebar, or switch back to a sample.")
        st.stop()
    streamed = None
    facts, notes_column = facts_row()
    if source.dataset is not None:
        dataset = dataset_decimal_choice(source.dataset)  # decimal commas: only if ticked
        loaded, streamed = open_server_dataset(dataset, facts)
        options, digest = LoadOptions(), f"server:{dataset.fingerprint}"
    else:
        file = source.file
        origin = "uploaded file" if file.is_upload else "bundled sample"
        facts.add(f"{origin}: {esc(file.name)} · BLAKE2b {file.digest[:12]}…")
        file = decimal_choice(file)  # a decimal-comma CSV: read as such only if ticked
        # The Data panel stays shut once a file loads cleanly (the results come first);
        # it opens, and stays open for that file, when something needs the user.
        needs_user = st.session_state.setdefault(KEY_DATA_NEEDS_USER, set())
        try:
            schema = inspect(file.data, file.digest, file.name, LoadOptions())
            options = load_options(
                schema, file.digest, expanded=file.digest in needs_user,
                recheck=lambda o: inspect(file.data, file.digest, file.name, o).problems,
            )  # fmt: skip
            loaded = load(file.data, file.digest, file.name, options)
        except calcore.CalcoreError as err:
            _open_data_panel(needs_user, file.digest)
            st.error(f"Could not load {esc(file.name)}. {esc(page_message(err))}")
            st.stop()
        if loaded.warnings:
            _open_data_panel(needs_user, file.digest)
        digest = rows_key(file.digest, options)
    show_messages(loaded.warnings, loaded.notes, notes_into=notes_column)

    settings = controls.sidebar_settings(
        sample=source.sample,
        upload_name=source.upload_name,
        has_split_column=loaded.has_split_column,
        n_classes=loaded.any.n_classes,
        dataset=None if source.dataset is None else source.dataset.name,
        kept=source.kept,
        calibration=loaded.splits.get("calib", loaded.any),
    )
    if streamed is not None and wants_slice_columns(settings, streamed):
        loaded = attach_slice_columns(loaded, streamed)  # same rows: same cache keys
    try:
        second = second_digest = None
        test_file = controls.second_file() if settings.split_mode == "second-file" else None
        if test_file is not None:
            # weights and percentages: as chosen for the first file
            unweighted = options.weight_column is False
            second_options = LoadOptions(
                weight_column=False if unweighted else None, percent=options.percent
            )
            second = load(test_file.data, test_file.digest, test_file.name, second_options)
            second_digest = test_file.digest
        split = choose_split(
            loaded, mode=settings.split_mode, test_fraction=settings.test_fraction,
            seed=settings.split_seed, digest=digest, second=second,
            second_digest=second_digest,
        )  # fmt: skip
        if streamed is not None:
            split = dataclasses.replace(split, streamed=streamed, mode=settings.split_mode)
    except calcore.CalcoreError as err:
        st.error(esc(err))
        sync_url(settings)
        st.stop()
    if split.warning:
        st.warning(esc(split.warning))  # may quote the file name
    if streamed is not None:
        show_sample_words(streamed, settings.split_mode, facts)
    test = split.test
    weighted_by = test.load_report.weight_column if test.load_report is not None else None
    facts.add(
        f"{esc(split.description)} · {test.n_classes} classes · evaluated on "
        f"{test.n_samples:,} test rows"
        + ("" if test.sample_weight is None else f", weighted by column {esc(weighted_by)}")
    )

    st.session_state[KEY_LAST] = settings
    sync_url(settings)
    try:
        ctx = build_context(settings, split)
    except calcore.CalcoreError as err:
        st.error(esc(err))
        return
    view_area(ctx)
    try:
        downloads(ctx, source=loaded.name)
    except calcore.CalcoreError as err:
        st.error(esc(err))
    if streamed is not None and streamed.slice_columns:
        prefetch_slice_columns(loaded, streamed)  # the page is drawn: ready the Slices view


def _data_directory() -> DataDirectory | None:
    """The server's data directory (CALCORE_DATA_DIR), or None; a misconfigured one is
    reported on the page and left out."""
    try:
        return data_directory()
    except calcore.CalcoreError as err:
        st.error(f"Datasets on the server are unavailable: {esc(err)}")
        return None


def _workspace() -> Workspace | None:
    """The server's workspace of kept uploads (CALCORE_WORKSPACE_DIR), or None; opened once
    per configuration (its index is checked on opening), expired files purged now and then."""
    try:
        workspace = _opened_workspace(*(os.environ.get(v, "") for v in WORKSPACE_ENV))
    except calcore.CalcoreError as err:
        st.error(f"Keeping files on the server is unavailable: {esc(err)}")
        return None
    if workspace is not None:
        workspace.purge_now_and_then()
    return workspace


@functools.lru_cache(maxsize=4)
def _opened_workspace(*values: str) -> Workspace | None:
    return workspace_from_env(dict(zip(WORKSPACE_ENV, values, strict=True)))


KEY_FINGERPRINTS = "data.server_fingerprints"


def open_server_dataset(dataset: ServerDataset, facts: Facts | None = None):
    """The dataset's samples and streams (cached by fingerprint), with progress while it is
    read; says so when the files changed since this session last opened it. Its name,
    fingerprint and reading go in ``facts`` (:func:`facts_row`), else here."""
    facts = facts or Facts(st)
    seen = st.session_state.setdefault(KEY_FINGERPRINTS, {})
    before = seen.get((dataset.name, dataset.decimal))  # a reading of its files
    if before is not None and before != dataset.fingerprint:
        st.warning(
            f"{esc(dataset.name)} changed on the server since this page last read it (size "
            "or modification time of its files): everything below is computed again from "
            "the new files."
        )
    seen[(dataset.name, dataset.decimal)] = dataset.fingerprint
    facts.add(
        f"dataset on the server: {esc(dataset.describe())} · fingerprint "
        f"{dataset.fingerprint[:12]}…"
    )
    line = facts.add(f"Reading {esc(dataset.name)}…")
    progress = RowsProgress(lambda text, _: facts.replace(line, esc(text) + "…"), "sampling")
    try:
        n_sample = sample_rows()
        loaded, streamed = open_dataset(dataset, n_sample, progress)
    except calcore.CalcoreError as err:
        facts.replace(line, "")
        st.error(f"Could not open {esc(dataset.name)}. {esc(dataset_message(err))}")
        st.stop()
    facts.replace(
        line,
        f"read at {streamed.read_at} UTC in {streamed.read_seconds:.2f} s, once for "
        "every session on this server (until the files change)",
    )
    return loaded, streamed


def wants_slice_columns(settings: Settings, streamed: Streamed) -> bool:
    """Whether the page needs the samples' slice columns: the Slices view is open or a
    slicing is chosen (the report includes it), or they were read already."""
    return bool(streamed.slice_columns) and bool(
        settings.view == "slices" or settings.by or slice_columns_read(streamed)
    )


def attach_slice_columns(loaded, streamed: Streamed):
    """The samples with their slice columns, read once for every session (the page says
    so while they are read); a file that changed or is damaged is reported and the page
    stops."""
    try:
        with st.spinner(
            f"Reading the slice columns ({', '.join(map(esc, streamed.slice_columns))}) of "
            "the sampled rows…"
        ):
            return with_slice_columns(loaded, streamed)
    except calcore.CalcoreError as err:
        st.error(f"Could not read the slice columns of {esc(streamed.dataset.name)}. {esc(err)}")
        st.stop()


def show_sample_words(streamed: Streamed, mode: str, facts: Facts) -> None:
    """:func:`sample_words` on the page: a box when the views leave rows out (a sample: the
    user must know that the numbers are not on every row), a caption among the data's
    ``facts`` when every row is read (a plain fact, nothing to act on)."""
    words = esc(sample_words(streamed, mode))
    if any(streamed.sampled(split) for split in streamed.n_rows):
        st.info(words)
    else:
        facts.add(words)


def _split_word(split: str) -> str:
    return "" if split == "all" else f" {split}"


def sample_words(streamed: Streamed, mode: str) -> str:
    """What the views are computed on, in words (sample or every row)."""
    # a file without a split column has one split, "all": its rows are not "all all rows"
    parts = [
        f"{streamed.sample_rows:,} of {n:,}{_split_word(split)} rows" if streamed.sampled(split)
        else f"all {n:,}{_split_word(split)} rows"
        for split, n in streamed.n_rows.items()
    ]  # fmt: skip
    if not any(streamed.sampled(s) for s in streamed.n_rows):
        return f"Every row of the dataset is read ({', '.join(parts)})."
    return (
        "The views below use a seeded uniform sample of the dataset ("
        + ", ".join(parts)
        + "); calibrators are fitted on the sampled calibration rows. "
        + (
            "The Metrics view can also evaluate every test row, streamed."
            if mode == "column" or "all" in streamed.n_rows
            else ""
        )
    )


@st.fragment
@bugs_as_messages
def view_area(ctx) -> None:
    """The view selector and the chosen view: a fragment, so switching views reruns only
    this part (the sidebar, data panel and fitted calibrators are unchanged by it)."""
    with ACTIVITY.run():  # a fragment's rerun is a script run too (see server_datasets.ACTIVITY)
        _view_area(ctx)


def _view_area(ctx) -> None:
    with st.container(key=VIEW_TOP):  # where a view switch scrolls to
        view = controls.view_control(ctx.test.n_classes)
    settings = dataclasses.replace(ctx.settings, view=view)
    st.session_state[KEY_LAST] = settings
    sync_url(settings)
    try:
        chosen = RENDERERS[view](dataclasses.replace(ctx, settings=settings))
    except calcore.CalcoreError as err:
        st.error(esc(err))
        return
    finally:
        scroll_to_view_top(view)
    if chosen is not None and chosen != settings:  # the view's own choices (Slices)
        st.session_state[KEY_LAST] = chosen
        sync_url(chosen)

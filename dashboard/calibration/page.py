"""The calibration page: data in, calibrators fitted, every diagnostic on the test rows.

Data flows one way: file -> calcore ``Predictions`` -> calibrators fitted on the
calibration rows -> calcore diagnostics on the test rows -> figures -> page. The page
computes nothing itself; the only errors it catches are ``calcore.CalcoreError`` (bad
input or settings, shown in plain words), so genuine bugs still surface in tests.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

import calcore
from dashboard.calibration import controls
from dashboard.calibration.context import build_context
from dashboard.calibration.data import LoadOptions, choose_split, inspect, load, rows_key
from dashboard.calibration.downloads import downloads
from dashboard.calibration.preview import load_options
from dashboard.calibration.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.calibration.state import Settings, settings_from_query, settings_to_query
from dashboard.calibration.views import RENDERERS
from dashboard.text import escape_markdown as esc

KEY_RESTORED = "app.restored_from_url"
KEY_LAST = "app.last_settings"  # the main page's settings, restored after a lab visit


def restore_from_url() -> Settings:
    """On a session's first run, the URL's settings become the widgets' initial values."""
    query = {k: st.query_params.get_all(k) for k in st.query_params}
    settings = settings_from_query(query, samples=SAMPLES, default_sample=DEFAULT_SAMPLE)
    controls.restore(settings)
    st.session_state[KEY_RESTORED] = settings
    return settings


def sync_url(settings: Settings) -> None:
    wanted = settings_to_query(settings)
    current = {k: st.query_params.get_all(k) for k in st.query_params}
    as_lists = {k: v if isinstance(v, list) else [v] for k, v in wanted.items()}
    if as_lists != current:
        st.query_params.from_dict(wanted)


def show_messages(warnings, notes) -> None:
    for message in warnings:
        st.warning(esc(message))
    if notes:
        with st.expander(f"What the loader detected ({len(notes)})"):
            st.markdown("\n".join(f"- {esc(m)}" for m in notes))


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
    if first_run and from_url.dropped:
        st.warning("Ignored in the link: " + esc("; ".join(from_url.dropped)))

    # Each sidebar section in a keyed container, so a section whose content changes (source,
    # split mode, chosen methods) leaves the other sections' elements where they were.
    with st.sidebar, st.container(key="section.data"):
        file, sample_key, upload_name = controls.data_source()
    if file is None:
        if from_url.upload_name:
            st.info(
                f"This link was made with the uploaded file **{esc(from_url.upload_name)}**. "
                "Upload the same file in the sidebar to restore the view."
            )
        else:
            st.info("Upload a predictions file in the sidebar, or switch back to a sample.")
        st.stop()
    origin = "uploaded file" if file.is_upload else "bundled sample"
    st.caption(f"{origin}: {esc(file.name)} · BLAKE2b {file.digest[:12]}…")

    try:
        schema = inspect(file.data, file.digest, file.name, LoadOptions())
        options = load_options(schema, file.digest, expanded=file.is_upload)
        loaded = load(file.data, file.digest, file.name, options)
    except calcore.CalcoreError as err:
        st.error(f"Could not load {esc(file.name)}. {esc(err)}")
        st.stop()
    show_messages(loaded.warnings, loaded.notes)

    settings = controls.sidebar_settings(
        sample=sample_key,
        upload_name=upload_name,
        has_split_column=loaded.has_split_column,
        n_classes=loaded.any.n_classes,
    )
    try:
        second = second_digest = None
        test_file = controls.second_file() if settings.split_mode == "second-file" else None
        if test_file is not None:
            # weights and percentages: as chosen for the first file
            second_options = LoadOptions(unweighted=options.unweighted, percent=options.percent)
            second = load(test_file.data, test_file.digest, test_file.name, second_options)
            second_digest = test_file.digest
        split = choose_split(
            loaded, mode=settings.split_mode, test_fraction=settings.test_fraction,
            seed=settings.split_seed, digest=rows_key(file.digest, options), second=second,
            second_digest=second_digest,
        )  # fmt: skip
    except calcore.CalcoreError as err:
        st.error(esc(err))
        sync_url(settings)
        st.stop()
    if split.warning:
        st.warning(esc(split.warning))  # may quote the file name
    test = split.test
    weighted_by = test.load_report.weight_column if test.load_report is not None else None
    st.caption(
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
        downloads(ctx, source=file.name)
    except calcore.CalcoreError as err:
        st.error(esc(err))


@st.fragment
def view_area(ctx) -> None:
    """The view selector and the chosen view: a fragment, so switching views reruns only
    this part (the sidebar, data panel and fitted calibrators are unchanged by it)."""
    view = controls.view_control()
    settings = dataclasses.replace(ctx.settings, view=view)
    st.session_state[KEY_LAST] = settings
    sync_url(settings)
    try:
        chosen = RENDERERS[view](dataclasses.replace(ctx, settings=settings))
    except calcore.CalcoreError as err:
        st.error(esc(err))
        return
    if chosen is not None and chosen != settings:  # the view's own choices (Slices)
        st.session_state[KEY_LAST] = chosen
        sync_url(chosen)

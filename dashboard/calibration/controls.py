"""The sidebar: data source, calibration/test split, calibrators with their parameters,
evaluation binning and bootstrap. Widgets are built from ``calcore.CALIBRATORS``.

Widget keys are constants (``KEY_*``) so that tests and the query-string restore address
widgets by key. The sidebar returns plain values; nothing here touches calcore results.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import streamlit as st

import calcore
from calcore.metrics.registry import default_primary
from calcore.predictions.slicing import check_exact_ranges, parse_slice_spec, quantile_count
from dashboard.calibration.datadir import DataDirectory, ServerDataset
from dashboard.calibration.explain import interval_words
from dashboard.calibration.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.calibration.share import copy_link_button
from dashboard.calibration.state import (
    BINNING_CHOICES,
    BINS_RANGE,
    BOOTSTRAP_CHOICES,
    DEFAULT_METHODS,
    MAX_METHODS,
    MAX_SLICE_COLUMNS,
    RANK_CHOICES,
    SPLIT_MODES,
    VIEWS,
    MethodChoice,
    Settings,
    method_choice,
)
from dashboard.calibration.workspace import Workspace
from dashboard.text import escape_markdown as esc

KEY_SOURCE = "sidebar.source"
KEY_SAMPLE = "sidebar.sample"
KEY_UPLOAD = "sidebar.upload"
KEY_DATASET = "sidebar.dataset"
KEY_KEEP = "sidebar.keep"
KEY_DELETE_KEPT = "sidebar.delete_kept"
KEY_DELETE_CODE = "sidebar.delete_code"
KEY_KEPT_LINK = "data.kept_link"  # not a widget: the workspace id the link named
KEY_KEPT_IDS = "data.kept_ids"  # not a widget: upload digest -> id kept in this session
KEY_DELETED = "data.deleted"  # not a widget: the name of the file just deleted
KEY_DELETE_FAILED = "data.delete_failed"  # not a widget: why a delete failed (a full disk)
KEY_SPLIT = "sidebar.split"
KEY_FRACTION = "sidebar.fraction"
KEY_SEED = "sidebar.seed"
KEY_TEST_UPLOAD = "sidebar.test_upload"
KEY_METHODS = "sidebar.methods"
KEY_RECOMMENDED = "sidebar.methods.recommended"
KEY_BINNING = "sidebar.binning"
KEY_BINS = "sidebar.bins"
KEY_BOOTSTRAP = "sidebar.bootstrap"
KEY_VIEW = "main.view"
KEY_SLICE_COLUMNS = "view.slices.columns"
KEY_SLICE_RANK = "view.slices.rank"
#: Not a widget: the Slices view's last choice (see :func:`slicing_choice`).
KEY_SLICING = "view.slices.choice"
KEY_INITIAL = "app.initial_values"  # not a widget: first values of numeric widgets

UPLOAD_TYPES = ["csv", "tsv", "txt", "parquet", "pq", "npz"]
SOURCE_SAMPLE, SOURCE_UPLOAD, SOURCE_SERVER = "sample", "upload", "server"
SOURCE_TITLES = {
    SOURCE_SAMPLE: "bundled sample",
    SOURCE_UPLOAD: "upload a file",
    SOURCE_SERVER: "dataset on the server",
}


def param_key(method: str, param: str) -> str:
    return f"param.{method}.{param}"


def content_digest(data: bytes) -> str:
    """BLAKE2b-256 of the bytes, hex: the key of every cache entry of a file.

    Not SHA-256: on this project's machines BLAKE2b hashes a 200 MB upload in 0.33 s
    against 0.94 s, with the same collision resistance for this purpose.
    """
    return hashlib.blake2b(data, digest_size=32).hexdigest()


@dataclass(frozen=True)
class FileBytes:
    """An uploaded or bundled file; the digest of its bytes is every cache key."""

    name: str  # untrusted when uploaded
    data: bytes
    is_upload: bool
    known_digest: str | None = field(default=None, repr=False)

    @cached_property
    def digest(self) -> str:
        return self.known_digest or content_digest(self.data)


KEY_DIGESTS = "data.upload_digests"


def uploaded(upload) -> FileBytes:
    """An uploaded file, hashed once per upload (not on every rerun: a 200 MB file took a
    second per rerun) -- the digests are kept per session by Streamlit's upload id."""
    memo = st.session_state.setdefault(KEY_DIGESTS, {})
    data = upload.getvalue()
    key = (upload.file_id, len(data))
    if key not in memo:
        if len(memo) >= 4:  # two uploaders; forget old uploads
            memo.clear()
        memo[key] = content_digest(data)
    return FileBytes(upload.name, data, True, memo[key])


def restore(settings: Settings, *, recommend: bool = False) -> None:
    """Put URL settings into the widgets' session state (first run of a session only).

    ``recommend``: the link names no calibrator, so the picker starts with the set
    recommended for the data (:func:`calcore.recommend_calibrators`), not ``settings``'.
    """
    # Every widget gets its first value through value=/index=/default= (see _initial): a
    # value given only through session state was lost in the browser when the widget was
    # re-sent (Bins fell back to its minimum and the bootstrap choice to 0 after the
    # sidebar changed). The initial values stay constant for the session.
    initial = {
        KEY_SOURCE: (
            SOURCE_SAMPLE
            if settings.sample is not None
            else SOURCE_SERVER
            if settings.dataset is not None
            else SOURCE_UPLOAD
        ),
        KEY_SAMPLE: settings.sample,
        KEY_DATASET: settings.dataset,
        KEY_SPLIT: settings.split_mode,
        KEY_FRACTION: settings.test_fraction,
        KEY_SEED: settings.split_seed,
        KEY_METHODS: None if recommend else [m.name for m in settings.methods],
        KEY_BINNING: settings.binning,
        KEY_BINS: settings.bins,
        KEY_BOOTSTRAP: settings.n_resamples,
        KEY_VIEW: settings.view,
    }
    for m in settings.methods:
        for name, value in m.params:
            initial[param_key(m.name, name)] = value
    st.session_state[KEY_INITIAL] = initial
    st.session_state[KEY_KEPT_LINK] = settings.kept
    slicing_choice().update(by=settings.by, rank=settings.rank_by, per_slice=settings.per_slice_fit)


def slicing_choice() -> dict:
    """The Slices view's last choice, ``{"by": specs, "rank": metric, "per_slice": bool}``.

    Kept outside the widgets: they, and their state, exist only while the view is open,
    and the link keeps the slicing on every view. One dict per session, updated in place,
    so the report's download (whose callable runs on another thread, without the
    session) reads the choice made after its button was drawn.
    """
    return st.session_state.setdefault(KEY_SLICING, {"by": (), "rank": "", "per_slice": False})


def _index(options, key: str, default) -> int:
    """Position of the widget's first value among ``options`` (``default``'s if absent)."""
    options = list(options)
    first = _initial(key, default)
    return options.index(first if first in options else default)


def _initial(key: str, default):
    """A widget's first value: from the URL if it named one, else ``default``.

    Constant for the whole session, so passing it as ``value=`` never resets a widget
    the user has changed since.
    """
    return st.session_state.get(KEY_INITIAL, {}).get(key, default)


def _param_widget(method: str, p: calcore.Param):
    """One control for one calibrator parameter, by its declared kind and bounds."""
    key = param_key(method, p.name)
    label, help_text = p.name.replace("_", " "), p.description
    first = _initial(key, p.default)
    if p.kind == "bool":
        return st.checkbox(label, value=bool(first), key=key, help=help_text)
    if p.kind == "str" and p.choices:
        options = list(p.choices)
        return st.selectbox(label, options, index=options.index(first), key=key, help=help_text)
    if p.kind == "str":
        return st.text_input(label, value=first, key=key, help=help_text)
    step = 1 if p.kind == "int" else None
    lo = None if p.minimum is None else (int(p.minimum) if p.kind == "int" else float(p.minimum))
    hi = None if p.maximum is None else (int(p.maximum) if p.kind == "int" else float(p.maximum))
    if p.optional:
        help_text += " Leave empty for the default behaviour."
    return st.number_input(
        label,
        value=first,
        min_value=lo,
        max_value=hi,
        step=step,
        key=key,
        help=help_text,
        format="%d" if p.kind == "int" else "%g",
    )


def available_methods(n_classes: int | None) -> list[str]:
    """Calibrators that apply to data with ``n_classes`` classes (all when unknown)."""
    return [name for name in calcore.CALIBRATORS if not_offered_because(name, n_classes) is None]


def not_offered_because(name: str, n_classes: int | None) -> str | None:
    """Why calibrator ``name`` is not offered for ``n_classes`` classes (None: it is)."""
    info = calcore.CALIBRATORS[name]
    if n_classes is not None and n_classes > 2 and info.binary_only:
        return f"{name} is binary and the data has {n_classes} classes (try tl-{name} or cw-{name})"
    if n_classes is not None and n_classes > 6 and info.family == "canonical":
        return f"{name} bins the simplex, for at most 6 classes, and the data has {n_classes}"
    return None


def _method_label(name: str) -> str:
    """``tl-hb · Top-label histogram binning``: the short name (and the old names that
    still load), then the full one. The short name comes first because the sidebar cuts
    long options at its edge (the menu's rows cannot wrap): what identifies the method
    stays visible, and the guide below the menu has every full name and use."""
    info = calcore.CALIBRATORS[name]
    return f"{' = '.join((name, *info.aliases))} · {info.title}"


def _family_order(name: str) -> tuple:
    """Sort key: family (in calcore's order), the methods' own maps before wrapped ones, slow
    ones last, then by full name."""
    info = calcore.CALIBRATORS[name]
    wrapped = info.binary_method is not None and info.binary_method != name
    return (list(calcore.CALIBRATOR_FAMILIES).index(info.family), wrapped, info.slow, info.title)


@dataclass(frozen=True)
class DataShape:
    """What the recommended calibrators depend on: classes, calibration rows (the rarest
    class's too), as the split chosen in the sidebar gives them."""

    n_classes: int
    n_calibration: int
    rows_per_class: float

    def describe(self) -> str:
        return (
            f"{self.n_classes} classes, {self.n_calibration:,} calibration rows "
            f"({self.rows_per_class:,.0f} in the rarest class)"
        )


def data_shape(calibration, n_classes: int, mode: str, test_fraction: float) -> DataShape | None:
    """The calibration rows' shape: ``calibration`` is the file's calibration split (or
    all its rows), of which a random split keeps ``1 - test_fraction``."""
    if calibration is None:
        return None
    keep = 1.0 - test_fraction if mode == "random" else 1.0
    counts = np.bincount(calibration.labels, minlength=n_classes)
    return DataShape(n_classes, int(calibration.n_samples * keep), float(counts.min() * keep))


def recommended(shape: DataShape | None) -> calcore.Recommendation | None:
    if shape is None or shape.n_classes < 2:
        return None
    return calcore.recommend_calibrators(shape.n_classes, shape.n_calibration, shape.rows_per_class)


@dataclass(frozen=True)
class Source:
    """What the Data section chose: a file's bytes (sample or upload) or a server dataset."""

    file: FileBytes | None = None
    sample: str | None = None  # the bundled sample's key
    upload_name: str | None = None  # untrusted
    dataset: ServerDataset | None = None
    error: str | None = None  # why a linked dataset (or kept file) cannot be opened
    kept: str | None = None  # the workspace id of the upload, when it is kept on the server

    @property
    def chosen(self) -> bool:
        return self.file is not None or self.dataset is not None


def data_source(
    data_dir: DataDirectory | None = None, workspace: Workspace | None = None
) -> Source:
    """The Data section: a bundled sample, an upload (kept on the server on request, when
    it has a workspace), or (when the server has a data directory) one of its datasets."""
    st.header("Data")
    deleted = st.session_state.pop(KEY_DELETED, None)
    if deleted is not None:
        st.success(f"Deleted {esc(deleted)} from the server: its link no longer opens it.")
    failed = st.session_state.pop(KEY_DELETE_FAILED, None)
    if failed is not None:
        st.error(esc(failed))
    sources = [SOURCE_SAMPLE, SOURCE_UPLOAD] + ([SOURCE_SERVER] if data_dir else [])
    source = st.radio(
        "Source",
        sources,
        format_func=SOURCE_TITLES.get,
        horizontal=True,
        index=_index(sources, KEY_SOURCE, SOURCE_SAMPLE),
        key=KEY_SOURCE,
    )
    if source == SOURCE_SAMPLE:
        key = st.selectbox(
            "Sample",
            list(SAMPLES),
            index=_index(SAMPLES, KEY_SAMPLE, DEFAULT_SAMPLE),
            format_func=lambda k: SAMPLES[k].title,
            key=KEY_SAMPLE,
        )
        st.caption(SAMPLES[key].description)
        sample = SAMPLES[key]
        return Source(file=FileBytes(sample.filename, sample.read_bytes(), False), sample=key)
    if source == SOURCE_SERVER:
        return _server_dataset(data_dir)
    upload = st.file_uploader(
        "Predictions (CSV, Parquet or NPZ)",
        type=UPLOAD_TYPES,
        key=KEY_UPLOAD,
        help="One row per example: a label column plus one probability (or logit) column per "
        "class, e.g. label,p_cat,p_dog; optionally a split column with values calib/test.",
    )
    if upload is not None:
        file = uploaded(upload)
        kept = _keep_control(workspace, file) if workspace is not None else None
        return Source(file=file, upload_name=upload.name, kept=kept)
    linked = st.session_state.get(KEY_KEPT_LINK)
    if linked and workspace is not None:
        return _kept_upload(workspace, linked)
    return Source()


def _keep_control(workspace: Workspace, file: FileBytes) -> str | None:
    """The "Keep on the server" box under an upload; the kept id once it is ticked."""
    days = workspace.retention_s / 86_400
    keep = st.checkbox(
        "Keep on the server (the link reopens it)",
        key=KEY_KEEP,
        help=f"Stores a copy of this file on this server for {days:g} days, so that anyone "
        "with the page's link reopens the same data and view without uploading. Nobody can "
        "list kept files; the link's random id is the only way to them. Off: the file lives "
        "only in this browser session.",
    )
    if not keep:
        return None
    memo = st.session_state.setdefault(KEY_KEPT_IDS, {})  # digest -> (id, delete code)
    if file.digest not in memo:
        try:
            kept = workspace.keep(file.data, file.name, file.digest)
        except calcore.CalcoreError as err:
            st.error(esc(err))
            return None
        memo[file.digest] = (kept.id, kept.delete_code)
    kept_id, code = memo[file.digest]
    try:
        kept = workspace.lookup(kept_id)
    except calcore.CalcoreError:  # deleted meanwhile (by its uploader, from another tab)
        memo.pop(file.digest, None)
        st.warning("The kept copy was deleted from the server; untick and tick to keep it again.")
        return None
    _kept_caption(kept)
    st.caption(
        f"Delete code: {esc(code)}. Only this session shows it: keep it to delete the file later "
        "from the link (the link alone reopens the file, it cannot delete it)."
    )

    def delete() -> None:  # a callback: it runs before the rerun, when the box may change
        if not _deleted(workspace, kept_id, code):
            return
        memo.pop(file.digest, None)
        st.session_state[KEY_KEEP] = False
        st.session_state[KEY_DELETED] = kept.name

    st.button("Delete from the server", key=KEY_DELETE_KEPT, on_click=delete)
    return kept_id


def _deleted(workspace: Workspace, kept_id: str, code: str) -> bool:
    """Delete ``kept_id`` with its delete code (in a button's callback); False, with the
    reason kept for the next run to show, when the code is wrong or the server could not."""
    try:
        workspace.delete_with_code(kept_id, code)
    except calcore.CalcoreError as err:
        st.session_state[KEY_DELETE_FAILED] = str(err)
        return False
    return True


def _kept_caption(kept) -> None:
    """The share text, with the "Copy link" button beside it."""
    expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(kept.expires))
    text, button = st.columns([5, 2], vertical_alignment="center", gap="small")
    text.caption(
        f"Kept on the server as {esc(kept.name)} until {expires}; the page's link reopens it."
    )
    with button:
        copy_link_button()


def _kept_upload(workspace: Workspace, kept_id: str) -> Source:
    """The file a link's workspace id names (read from the server), with a delete button."""
    try:
        kept, data = workspace.open(kept_id)
    except calcore.CalcoreError as err:
        return Source(error=str(err))
    _kept_caption(kept)

    def delete() -> None:
        if not _deleted(workspace, kept.id, st.session_state.get(KEY_DELETE_CODE, "")):
            return
        st.session_state[KEY_KEPT_LINK] = None
        st.session_state[KEY_DELETED] = kept.name

    # A link reopens the file for anyone; deleting it takes the code its uploader got.
    with st.expander("Delete from the server"):
        st.text_input(
            "Delete code", key=KEY_DELETE_CODE, type="password",
            help="Shown to the person who kept the file, under the upload.",
        )  # fmt: skip
        st.button("Delete with this code", key=KEY_DELETE_KEPT, on_click=delete)
    file = FileBytes(kept.name, data, True, kept.digest)
    return Source(file=file, upload_name=kept.name, kept=kept.id)


def _server_dataset(data_dir: DataDirectory) -> Source:
    """The dataset chosen in the list (or named by the link, resolved inside the directory)."""
    listed = {d.name: d for d in data_dir.datasets()}
    wanted = _initial(KEY_DATASET, None)
    linked_error = None
    if wanted is not None and wanted not in listed:
        try:  # a link may name a dataset below the top level
            found = data_dir.resolve(wanted)
            listed = {found.name: found, **listed}
        except calcore.CalcoreError as err:
            linked_error = str(err)
    if not listed:
        st.info("The server's data directory holds no Parquet, CSV or NPZ dataset.")
        return Source(error=linked_error)
    names = list(listed)
    # a link naming no dataset of the server opens none: another dataset's numbers under
    # that link would be taken for the ones it was made to show
    index = names.index(wanted) if wanted in listed else None if linked_error else 0
    name = st.selectbox(
        "Dataset on the server",
        names,
        index=index,
        format_func=lambda n: listed[n].describe(),
        key=KEY_DATASET,
        placeholder="Choose a dataset",
        help="Files and folders of the server's data directory (CALCORE_DATA_DIR), streamed: "
        "never loaded whole.",
    )
    if name is None:
        return Source(error=linked_error)
    try:
        dataset = data_dir.resolve(name)  # again: the files may have changed since listing
    except calcore.CalcoreError as err:
        return Source(error=str(err))
    return Source(dataset=dataset, error=linked_error)


def sidebar_settings(
    *,
    sample: str | None,
    upload_name: str | None,
    has_split_column: bool,
    n_classes: int,
    dataset: str | None = None,
    kept: str | None = None,
    calibration=None,
) -> Settings:
    """The sidebar's sections below the data source, read as one :class:`Settings`.

    ``calibration``: the file's calibration rows (or all of them), whose shape sets the
    calibrators recommended (and preselected when the link names none).

    Each section sits in a keyed container, so a section whose content changes (split
    mode, chosen methods) leaves the other sections' elements where they were.
    """
    with st.sidebar:
        with st.container(key="section.split"):
            mode, fraction, seed = split_controls(has_split_column, second_file=dataset is None)
        with st.container(key="section.methods"):
            shape = data_shape(calibration, n_classes, mode, fraction)
            methods = method_controls(n_classes, shape)
        with st.container(key="section.binning"):
            binning, bins, n_resamples = evaluation_controls()
    return Settings(
        sample=sample,
        upload_name=upload_name,
        dataset=dataset,
        kept=kept,
        methods=methods,
        binning=binning,
        bins=bins,
        view=st.session_state.get(KEY_VIEW, "metrics"),
        split_mode=mode,
        test_fraction=fraction,
        split_seed=seed,
        n_resamples=n_resamples,
        by=tuple(slicing_choice()["by"]),
        rank_by=slicing_choice()["rank"],
        per_slice_fit=bool(slicing_choice().get("per_slice")),
    )


def second_file() -> FileBytes | None:
    """The test-set file uploaded in the "second-file" split mode, if any."""
    up = st.session_state.get(KEY_TEST_UPLOAD)
    return None if up is None else uploaded(up)


def split_controls(
    has_split_column: bool | None, *, second_file: bool = True
) -> tuple[str, float, int]:
    st.header("Calibration vs evaluation data")
    modes = list(SPLIT_MODES)
    if has_split_column is False:
        modes.remove("column")  # nothing to split on; changed options reset the choice
    if not second_file:
        modes.remove("second-file")  # a server dataset is not paired with an upload
    default = "column" if "column" in modes else "random"
    mode = st.selectbox(
        "Fit calibrators on",
        modes,
        index=_index(modes, KEY_SPLIT, default),
        format_func=SPLIT_MODES.get,
        key=KEY_SPLIT,
    )
    fraction, seed = 0.5, 0
    if mode == "random":
        fraction = st.slider(
            "Test fraction", 0.05, 0.95, value=_initial(KEY_FRACTION, 0.5), step=0.05,
            key=KEY_FRACTION,
        )  # fmt: skip
        seed = int(
            st.number_input(
                "Split seed", min_value=0, value=_initial(KEY_SEED, 0), step=1, key=KEY_SEED
            )
        )
    elif mode == "second-file":
        st.file_uploader("Test predictions", type=UPLOAD_TYPES, key=KEY_TEST_UPLOAD)
    return mode, float(fraction), seed


def method_controls(
    n_classes: int | None, shape: DataShape | None = None
) -> tuple[MethodChoice, ...]:
    """The calibrator picker: every method that applies, by full name, grouped by family;
    the set recommended for ``shape`` preselected when the link named none; a guide."""
    st.header("Calibrators")
    options = sorted(available_methods(n_classes), key=_family_order)
    advice = recommended(shape)
    linked = _initial(KEY_METHODS, list(DEFAULT_METHODS))
    if linked is None:  # the link names no calibrator: the recommended set
        linked = list(advice.methods) if advice is not None else list(DEFAULT_METHODS)
    first = [m for m in linked if m in options]
    if KEY_METHODS not in st.session_state:  # the first run: say what a link asked for in vain
        reasons = [not_offered_because(m, n_classes) for m in linked if m not in options]
        if reasons:
            st.warning("Not fitted: " + esc("; ".join(reasons)) + ".")
    names = st.multiselect(
        "Fitted on the calibration rows",
        options,
        default=first,
        format_func=_method_label,
        key=KEY_METHODS,
        max_selections=MAX_METHODS,
        placeholder="Type a name: scaling, isotonic, binning, tl-hb…",
        help="Each is compared with the uncalibrated predictions on the test rows. Listed by "
        "family (parametric scaling, binning, isotonic, ...); the guide below says when to "
        "use which.",
    )
    _recommendation(advice, shape, names, options)
    _guide(options, advice)
    choices = []
    for name in names:
        info = calcore.CALIBRATORS[name]
        # a keyed container per method, so its widgets keep their identity when another
        # method is added or removed above them
        with st.container(key=f"params.{name}"):
            if info.parameters:
                with st.expander(f"{name} parameters"):
                    params = {p.name: _param_widget(name, p) for p in info.parameters}
            else:
                params = {}
            if info.slow:
                st.caption(f"⏳ {esc(name)} is slow on large data; it runs once and is cached.")
        choices.append(method_choice(name, params))
    return tuple(choices)


def _recommendation(advice, shape: DataShape | None, names, options) -> None:
    """The recommended set in words, with a button to pick it when another is chosen."""
    if advice is None:
        return
    wanted = [m for m in advice.methods if m in options]
    st.caption(
        f"Recommended for {esc(shape.describe())}: "
        + "; ".join(f"{esc(_method_label(m))}: {esc(advice.reasons[m])}" for m in wanted)
        + "."
    )
    if list(names) != wanted:

        def pick() -> None:
            st.session_state[KEY_METHODS] = list(wanted)

        st.button("Use the recommended set", key=KEY_RECOMMENDED, on_click=pick)


#: The wrappers that make any binary method multiclass, in the guide's order.
_WRAPPER_PREFIXES = ("conf", "tl", "tkc", "tkl", "cw", "n")


def _cell(text: str) -> str:
    """Text for a Markdown table cell: escaped, and no column bar."""
    return esc(text).replace("\\|", "/")


def _guide(options, advice) -> None:
    """Which calibrator when: a table per family of its methods' short and full names and
    one-line use (★: recommended for this data); a binary method offered only with a
    prefix (for more classes) is one row with its prefixed names. In a popover, which
    is wider than the sidebar."""
    chosen = set(advice.methods) if advice is not None else set()
    infos = {m: calcore.CALIBRATORS[m] for m in options}
    with st.popover("Which calibrator? A guide", width="stretch"):
        for family, (title, what) in calcore.CALIBRATOR_FAMILIES.items():
            rows = []
            for m, info in infos.items():
                if info.family == family and info.binary_method in (None, m):
                    star = " ★" if m in chosen else ""
                    names = " = ".join((m, *info.aliases))
                    rows.append(
                        f"| {_cell(names)}{star} | {_cell(info.title)} | {_cell(info.use)} |"
                    )
            wrapped: dict[str, list[str]] = {}
            for m, info in infos.items():
                if info.family == family and info.binary_method not in (None, m):
                    wrapped.setdefault(info.binary_method, []).append(m)
            for binary, names in wrapped.items():
                base = calcore.CALIBRATORS[binary]
                shown = ", ".join(f"{n} ★" if n in chosen else n for n in names)
                rows.append(
                    f"| {_cell(shown)} | {_cell(base.title)} with a prefix | {_cell(base.use)} |"
                )
            if rows:
                st.markdown(
                    "\n".join(
                        [f"**{esc(title)}**: {esc(what)}.", "", "| name | method | when |",
                         "|---|---|---|", *rows]
                    )
                )  # fmt: skip
        prefixes = []
        for prefix in _WRAPPER_PREFIXES:
            example = next((m for m in infos if m.startswith(prefix + "-")), None)
            if example is not None and infos[example].binary_method not in (None, example):
                use = infos[example].use.split(". Each map:")[0]
                prefixes.append(f"| {esc(prefix)}- | {_cell(use)} |")
        if prefixes:
            st.markdown(
                "\n".join(
                    ["**Prefixes** make a binary method work on more classes:", "",
                     "| prefix | what it does |", "|---|---|", *prefixes]
                )
            )  # fmt: skip
        if chosen:
            st.caption("★ recommended for this data (see under the menu).")


def evaluation_controls() -> tuple[str, int, int]:
    st.header("Evaluation binning")
    binning = st.selectbox(
        "Scheme",
        list(BINNING_CHOICES),
        index=_index(BINNING_CHOICES, KEY_BINNING, "equal-width"),
        format_func=BINNING_CHOICES.get,
        key=KEY_BINNING,
        help="Applied to every view. Data-dependent rules choose the number of equal-mass bins "
        "from n (Sturges: ceil(log2 n) + 1; cube-root: ceil(n^(1/3))).",
    )
    if binning in ("sturges", "cube-root"):
        bins = int(st.session_state.get(KEY_BINS, _initial(KEY_BINS, 15)))
    else:
        label = "Points per bin" if binning == "points-per-bin" else "Bins"
        bins = int(
            st.number_input(
                label,
                min_value=BINS_RANGE[0],
                max_value=BINS_RANGE[1],
                value=_initial(KEY_BINS, 15),
                step=1,
                key=KEY_BINS,
            )  # fmt: skip
        )
    boot = st.selectbox(
        "Bootstrap resamples (intervals)",
        BOOTSTRAP_CHOICES,
        index=_index(BOOTSTRAP_CHOICES, KEY_BOOTSTRAP, 200),
        key=KEY_BOOTSTRAP,
        help=interval_words() + " 0 shows point estimates only.",
    )
    return binning, bins, int(boot)


#: Views that apply to some class counts only (the others are not offered).
VIEW_CLASSES = {"simplex": 3}


def offered_views(n_classes: int) -> list[str]:
    """The views that apply to ``n_classes`` (the simplex only to 3), in page order."""
    return [v for v in VIEWS if VIEW_CLASSES.get(v, n_classes) == n_classes]


def view_control(n_classes: int = 0) -> str:
    """The view selector, offering only the views that apply; a binary model's reliability
    view is named for its one probability (P(class 1)), not for the confidence."""
    labels = dict(VIEWS)
    if n_classes == 2:
        labels["confidence"] = "Reliability (positive class)"
    options = offered_views(n_classes)
    chosen = st.session_state.get(KEY_VIEW, _initial(KEY_VIEW, "metrics"))
    if chosen not in options:  # a link or the last file chose a view this data lacks
        st.session_state[KEY_VIEW] = "metrics"
        st.info(
            f"The {VIEWS[chosen]} view needs {VIEW_CLASSES[chosen]} classes; this data has "
            f"{n_classes}, so the Metrics view is shown."
        )
    return st.radio(
        "View", options, index=_index(options, KEY_VIEW, "metrics"), format_func=labels.get,
        horizontal=True, key=KEY_VIEW,
        label_visibility="collapsed",
    )  # fmt: skip


def grouping_key(column: str) -> str:
    return f"view.slices.grouping.{column}"


#: How a column of each kind can be grouped in the Slices view (first: the default), as
#: the suffix of a calcore slice specification ("" = value by value).
GROUPINGS = {
    "integer": ("", "q4", "q10"),
    "numeric": ("q4", "q10", ""),
    "datetime": ("", "day", "week", "month"),
}
_GROUPING_LABELS = {
    "": "each value",
    "q4": "4 quantile ranges",
    "q10": "10 quantile ranges",
    "day": "by day",
    "week": "by week",
    "month": "by month",
}


def _exact_ranges(col) -> bool:
    """Whether calcore cuts quantile ranges of this integer column (values within 2**53)."""
    try:
        check_exact_ranges(col.name, col.values)
    except calcore.CalcoreError:
        return False
    return True


def _grouping_label(grouping: str) -> str:
    return _GROUPING_LABELS.get(grouping) or f"{grouping[1:]} quantile ranges"


def _linked_grouping(column: str, wanted: str, options: list, auto: str):
    """A link's grouping that the menu does not list: another count of quantile ranges
    calcore takes is added to the menu; anything else is refused with what is allowed
    (``by=age:q0`` used to become 4 quantile ranges without a word). Returns the options
    and the warning (None when the grouping was added)."""
    first = _grouping_label(options[0]) if options[0] else auto
    if wanted.startswith("q") and "q4" in options:
        try:
            quantile_count(column, wanted)
        except calcore.CalcoreError as exc:
            return options, esc(f"Ignored in the link: {exc} Showing {first}.")
        return options + [wanted], None
    allowed = ", ".join(_grouping_label(g) if g else auto for g in options)
    return options, esc(
        f"Ignored in the link: column {column!r} is not grouped by {wanted!r} here; "
        f"choose {allowed}. Showing {first}."
    )


def slice_controls(metadata: dict, n_classes: int) -> tuple[tuple[str, ...], str]:
    """The Slices view's choices: slice specifications (``"age:q4"``) and the ranking metric
    (the metrics that apply to ``n_classes``: the ECE of class 1 only for two).

    Columns are offered when calcore can slice them (``MetadataColumn.sliceable``); a
    numeric column starts in quartiles, an integer column with more than 12 values too,
    a datetime column in the period calcore picks for its span (day, week or month).
    """
    offered = [name for name, col in metadata.items() if col.sliceable]
    choice = slicing_choice()
    first = [parse_slice_spec(t) for t in choice["by"]]
    first_grouping = {spec.column: spec.grouping or "" for spec in first}
    unknown = [spec.column for spec in first if spec.column not in offered]
    if unknown:
        st.warning(
            "Not a column of this file that can be sliced by: "
            + ", ".join(esc(repr(c)) for c in unknown)
            + ". Choose among the columns below."
        )
    left, right = st.columns([3, 1])
    columns = left.multiselect(
        "Slice the test rows by",
        offered,
        default=[spec.column for spec in first if spec.column in offered],
        max_selections=MAX_SLICE_COLUMNS,
        key=KEY_SLICE_COLUMNS,
        help="One or two metadata columns of the file (two give crossed slices).",
    )
    ranks = [k for k in RANK_CHOICES if n_classes == 2 or not calcore.METRICS[k].binary_only]
    rank = right.selectbox(
        "Rank by",
        ranks,
        index=ranks.index(
            choice["rank"] if choice["rank"] in ranks else default_primary(n_classes)
        ),
        format_func=RANK_CHOICES.get,
        key=KEY_SLICE_RANK,
    )
    specs = []
    cells = st.columns(max(len(columns), 1))
    for cell, name in zip(cells, columns, strict=False):
        col = metadata[name]
        options = list(GROUPINGS.get(col.kind, ("",)))
        if len(options) == 1:
            specs.append(name)
            continue
        if col.kind == "integer" and col.n_distinct > 12:
            # quantile ranges of hashed ids beyond 2**53 cannot be cut exactly (refused)
            options = ["q4", "q10", ""] if _exact_ranges(col) else [""]
        wanted = first_grouping.get(name, options[0])
        auto = "automatic period" if col.kind == "datetime" else _GROUPING_LABELS[""]
        if wanted not in options:
            options, refused = _linked_grouping(name, wanted, options, auto)
            if refused:
                cell.warning(refused)
        grouping = cell.selectbox(
            f"Group {esc(name)}",
            options,
            index=options.index(wanted) if wanted in options else 0,
            format_func=lambda g, auto=auto: _grouping_label(g) if g else auto,
            key=grouping_key(name),
        )
        specs.append(f"{name}:{grouping}" if grouping else name)
    # the data's default stays "" (no rank= in the link), so that a link keeps meaning
    # "the default" when it opens other data
    choice.update(by=tuple(specs), rank="" if rank == default_primary(n_classes) else rank)
    return tuple(specs), rank

"""The sidebar: data source, calibration/test split, calibrators with their parameters,
evaluation binning, bootstrap and theme. Widgets are built from ``calcore.CALIBRATORS``.

Widget keys are constants (``KEY_*``) so that tests and the query-string restore address
widgets by key. The sidebar returns plain values; nothing here touches calcore results.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import streamlit as st

import calcore
from dashboard.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.state import (
    BINNING_CHOICES,
    SPLIT_MODES,
    THEMES,
    VIEWS,
    MethodChoice,
    Settings,
    method_choice,
)
from dashboard.text import escape_markdown as esc

KEY_SOURCE = "sidebar.source"
KEY_SAMPLE = "sidebar.sample"
KEY_UPLOAD = "sidebar.upload"
KEY_SPLIT = "sidebar.split"
KEY_FRACTION = "sidebar.fraction"
KEY_SEED = "sidebar.seed"
KEY_TEST_UPLOAD = "sidebar.test_upload"
KEY_METHODS = "sidebar.methods"
KEY_BINNING = "sidebar.binning"
KEY_BINS = "sidebar.bins"
KEY_BOOTSTRAP = "sidebar.bootstrap"
KEY_THEME = "sidebar.theme"
KEY_VIEW = "main.view"
KEY_INITIAL = "app.initial_values"  # not a widget: first values of numeric widgets

UPLOAD_TYPES = ["csv", "tsv", "txt", "parquet", "pq", "npz"]
BOOTSTRAP_CHOICES = (0, 50, 200, 1000)
SOURCE_SAMPLE, SOURCE_UPLOAD = "sample", "upload"


def param_key(method: str, param: str) -> str:
    return f"param.{method}.{param}"


@dataclass(frozen=True)
class FileBytes:
    """An uploaded or bundled file; the SHA-256 of its bytes is every cache key."""

    name: str  # untrusted when uploaded
    data: bytes
    is_upload: bool

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class SidebarResult:
    settings: Settings
    file: FileBytes | None  # None: the URL names an upload that is not there yet
    test_file: FileBytes | None


def restore(settings: Settings) -> None:
    """Put URL settings into the widgets' session state (first run of a session only)."""
    ss = st.session_state
    ss[KEY_SOURCE] = SOURCE_UPLOAD if settings.sample is None else SOURCE_SAMPLE
    if settings.sample is not None:
        ss[KEY_SAMPLE] = settings.sample
    ss[KEY_SPLIT] = settings.split_mode
    ss[KEY_METHODS] = [m.name for m in settings.methods]
    # Numeric inputs and sliders get their first value through ``value=`` (see _initial):
    # a value given only through session state was lost in the browser when the widget
    # was re-sent (the Bins input fell back to its minimum after a method was added).
    initial = {KEY_FRACTION: settings.test_fraction, KEY_SEED: settings.split_seed}
    initial[KEY_BINS] = settings.bins
    for m in settings.methods:
        for name, value in m.params:
            initial[param_key(m.name, name)] = value
    ss[KEY_INITIAL] = initial
    ss[KEY_BINNING] = settings.binning
    ss[KEY_BOOTSTRAP] = settings.n_bootstrap
    ss[KEY_THEME] = settings.theme
    ss[KEY_VIEW] = settings.view


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
    out = []
    for name, info in calcore.CALIBRATORS.items():
        if n_classes is not None and n_classes > 2 and info.binary_only:
            continue
        if n_classes is not None and n_classes > 6 and info.family == "canonical":
            continue
        out.append(name)
    return out


def _method_label(name: str) -> str:
    info = calcore.CALIBRATORS[name]
    return f"{name} · {info.description}"


def data_source() -> tuple[FileBytes | None, str | None, str | None]:
    """Sample or upload. Returns the file, the sample key and a shared link's upload name."""
    st.header("Data")
    source = st.radio(
        "Source",
        [SOURCE_SAMPLE, SOURCE_UPLOAD],
        format_func={SOURCE_SAMPLE: "bundled sample", SOURCE_UPLOAD: "upload a file"}.get,
        horizontal=True,
        key=KEY_SOURCE,
    )
    if source == SOURCE_SAMPLE:
        if st.session_state.get(KEY_SAMPLE) not in SAMPLES:
            st.session_state[KEY_SAMPLE] = DEFAULT_SAMPLE
        key = st.selectbox(
            "Sample", list(SAMPLES), format_func=lambda k: SAMPLES[k].title, key=KEY_SAMPLE
        )
        st.caption(SAMPLES[key].description)
        sample = SAMPLES[key]
        return FileBytes(sample.filename, sample.read_bytes(), False), key, None
    upload = st.file_uploader(
        "Predictions (CSV, Parquet or NPZ)",
        type=UPLOAD_TYPES,
        key=KEY_UPLOAD,
        help="One row per example: a label column plus one probability (or logit) column per "
        "class, e.g. label,p_cat,p_dog; optionally a split column with values calib/test.",
    )
    if upload is None:
        return None, None, None
    return FileBytes(upload.name, upload.getvalue(), True), None, upload.name


def split_controls(has_split_column: bool | None) -> tuple[str, float, int, FileBytes | None]:
    st.header("Calibration vs evaluation data")
    modes = list(SPLIT_MODES)
    if has_split_column is False and st.session_state.get(KEY_SPLIT, "column") == "column":
        st.session_state[KEY_SPLIT] = "random"  # nothing to split on: a seeded random split
    mode = st.selectbox("Fit calibrators on", modes, format_func=SPLIT_MODES.get, key=KEY_SPLIT)
    fraction, seed, test_file = 0.5, 0, None
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
        up = st.file_uploader("Test predictions", type=UPLOAD_TYPES, key=KEY_TEST_UPLOAD)
        if up is not None:
            test_file = FileBytes(up.name, up.getvalue(), True)
    return mode, float(fraction), seed, test_file


def method_controls(n_classes: int | None) -> tuple[MethodChoice, ...]:
    st.header("Calibrators")
    options = available_methods(n_classes)
    chosen = [m for m in st.session_state.get(KEY_METHODS, []) if m in options]
    st.session_state[KEY_METHODS] = chosen
    names = st.multiselect(
        "Fitted on the calibration rows",
        options,
        format_func=_method_label,
        key=KEY_METHODS,
        help="Each is compared with the uncalibrated predictions on the test rows. Binary-only "
        "methods appear for 2 classes; wrap them with conf-/tl-/cw-/n- for multiclass data.",
    )
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


def evaluation_controls() -> tuple[str, int, int]:
    st.header("Evaluation binning")
    st.session_state.setdefault(KEY_BINNING, "equal-width")
    st.session_state.setdefault(KEY_BOOTSTRAP, 200)
    binning = st.selectbox(
        "Scheme",
        list(BINNING_CHOICES),
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
                min_value=2,
                max_value=5000,
                value=_initial(KEY_BINS, 15),
                step=1,
                key=KEY_BINS,
            )  # fmt: skip
        )
    boot = st.selectbox(
        "Bootstrap resamples (intervals)",
        BOOTSTRAP_CHOICES,
        key=KEY_BOOTSTRAP,
        help="Percentile bootstrap over test rows; 0 shows point estimates only.",
    )
    return binning, bins, int(boot)


def theme_control() -> str:
    st.session_state.setdefault(KEY_THEME, "light")
    return st.radio("Figure theme", THEMES, horizontal=True, key=KEY_THEME)


def view_control() -> str:
    st.session_state.setdefault(KEY_VIEW, "metrics")
    return st.radio(
        "View", list(VIEWS), format_func=VIEWS.get, horizontal=True, key=KEY_VIEW,
        label_visibility="collapsed",
    )  # fmt: skip

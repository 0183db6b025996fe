"""What every view gets: the settings, the split, and each method's test predictions.

:func:`build_context` fits every chosen calibrator once (cached by data and parameters) with
a progress bar; a method that fails (e.g. too few rows per bin) is reported and left out,
and the others go on. ``outputs`` always starts with ``"uncalibrated"``, so colours and
orders agree across views.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

import calcore
from dashboard.calibration import compute
from dashboard.calibration.data import Split
from dashboard.calibration.state import MethodChoice, Settings
from dashboard.text import escape_markdown as esc
from dashboard.tuning import FIGURES_KEPT

__all__ = ["Context", "build_context"]

UNCALIBRATED = calcore.UNCALIBRATED


@dataclass
class Context:
    settings: Settings
    split: Split
    methods: dict[str, MethodChoice]  # label -> choice, fitted successfully
    fitted: dict[str, compute.Fitted]  # label -> fit
    outputs: dict[str, calcore.Predictions]  # "uncalibrated" first, then each method
    keys: dict[str, str]  # label -> cache key of its test predictions
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def test(self) -> calcore.Predictions:
        return self.split.test

    @property
    def labels(self) -> list[str]:
        return list(self.outputs)

    def per_method(self, fn, *args) -> dict:
        """``fn(key, name, params, *args, calib, test)`` for every fitted method, in order.

        For diagnostics that refit a method themselves (validity, learning curves). A
        method that refuses (e.g. on a subset) is left out with a warning naming it.
        """
        split = self.split
        out = {}
        for label, c in self.methods.items():
            try:
                out[label] = fn(self.keys[label], c.name, c.params, *args, split.calib, split.test)
            except calcore.CalcoreError as err:
                # a method may refuse some subsets; the other methods' curves still show
                st.warning(f"{esc(label)} is left out of this view: {esc(err)}")
        return out

    def figure(self, name: str, build, *options):
        """``build()``, cached per (``name``, the outputs, binning, bins, ``options``).

        ``options`` must hold everything else the figure depends on (toggles, chosen
        classes, ...). Cached figures are shared between reruns and sessions: Streamlit's
        ``plotly_chart`` serialises a copy and never changes the figure.
        """
        s = self.settings
        outputs = tuple(self.keys[label] for label in self.outputs)
        key = repr((name, outputs, s.binning, s.bins, options))
        return _cached_figure(key, build)

    def per_output(self, fn, *args) -> dict:
        """``fn(key, *args, preds)`` for every output, in order (fn is a cached compute call)."""
        return {label: fn(self.keys[label], *args, preds) for label, preds in self.outputs.items()}


@st.cache_resource(show_spinner=False, max_entries=FIGURES_KEPT, ttl=compute.CACHE_TTL_S)
def _cached_figure(key: str, _build):
    return _build()


def build_context(settings: Settings, split: Split) -> Context:
    base_key = f"{split.key}|{UNCALIBRATED}"
    outputs = {UNCALIBRATED: split.test}
    keys = {UNCALIBRATED: base_key}
    methods, fitted, errors = {}, {}, {}
    chosen = settings.methods if split.calib is not None else ()
    progress = st.progress(0.0, text="Fitting calibrators…") if chosen else None
    for i, choice in enumerate(chosen):
        label = choice.label
        if progress is not None:
            progress.progress(i / len(chosen), text=f"Fitting {label} ({i + 1}/{len(chosen)})…")
        key = f"{split.key}|{choice.key}"
        try:
            fit = compute.fit(key, choice.name, choice.params, split.calib, split.test)
        except calcore.CalcoreError as err:
            errors[label] = str(err)
            continue
        methods[label], fitted[label] = choice, fit
        outputs[label], keys[label] = _with_test_metadata(fit.output, split.test), key
    if progress is not None:
        progress.empty()
    for label, message in errors.items():
        st.error(f"{esc(label)} could not be fitted: {esc(message)}")
    return Context(settings, split, methods, fitted, outputs, keys, errors)


def _with_test_metadata(output: calcore.Predictions, test: calcore.Predictions):
    """A calibrator's output with the test rows' metadata columns.

    A server dataset's samples get their slice columns only when a page first needs them,
    after the calibrators may have been fitted and cached under the same key; the output
    holds the test rows in their order (``transform(test)``), so it takes their columns
    rather than being fitted again.
    """
    if test.metadata and not output.metadata:
        return output.with_metadata(test.metadata)
    return output

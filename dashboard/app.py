"""calibration-lens: a first, minimal dashboard over calcore.

Run: ``make run`` or ``streamlit run dashboard/app.py``. Pick a bundled sample or upload
predictions (CSV, Parquet, NPZ); the app evaluates the test split (all rows when the file
has no split) with :func:`calcore.evaluate` and draws :func:`calcore.reliability_diagram`.
Every number shown comes from calcore; the only errors caught are ``calcore.CalcoreError``
(bad user input), so genuine bugs still surface.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import calcore
from dashboard.data import analyse, load
from dashboard.figures import reliability_figure
from dashboard.samples import DEFAULT_SAMPLE, SAMPLES
from dashboard.text import escape_markdown as esc

# Widget keys: namespaced constants, so tests address widgets by key.
KEY_SAMPLE = "sidebar.sample"
KEY_UPLOAD = "sidebar.upload"
KEY_BINS = "sidebar.bins"

UPLOAD_TYPES = ["csv", "parquet", "pq", "npz"]


@dataclass(frozen=True)
class Settings:
    """Everything the sidebar decides."""

    source_name: str  # file name, shown to the user (untrusted when uploaded)
    data: bytes
    is_upload: bool
    bins: int

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the file, the cache key; computed once per rerun (1 s per GB)."""
        return hashlib.sha256(self.data).hexdigest()


def sidebar() -> Settings:
    with st.sidebar:
        st.header("Data")
        key = st.selectbox(
            "Bundled sample",
            options=list(SAMPLES),
            index=list(SAMPLES).index(DEFAULT_SAMPLE),
            format_func=lambda k: SAMPLES[k].title,
            key=KEY_SAMPLE,
        )
        upload = st.file_uploader(
            "…or upload predictions (CSV, Parquet, NPZ)",
            type=UPLOAD_TYPES,
            key=KEY_UPLOAD,
            help="One row per example: a label column plus one probability (or logit) column "
            "per class; an optional split column with values calib/test.",
        )
        if upload is not None:
            st.caption("Showing the uploaded file. Remove it to go back to the samples.")
        else:
            st.caption(SAMPLES[key].description)
        st.header("Binning")
        bins = st.slider("Equal-width bins", min_value=5, max_value=50, value=15, key=KEY_BINS)
    if upload is not None:
        return Settings(upload.name, upload.getvalue(), True, int(bins))
    sample = SAMPLES[key]
    return Settings(sample.filename, sample.read_bytes(), False, int(bins))


def metrics_table(metrics: dict[str, Any]) -> pd.DataFrame:
    """One row per metric of calcore's registry that the report holds (None: not computed)."""
    rows = [
        {
            "metric": spec.label,
            "value": np.nan if metrics[key] is None else float(metrics[key]),
            "better": "higher" if spec.higher_is_better else "lower",
            "what it measures": spec.description,
            "key": key,
        }
        for key, spec in calcore.METRICS.items()
        if key in metrics
    ]
    return pd.DataFrame(rows, columns=["metric", "value", "better", "what it measures", "key"])


def show_messages(warns, notes=(), *, notes_title: str | None = None) -> None:
    """calcore's warnings as warnings; notes as info, inside an expander if titled."""
    for msg in warns:
        st.warning(esc(msg))
    if notes and notes_title:
        with st.expander(f"{notes_title} ({len(notes)})"):
            st.info("\n".join(f"- {esc(msg)}" for msg in notes))
    else:
        for msg in notes:
            st.info(esc(msg))


def main() -> None:
    st.set_page_config(page_title="calibration-lens", layout="wide")
    settings = sidebar()
    st.title("calibration-lens")
    origin = "uploaded file" if settings.is_upload else "bundled sample"
    st.caption(f"{origin}: {esc(settings.source_name)}")

    try:
        loaded = load(settings.data, settings.digest, settings.source_name)
    except calcore.CalcoreError as err:
        st.error(f"Could not load the predictions. {esc(err)}")
        st.stop()
    show_messages(loaded.warnings, loaded.notes, notes_title="What the loader detected")

    try:
        result = analyse(loaded.preds, f"{settings.digest}:{loaded.split_label}", settings.bins)
    except calcore.CalcoreError as err:
        st.error(f"Could not evaluate the predictions. {esc(err)}")
        st.stop()
    show_messages(result.warnings, tuple(result.metrics.get("notes", ())))

    m = result.metrics
    st.subheader(f"Evaluated on {loaded.split_label}")
    summary = f"{m['n']:,} rows, {m['n_classes']} classes, {m['bins']} {esc(m['binning'])} bins."
    if set(loaded.split_sizes) != {"all"}:
        sizes = ", ".join(f"{esc(k)} {v:,}" for k, v in loaded.split_sizes.items())
        summary += f" Rows per split: {sizes}; calib rows are kept for fitting calibrators."
    st.caption(summary)
    cols = st.columns(4)
    cols[0].metric("accuracy", f"{m['accuracy']:.4f}")
    cols[1].metric("top-label ECE", f"{m['top_label_ece']:.4f}")
    cols[2].metric("confidence ECE", f"{m['conf_ece']:.4f}")
    cols[3].metric("NLL", f"{m['nll']:.4f}")

    left, right = st.columns([3, 2])
    with left:
        st.subheader("Reliability diagram (confidence)")
        st.plotly_chart(reliability_figure(result.diagram), theme=None, key="figure.reliability")
        st.caption(
            "What am I looking at: rows are grouped into equal-width bins of their confidence "
            "(the top predicted probability). Each point is a bin's mean confidence against the "
            "fraction of its rows that were right, with a Wilson interval. On the dashed "
            "diagonal the model is calibrated; points below it mean over-confidence, above it "
            "under-confidence. The bars below count the rows in each bin: points over few rows "
            "are noisy."
        )
    with right:
        st.subheader("Metrics")
        table = metrics_table(m)
        st.dataframe(
            table,
            hide_index=True,
            height=36 * (len(table) + 1) + 3,  # every row visible, no inner scrolling
            column_config={
                "value": st.column_config.NumberColumn(format="%.4f"),
                "key": None,  # kept for tests, hidden in the UI
            },
            key="table.metrics",
        )
        st.caption(
            "What am I looking at: calibration errors (ECE, MCE) are 0 for a perfectly "
            "calibrated model and grow with the gap between predicted probability and observed "
            "frequency; NLL and Brier score reward both calibration and sharpness. All values "
            "are computed by calcore on the rows above."
        )
        st.subheader("Classes")
        preds = loaded.preds
        st.dataframe(
            pd.DataFrame({"class": list(preds.class_names), "rows": preds.class_counts}),
            hide_index=True,
            key="table.classes",
        )


main()

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
from typing import Any

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

METRIC_INFO = {
    "accuracy": ("accuracy", "fraction of rows whose top class is the label"),
    "nll": ("NLL", "mean negative log-likelihood of the label (lower is better)"),
    "brier": ("Brier score", "mean squared error of the probability vector (lower is better)"),
    "conf_ece": ("confidence ECE", "binned |accuracy - confidence|, weighted by bin size"),
    "conf_mce": ("confidence MCE", "largest binned |accuracy - confidence|"),
    "top_label_ece": ("top-label ECE", "as confidence ECE, binned within each predicted class"),
    "top_label_mce": ("top-label MCE", "largest top-label bin gap"),
    "classwise_ece": ("class-wise ECE", "mean over classes of the binned ECE of p_class"),
    "kde_ece": ("KDE ECE", "confidence calibration error with a kernel smoother, no bins"),
    "kde_ece_classwise": ("KDE ECE (class-wise)", "class-wise calibration error, kernel smoother"),
}
NOT_METRICS = {"n", "n_classes", "bins", "binning"}


@dataclass(frozen=True)
class Settings:
    """Everything the sidebar decides."""

    source_name: str  # file name, shown to the user (untrusted when uploaded)
    data: bytes
    is_upload: bool
    bins: int

    @property
    def digest(self) -> str:
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
    rows = []
    for key, value in metrics.items():
        if key in NOT_METRICS or isinstance(value, str):
            continue
        label, meaning = METRIC_INFO.get(key, (key, ""))
        rows.append(
            {"metric": label, "value": float(value), "what it measures": meaning, "key": key}
        )
    return pd.DataFrame(rows, columns=["metric", "value", "what it measures", "key"])


def show_messages(notes, warns) -> None:
    for msg in notes:
        st.info(esc(msg))
    for msg in warns:
        st.warning(esc(msg))


def main() -> None:
    st.set_page_config(page_title="calibration-lens", layout="wide")
    settings = sidebar()
    st.title("calibration-lens")
    origin = "uploaded file" if settings.is_upload else "bundled sample"
    st.caption(f"{origin}: {esc(settings.source_name)}")

    try:
        loaded = load(settings.data, settings.digest, settings.source_name)
    except calcore.CalcoreError as err:
        st.error(f"Could not load {esc(settings.source_name)}: {esc(err)}")
        st.stop()
    show_messages(loaded.notes, loaded.warnings)

    try:
        result = analyse(loaded.preds, f"{settings.digest}:{loaded.split_label}", settings.bins)
    except calcore.CalcoreError as err:
        st.error(f"Could not evaluate {esc(settings.source_name)}: {esc(err)}")
        st.stop()
    show_messages((), result.warnings)

    m = result.metrics
    sizes = ", ".join(f"{esc(k)}: {v:,}" for k, v in loaded.split_sizes.items())
    st.subheader(f"Evaluated on the {loaded.split_label}")
    st.caption(
        f"{m['n']:,} rows, {m['n_classes']} classes, {m['bins']} {esc(m['binning'])} bins. "
        f"Rows per split: {sizes}. The calib split is kept for fitting calibrators."
    )
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

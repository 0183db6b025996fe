"""The downloads under every view: the report, recalibrated predictions, fitted calibrators.

Payloads are built only when a button is clicked (Streamlit calls the function then), so
an unused 5 MB report costs nothing on a rerun.
"""

from __future__ import annotations

import streamlit as st

from dashboard.calibration import controls
from dashboard.calibration.exports import calibrator_json, predictions_csv, safe_filename
from dashboard.calibration.report import report_html

KEY_METHOD = "downloads.method"


def downloads(ctx, *, source: str) -> None:
    st.divider()
    st.subheader("Downloads")
    stem = safe_filename(source.rsplit(".", 1)[0])
    a, b, c = st.columns(3)
    slicing = controls.slicing_choice()  # updated in place by the Slices view
    a.download_button(
        "Report (offline HTML)",
        data=lambda: report_html(ctx, source=source, slicing=slicing),
        file_name=f"calibration_report_{stem}.html",
        mime="text/html",
        key="download.report",
        help="Settings, metrics table and every figure in one file; opens without a network.",
    )
    if not ctx.fitted:
        b.caption("Choose a calibrator to download recalibrated predictions and its JSON.")
        return
    method = b.selectbox("Method", list(ctx.fitted), key=KEY_METHOD)
    fit = ctx.fitted[method]
    name = safe_filename(method)
    b.download_button(
        "Recalibrated test predictions (CSV)",
        data=lambda: predictions_csv(fit.output),
        file_name=f"{stem}_{name}_test.csv",
        mime="text/csv",
        key="download.predictions",
    )
    c.download_button(
        "Fitted calibrator (JSON)",
        data=lambda: calibrator_json(fit.calibrator),
        file_name=f"{name}.json",
        mime="application/json",
        key="download.calibrator",
        help="Apply it later with: calcore apply calibrator.json FILE --out out.csv",
    )

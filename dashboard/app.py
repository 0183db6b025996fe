"""calibration-lens: can a classifier's probabilities be trusted, and which calibrator fixes them?

Run: ``make run`` (or ``streamlit run dashboard/app.py``). The page opens on a bundled
sample. This file only routes: the calibration page is :mod:`dashboard.calibration`, the
simulation lab :mod:`dashboard.lab`.
"""

from __future__ import annotations

import streamlit as st

from dashboard.calibration.memory import release_freed_memory, return_freed_arrays
from dashboard.calibration.page import render_calibration
from dashboard.calibration.server_datasets import ACTIVITY
from dashboard.guard import bugs_as_messages
from dashboard.lab.page import render_lab

return_freed_arrays()  # once per process would do; a mallopt call is cheap

try:
    with ACTIVITY.run():  # background reads wait for a quiet server
        st.navigation(
            [
                st.Page(bugs_as_messages(render_calibration), title="Calibration", default=True),
                st.Page(bugs_as_messages(render_lab), title="Simulation lab", url_path="lab"),
            ]
        ).run()
finally:  # also after a rerun or stop: what the run's parse, fits and estimates freed
    release_freed_memory()

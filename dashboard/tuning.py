"""Every constant of the dashboard chosen by measuring speed or memory, in one place.

Each says where it is used and the measurement that chose it (the machine is the 2-core
development machine). None of them changes a figure or a number the page shows: they
decide when work is done (in the background, after a click) and what is kept for
reuse. calcore's own constants of this kind are in :mod:`calcore.foundation.tuning`.

What is not here: constants that change what the page shows, even where speed chose
them, stay beside their code: the sample of rows the resampling views work on
(``dashboard.calibration.compute.RESAMPLING_MAX_ROWS``), the draws that find a simulated
problem's concentration (``dashboard.lab.compute.CONCENTRATION_SAMPLES``) and the lab's
integration settings (``TRUTH_SETTINGS``).

This module imports nothing (every part of the dashboard may read it).
"""

__all__ = [
    "PREFETCH_QUIET_S",
    "AUTO_BOOTSTRAP_CELLS",
    "AUTO_BOOTSTRAP_ROW_RESAMPLES",
    "AUTO_BOOTSTRAP_BIN_RESAMPLES",
    "FIGURES_KEPT",
]

# -- reading a streamed dataset (dashboard.calibration.server_datasets) -----------------

#: How long no script may have run before the slice columns are read in the background
#: (``prefetch_slice_columns``): the browsers have drawn the page by then (reading at once
#: delayed a bins change on the 100M-row demo from 1.0 to 2.0 s on 2 cores; after 1.5 s
#: quiet, 8 reviewers' browsers on the same 2 cores still drew: their bins change p50 went
#: from 4.4 to 10.9 s).
PREFETCH_QUIET_S = 3.0

# -- bootstrap intervals that wait for a click (dashboard.calibration.views.metrics) -----

#: Above this many test cells (rows x classes) bootstrap intervals wait for a click: on
#: 50,000 x 1,000 predictions 200 resamples take about two minutes and several GB.
AUTO_BOOTSTRAP_CELLS = 5_000_000
#: Above this many (test row, resample) pairs too: 1,000,000 binary test rows with 200
#: resamples took 49 s (benchmarks/bench_dashboard.py, 2M-row CSV), about 0.25 us a pair,
#: so the automatic intervals stay under ~3 s.
#: Counted once per evaluated method (the uncalibrated rows and each calibrator), so that a
#: link asking for 1,000 resamples of three methods on 10,000 rows waits for a click.
AUTO_BOOTSTRAP_ROW_RESAMPLES = 10_000_000
#: Above this many (bin cell, resample) pairs too, summed over the methods: every resample
#: keeps bins x classes cells per binned metric, so a link with ``bins=5000`` and 50
#: resamples on 10 classes took 6 s a method (10,000 CIFAR-10 test rows, equal-mass),
#: ``boot=1000&bins=5000&binning=equal-mass`` 101 s for the page.
AUTO_BOOTSTRAP_BIN_RESAMPLES = 3_000_000

# -- figures (dashboard.calibration.context) --------------------------------------------

#: Built figures kept per (figure, outputs, settings, options): revisiting a view or
#: changing an unrelated control reuses them instead of rebuilding (50-120 ms each).
FIGURES_KEPT = 128

"""calibration-lens dashboard: a Streamlit front end over :mod:`calcore`.

The dashboard never computes a metric itself. ``app.py`` routes the two pages:
:mod:`dashboard.calibration` (data, calibrators, diagnostics; it calls calcore) and
:mod:`dashboard.lab` (the simulation lab); :mod:`dashboard.figures` draws calcore's
result objects.
Run it with ``make run`` (or ``streamlit run dashboard/app.py``).
"""

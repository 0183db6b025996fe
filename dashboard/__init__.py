"""calibration-lens dashboard: a Streamlit front end over :mod:`calcore`.

The dashboard never computes a metric itself. ``app.py`` calls calcore, ``figures.py``
draws calcore's result objects, ``samples.py`` lists the bundled sample files.
Run it with ``make run`` (or ``streamlit run dashboard/app.py``).
"""

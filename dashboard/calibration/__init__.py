"""The calibration page, shaped like :mod:`dashboard.lab`.

Modules
-------
page
    The page: data source, loading, split, the view area and the downloads.
controls
    The sidebar's widgets; :func:`controls.sidebar_settings` returns one ``Settings``.
state
    ``Settings`` and the URL's query string (links that restore a view).
data, preview, samples
    Loading a file or a bundled sample, the data panel, the split.
context, compute
    The fitted calibrators and calcore's results, cached per method and setting.
views
    One module per view (metrics, reliability diagrams, validity, KDE, learning, simplex).
downloads, exports, report
    The recalibrated predictions, the fitted calibrator, the offline HTML report.
explain
    "What am I looking at?" texts.
"""

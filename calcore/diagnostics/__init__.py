"""Diagnostics: what a metric summarises, shown per bin, per resample or per bin count.

The layer above metrics; the per-bin statistics they show are the statistics engine's
(:mod:`calcore.statistics.bin_statistics`).

Modules
-------
reliability
    Confidence, top-label and class-wise reliability diagrams with Wilson intervals.
consistency
    Consistency bands: reliability curves resampled under perfect calibration.
validity
    Validity plots of calibrators (Gupta & Ramdas, 2021) and UMD's bound.
bin_sweep
    Binned ECE against the number of bins.
summaries
    Each diagnostic view's answer in a sentence, read off the results above with their
    intervals (the direction only where an interval supports it).

The public names are exported from :mod:`calcore`; this package imports nothing itself.
"""

"""Plotly figures drawn from calcore's result dataclasses.

Nothing here computes a metric or re-bins data: every number on a figure is a field of
a calcore result (only the arithmetic Plotly's encodings need, such as error-bar
distances and bar widths, is done here). Method colours come from :func:`method_colors`
applied to each call's ordered method list, so a method keeps its colour across figures.
User text (method labels, class names, titles) is HTML-escaped before it reaches a figure.
"""

from dashboard.figures._style import UNCALIBRATED, method_colors, method_style
from dashboard.figures._theme import apply_theme
from dashboard.figures.reliability import reliability_figure
from dashboard.figures.top_label import top_label_figure

__all__ = [
    "UNCALIBRATED",
    "apply_theme",
    "method_colors",
    "method_style",
    "reliability_figure",
    "top_label_figure",
]

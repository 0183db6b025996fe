"""Plotly figures drawn from calcore's result dataclasses.

Nothing here computes a metric or re-bins data: every number on a figure is a field of
a calcore result (only the arithmetic Plotly's encodings need, such as error-bar
distances and bar widths, is done here). Method colours come from :func:`method_colors`
applied to each call's ordered method list, so a method keeps its colour across figures.
User text (method labels, class names, titles) is HTML-escaped before it reaches a figure,
so tests look traces up by the escaped label.

Modules: ``_style`` (colours), ``_theme`` (the one theme), ``_common`` (shared traces and
layout), ``reliability``, ``top_label``, ``small_multiples``
(per-class top-label and class-wise grids), ``validity``, ``kde_beside_binned`` (KDE
curve and ECE by bins), ``learning``, ``simplex``, ``metrics`` (errors with intervals),
``verdict`` (the calibrator verdict), ``slices`` (calibration per slice).
"""

from dashboard.figures._style import UNCALIBRATED, method_colors, method_style
from dashboard.figures._theme import apply_theme
from dashboard.figures.drill_down import class_cells_figure, worst_cells_table
from dashboard.figures.kde_beside_binned import ece_by_bins_figure, kde_figure
from dashboard.figures.learning import learning_curve_figure
from dashboard.figures.metrics import metric_intervals_figure
from dashboard.figures.reliability import reliability_figure
from dashboard.figures.simplex import simplex_figure
from dashboard.figures.slices import (
    slice_funnel_figure,
    slices_by_method_figure,
    slices_in_order_figure,
)
from dashboard.figures.small_multiples import (
    classwise_grid_figure,
    slice_grid_figure,
)
from dashboard.figures.top_label import top_label_figure
from dashboard.figures.validity import validity_figure
from dashboard.figures.verdict import verdict_figure

__all__ = [
    "UNCALIBRATED",
    "apply_theme",
    "class_cells_figure",
    "classwise_grid_figure",
    "ece_by_bins_figure",
    "kde_figure",
    "learning_curve_figure",
    "method_colors",
    "method_style",
    "metric_intervals_figure",
    "reliability_figure",
    "simplex_figure",
    "slice_funnel_figure",
    "slice_grid_figure",
    "slices_by_method_figure",
    "slices_in_order_figure",
    "top_label_figure",
    "validity_figure",
    "verdict_figure",
    "worst_cells_table",
]

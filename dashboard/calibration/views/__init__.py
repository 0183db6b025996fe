"""One module per view; each ``render(ctx)`` draws its part of the page from calcore results.

Only the selected view runs, so a slow view (validity, learning curves) costs nothing until
someone opens it; everything it computes is cached for the next visit and for the report.
A view with choices of its own that a link must carry (Slices) returns the settings with
them; the others return None.
"""

from dashboard.calibration.views import (
    classwise,
    confidence,
    kde,
    learning,
    metrics,
    simplex,
    slices,
    top_label,
    validity,
)

RENDERERS = {
    "metrics": metrics.render,
    "confidence": confidence.render,
    "top-label": top_label.render,
    "class-wise": classwise.render,
    "validity": validity.render,
    "kde": kde.render,
    "learning": learning.render,
    "simplex": simplex.render,
    "slices": slices.render,
}

__all__ = ["RENDERERS"]

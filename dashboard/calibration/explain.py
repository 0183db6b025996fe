"""'What am I looking at': one short text per view, for an ML engineer.

Each text names the idea behind the plot and the paper it comes from, so a reader can
follow it up. Texts are trusted (written here), so they may use Markdown.
"""

from __future__ import annotations

import calcore
from calcore.evaluation.slice_fits import MIN_FIT_ROWS

__all__ = ["EXPLAIN", "interval_words"]


def interval_words() -> str:
    """What the brackets are, in one sentence read off calcore's registry (each metric's
    default interval), for the sidebar help, the table's caption and the report alike."""
    by_method: dict[str, list[str]] = {}
    for spec in calcore.METRICS.values():
        by_method.setdefault(spec.interval_method, []).append(spec.label)
    percentile = ", ".join(by_method.get("percentile", []))
    return (
        "95% bootstrap intervals over the test rows: percentile intervals for "
        f"{percentile}; bias-corrected intervals for the calibration errors (a binned ECE "
        "reads high on a finite sample; these aim at the true error, not at the estimate's "
        "spread)."
    )


EXPLAIN = {
    "intro": (
        "Does a model's confidence match how often it is right? Upload its probabilities and "
        "labels (CSV, Parquet or NPZ) or use a sample: the **verdict** names the calibrator "
        "to ship, the **table** gives each metric with a 95% interval, and the **views** "
        "show where confidence and accuracy part."
    ),
    "metrics": (
        "**The verdict** above the table compares every calibrator with the best on one "
        "calibration error, on the same bootstrap resamples of the test rows (a paired "
        "difference: the noise both share cancels). A method whose interval reaches 0 is "
        "tied with the best; the intervals are widened for the number of methods compared, "
        "so a calibrator is recommended only when it beats the uncalibrated model beyond "
        "noise (on calibrated data this happened in at most a few percent of runs, "
        "`docs/replications/verdict.md`). Among tied methods it picks the one that keeps the "
        "argmax, then the simplest. "
        "Every calibrator is fitted on the calibration rows and evaluated, with the "
        "uncalibrated model, on the test rows. **ECE** variants average the gap between "
        "predicted probability and observed frequency over bins: *conf-ECE* looks at the top "
        "probability only, *TL-ECE* also conditions on the predicted class (Gupta & Ramdas, "
        "2022), *CW-ECE* averages every class's one-vs-rest error. **MCE** is the worst bin. "
        "**NLL** and **Brier** are proper scores: they reward calibration *and* sharpness. "
        "**KDE-ECE** replaces bins with a smooth kernel estimate (Zhang et al., 2020). "
        "**Calibration gain** is the drop in the proper-score loss relative to the "
        "uncalibrated model. Brackets: 95% bootstrap intervals over test rows. For the "
        "calibration errors they are **bias-corrected**: a binned ECE reads high on a finite "
        "sample (noise in every bin adds to the gap), so the interval is shifted down by the "
        "bias its resamples show. Where bins hold few rows that shift falls short, so "
        "resamples of the resamples correct it once more and the interval spans both "
        "corrections. It aims at the model's true error; in simulation it contained it "
        "in about 9 samples out of 10 when the model was miscalibrated (`docs/replications/"
        "intervals.md`). An MCE (†) gets no bracket: a maximum over noisy bins has no "
        "interval that covers its truth. The **calibrated?** rows test the hypothesis that "
        "the model is calibrated: labels are redrawn from the predicted probabilities and "
        "the p-value is the share of redrawn sets with an error at least as large; a small p "
        "is evidence of miscalibration, a large one means this test set cannot tell. The "
        "best value per row is bold. The chart under the table puts the four ECEs of every "
        "method side by side: two methods whose bars overlap are not told apart by this test "
        "set."
    ),
    "confidence": (
        "Rows are grouped into bins of their **confidence** (the top predicted probability). "
        "Each point is a bin's mean confidence against the fraction of its rows that were "
        "right, with a 95% Wilson interval. On the dashed diagonal the model is calibrated; "
        "points **below** it are over-confident, **above** it under-confident. The optional "
        "consistency band shows where a perfectly calibrated model's points would fall by "
        "chance with these bin sizes (Bröcker & Smith, 2007). The bars count rows per bin: "
        "points over few rows are noisy. The sentence above names the fullest bin, or "
        "the bin that adds most to the ECE when its interval (widened for the number of bins "
        "searched) excludes the diagonal; a bin whose interval covers it is within noise."
    ),
    "positive": (
        "A binary model states **one probability** per row, P(class 1). Rows are grouped "
        "into bins of it; each point is a bin's mean predicted probability against the "
        "share of its rows that are class 1, with a 95% Wilson interval. On the diagonal the "
        "model is calibrated; points **above** it are **under-predicted** (more events than "
        "predicted), **below** it **over-predicted**. The sentence above reads the binary "
        "measures: observed over expected events (calibration-in-the-large) and the "
        "calibration slope (below 1: probabilities too extreme), with Hosmer-Lemeshow when "
        "it shows a shape they do not (Van Calster et al., 2016). When the scores crowd "
        "into one equal-width bin (rare events), the bins follow the data (equal-mass) and "
        "the axes zoom to the scores. The confidence view (max(p, 1 - p)) is one click away."
    ),
    "top-label": (
        "How often the predicted class is right (accuracy) against how sure the model was "
        "(confidence), one line per method: on the dashed diagonal a method is calibrated, "
        "below it over-confident. Each line joins, per bin of the confidence (the top "
        "probability), the mean "
        "confidence and the share of rows whose predicted class is right; the strip below "
        "counts the test rows per bin. A confidence diagram can look perfect while the model "
        "is badly calibrated for individual predicted classes: over-confidence on one class "
        "cancels under-confidence on another. The **top-label** error (TL-ECE, Gupta & "
        "Ramdas, 2022, Fig. 1) splits each bin by predicted class and averages the per-class "
        "gaps Δ_b; the switch above the chart draws that point Δ_b away from the diagonal, "
        "beside the open accuracy point. The table lists every (predicted class, bin) cell "
        "with its share of the TL-ECE, largest first; the chart under it shows one class's "
        "cells (faded where few rows make the accuracy noisy)."
    ),
    "class-wise": (
        "For each class, how often it is the true label against the probability the model "
        "gave it, one line per method: on the dashed diagonal the class's probabilities are "
        "calibrated. **Class-wise** calibration asks, for every class k, whether "
        "P(class = k | score_k = "
        "p) = p, over all rows, not just where k is predicted. Each panel is one class's "
        "one-vs-rest reliability diagram; CW-ECE is the mean of their ECEs. Most scores of a "
        "class are near 0, so the low bins carry most rows (Kull et al., 2019)."
    ),
    "validity": (
        "The histogram-binning paper's **validity plot** (Gupta & Ramdas, 2021): each method "
        "is fitted on half of the rows and evaluated on the other half, many times. V(ε) is the "
        "fraction of test points whose calibrated probability is within ε of the true "
        "frequency of its level set (estimated on the test half); the conditional version asks "
        "this of every level set at once. Higher and further left is better. The dashed curve "
        "is the distribution-free guarantee of uniform-mass binning (UMD): no assumption on "
        "the model is needed for it to hold. Bands: ± one standard deviation of the mean over "
        "resamples."
    ),
    "kde": (
        "Binned ECE depends on the number of bins: with few rows per bin it is biased upwards, "
        "with few bins it averages errors away. **KDE-ECE** (Zhang et al., 2020) estimates "
        "the reliability curve with a triweight kernel (bandwidth by a rule of thumb) and "
        "integrates the gap against the score density. Left: the smooth curve over the binned "
        "points, with a 95% pointwise band; where fewer than 20 effective rows lie within a "
        "bandwidth (e.g. low confidences of a strong model) it is drawn dotted and thin: "
        "there its swings are noise, not findings. Right: binned ECE for 5 to 25 bins "
        "(solid) against KDE-ECE (dashed), which does not depend on bins."
    ),
    "learning": (
        "How much calibration data does each method need? Each method is fitted on random "
        "subsets of the calibration rows of growing size (the same subsets for every method) "
        "and evaluated on all test rows (Zhang et al., 2020, Fig. 6). Parametric methods "
        "(temperature scaling) learn from a few hundred rows; non-parametric ones (binning, "
        "isotonic) need more but can fix more. Bands: ± one standard deviation over "
        "repetitions."
    ),
    "simplex": (
        "For 3 classes a probability vector is a point in a triangle. **Canonical** "
        "calibration asks P(y | p) = p for the whole vector. A canonical binning calibrator "
        "(Sierpinski, grid or projection-based histogram binning; Gupta & Ramdas, 2022, App. "
        "G) cuts the triangle into cells and maps every prediction in a cell to the cell's "
        "label frequencies: each arrow goes from a cell's mean prediction to that frequency. "
        "Long arrows are where the model is miscalibrated."
    ),
    "slices": (
        "**Where** is the model miscalibrated? The test rows are cut into slices by one or "
        "two metadata columns (numbers into quantile ranges, dates into periods; missing "
        "values form a slice of their own) and each slice is evaluated on its own rows. A "
        "small slice has a large binned ECE by noise alone, so slices are **ranked by "
        "evidence**, not by raw ECE: each slice's calibration test redraws its labels from "
        "its own predicted probabilities (a calibrated model of the same predictions) and "
        "the p-value is the share of redrawn sets with an error at least as large; the "
        "**q-value** corrects for testing many slices (Benjamini & Hochberg, 1995): calling "
        "every slice with q ≤ 0.05 miscalibrated keeps the expected share of false calls "
        "at 5%. **Share** is the slice's part of the total miscalibration (rows x error). "
        "In the size chart the dotted line is what 95% of calibrated draws stay below: "
        "points above it are not noise. Slices with fewer than 30 rows are listed, "
        "untested. Below: each calibrator (fitted on all calibration rows) within each "
        "slice, and, on request, each calibrator fitted again on every slice's own "
        "calibration rows (sliced like the test rows; a slice with fewer than "
        f"{MIN_FIT_ROWS} of them "
        "keeps the global fit): if only the per-slice fit brings a slice back, one global "
        "map is not enough. Then periods in order with a test of a change between the first "
        "and the last, and the reliability diagrams of a chosen slice and of the top slices. "
        "On a dataset of the server the view works on its sample; a button evaluates every "
        "slice on every test row, streamed (the diagrams stay on the sample)."
    ),
}

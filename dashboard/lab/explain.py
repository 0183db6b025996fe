"""'What am I looking at' texts of the Simulation lab (trusted Markdown, written here)."""

from __future__ import annotations

__all__ = ["EXPLAIN"]

EXPLAIN = {
    "intro": (
        "A **fake classifier** whose calibration error is known exactly. Its predictions are "
        "drawn from a Dirichlet distribution and its labels from a known map π(p) = P(Y | p) "
        "(over- or under-confident by a temperature, class-specific, or a mix; overview paper, "
        "Silva Filho et al. 2023, Sec. 6), or come from the binary logistic problem of "
        "Mix-n-Match (Zhang et al. 2020, App. E.1) whose π has a closed form. Because the "
        "truth is known, you can see how far an ECE estimate is from it at your sample size, "
        "and how much data you need before trusting one."
    ),
    "truth": (
        "The thick line is the **true** reliability curve P(correct | confidence = h) of the "
        "generator; the markers and the coloured line are what you would estimate from one "
        "sample of n rows: 15 equal-width bins, 15 equal-mass bins, and the KDE curve "
        "(triweight kernel, Zhang et al. 2020). Below: the true density of the confidence and "
        "its KDE. The table puts the true conf-, top-label, class-wise and canonical ECE (with "
        "their numerical standard errors) beside the estimates from the same draw. calcore has "
        "no estimator of the canonical ECE, so that row has no estimate."
    ),
    "estimators": (
        "Each estimator is applied to many independent samples of each size n, and its error "
        "against the true ECE is averaged (the design of Mix-n-Match Fig. 5). **Left**: mean "
        "absolute error, which shrinks with n. **Right**: bias; binned estimators are biased "
        "upwards at small n (few rows per bin make every bin look miscalibrated). The readout "
        "gives, per estimator, the smallest studied n from which the mean absolute error "
        "stays below your level (`calcore.simulate.samples_needed`)."
    ),
    "recovery": (
        "Each calibrator is fitted on the same draw of n rows (the calibration set) and "
        "applied to a fresh test draw of 20,000 rows. Bars: the ECEs of the recalibrated test "
        "draw, **estimated** with 15 equal-width bins (calcore.simulate has no true ECE of a "
        "recalibrated model); at 20,000 rows the estimate is close to the truth, as the "
        "uncalibrated bars against their true values (the hollow bars) show. A good "
        "calibrator brings every bar towards 0 and, for the global-temperature generators, "
        "temperature scaling should find the true temperature."
    ),
}

"""Cached calls into ``calcore.simulate`` (and calcore's estimators) for the Simulation lab.

Nothing here computes a metric: each function calls calcore and caches the result, keyed by
the knob values only (plain strings and numbers), so a change of one knob recomputes only
what depends on it. Results live in ``st.cache_resource``: they are immutable calcore
dataclasses, shared instead of copied on every rerun.

The ground truth uses cheaper settings than ``calcore.simulate``'s defaults (which take 10 to
70 s for ten classes on a 2-core machine); :func:`truth_settings` and :data:`CURVE_SETTINGS`
are stated on the page together with the standard errors they give.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import calcore
from calcore import simulate

__all__ = [
    "CALIBRATOR_CHOICES",
    "CONCENTRATION_SAMPLES",
    "CURVE_SETTINGS",
    "GENERATORS",
    "SIZES",
    "TEST_N",
    "TRUTH_SETTINGS",
    "VIEW_ESTIMATORS",
    "DrawEstimates",
    "Recovery",
    "draw",
    "draw_estimates",
    "estimator_study",
    "is_mix_n_match",
    "make_simulator",
    "recovery",
    "test_draw",
    "true_curve",
    "truth",
    "truth_settings",
]

#: Generator key -> label. Dirichlet keys are ``calcore.simulate`` miscalibration kinds.
GENERATORS = {
    "overconfident": "Dirichlet, over-confident (global temperature)",
    "underconfident": "Dirichlet, under-confident (global temperature)",
    "class-specific": "Dirichlet, class-specific temperatures and biases",
    "mix": "Dirichlet, mix of global and class-specific",
    "calibrated": "Dirichlet, perfectly calibrated (reference)",
    "mnm-1": "Mix-n-Match binary problem, case 1 (less calibrated)",
    "mnm-2": "Mix-n-Match binary problem, case 2 (better calibrated)",
}

# Cheaper than the library defaults (n_inner=2048, panels=128, 10^6 Monte Carlo draws):
# 16 panels differ from 128 by less than the Monte Carlo error (at most 7e-4, TL-ECE of a
# 3-class mix; 1e-5 to 2e-4 elsewhere; same inner draws), n_inner sets the standard
# error of conf/TL/CW-ECE (about 0.001 at 512 for ten classes), n_monte_carlo that of the
# accuracy and canonical errors (about 0.001 at 10^5; it was 80% of the time at 2 x 10^5).
TRUTH_SETTINGS = {"n_inner": 512, "n_batches": 8, "panels": 16, "n_monte_carlo": 100_000}
# Class-specific maps are integrated class by class (L times the work, L^2 in all), so above
# this many classes they get half the inner draws (standard error about 0.0017 instead).
FULL_INNER_MAX_CLASSES = 5
GLOBAL_KINDS = ("calibrated", "overconfident", "underconfident")
CURVE_SETTINGS = {"n_points": 61, "n_inner": 512}
# concentration_for_accuracy's default of 20,000 draws takes ~8 s for ten classes; 2,000
# hits the target accuracy to about +-0.02 (the achieved accuracy is shown from the truth).
CONCENTRATION_SAMPLES = 2_000
SIZES = (100, 200, 400, 800, 1600, 3200)  # estimator study: doubling sample sizes
TEST_N = 20_000  # the large test draw the calibrators are evaluated on
TRUTH_SEED = 0  # the truth does not depend on the seed knob (only its Monte Carlo noise would)
TEST_SEED_OFFSET = 1_000_000  # test draws never reuse a calibration draw's seed

#: ECE view -> estimators calcore.simulate offers for it (no KDE for top-label).
VIEW_ESTIMATORS = {
    "confidence": ("equal-width", "equal-mass", "sturges", "kde"),
    "top-label": ("equal-width", "equal-mass", "sturges"),
    "class-wise": ("equal-width", "equal-mass", "sturges", "kde"),
}
CALIBRATOR_CHOICES = ("ts", "ets", "vs", "tl-hb", "cw-hb", "irm", "n-iso")


def is_mix_n_match(generator: str) -> bool:
    return generator.startswith("mnm-")


@st.cache_resource(show_spinner=False, max_entries=64)
def make_simulator(generator: str, n_classes: int, accuracy: float, strength: float):
    """The simulator for the knobs (Mix-n-Match ignores classes, accuracy and strength).

    Raises
    ------
    calcore.CalcoreError
        The accuracy is not reachable for this map (the message gives the range).
    """
    if is_mix_n_match(generator):
        return simulate.mix_n_match_simulator(int(generator[-1]))
    true_map = simulate.true_calibration_map(n_classes, kind=generator, strength=strength)
    concentration = simulate.concentration_for_accuracy(
        accuracy, true_map, n_samples=CONCENTRATION_SAMPLES
    )
    return simulate.dirichlet_simulator(n_classes, true_map=true_map, concentration=concentration)


def truth_settings(generator: str, n_classes: int) -> dict:
    """The ``true_calibration_errors`` settings used for these knobs (shown on the page)."""
    per_class = generator not in GLOBAL_KINDS and not is_mix_n_match(generator)
    if per_class and n_classes > FULL_INNER_MAX_CLASSES:
        return {**TRUTH_SETTINGS, "n_inner": TRUTH_SETTINGS["n_inner"] // 2}
    return dict(TRUTH_SETTINGS)


@st.cache_resource(show_spinner=False, max_entries=64)
def truth(generator: str, n_classes: int, accuracy: float, strength: float):
    """``true_calibration_errors`` with :func:`truth_settings`."""
    sim = make_simulator(generator, n_classes, accuracy, strength)
    settings = truth_settings(generator, n_classes)
    return simulate.true_calibration_errors(sim, seed=TRUTH_SEED, **settings)


@st.cache_resource(show_spinner=False, max_entries=64)
def true_curve(generator: str, n_classes: int, accuracy: float, strength: float):
    """``true_reliability_curve`` with :data:`CURVE_SETTINGS`."""
    sim = make_simulator(generator, n_classes, accuracy, strength)
    return simulate.true_reliability_curve(sim, seed=TRUTH_SEED, **CURVE_SETTINGS)


@st.cache_resource(show_spinner=False, max_entries=32)
def draw(generator: str, n_classes: int, accuracy: float, strength: float, n: int, seed: int):
    """One seeded draw of ``n`` predictions and labels (the calibration set too)."""
    sim = make_simulator(generator, n_classes, accuracy, strength)
    return simulate.simulate_predictions(sim, n, seed=seed)


@st.cache_resource(show_spinner=False, max_entries=16)
def test_draw(generator: str, n_classes: int, accuracy: float, strength: float, seed: int):
    """The large test draw (:data:`TEST_N` rows) the calibrators are evaluated on."""
    sim = make_simulator(generator, n_classes, accuracy, strength)
    return simulate.simulate_predictions(sim, TEST_N, seed=seed + TEST_SEED_OFFSET)


@dataclass(frozen=True)
class DrawEstimates:
    """calcore's estimates on one draw: reliability curves and ECE values.

    Attributes
    ----------
    diagrams : dict of str to calcore.ReliabilityDiagram
        ``"equal-width"`` and ``"equal-mass"``, 15 bins, confidence view.
    kde : calcore.KDEReliabilityCurve
    ece : dict of str to dict of str to float
        ``ece[view][estimator]`` for views ``conf_ece``, ``top_label_ece``,
        ``classwise_ece`` and ``"equal-width"``, ``"equal-mass"`` and (conf, CW) ``"kde"``.
    accuracy : float
    """

    diagrams: dict
    kde: calcore.KDEReliabilityCurve
    ece: dict
    accuracy: float


_BINS = {"equal-width": ("equal-width", 15), "equal-mass": ("equal-mass", 15)}
_BINNED = {
    "conf_ece": calcore.confidence_ece,
    "top_label_ece": calcore.top_label_ece,
    "classwise_ece": calcore.classwise_ece,
}


@st.cache_resource(show_spinner=False, max_entries=32)
def draw_estimates(
    generator: str, n_classes: int, accuracy: float, strength: float, n: int, seed: int
) -> DrawEstimates:
    preds = draw(generator, n_classes, accuracy, strength, n, seed).preds
    diagrams = {
        key: calcore.reliability_diagram(preds, view="confidence", bins=bins, binning=binning)
        for key, (binning, bins) in _BINS.items()
    }
    ece = {
        view: {key: float(fn(preds, bins=b, binning=s)) for key, (s, b) in _BINS.items()}
        for view, fn in _BINNED.items()
    }
    ece["conf_ece"]["kde"] = float(calcore.kde_ece_confidence(preds))
    ece["classwise_ece"]["kde"] = float(calcore.kde_ece_classwise(preds))
    return DrawEstimates(
        diagrams, calcore.kde_confidence_curve(preds), ece, float(calcore.accuracy(preds))
    )


_TRUTH_FIELD = {
    "confidence": "conf_ece",
    "top-label": "top_label_ece",
    "class-wise": "classwise_ece",
}


@st.cache_resource(show_spinner=False, max_entries=32)
def estimator_study(
    generator: str, n_classes: int, accuracy: float, strength: float, view: str, repeats: int,
    seed: int,
):  # fmt: skip
    """``estimator_errors`` over :data:`SIZES` against the (cheaper) cached truth.

    The truth is passed in: without it ``estimator_errors`` would recompute it with the
    library's full-precision defaults (10-70 s).
    """
    sim = make_simulator(generator, n_classes, accuracy, strength)
    target = getattr(truth(generator, n_classes, accuracy, strength), _TRUTH_FIELD[view])
    return simulate.estimator_errors(
        sim, sizes=SIZES, view=view, estimators=VIEW_ESTIMATORS[view], n_repeats=repeats,
        truth=target, seed=seed,
    )  # fmt: skip


@dataclass(frozen=True)
class Recovery:
    """A calibrator fitted on the draw and evaluated on the large test draw.

    Attributes
    ----------
    method : str
    ece : dict of str to float
        ``conf_ece``, ``top_label_ece``, ``classwise_ece`` (15 equal-width bins) of the
        recalibrated test draw: estimates on :data:`TEST_N` rows, not true values.
    accuracy : float
    fit_info : dict
    """

    method: str
    ece: dict
    accuracy: float
    fit_info: dict


def _evaluate(method: str, preds, fit_info: dict) -> Recovery:
    ece = {view: float(fn(preds, bins=15, binning="equal-width")) for view, fn in _BINNED.items()}
    return Recovery(method, ece, float(calcore.accuracy(preds)), dict(fit_info))


@st.cache_resource(show_spinner=False, max_entries=128)
def recovery(
    generator: str, n_classes: int, accuracy: float, strength: float, n: int, seed: int,
    method: str,
) -> Recovery:  # fmt: skip
    """Fit ``method`` on the draw of ``n`` rows, transform the test draw, estimate its ECEs.

    ``method == calcore.UNCALIBRATED`` evaluates the test draw as it is.
    """
    test = test_draw(generator, n_classes, accuracy, strength, seed).preds
    if method == calcore.UNCALIBRATED:
        return _evaluate(method, test, {})
    calib = draw(generator, n_classes, accuracy, strength, n, seed).preds
    calibrator = calcore.make_calibrator(method).fit(calib)
    return _evaluate(method, calibrator.transform(test), calibrator.fit_info)

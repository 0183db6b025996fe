"""The Simulation lab page: a fake classifier with a known calibration map.

:func:`render_lab` draws the whole page; the main app exposes it as a second ``st.Page``.
Data flow: knobs -> ``calcore.simulate`` (simulator, truth, draws, estimator study) and
calcore (estimates, calibrators), cached in :mod:`dashboard.lab.compute` -> figures of
:mod:`dashboard.figures.lab` -> page. The page computes nothing itself; the only errors it
catches are ``calcore.CalcoreError`` (e.g. an accuracy the map cannot reach), shown in words.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import calcore
from calcore import simulate
from dashboard.figures import lab as figures
from dashboard.lab import compute, controls
from dashboard.lab.explain import EXPLAIN
from dashboard.text import escape_markdown as esc

__all__ = ["render_lab", "truth_rows", "readout_rows"]

TRUTH_ROWS = {
    "conf_ece": ("conf-ECE", "conf_ece"),
    "top_label_ece": ("TL-ECE", "top_label_ece"),
    "classwise_ece": ("CW-ECE", "classwise_ece"),
    "canonical_ece_l1": ("canonical ECE (l1)", None),
    "canonical_ece_l2": ("canonical ECE (l2, rooted)", None),
}
ESTIMATE_COLUMNS = ("equal-width", "equal-mass", "kde")
VIEWS = {"confidence": "confidence (conf-ECE)", "top-label": "top-label (TL-ECE)",
         "class-wise": "class-wise (CW-ECE)"}  # fmt: skip


def _explain(key: str) -> None:
    with st.expander("What am I looking at?", expanded=False):
        st.markdown(EXPLAIN[key])


def _chart(fig, key: str) -> None:
    st.plotly_chart(fig, theme=None, key=key)


def _num(value) -> str:
    return "—" if value is None else f"{value:.4f}"


def truth_rows(truth, estimates) -> pd.DataFrame:
    """True values with standard errors beside one draw's estimates (strings, one row each)."""
    rows = []
    for key, (label, view) in TRUTH_ROWS.items():
        found = estimates.ece.get(view, {}) if view else {}
        se = truth.standard_errors[key]
        rows.append(
            {
                "error": label,
                "true value": _num(getattr(truth, key)),
                "± s.e.": f"{se:.1e}" if se > 0 else "0 (exact)",
                **{figures.ESTIMATOR_LABELS[k]: _num(found.get(k)) for k in ESTIMATE_COLUMNS},
            }
        )
    return pd.DataFrame(rows).set_index("error")


def readout_rows(errors, needed: dict) -> pd.DataFrame:
    """Per estimator: the n from which its mean absolute error stays within the tolerance."""
    largest = int(errors.sizes[-1])
    rows = []
    for i, key in enumerate(errors.estimators):
        n = needed[key]
        rows.append(
            {
                "estimator": figures.ESTIMATOR_LABELS[key],
                "samples needed": f"{n:,}" if n is not None else f"more than {largest:,}",
                f"mean |error| at n = {largest:,}": f"{errors.mean_abs_error[i][-1]:.4f}",
            }
        )
    return pd.DataFrame(rows).set_index("estimator")


def _precision_note(knobs: controls.Knobs) -> str:
    if compute.is_mix_n_match(knobs.generator):
        return (
            "True values of the Mix-n-Match problem by adaptive quadrature (closed-form π): "
            "exact to about 1e-11."
        )
    t = compute.truth_settings(knobs.generator, knobs.n_classes)
    return (
        f"True conf/TL/CW-ECE by Gauss-Legendre quadrature ({t['panels']} panels x 8 nodes) "
        f"with {t['n_inner']:,} inner Monte Carlo draws; accuracy and canonical errors by "
        f"{t['n_monte_carlo']:,} Monte Carlo draws: cheaper than calcore.simulate's defaults "
        "(2,048 draws, 128 panels, 10^6) so the page stays interactive; the ± column is the "
        "Monte Carlo standard error this gives (0 where the integral is exact, e.g. two "
        "classes); 16 instead of 128 panels moved the values by less than it in our checks. "
        f"True curve: {compute.CURVE_SETTINGS['n_points']} points, "
        f"{compute.CURVE_SETTINGS['n_inner']:,} inner draws. The concentration is solved for "
        f"the target accuracy on {compute.CONCENTRATION_SAMPLES:,} draws (within about ±0.02)."
    )


def truth_section(knobs: controls.Knobs) -> calcore.simulate.TrueCalibrationErrors:
    st.subheader("The truth and one draw")
    _explain("truth")
    with st.spinner("Computing the ground truth (quadrature and Monte Carlo)…"):
        truth = compute.truth(*knobs.model)
        curve = compute.true_curve(*knobs.model)
        est = compute.draw_estimates(*knobs.sample)
    target = "" if compute.is_mix_n_match(knobs.generator) else f" (target {knobs.accuracy:.2f})"
    st.caption(
        f"True accuracy {truth.accuracy:.4f} ± {truth.standard_errors['accuracy']:.1e}{target}; "
        f"this draw of n = {knobs.n:,} (seed {knobs.seed}): {est.accuracy:.4f}."
    )
    subtitle = f"n = {knobs.n:,}, seed {knobs.seed}"
    _chart(
        figures.truth_reliability_figure(curve, est.diagrams, est.kde, subtitle=subtitle),
        "lab.figure.truth",
    )
    st.table(truth_rows(truth, est))
    st.caption(_precision_note(knobs))
    return truth


def estimator_section(knobs: controls.Knobs) -> None:
    st.subheader("How far off are the estimators, and how many samples do I need?")
    _explain("estimators")
    left, mid, right = st.columns(3)
    view = left.selectbox(
        "ECE", tuple(VIEWS), format_func=VIEWS.get, key=controls.KEY_VIEW,
        index=controls.index_of(VIEWS, controls.KEY_VIEW, "confidence"),
    )  # fmt: skip
    repeats = mid.selectbox(
        "Repetitions per n", controls.REPEAT_CHOICES, key=controls.KEY_REPEATS,
        index=controls.index_of(controls.REPEAT_CHOICES, controls.KEY_REPEATS, 20),
        help="More repetitions give smoother curves but take longer (50: several seconds).",
    )  # fmt: skip
    tolerance = right.number_input(
        "Error tolerance", min_value=0.001, max_value=0.5, step=0.001, format="%.3f",
        value=controls.first(controls.KEY_LEVEL, 0.01), key=controls.KEY_LEVEL,
        help="Mean absolute error you can accept.",
    )  # fmt: skip
    with st.spinner(f"Simulating {int(repeats)} samples of each size…"):
        errors = compute.estimator_study(*knobs.model, view, int(repeats), knobs.seed)
    needed = simulate.samples_needed(errors, tolerance=float(tolerance))
    _chart(
        figures.estimator_error_figure(errors, tolerance=float(tolerance)),
        "lab.figure.estimators",
    )
    st.markdown(f"**Samples needed** for a mean absolute error of at most {float(tolerance):.3f}:")
    st.table(readout_rows(errors, needed))
    sizes = ", ".join(f"{int(s):,}" for s in errors.sizes)
    st.caption(
        f"{errors.n_repeats} repetitions at each n in {{{sizes}}} (seed {knobs.seed}); truth "
        f"{errors.truth:.4f} from the table above. 'Samples needed' is the smallest studied n "
        "from which the error stays within the tolerance (calcore.simulate.samples_needed)."
    )


def _temperature_note(knobs: controls.Knobs, sim, fits: dict) -> None:
    """TS should recover the temperature of a global map: say what it found."""
    if "ts" not in fits or not isinstance(sim, simulate.DirichletSimulator):
        return
    if sim.true_map.kind not in ("overconfident", "underconfident", "calibrated"):
        return
    found = fits["ts"].fit_info.get("temperature")
    if found is not None:
        st.caption(
            f"Temperature scaling found T = {float(found):.3f}; the generator's true map is a "
            f"temperature T = {sim.true_map.temperature:.3f}."
        )


def _fit_notes(fits: dict) -> None:
    """calcore's own words on fits that did not do their full job on this draw."""
    for method, fit in fits.items():
        info = fit.fit_info
        if info.get("converged") is False:
            st.caption(f"{esc(method)}: did not converge ({esc(info.get('message', ''))}).")
        unchanged = info.get("unchanged_classes") or ()
        if unchanged:
            st.caption(
                f"{esc(method)}: {len(unchanged)} predicted class(es) left unchanged, with fewer "
                f"than {esc(info.get('min_points', 'the minimum'))} calibration points each."
            )


def recovery_section(knobs: controls.Knobs, truth) -> None:
    st.subheader("How calibrators recover the truth")
    _explain("recovery")
    methods = st.multiselect(
        "Calibrators", compute.CALIBRATOR_CHOICES,
        default=controls.first(controls.KEY_METHODS, list(controls.DEFAULT_METHODS)),
        key=controls.KEY_METHODS,
    )  # fmt: skip
    fits = {}
    with st.spinner("Fitting the calibrators and evaluating them on 20,000 test rows…"):
        for method in (calcore.UNCALIBRATED, *methods):
            try:
                fits[method] = compute.recovery(*knobs.sample, method)
            except calcore.CalcoreError as err:
                st.warning(f"{esc(method)} could not be fitted on this draw: {esc(err)}")
    ece = {method: fit.ece for method, fit in fits.items()}
    true_values = {key: getattr(truth, key) for key in figures.ECE_LABELS}
    subtitle = (
        f"fitted on the draw of n = {knobs.n:,} · ECE estimated (15 equal-width bins) on "
        f"{compute.TEST_N:,} fresh test rows"
    )
    _chart(
        figures.recovery_figure(ece, true_values, subtitle=subtitle),
        "lab.figure.recovery",
    )
    _temperature_note(knobs, compute.make_simulator(*knobs.model), fits)
    _fit_notes(fits)
    st.caption(
        "These are estimates on a large test draw, not true values: calcore.simulate computes "
        "the true errors of a generator, not of a generator followed by a fitted calibrator."
    )


def render_lab() -> None:
    """The whole Simulation lab page (knobs in the sidebar)."""
    # Wide like the main page; a page may set its own config under st.navigation.
    st.set_page_config(layout="wide")
    st.title("Simulation lab")
    st.markdown(EXPLAIN["intro"])
    with st.sidebar, st.container(key="lab.section.generator"):
        knobs = controls.generator_knobs()
    try:
        with st.spinner("Building the fake classifier…"):
            compute.make_simulator(*knobs.model)
    except calcore.CalcoreError as err:
        st.error(f"This fake classifier cannot be built: {esc(err)}")
        controls.remember()
        return
    try:
        truth = truth_section(knobs)
        estimator_section(knobs)
        recovery_section(knobs, truth)
    except calcore.CalcoreError as err:
        st.error(esc(err))
    finally:
        controls.remember()

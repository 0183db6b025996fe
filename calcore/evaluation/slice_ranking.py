"""How slices are ranked: miscalibration beyond what their size explains; evidence filters.

Each tested slice's calibration test (:mod:`calcore.evaluation.significance`) redraws
its labels from its own predictions ``R`` times; the redrawn errors ``T*`` are what a
calibrated slice *of that size and those scores* shows by noise alone. So:

* ``excess = g(T, T*) - g(T_all, T*_all)``: the slice's error without its own noise
  (:func:`noise_effect`: the folded-normal inversion, about ``T`` well above the noise and
  0 at the calibrated mean ``mean T*``), minus the whole model's (from the overall test,
  same seed and ``R``). Subtracting the overall effect keeps "the whole model is
  miscalibrated" from ranking every slice: a slice as miscalibrated as the rest has
  ``excess`` near 0, however large.
* ``z = excess / sd(T*)``: the excess in units of the slice's own noise. A small slice
  needs a larger excess than a large one to rank high.

Ranking: the slices whose q-value is at most :data:`RANK_LEVEL` first, by ``z``
descending; then the other tested slices by p-value (their effect is within noise, so
their ``z`` says little), then ``z``; then the untested ones, listed with the reason.
With ``n_resamples=0`` there is no null: slices are ranked by their share of the
miscalibration (see :func:`shares`).

p-values beyond the floor. With no redrawn error at or above the observed one, the
Monte Carlo p-value is ``1 / (R + 1)`` for every clearly miscalibrated slice, which
cannot order them. Then (fewer than :data:`TAIL_FIT_BELOW` exceedances) the p-value is
the upper tail of a gamma distribution fitted to the redrawn errors by the method of
moments (shape ``mean^2 / var``, scale ``var / mean``), at most the floor itself
(``p_method`` "tail fit"). Why a gamma: binned ECEs under calibration are positive and
right-skewed; over slices of 500 to 20,000 rows and 2 to 10 classes, 400 redraws each,
their sample skewness was 0.13 to 0.59, the gamma's moment-implied ``2 sd / mean`` 0.20
to 0.61 (a normal has 0, and would understate the tail). A tail fit is an
extrapolation: it orders strong slices, its digits beyond the floor are a model's.

References
----------
Benjamini & Hochberg (1995), JRSS B 57 (q-values). Davison & Hinkley (1997), "Bootstrap
Methods and their Application", Sec. 4.2.5 (Monte Carlo p-values). Knijnenburg et al.
(2009), "Fewer permutations, more accurate P-values", Bioinformatics 25 (tail
approximations of permutation p-values beyond the floor).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaincc, ndtr

__all__ = [
    "RANK_LEVEL",
    "STANDOUT_Z",
    "TAIL_FIT_BELOW",
    "tail_p_value",
    "noise_effect",
    "with_evidence",
    "shares",
    "rank_key",
    "MODEL_CURVE",
    "MODEL_FIT_ROWS",
    "fit_model_curve",
    "beyond_the_curve",
]

#: The q-value up to which a tested slice ranks among the discoveries (first).
RANK_LEVEL = 0.05
#: The ``z`` from which a discovery "stands out": its error beyond the whole model's by
#: more than two of its own noise's standard deviations (about a one-sided 2.3% tail).
STANDOUT_Z = 2.0
#: Exceedances (redrawn errors at or above the observed one) below which the p-value
#: comes from the gamma tail fit instead of the redraws.
TAIL_FIT_BELOW = 1


def tail_p_value(observed: float, null) -> tuple[float, str]:
    """``(p, method)`` of ``observed`` against its redrawn errors ``null``.

    ``(1 + #{null >= observed}) / (R + 1)`` with method ``"redraws"``; when fewer than
    :data:`TAIL_FIT_BELOW` redrawn errors reach ``observed``, ``min(floor, gamma.sf)`` of
    a moment-matched gamma with method ``"tail fit"`` (the redraws' p when the null has
    no spread or a non-positive mean).

    Examples
    --------
    >>> null = np.array([0.010, 0.012, 0.014, 0.011, 0.013])
    >>> tail_p_value(0.0125, null)
    (0.5, 'redraws')
    >>> p, how = tail_p_value(0.03, null)
    >>> how, p < 1 / 6
    ('tail fit', True)
    """
    null = np.asarray(null, dtype=np.float64)
    null = null[np.isfinite(null)]
    if not math.isfinite(observed) or null.size == 0:
        return math.nan, ""
    exceed = int(np.count_nonzero(null >= observed))
    floor = (1 + exceed) / (null.size + 1)
    if exceed >= TAIL_FIT_BELOW or null.size < 2:
        return float(floor), "redraws"
    mean, var = float(null.mean()), float(null.var(ddof=1))
    if not (mean > 0 and var > 0):
        return float(floor), "redraws"
    # gamma.sf(observed, a, scale=s) of scipy.stats is gammaincc(a, observed / s), value for
    # value; scipy.stats itself is imported only for the slices' q-values (with_evidence)
    p = float(gammaincc(mean * mean / var, max(observed, 0.0) / (var / mean)))
    return min(p, float(floor)), "tail fit"


def noise_effect(observed: float, null) -> tuple[float, float]:
    """``(effect, sd(null))``: the error the slice would have without its noise, and the
    noise's spread (sample sd, ``ddof=1``; NaN with fewer than 2 finite draws).

    A binned l1 error adds noise to each gap as ``E|g + e|``, not ``g + E|e|``: a slice
    whose true gap is well above its noise reads about ``g``, one with no gap about the
    mean of its redrawn errors. So ``observed - mean(null)`` under-states a miscalibrated
    slice's gap (a slice as miscalibrated as the whole model would rank below 0). The
    effect inverts the folded normal's mean instead: with ``s = mean(null) sqrt(pi / 2)``
    (the noise whose folded mean is the calibrated error), it is the ``g >= 0`` with
    ``s sqrt(2 / pi) exp(-g^2 / 2 s^2) + g (1 - 2 Phi(-g / s)) = observed`` (0 when the
    observed error is at or below the calibrated mean). Exact for one bin with normal
    noise; for several bins an approximation that keeps ``effect`` near ``g`` at both ends.

    References
    ----------
    Leone, Nelson & Nottingham (1961), "The folded normal distribution", Technometrics 3
    (its mean).

    Examples
    --------
    >>> null = np.array([0.01, 0.02, 0.03])
    >>> effect, sd = noise_effect(0.5, null)  # far above the noise: about the observed
    >>> round(effect, 6), round(sd, 6)
    (0.5, 0.01)
    >>> noise_effect(0.015, null)[0]  # below the calibrated mean: no effect
    0.0
    """
    null = np.asarray(null, dtype=np.float64)
    null = null[np.isfinite(null)]
    if null.size < 2 or not math.isfinite(observed):
        return math.nan, math.nan
    floor, sd = float(null.mean()), float(null.std(ddof=1))
    if observed <= floor or floor <= 0:
        return (0.0 if floor > 0 else float(observed - floor)), sd
    s = floor * math.sqrt(math.pi / 2)

    def folded_mean(g: float) -> float:
        return s * math.sqrt(2 / math.pi) * math.exp(-g * g / (2 * s * s)) + g * (
            1 - 2 * ndtr(-g / s)
        )

    # folded_mean rises from floor (g = 0) and stays above g: the root lies in [0, observed]
    return float(brentq(lambda g: folded_mean(g) - observed, 0.0, observed, xtol=1e-15)), sd


def with_evidence(results: list, metric: str, overall_effect: float) -> list:
    """The slices with tail-fitted p-values, ``p_method``, ``excess``, ``z``, BH q-values
    across the tested slices and shares (:func:`shares`), in the same order."""
    out = []
    for s in results:
        if s.tested and s.test is not None and metric in s.test.null_values:
            null = s.test.null_values[metric]
            observed = s.test.observed[metric]
            p, how = tail_p_value(observed, null)
            above, sd = noise_effect(observed, null)
            excess = above - overall_effect
            z = excess / sd if sd > 0 else math.nan
            s = replace(s, p_value=p, p_method=how, excess=excess, z=z)
        out.append(s)
    tested = [i for i, s in enumerate(out) if s.tested]
    q = np.full(len(out), np.nan)
    if tested:
        from scipy.stats import false_discovery_control  # here: scipy.stats is slow to import

        q[tested] = false_discovery_control([out[i].p_value for i in tested], method="bh")
    share = shares(out, metric)
    return [replace(s, q_value=float(q[i]), share=float(share[i])) for i, s in enumerate(out)]


def shares(results: list, metric: str) -> np.ndarray:
    """``weight x metric`` of each slice over its sum across slices (NaN when it is 0)."""
    mass = np.array(
        [
            s.weight * s.report.metrics[metric]
            if s.report is not None and s.report.metrics.get(metric) is not None
            else 0.0
            for s in results
        ]
    )
    total = mass.sum()
    return mass / total if total > 0 else np.full(len(results), np.nan)


def rank_key(s, untested_by: str = "size"):
    """Sort key of a slice (see the module's docstring). ``untested_by``: ``"share"``
    when nothing was tested (``n_resamples=0``), else ``"size"``."""
    share = s.share if np.isfinite(s.share) else 0.0
    if s.tested:
        z = s.z if np.isfinite(s.z) else -math.inf
        if s.q_value <= RANK_LEVEL:
            return (0, -z, s.p_value, -share, s.label)
        # no evidence: z of a slice within its noise is mostly the overall effect over its
        # noise's spread, so these are listed by their evidence (p-value), then by z
        return (1, s.p_value, -z, -share, s.label)
    if untested_by == "share":
        return (2, -share, 0.0, -s.n, s.label)
    return (2, 0.0, 0.0, -s.n, s.label)


#: The isotonic map of each ranking metric's view that stands for "the model's own
#: calibration curve" (normalised outputs, so that labels can be redrawn from them; any row
#: weights are fitted as they are).
MODEL_CURVE = {
    "positive_class_ece": "iso",
    **dict.fromkeys(("top_label_ece", "top_label_ece_l2", "top_label_mce"), "tl-iso"),
    **dict.fromkeys(("conf_ece", "conf_ece_l2", "conf_mce", "debiased_ece", "kde_ece"), "conf-iso"),
    **dict.fromkeys(
        ("classwise_ece", "classwise_ece_l2", "classwise_mce", "ace", "tace", "kde_ece_classwise"),
        "n-iso",
    ),
}
#: Rows of a stream the model's curve is fitted on (a seeded uniform sample): an isotonic
#: map of a million rows is within about 1e-3 of the whole data's, far below the slices'
#: noise.
MODEL_FIT_ROWS = 1_000_000


def fit_model_curve(preds, metric: str, *, seed: int = 0, sample_weight=None):
    """The model's own calibration curve in the view of ``metric``
    (:data:`MODEL_CURVE`), fitted on ``preds`` (a stream: on a seeded sample of
    :data:`MODEL_FIT_ROWS` rows), and a few words on what it was fitted on.

    Fitted on the rows it then maps: a map of the whole data, which a slice of it moves by
    its share of the rows only, so that what it leaves in a slice is what the slice does
    apart from the model (Gupta & Ramdas 2022 read the same residual as the gap a
    top-label calibrator cannot close).
    """
    from calcore.calibrators import make_calibrator
    from calcore.predictions import Predictions

    name = MODEL_CURVE.get(metric, "tl-iso")
    if name == "iso" and len(preds.class_names) != 2:
        name = "tl-iso"
    curve = make_calibrator(name)
    if isinstance(preds, Predictions):
        rows = preds if sample_weight is None else preds.with_sample_weight(sample_weight)
        curve.fit(rows)
        return curve, f"{preds.n_samples:,} evaluated rows"
    sample, n_rows = preds.sample(MODEL_FIT_ROWS, seed=seed)
    curve.fit(sample)
    words = f"{n_rows:,} evaluated rows"
    if sample.n_samples < n_rows:
        words = f"a seeded sample of {sample.n_samples:,} of the {n_rows:,} evaluated rows"
    return curve, words


def beyond_the_curve(sliced, after, *, curve: str, fitted_on: str):
    """``sliced`` with each tested slice's ``excess``, ``z`` and ``beyond_q`` from
    ``after`` (the same slices evaluated after the model's curve), ranked again, with a
    note that says so."""
    found = {s.values: s for s in after.slices}
    slices = []
    for s in sliced.slices:
        a = found.get(s.values)
        if s.tested and a is not None and a.tested:
            s = replace(s, excess=a.excess, z=a.z, beyond_q=a.q_value)
        slices.append(s)
    untested_by = "share" if sliced.n_resamples == 0 else "size"
    new = tuple(sorted(slices, key=lambda s: rank_key(s, untested_by)))
    index = {s.values: j for j, s in enumerate(new)}
    order = tuple(index[s.values] for s in sliced.in_order())  # natural order -> rank
    note = (
        f"Those with q <= {RANK_LEVEL} come first, by z: the slice's error without the noise "
        f"its redrawn values show, after the model's own calibration curve ({curve} fitted on "
        f"{fitted_on}), over the sd of its redrawn values. A slice that only shares the "
        "model's miscalibration ranks as noise, one the model misses keeps its error; "
        "beyond_q is the q-value of that test. p and q say whether the slice is calibrated "
        "at all. Then the other tested slices, by p-value."
    )
    # the raw ranking's sentence described a z this replaces: keep its first part only
    notes = []
    for n in sliced.notes:
        if n.startswith("Slices are tested by") and " Those with q" in n:
            n = n.split(" Those with q")[0]
        notes.append(n)
    return replace(
        sliced,
        slices=new,
        order=order,
        notes=(*notes, note),
        overall_effect=after.overall_effect,
    )

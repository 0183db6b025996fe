"""How far from the truth is each ECE estimator at each sample size? (Simulation-lab core.)"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calcore.foundation.deprecation import renamed_keywords
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import N_REPEATS_FOR_SPREAD
from calcore.foundation.validation import freeze_fields
from calcore.metrics.binned import classwise_ece, confidence_ece, top_label_ece
from calcore.metrics.kde_ece import kde_ece_classwise, kde_ece_confidence
from calcore.simulate._generators import simulate_predictions
from calcore.simulate._truth import true_calibration_errors

__all__ = ["ESTIMATORS", "EstimatorErrors", "estimator_errors", "samples_needed"]

_BINNED = {"confidence": confidence_ece, "top-label": top_label_ece, "class-wise": classwise_ece}
_KDE = {"confidence": kde_ece_confidence, "class-wise": kde_ece_classwise}
_TRUTH = {"confidence": "conf_ece", "top-label": "top_label_ece", "class-wise": "classwise_ece"}
#: Estimator name -> (binning, bins) for the binned ones; "kde" is the KDE-ECE.
ESTIMATORS = {
    "kde": None,
    "equal-width": ("equal-width", 15),
    "equal-mass": ("equal-mass", 15),
    "sturges": ("equal-width", "sturges"),
}


@dataclass(frozen=True, eq=False)
class EstimatorErrors:
    """Errors of ECE estimators against a simulator's true ECE.

    Attributes
    ----------
    view : str
        ``"confidence"``, ``"top-label"`` or ``"class-wise"``.
    estimators : tuple of str
    sizes : ndarray of shape (n_sizes,), int64
    truth : float
        The true ECE of the view (:func:`true_calibration_errors`).
    mean_abs_error, bias, std : ndarray of shape (n_estimators, n_sizes)
        Mean of ``|estimate - truth|``, mean of ``estimate - truth`` and the standard
        deviation of the estimates over the repetitions.
    n_repeats : int

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.mix_n_match_simulator(1)
    >>> errs = calcore.estimator_errors(sim, sizes=(100, 400), estimators=["kde"], n_repeats=3)
    >>> errs.estimators, errs.sizes.tolist(), round(errs.truth, 4), errs.bias.shape
    (('kde',), [100, 400], 0.0263, (1, 2))
    """

    view: str
    estimators: tuple[str, ...]
    sizes: np.ndarray
    truth: float
    mean_abs_error: np.ndarray
    bias: np.ndarray
    std: np.ndarray
    n_repeats: int

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it


def estimator_errors(
    simulator,
    *,
    sizes=(64, 128, 256, 512, 1024),
    view: str = "confidence",
    estimators=("kde", "equal-width", "equal-mass", "sturges"),
    n_repeats: int = 100,
    truth: float | None = None,
    seed: int = 0,
) -> EstimatorErrors:
    """Mean absolute error, bias and spread of ECE estimators over repeated simulated samples.

    Parameters
    ----------
    simulator : DirichletSimulator or MixNMatchSimulator
    sizes : sequence of int
        Evaluation sample sizes ``n`` (each at least 2).
    view : {"confidence", "top-label", "class-wise"}
        Which ECE (l1) is estimated; the truth is the matching field of
        :func:`true_calibration_errors`.
    estimators : sequence of str
        Keys of :data:`ESTIMATORS`: ``"kde"`` (KDE-ECE; not for top-label), 15
        ``"equal-width"`` or ``"equal-mass"`` bins, or ``"sturges"`` (data-dependent
        number of equal-width bins).
    n_repeats : int, default 100
    truth : float, optional
        The true ECE, when already known (skips :func:`true_calibration_errors`).
    seed : int, default 0
        Repetition ``r`` at size ``n`` uses the sample of seed ``seed + 1_000_003 * r + n``.

    Returns
    -------
    EstimatorErrors

    Raises
    ------
    CalcoreError
        Unknown view or estimator, KDE with the top-label view, bad sizes or repeats.

    References
    ----------
    Zhang, Kailkhura, Han (2020), Mix-n-Match, Sec. 5.1 and Fig. 5 (the design of this
    study); Sturges (1926); Nixon et al. (2019), Sec. 2.1 (equal-mass bins).

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.mix_n_match_simulator(1)
    >>> errors = calcore.estimator_errors(
    ...     sim, sizes=(100, 400), estimators=("equal-width", "kde"), n_repeats=3
    ... )
    >>> errors.mean_abs_error.round(4).tolist()  # rows: estimators, columns: sizes
    [[0.0445, 0.006], [0.0457, 0.0149]]
    """
    if view not in _BINNED:
        raise CalcoreError(f"view must be one of {tuple(_BINNED)}; got {view!r}.")
    names = tuple(estimators)
    for name in names:
        if name not in ESTIMATORS:
            raise CalcoreError(f"unknown estimator {name!r}; choose from {tuple(ESTIMATORS)}.")
        if name == "kde" and view not in _KDE:
            raise CalcoreError("the KDE estimator exists for the confidence and class-wise views.")
    sizes = np.asarray(list(sizes), dtype=np.int64)
    if sizes.size == 0 or sizes.min() < 2:
        raise CalcoreError(f"sizes must be integers >= 2; got {sizes.tolist()}.")
    N_REPEATS_FOR_SPREAD.check(n_repeats, "n_repeats")
    if truth is None:
        truth = getattr(true_calibration_errors(simulator, seed=seed), _TRUTH[view])
    est = np.empty((len(names), sizes.size, n_repeats))
    for j, n in enumerate(sizes):
        for r in range(n_repeats):
            preds = simulate_predictions(
                simulator, int(n), seed=seed + 1_000_003 * r + int(n)
            ).preds
            for i, name in enumerate(names):
                if name == "kde":
                    est[i, j, r] = _KDE[view](preds)
                else:
                    binning, bins = ESTIMATORS[name]
                    est[i, j, r] = _BINNED[view](preds, bins=bins, binning=binning)
    err = est - truth
    return EstimatorErrors(
        view,
        names,
        sizes,
        float(truth),
        np.abs(err).mean(axis=2),
        err.mean(axis=2),
        est.std(axis=2, ddof=1),
        int(n_repeats),
    )


@renamed_keywords(level="tolerance")
def samples_needed(errors: EstimatorErrors, tolerance: float) -> dict:
    """Smallest studied ``n`` from which each estimator's mean absolute error stays
    <= ``tolerance``.

    Parameters
    ----------
    errors : EstimatorErrors
        What :func:`estimator_errors` returned.
    tolerance : float
        The largest mean absolute error accepted, in ECE units (e.g. 0.01); an error
        bound, not a confidence level. Until 0.1 called ``level`` (that name still works
        for one release, with a :class:`DeprecationWarning`).

    Returns
    -------
    dict of str to int or None
        ``None`` when the error is above ``tolerance`` at the largest size studied.
    """
    out = {}
    for i, name in enumerate(errors.estimators):
        ok = errors.mean_abs_error[i] <= tolerance
        # the first size after the last failure (errors need not be monotone in n)
        bad = np.flatnonzero(~ok)
        first = 0 if bad.size == 0 else bad[-1] + 1
        out[name] = int(errors.sizes[first]) if first < errors.sizes.size else None
    return out

"""Binary parametric calibrators: Platt scaling [platt] and beta calibration [beta].

Their cores are plain functions (:func:`fit_platt`/:func:`apply_platt`,
:func:`fit_beta`/:func:`apply_beta`) behind the classmethods ``fit_binary`` /
``apply_binary`` that the M2B wrappers call (``tl-platt``, ``cw-beta``, ...); a
2-class :class:`~calcore.Predictions` uses column 1 as the positive score.

References
----------
Platt (2000), "Probabilistic outputs for support vector machines".
Kull, Silva Filho & Flach (2017), "Beta calibration".
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit

from calcore.calibrators import _logistic, _scaling
from calcore.calibrators._base import MAX_ITER, Calibrator, Param
from calcore.calibrators._registry import register
from calcore.calibrators._state import MAX_COEFFICIENT, Flag, Number, Text
from calcore.foundation.errors import CalcoreError, CalcoreWarning
from calcore.foundation.validation import InputContext, check_binary_probs

__all__ = ["PlattScaling", "BetaCalibration", "fit_platt", "apply_platt", "fit_beta", "apply_beta"]


# -- binary building blocks ------------------------------------------------------------------
def _binary_inputs(scores, outcomes=None, *, owner):
    s = check_binary_probs(scores, ctx=InputContext(f"{owner} scores"))[:, 1]
    if outcomes is None:
        return s, None
    y = np.asarray(outcomes)
    if y.shape != s.shape:
        raise CalcoreError(
            f"{owner}: outcomes must have one entry per score ({s.shape[0]}); got shape {y.shape}."
        )
    if y.dtype == bool:
        y = y.astype(np.float64)
    if not np.issubdtype(y.dtype, np.number) or not np.all((y == 0) | (y == 1)):
        raise CalcoreError(f"{owner}: outcomes must be 0/1 (or booleans); got values like {y[:5]}.")
    return s, y.astype(np.float64)


def _logit(s):
    floor = _scaling.PROB_FLOOR
    return np.log(np.maximum(s, floor)) - np.log(np.maximum(1.0 - s, floor))


def _beta_features(s):
    floor = _scaling.PROB_FLOOR
    return np.column_stack([np.log(np.maximum(s, floor)), -np.log(np.maximum(1.0 - s, floor))])


def _fit_facts(res):
    return {"converged": bool(res.success), "iterations": int(res.nit), "message": str(res.message)}


def fit_platt(scores, outcomes, *, prior_correction=False, max_iter=1000, weights=None) -> dict:
    """Platt scaling of binary scores: ``P(y=1 | s) = sigmoid(a logit(s) + b)``.

    Parameters
    ----------
    scores : array_like of shape (n_samples,)
        Scores in [0, 1]; ``logit`` uses ``log(max(s, 1e-300)) - log(max(1 - s, 1e-300))``.
    outcomes : array_like of shape (n_samples,)
        0/1 or booleans.
    prior_correction : bool, default False
        Use Platt's targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` instead of 0/1
        (``N+``, ``N-``: the positives' and negatives' total weight when weighted).
    max_iter : int, default 1000
    weights : array_like of shape (n_samples,), optional
        Positive row weights (frequency weights): the weighted mean log-loss, so integer
        weights fit as the repeated rows do.

    Returns
    -------
    dict
        JSON-able state ``{"a", "b", "converged", "iterations", "message"}``; started at
        the identity ``a = 1, b = 0``.

    References
    ----------
    Platt (2000), "Probabilistic outputs for support vector machines", Eq. 1 and Sec. 2.2.
    """
    s, y = _binary_inputs(scores, outcomes, owner="platt")
    targets = y
    if prior_correction:
        if weights is None:
            n_pos, n_all = y.sum(), y.size
        else:
            w = np.asarray(weights, dtype=np.float64)
            n_pos, n_all = float(w @ y), float(w.sum())
        targets = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_all - n_pos + 2))
    coef, intercept, res = _logistic.fit_binary_logistic(
        _logit(s)[:, None], targets, x0=[1.0, 0.0], max_iter=max_iter, weights=weights
    )
    return {"a": float(coef[0]), "b": intercept, **_fit_facts(res)}


def apply_platt(state: dict, scores) -> np.ndarray:
    """Calibrated probabilities ``sigmoid(a logit(s) + b)`` for a state from :func:`fit_platt`."""
    s, _ = _binary_inputs(scores, owner="platt")
    return expit(state["a"] * _logit(s) + state["b"])


def fit_beta(scores, outcomes, *, monotone=True, max_iter=1000, weights=None) -> dict:
    """Beta calibration: ``sigmoid(a log s - b log(1 - s) + c)``.

    Parameters
    ----------
    scores, outcomes : array_like of shape (n_samples,)
        As in :func:`fit_platt`; logs use the floor 1e-300.
    monotone : bool, default True
        Constrain ``a, b >= 0`` (a non-decreasing map), the constrained MLE
        rather than the paper's "drop the negative feature and refit".
    max_iter : int, default 1000
    weights : array_like of shape (n_samples,), optional
        Positive row weights, as in :func:`fit_platt`.

    Returns
    -------
    dict
        ``{"a", "b", "c", "converged", "iterations", "message"}``; started at the
        identity ``a = b = 1, c = 0``.

    References
    ----------
    Kull, Silva Filho & Flach (2017), "Beta calibration", Eq. 4 and Sec. 3.3.
    """
    s, y = _binary_inputs(scores, outcomes, owner="beta")
    bounds = [(0.0, None), (0.0, None), (None, None)] if monotone else None
    coef, intercept, res = _logistic.fit_binary_logistic(
        _beta_features(s), y, x0=[1.0, 1.0, 0.0], bounds=bounds, max_iter=max_iter, weights=weights
    )
    return {"a": float(coef[0]), "b": float(coef[1]), "c": intercept, **_fit_facts(res)}


def apply_beta(state: dict, scores) -> np.ndarray:
    """Calibrated probabilities for a state from :func:`fit_beta`."""
    s, _ = _binary_inputs(scores, owner="beta")
    return expit(_beta_features(s) @ np.array([state["a"], state["b"]]) + state["c"])


#: A fitted coefficient of a saved Platt or beta state.
_COEFFICIENT = Number(minimum=-MAX_COEFFICIENT, maximum=MAX_COEFFICIENT)
#: What the optimiser reported, kept in the state.
_OPTIMISER_FACTS = {
    "converged": Flag(),
    "iterations": Number(integer=True, minimum=0),
    "message": Text(),
}


class _BinaryScaling(Calibrator):
    """A binary calibrator on column 1 of 2-class predictions; M2B wrappers use the classmethods."""

    family = "parametric"
    binary_only = True
    weighted = True  # the weighted mean log-loss

    @classmethod
    def fit_binary(cls, scores, outcomes, params: dict, weights=None) -> dict:
        raise NotImplementedError

    @classmethod
    def apply_binary(cls, state: dict, scores, params: dict) -> np.ndarray:
        raise NotImplementedError

    def _fit(self, preds):
        state = self.fit_binary(
            preds.probs[:, 1], preds.labels == 1, self._params, weights=preds.sample_weight
        )
        info = {k: state[k] for k in ("converged", "iterations", "message")}
        if not state["converged"]:
            warnings.warn(f"{self.name}: {state['message']}", CalcoreWarning, stacklevel=3)
        return state, info

    def _transform(self, preds, state):
        p1 = self.apply_binary(state, preds.probs[:, 1], self._params)
        return np.column_stack([1.0 - p1, p1]), None


@register
class PlattScaling(_BinaryScaling):
    """Platt scaling (binary), see :func:`fit_platt`; multiclass via ``tl-platt``, ``cw-platt``."""

    name = "platt"
    description = "Platt scaling: logistic regression on the logit of the positive score."
    title = "Platt scaling"
    use = "two parameters: when you have few calibration rows"
    accuracy_preserving = False  # the intercept moves the 0.5 threshold (and a < 0 is allowed)
    parameters = (
        Param("prior_correction", False, "bool", "Platt's smoothed 0/1 targets."),
        MAX_ITER,
    )
    state_fields = {"a": _COEFFICIENT, "b": _COEFFICIENT, **_OPTIMISER_FACTS}

    @classmethod
    def fit_binary(cls, scores, outcomes, params, weights=None):
        return fit_platt(
            scores,
            outcomes,
            prior_correction=params.get("prior_correction", False),
            max_iter=params.get("max_iter", 1000),
            weights=weights,
        )

    @classmethod
    def apply_binary(cls, state, scores, params):
        return apply_platt(state, scores)


@register
class BetaCalibration(_BinaryScaling):
    """Beta calibration (binary), see :func:`fit_beta`; multiclass via ``tl-beta``, ``cw-beta``."""

    name = "beta"
    description = "Beta calibration: logistic regression on log s and -log(1 - s)."
    title = "Beta calibration"
    use = "three parameters: few rows; fits skewed scores better than Platt"
    parameters = (Param("monotone", True, "bool", "Constrain a, b >= 0."), MAX_ITER)
    state_fields = {"a": _COEFFICIENT, "b": _COEFFICIENT, "c": _COEFFICIENT, **_OPTIMISER_FACTS}

    def declared_state(self):
        if not self._params["monotone"]:
            return self.state_fields
        # the monotone fit keeps a, b >= 0: a negative one would reverse the map
        slope = Number(minimum=0.0, maximum=MAX_COEFFICIENT)
        return {**self.state_fields, "a": slope, "b": slope}

    @classmethod
    def fit_binary(cls, scores, outcomes, params, weights=None):
        return fit_beta(
            scores,
            outcomes,
            monotone=params.get("monotone", True),
            max_iter=params.get("max_iter", 1000),
            weights=weights,
        )

    @classmethod
    def apply_binary(cls, state, scores, params):
        return apply_beta(state, scores)

"""Parametric calibrators: TS, ETS, vector/matrix scaling, Dirichlet (ODIR), Platt and beta.

Scores: the multiclass methods work on ``preds.logits`` when present, else on
``log(max(probs, 1e-300))`` (:data:`~calcore.calibrators._scaling.PROB_FLOOR`;
exact zeros become about -690.8 instead of ``-inf``). Platt and beta are binary:
their cores are plain functions (:func:`fit_platt`/:func:`apply_platt`,
:func:`fit_beta`/:func:`apply_beta`) and the classmethods ``fit_binary`` /
``apply_binary`` that the M2B wrappers call; a 2-class :class:`Predictions` uses
column 1 as the positive score.

References
----------
Guo, Pleiss, Sun & Weinberger (2017), "On calibration of modern neural networks" (TS, VS, MS).
Zhang, Kailkhura & Han (2020), "Mix-n-Match", Sec. 3.1, Eq. 5 (ETS).
Kull et al. (2019), "Beyond temperature scaling", Eq. 5 and the ODIR penalty (Dirichlet).
Platt (2000); Kull, Silva Filho & Flach (2017), "Beta calibration".
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, log_softmax, softmax

from calcore._errors import CalcoreError, CalcoreWarning
from calcore._validation import InputContext, check_binary_probs
from calcore.calibrators import _scaling
from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import register

__all__ = [
    "TemperatureScaling",
    "EnsembleTemperatureScaling",
    "VectorScaling",
    "MatrixScaling",
    "DirichletCalibration",
    "PlattScaling",
    "BetaCalibration",
    "fit_platt",
    "apply_platt",
    "fit_beta",
    "apply_beta",
]

_MAX_ITER = Param("max_iter", 1000, "int", "Iteration limit of the optimiser.", minimum=10)


def _temperature_params(default_max=100.0):
    return (
        Param("min_temperature", 0.01, "float", "Lower bound of T.", minimum=1e-6),
        Param("max_temperature", default_max, "float", "Upper bound of T.", maximum=1e6),
    )


def _check_temperature_bounds(owner, params):
    if not params["min_temperature"] < params["max_temperature"]:
        raise CalcoreError(
            f"{owner}: min_temperature ({params['min_temperature']}) must be below "
            f"max_temperature ({params['max_temperature']})."
        )


def _fit_temperature(preds, params, owner):
    fit = _scaling.fit_inverse_temperature(
        _scaling.log_scores(preds),
        preds.labels,
        t_min=params["min_temperature"],
        t_max=params["max_temperature"],
        owner=owner,
    )
    temperature = 1.0 / fit.beta
    info = {
        "temperature": temperature,
        "nll": fit.nll,
        "converged": fit.converged,
        "iterations": fit.iterations,
        "message": fit.message,
        "scores": "logits" if preds.logits is not None else "log(max(probs, 1e-300))",
    }
    if not fit.converged:
        warnings.warn(f"{owner}: temperature search: {fit.message}", CalcoreWarning, stacklevel=3)
    return temperature, info


def _report(owner, res):
    info = {"converged": bool(res.success), "iterations": int(res.nit), "message": str(res.message)}
    info["objective"] = float(res.fun)
    if not res.success:
        warnings.warn(f"{owner}: optimiser did not converge: {res.message}", CalcoreWarning, 3)
    return info


@register
class TemperatureScaling(Calibrator):
    """Temperature scaling: ``softmax(z / T)`` with the NLL-optimal ``T > 0``.

    ``T`` is found by safeguarded Newton on ``beta = 1/T`` (the mean NLL is
    convex in ``beta``; its second derivative is the mean variance of the
    logits under ``softmax(beta z)``, so the optimum is unique) inside the
    bracket ``[1/max_temperature, 1/min_temperature]``. Computed in float64 on
    row blocks. Outputs keep the scaled logits ``z / T`` for composition.

    Parameters
    ----------
    min_temperature, max_temperature : float, default 0.01 and 100
        Allowed range of ``T``; an optimum on a bound raises :class:`CalcoreError`.

    Notes
    -----
    ``fit_info``: ``temperature``, ``nll`` (calibration split, at the returned T),
    ``converged``, ``iterations``, ``message``, ``scores``.

    References
    ----------
    Guo et al. (2017), Sec. 4.2; Zhang et al. (2020), Sec. 3.1; Silva Filho et al.
    (2023), "Classifier calibration: a survey", Sec. 5.1.

    Examples
    --------
    >>> import numpy as np
    >>> from calcore import Predictions
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(500, 3)); y = rng.integers(0, 3, 500)
    >>> ts = TemperatureScaling().fit(Predictions.from_logits(3 * z, y))
    >>> ts.fit_info["temperature"] > 1
    True
    """

    name = "ts"
    family = "parametric"
    description = "Temperature scaling (one temperature, NLL-optimal; keeps the argmax)."
    accuracy_preserving = True
    injective = True  # p -> softmax(log p / T) is one-to-one on the simplex for T > 0
    parameters = _temperature_params()

    def _check_params(self, params):
        _check_temperature_bounds(self.name, params)

    def _fit(self, preds):
        temperature, info = _fit_temperature(preds, self._params, self.name)
        return {"temperature": temperature}, info

    def _transform(self, preds, state):
        z = _scaling.log_scores(preds) / state["temperature"]
        return np.exp(log_softmax(z, axis=1)), z


@register
class EnsembleTemperatureScaling(Calibrator):
    """Ensemble temperature scaling: ``w1 softmax(z/t) + w2 softmax(z) + w3/L``, w on the simplex.

    ``t`` is fitted first (NLL, exactly as :class:`TemperatureScaling`), then ``w``
    with ``t`` fixed: ``loss="mse"`` solves the quadratic programme over the
    simplex exactly (KKT on each face); ``loss="nll"`` uses SLSQP.
    ``softmax(z)`` is ``preds.probs``.

    Accuracy: for a fixed row both softmax terms are strictly increasing in
    ``z_j`` and the uniform term adds the same mass to every class, so the
    argmax is kept whenever ``w1 + w2 > 0`` (ties excepted); the fit refuses
    ``w3 = 1``.

    Parameters
    ----------
    loss : {"mse", "nll"}, default "mse"
        Loss for the weights.
    min_temperature, max_temperature : float
        As in :class:`TemperatureScaling`.

    References
    ----------
    Zhang, Kailkhura & Han (2020), "Mix-n-Match", Sec. 3.1, Eq. 5 and the convex problem below it.
    """

    name = "ets"
    family = "parametric"
    description = "Ensemble temperature scaling (TS, identity and uniform mixed; keeps the argmax)."
    accuracy_preserving = True
    parameters = (
        Param("loss", "mse", "str", "Loss for the ensemble weights.", choices=("mse", "nll")),
        *_temperature_params(),
        _MAX_ITER,
    )

    def _check_params(self, params):
        _check_temperature_bounds(self.name, params)

    def _fit(self, preds):
        temperature, info = _fit_temperature(preds, self._params, self.name)
        p_t = softmax(_scaling.log_scores(preds) / temperature, axis=1)
        if self._params["loss"] == "mse":
            w, loss = _scaling.ets_weights_mse(p_t, preds.probs, preds.labels)
            info.update(weights_converged=True, weights_message="exact QP over the simplex")
        else:
            w, res = _scaling.ets_weights_nll(p_t, preds.probs, preds.labels, **self._max_iter())
            loss = float(res.fun)
            info.update(weights_converged=bool(res.success), weights_message=str(res.message))
        if w[0] + w[1] <= 0:
            raise CalcoreError(
                "ets: the best weights put all mass on the uniform prediction (w3 = 1), which "
                "would erase the ranking; the scores carry no usable information."
            )
        info.update(weights=w.tolist(), weights_loss=loss)
        return {"temperature": temperature, "weights": w.tolist()}, info

    def _max_iter(self):
        return {"max_iter": self._params["max_iter"]}

    def _transform(self, preds, state):
        w1, w2, w3 = state["weights"]
        probs = w1 * softmax(_scaling.log_scores(preds) / state["temperature"], axis=1)
        probs += w2 * preds.probs
        probs += w3 / preds.n_classes
        return probs, None


class _AffineScaling(Calibrator):
    """``softmax(x W^T + b)`` on scores ``x``, fitted by penalised NLL from ``W = I, b = 0``."""

    family = "parametric"
    diagonal = False
    features = "logits"  # or "log-probs"

    def _penalty(self, n_classes) -> dict:
        raise NotImplementedError

    def _features(self, preds):
        if self.features == "log-probs" and preds.logits is not None:
            return log_softmax(preds.logits, axis=1)
        return _scaling.log_scores(preds)

    def _fit(self, preds):
        w, b, res = _scaling.fit_affine_softmax(
            self._features(preds),
            preds.labels,
            diagonal=self.diagonal,
            max_iter=self._params["max_iter"],
            **self._penalty(preds.n_classes),
        )
        return {"weights": w, "bias": b}, _report(self.name, res)

    def _transform(self, preds, state):
        z = _scaling.affine_logits(self._features(preds), state["weights"], state["bias"])
        return np.exp(log_softmax(z, axis=1)), z


@register
class VectorScaling(_AffineScaling):
    """Vector scaling: ``softmax(a * z + b)`` with one scale and one bias per class.

    Parameters
    ----------
    reg : float, default 0
        L2 penalty ``reg * (sum_j (a_j - 1)^2 + sum_j b_j^2)`` (towards "no change").
    max_iter : int, default 1000
        L-BFGS-B iteration limit.

    References
    ----------
    Guo et al. (2017), Sec. 4.2 ("vector scaling").
    """

    name = "vs"
    description = "Vector scaling (per-class scale and bias on the logits)."
    diagonal = True
    parameters = (
        Param("reg", 0.0, "float", "L2 penalty towards a=1, b=0.", minimum=0.0),
        _MAX_ITER,
    )

    def _penalty(self, n_classes):
        reg = self._params["reg"]
        return {"off_weight": 0.0, "diag_weight": reg, "bias_weight": reg}


@register
class MatrixScaling(_AffineScaling):
    """Matrix scaling: ``softmax(W z + b)`` with a full ``W``.

    Parameters
    ----------
    reg : float, default 1e-4
        L2 penalty ``reg * (||W - I||_F^2 + ||b||^2)``: shrinks towards "no
        change" rather than towards ``W = 0`` (which would be the uniform map).
    max_iter : int, default 1000

    References
    ----------
    Guo et al. (2017), Sec. 4.2 ("matrix scaling").
    """

    name = "ms"
    description = "Matrix scaling (full linear map of the logits, L2 towards identity)."
    parameters = (
        Param("reg", 1e-4, "float", "L2 penalty towards W=I, b=0.", minimum=0.0),
        _MAX_ITER,
    )

    def _penalty(self, n_classes):
        reg = self._params["reg"]
        return {"off_weight": reg, "diag_weight": reg, "bias_weight": reg}


@register
class DirichletCalibration(_AffineScaling):
    """Dirichlet calibration with ODIR: ``softmax(W log p + b)``.

    Penalty added to the mean NLL (Kull et al. 2019, Sec. 4, "ODIR"):
    ``reg_lambda / (L (L - 1)) * sum_{i != j} W_ij^2 + reg_mu / L * sum_j b_j^2``.
    ``log p`` is ``log_softmax(logits)`` when logits are present, else
    ``log(max(p, 1e-300))``.

    Parameters
    ----------
    reg_lambda : float, default 1.0
        Off-diagonal penalty. Kull et al. choose it by cross-validation; the
        default is a moderate value: with 100 classes and 5,000 calibration rows,
        1e-3 overfits badly (held-out NLL worse than before) and needs about 900
        L-BFGS iterations, while 1.0 converges in about 250 (see the benchmark).
    reg_mu : float, default 1.0
        Intercept penalty.
    max_iter : int, default 1000

    References
    ----------
    Kull et al. (2019), Eq. (5) for the map, Sec. 4 for ODIR; Silva Filho et al.
    (2023), Eq. (5).
    """

    name = "dirichlet"
    description = "Dirichlet calibration with off-diagonal and intercept regularisation."
    features = "log-probs"
    parameters = (
        Param("reg_lambda", 1.0, "float", "ODIR off-diagonal penalty.", minimum=0.0),
        Param("reg_mu", 1.0, "float", "ODIR intercept penalty.", minimum=0.0),
        _MAX_ITER,
    )

    def _penalty(self, n_classes):
        off = self._params["reg_lambda"] / (n_classes * (n_classes - 1))
        return {
            "off_weight": off,
            "diag_weight": 0.0,
            "bias_weight": self._params["reg_mu"] / n_classes,
        }


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


def fit_platt(scores, outcomes, *, prior_correction=False, max_iter=1000) -> dict:
    """Platt scaling of binary scores: ``P(y=1 | s) = sigmoid(a logit(s) + b)``.

    Parameters
    ----------
    scores : array_like of shape (n_samples,)
        Scores in [0, 1]; ``logit`` uses ``log(max(s, 1e-300)) - log(max(1 - s, 1e-300))``.
    outcomes : array_like of shape (n_samples,)
        0/1 or booleans.
    prior_correction : bool, default False
        Use Platt's targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` instead of 0/1.
    max_iter : int, default 1000

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
        n_pos = y.sum()
        targets = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (y.size - n_pos + 2))
    coef, intercept, res = _scaling.fit_binary_logistic(
        _logit(s)[:, None], targets, x0=[1.0, 0.0], max_iter=max_iter
    )
    return {"a": float(coef[0]), "b": intercept, **_fit_facts(res)}


def apply_platt(state: dict, scores) -> np.ndarray:
    """Calibrated probabilities ``sigmoid(a logit(s) + b)`` for a state from :func:`fit_platt`."""
    s, _ = _binary_inputs(scores, owner="platt")
    return expit(state["a"] * _logit(s) + state["b"])


def fit_beta(scores, outcomes, *, monotone=True, max_iter=1000) -> dict:
    """Beta calibration: ``sigmoid(a log s - b log(1 - s) + c)``.

    Parameters
    ----------
    scores, outcomes : array_like of shape (n_samples,)
        As in :func:`fit_platt`; logs use the floor 1e-300.
    monotone : bool, default True
        Constrain ``a, b >= 0`` (a non-decreasing map), the constrained MLE
        rather than the paper's "drop the negative feature and refit".
    max_iter : int, default 1000

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
    coef, intercept, res = _scaling.fit_binary_logistic(
        _beta_features(s), y, x0=[1.0, 1.0, 0.0], bounds=bounds, max_iter=max_iter
    )
    return {"a": float(coef[0]), "b": float(coef[1]), "c": intercept, **_fit_facts(res)}


def apply_beta(state: dict, scores) -> np.ndarray:
    """Calibrated probabilities for a state from :func:`fit_beta`."""
    s, _ = _binary_inputs(scores, owner="beta")
    return expit(_beta_features(s) @ np.array([state["a"], state["b"]]) + state["c"])


class _BinaryScaling(Calibrator):
    """A binary calibrator on column 1 of 2-class predictions; M2B wrappers use the classmethods."""

    family = "parametric"
    binary_only = True

    @classmethod
    def fit_binary(cls, scores, outcomes, params: dict) -> dict:
        raise NotImplementedError

    @classmethod
    def apply_binary(cls, state: dict, scores, params: dict) -> np.ndarray:
        raise NotImplementedError

    def _fit(self, preds):
        state = self.fit_binary(preds.probs[:, 1], preds.labels == 1, self._params)
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
    accuracy_preserving = False  # the intercept moves the 0.5 threshold (and a < 0 is allowed)
    parameters = (
        Param("prior_correction", False, "bool", "Platt's smoothed 0/1 targets."),
        _MAX_ITER,
    )

    @classmethod
    def fit_binary(cls, scores, outcomes, params):
        return fit_platt(
            scores,
            outcomes,
            prior_correction=params.get("prior_correction", False),
            max_iter=params.get("max_iter", 1000),
        )

    @classmethod
    def apply_binary(cls, state, scores, params):
        return apply_platt(state, scores)


@register
class BetaCalibration(_BinaryScaling):
    """Beta calibration (binary), see :func:`fit_beta`; multiclass via ``tl-beta``, ``cw-beta``."""

    name = "beta"
    description = "Beta calibration: logistic regression on log s and -log(1 - s)."
    parameters = (Param("monotone", True, "bool", "Constrain a, b >= 0."), _MAX_ITER)

    @classmethod
    def fit_binary(cls, scores, outcomes, params):
        return fit_beta(
            scores,
            outcomes,
            monotone=params.get("monotone", True),
            max_iter=params.get("max_iter", 1000),
        )

    @classmethod
    def apply_binary(cls, state, scores, params):
        return apply_beta(state, scores)

"""Temperature scaling [ts] and ensemble temperature scaling [ets].

Scores: ``preds.logits`` when present, else ``log(max(probs, 1e-300))``
(:data:`~calcore.calibrators._scaling.PROB_FLOOR`; exact zeros become about
-690.8 instead of ``-inf``). The 1-D temperature search and the ensemble weights
live in :mod:`calcore.calibrators._scaling`.

References
----------
Guo, Pleiss, Sun & Weinberger (2017), "On calibration of modern neural networks" (TS).
Zhang, Kailkhura & Han (2020), "Mix-n-Match", Sec. 3.1, Eq. 5 (ETS).
"""

from __future__ import annotations

import warnings

import numpy as np

from calcore.calibrators import _scaling
from calcore.calibrators._base import MAX_ITER, Calibrator, Param
from calcore.calibrators._registry import register
from calcore.calibrators._state import Array, Number, StateError
from calcore.foundation.errors import CalcoreError, CalcoreWarning
from calcore.foundation.softmax import log_softmax_rows

__all__ = ["TemperatureScaling", "EnsembleTemperatureScaling"]


def _temperature_params(default_max=100.0):
    return (
        # 1e-6 .. 1e6: beyond, z / T under- or overflows for ordinary logits
        Param("min_temperature", 0.01, "float", "Lower bound of T.", minimum=1e-6, maximum=1e6),
        Param(
            "max_temperature",
            default_max,
            "float",
            "Upper bound of T.",
            minimum=1e-6,
            maximum=1e6,
        ),  # fmt: skip
    )


#: A saved temperature: within the parameters' bounds (a negative one would invert every
#: ranking, an infinite one erase it).
TEMPERATURE = Number(minimum="min_temperature", maximum="max_temperature")


def _check_temperature_bounds(owner, params):
    if not params["min_temperature"] < params["max_temperature"]:
        raise CalcoreError(
            f"{owner}: min_temperature ({params['min_temperature']}) must be below "
            f"max_temperature ({params['max_temperature']})."
        )


def _fit_temperature(preds, params, owner):
    """The NLL-optimal temperature and a fit-info dict that says how it was found.

    An optimum beyond ``min_temperature``/``max_temperature`` is clamped to that bound
    (``at_bound``: True, ``bound``: the parameter's name, ``message``: why) and a
    :class:`CalcoreWarning` says so; constant score rows give ``T = 1`` with a message.
    """
    fit = _scaling.fit_inverse_temperature(
        _scaling.log_scores(preds),
        preds.labels,
        t_min=params["min_temperature"],
        t_max=params["max_temperature"],
        owner=owner,
        weights=preds.sample_weight,
    )
    temperature = 1.0 / fit.beta
    info = {
        "temperature": temperature,
        "nll": fit.nll,
        "converged": fit.converged,
        "iterations": fit.iterations,
        "message": fit.message,
        "at_bound": fit.at_bound is not None,
        "bound": fit.at_bound,
        "scores": "logits" if preds.logits is not None else "log(max(probs, 1e-300))",
    }
    if fit.at_bound is not None:
        warnings.warn(f"{owner}: {fit.message}", CalcoreWarning, stacklevel=4)
    elif not fit.converged:
        warnings.warn(f"{owner}: temperature search: {fit.message}", CalcoreWarning, stacklevel=4)
    return temperature, info


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
        Allowed range of ``T``. When the NLL still decreases at a bound (separable
        calibration data push ``T`` towards 0, scores without signal towards infinity)
        ``T`` is clamped to that bound, ``fit_info`` says so and a
        :class:`~calcore.CalcoreWarning` is issued; it is not an error.

    Notes
    -----
    ``fit_info``: ``temperature``, ``nll`` (calibration split, at the returned T),
    ``converged``, ``iterations``, ``message`` (e.g. "temperature hit the upper bound
    100 ...; T clamped to 100"), ``at_bound`` (bool), ``bound`` (``"min_temperature"``,
    ``"max_temperature"`` or None), ``scores``. Score rows that are all constant (the
    likelihood does not depend on ``T``) give ``T = 1`` with a message saying so.

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
    title = "Temperature scaling"
    use = "one parameter: keeps accuracy, works with few calibration rows"
    weighted = True  # the weighted mean NLL
    accuracy_preserving = True
    injective = True  # p -> softmax(log p / T) is one-to-one on the simplex for T > 0
    parameters = _temperature_params()
    state_fields = {"temperature": TEMPERATURE}

    def _check_params(self, params):
        _check_temperature_bounds(self.name, params)

    def _fit(self, preds):
        temperature, info = _fit_temperature(preds, self._params, self.name)
        return {"temperature": temperature}, info

    def _transform(self, preds, state):
        z = _scaling.log_scores(preds) / state["temperature"]
        probs = log_softmax_rows(z)  # scipy.special.log_softmax, in row blocks
        return np.exp(probs, out=probs), z


@register
class EnsembleTemperatureScaling(Calibrator):
    """Ensemble temperature scaling: ``w1 softmax(z/t) + w2 softmax(z) + w3/L``, w on the simplex.

    ``t`` is fitted first (NLL, exactly as :class:`TemperatureScaling`), then ``w``
    with ``t`` fixed: ``loss="mse"`` solves the quadratic programme over the
    simplex exactly (KKT on each face); ``loss="nll"`` uses SLSQP.
    ``softmax(z)`` is ``preds.probs``. Both losses need only a few sums over
    ``softmax(z/t)``, gathered on row blocks (see ``_scaling.ets_statistics``), so
    that matrix is never stored whole.

    Accuracy: for a fixed row both softmax terms are strictly increasing in
    ``z_j`` and the uniform term adds the same mass to every class, so the
    argmax is kept whenever ``w1 + w2 > 0`` (ties excepted); the fit refuses
    ``w3 = 1``.

    Parameters
    ----------
    loss : {"mse", "nll"}, default "mse"
        Loss for the weights.
    min_temperature, max_temperature : float
        As in :class:`TemperatureScaling` (an optimum beyond a bound is clamped and
        reported in ``fit_info``, as there).

    References
    ----------
    Zhang, Kailkhura & Han (2020), "Mix-n-Match", Sec. 3.1, Eq. 5 and the convex problem below it.
    """

    name = "ets"
    family = "parametric"
    description = "Ensemble temperature scaling (TS, identity and uniform mixed; keeps the argmax)."
    title = "Ensemble temperature scaling"
    use = "temperature scaling mixed with the uniform: keeps accuracy, few rows"
    accuracy_preserving = True
    parameters = (
        Param("loss", "mse", "str", "Loss for the ensemble weights.", choices=("mse", "nll")),
        *_temperature_params(),
        MAX_ITER,
    )
    state_fields = {
        "temperature": TEMPERATURE,
        "weights": Array((3,), minimum=0.0, maximum=1.0, sums_to_one=True),
    }

    def _check_params(self, params):
        _check_temperature_bounds(self.name, params)

    def _check_saved_rules(self, state, *, path, n_classes):
        w = state["weights"]
        if w[0] + w[1] <= 0:  # the fit refuses it: all mass on the uniform erases the ranking
            raise StateError(f"{path}.weights", "must put some weight on the two softmax terms")

    def _fit(self, preds):
        temperature, info = _fit_temperature(preds, self._params, self.name)
        stats = _scaling.ets_statistics(
            _scaling.log_scores(preds), preds.probs, preds.labels, temperature
        )
        if self._params["loss"] == "mse":
            w, loss = _scaling.ets_weights_mse(stats)
            info.update(weights_converged=True, weights_message="exact QP over the simplex")
        else:
            w, res = _scaling.ets_weights_nll(stats, max_iter=self._params["max_iter"])
            loss = float(res.fun)
            info.update(weights_converged=bool(res.success), weights_message=str(res.message))
        if w[0] + w[1] <= 0:
            raise CalcoreError(
                "ets: the best weights put all mass on the uniform prediction (w3 = 1), which "
                "would erase the ranking; the scores carry no usable information."
            )
        info.update(weights=w.tolist(), weights_loss=loss)
        return {"temperature": temperature, "weights": w.tolist()}, info

    def _transform(self, preds, state):
        probs = _scaling.ets_probabilities(
            _scaling.log_scores(preds), preds.probs, state["temperature"], state["weights"]
        )
        return probs, None

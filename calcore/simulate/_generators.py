"""Seeded fake classifiers: Dirichlet predictions with a known map, and the Mix-n-Match problem."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logsumexp

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import ROWS
from calcore.foundation.validation import freeze_fields, frozen_array
from calcore.predictions import Predictions
from calcore.simulate._accuracy import concentration_for_accuracy
from calcore.simulate._maps import TrueCalibrationMap, true_calibration_map

__all__ = [
    "DirichletSimulator",
    "MixNMatchSimulator",
    "Simulation",
    "MIX_N_MATCH_CASES",
    "concentration_for_accuracy",
    "dirichlet_simulator",
    "mix_n_match_simulator",
    "simulate_predictions",
]

#: The two settings (beta0, beta1) of Mix-n-Match Sec. 5.1: 1 less calibrated, 2 better calibrated.
MIX_N_MATCH_CASES = {1: (0.5, -1.5), 2: (0.2, -1.9)}

_CHUNK = 100_000  # rows per block when sampling


@dataclass(frozen=True, eq=False)
class DirichletSimulator:
    """Predictions ``p ~ Dirichlet(alpha)``, labels ``y ~ Categorical(true_map(p))``.

    Attributes
    ----------
    alpha : ndarray of shape (n_classes,), float64
        Dirichlet concentrations; small values give confident (sharp) predictions.
    true_map : TrueCalibrationMap
        The calibration map ``pi``: ``P(Y = l | p) = pi(p)_l``.
    target_accuracy : float or None
        The accuracy asked for when ``alpha`` was solved by :func:`concentration_for_accuracy`.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(3, miscalibration="overconfident", concentration=0.5)
    >>> sim.n_classes, sim.alpha.tolist(), sim.true_map.kind
    (3, [0.5, 0.5, 0.5], 'overconfident')
    >>> calcore.simulate_predictions(sim, 4, seed=0).preds.probs.shape
    (4, 3)
    """

    alpha: np.ndarray
    true_map: TrueCalibrationMap
    target_accuracy: float | None = None

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def n_classes(self) -> int:
        return int(self.alpha.shape[0])

    def sample_log_probs(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``log p`` for ``n`` draws, shape (n, n_classes)."""
        return log_dirichlet(self.alpha, n, rng)


@dataclass(frozen=True, eq=False)
class MixNMatchSimulator:
    """The synthetic binary problem of Mix-n-Match, App. E.1 (Eq. 13-14).

    ``Y`` uniform on two classes; ``X | class 0 ~ N(-1, 1)``, ``X | class 1 ~ N(1, 1)``
    (the paper's ``Y_1`` is class 0 here). The model predicts
    ``z_1 = 1 / (1 + exp(-beta0 - beta1 x))`` for class 0, and the truth is
    ``pi_1(z) = 1 / (1 + exp(2x))`` with ``x`` recovered from ``z_1``.

    Attributes
    ----------
    beta0, beta1 : float
        Model parameters; ``(0, -2)`` is perfectly calibrated.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.mix_n_match_simulator(1)
    >>> sim.beta0, sim.beta1, sim.n_classes
    (0.5, -1.5, 2)
    >>> calcore.MixNMatchSimulator(0.0, -2.0).true_probability([0.2, 0.7]).round(4).tolist()
    [0.2, 0.7]
    """

    beta0: float
    beta1: float

    @property
    def n_classes(self) -> int:
        return 2

    def true_probability(self, z1) -> np.ndarray:
        """``pi_1(z)`` of Eq. 14 for class-0 scores ``z1`` in (0, 1)."""
        z1 = np.asarray(z1, dtype=np.float64)
        with np.errstate(divide="ignore"):
            logit = np.log(z1) - np.log1p(-z1)
        return expit(2.0 * (self.beta0 - logit) / self.beta1)


@dataclass(frozen=True, eq=False)
class Simulation:
    """One seeded draw from a simulator.

    Attributes
    ----------
    preds : Predictions
        Predicted probabilities (with logits) and the sampled labels.
    true_probs : ndarray of shape (n_samples, n_classes), float64
        ``pi(p)``: the true class probabilities given each prediction; the labels
        were drawn from them.
    simulator : DirichletSimulator or MixNMatchSimulator
    seed : int

    Examples
    --------
    >>> import calcore
    >>> draw = calcore.simulate_predictions(calcore.dirichlet_simulator(3), 5, seed=0)
    >>> draw.preds.n_samples, draw.true_probs.shape, draw.seed
    (5, (5, 3), 0)
    >>> draw.true_correct_prob.shape
    (5,)
    """

    preds: Predictions
    true_probs: np.ndarray
    simulator: object
    seed: int

    @property
    def true_correct_prob(self) -> np.ndarray:
        """``P(Y = argmax p | p)`` per row."""
        return self.true_probs[np.arange(self.preds.n_samples), self.preds.predicted]


def log_dirichlet(alpha: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``log`` of ``n`` Dirichlet(alpha) vectors without underflow for small ``alpha``.

    Uses ``Gamma(a) = Gamma(a + 1) * U ** (1 / a)`` (Marsaglia and Tsang 2000, Sec. 6),
    so ``log G = log Gamma(a + 1) + log(U) / a`` is finite even when ``G`` underflows.
    """
    a = np.asarray(alpha, dtype=np.float64)
    g = rng.standard_gamma(a + 1.0, size=(n, a.shape[0]))
    u = 1.0 - rng.random((n, a.shape[0]))  # in (0, 1]
    log_g = np.log(g) + np.log(u) / a
    return log_g - logsumexp(log_g, axis=1, keepdims=True)


def _check_n(n) -> int:
    return ROWS.check(n, "n")


def _draw_labels(true_probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(true_probs.shape[0])
    labels = (u[:, None] > np.cumsum(true_probs, axis=1)).sum(axis=1)
    return np.minimum(labels, true_probs.shape[1] - 1)


def simulate_predictions(simulator, n: int, *, seed: int = 0) -> Simulation:
    """Draw ``n`` predictions and labels from a simulator, deterministically for ``seed``.

    Parameters
    ----------
    simulator : DirichletSimulator or MixNMatchSimulator
    n : int
        Number of samples.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the same seed gives identical arrays.

    Returns
    -------
    Simulation

    References
    ----------
    Overview paper, Sec. 6 (fake classifiers); Zhang, Kailkhura, Han (2020),
    Mix-n-Match, ICML, App. E.1, Eq. 13-14.

    Examples
    --------
    >>> sim = simulate_predictions(mix_n_match_simulator(1), 5, seed=0)
    >>> sim.preds.probs.shape, sim.true_probs.shape
    ((5, 2), (5, 2))
    """
    n = _check_n(n)
    rng = np.random.default_rng(seed)
    if isinstance(simulator, MixNMatchSimulator):
        labels = rng.integers(0, 2, size=n)
        x = rng.standard_normal(n) + np.where(labels == 0, -1.0, 1.0)
        s = simulator.beta0 + simulator.beta1 * x
        logits = np.column_stack([s, np.zeros(n)])
        pi1 = expit(-2.0 * x)
        true_probs = np.column_stack([pi1, 1.0 - pi1])
    elif isinstance(simulator, DirichletSimulator):
        logits = simulator.sample_log_probs(n, rng)
        true_probs = np.exp(simulator.true_map.log_apply(logits))
        labels = _draw_labels(true_probs, rng)
    else:
        raise CalcoreError(
            "simulator must be a DirichletSimulator or MixNMatchSimulator; "
            f"got {type(simulator)!r}."
        )
    preds = Predictions.from_logits(logits, labels, source="simulate")
    return Simulation(preds, frozen_array(true_probs, owned=True), simulator, int(seed))


def mix_n_match_simulator(case: int = 1, *, beta0=None, beta1=None) -> MixNMatchSimulator:
    """The Mix-n-Match synthetic problem: ``case`` 1 ``(0.5, -1.5)`` or 2 ``(0.2, -1.9)``.

    Parameters
    ----------
    case : {1, 2}, default 1
    beta0, beta1 : float, optional
        Explicit parameters (override ``case``); ``beta1`` must be non-zero.

    References
    ----------
    Zhang, Kailkhura, Han (2020), Mix-n-Match, ICML, Sec. 5.1 and App. E.1.

    Examples
    --------
    >>> import calcore
    >>> calcore.mix_n_match_simulator(2)
    MixNMatchSimulator(beta0=0.2, beta1=-1.9)
    >>> calcore.mix_n_match_simulator(beta0=0.0, beta1=-2.0)  # perfectly calibrated
    MixNMatchSimulator(beta0=0.0, beta1=-2.0)
    """
    if beta0 is None and beta1 is None:
        if case not in MIX_N_MATCH_CASES:
            raise CalcoreError(f"case must be 1 or 2; got {case!r}.")
        beta0, beta1 = MIX_N_MATCH_CASES[case]
    b0, b1 = float(0.0 if beta0 is None else beta0), float(-2.0 if beta1 is None else beta1)
    if not (np.isfinite(b0) and np.isfinite(b1)) or b1 == 0.0:
        raise CalcoreError(f"beta0 must be finite and beta1 finite and non-zero; got {b0}, {b1}.")
    return MixNMatchSimulator(b0, b1)


def dirichlet_simulator(
    n_classes: int,
    *,
    miscalibration: str = "overconfident",
    strength: float = 1.0,
    concentration=None,
    accuracy: float | None = None,
    true_map: TrueCalibrationMap | None = None,
) -> DirichletSimulator:
    """A Dirichlet fake classifier with adjustable accuracy and miscalibration.

    Parameters
    ----------
    n_classes : int
        At least 2.
    miscalibration : str, default "overconfident"
        A ``kind`` of :func:`true_calibration_map`.
    strength : float, default 1.0
        Its ``strength``.
    concentration : float or array_like of shape (n_classes,), optional
        Dirichlet ``alpha`` (a scalar means symmetric). Default 1 (uniform on the
        simplex) unless ``accuracy`` is given.
    accuracy : float, optional
        Target accuracy; solves a symmetric concentration with
        :func:`concentration_for_accuracy`. Exclusive with ``concentration``.
    true_map : TrueCalibrationMap, optional
        An explicit map (overrides ``miscalibration`` and ``strength``).

    Returns
    -------
    DirichletSimulator

    References
    ----------
    Overview paper (Silva Filho et al. 2023), Sec. 6; Kull et al. (2019), "Beyond
    temperature scaling", Sec. 3 (Dirichlet-distributed probability vectors).

    Examples
    --------
    >>> sim = dirichlet_simulator(10, miscalibration="overconfident", concentration=0.3)
    >>> simulate_predictions(sim, 1000, seed=1).preds.n_classes
    10
    """
    m = true_map or true_calibration_map(n_classes, kind=miscalibration, strength=strength)
    if m.n_classes != n_classes:
        raise CalcoreError(f"true_map has {m.n_classes} classes; n_classes is {n_classes}.")
    if accuracy is not None and concentration is not None:
        raise CalcoreError("Give either concentration or accuracy, not both.")
    if accuracy is not None:
        concentration = concentration_for_accuracy(accuracy, m)
    alpha = np.broadcast_to(
        np.asarray(1.0 if concentration is None else concentration, dtype=np.float64),
        (n_classes,),
    ).copy()
    if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise CalcoreError(f"concentration must be finite and > 0; got {concentration!r}.")
    return DirichletSimulator(alpha, m, None if accuracy is None else float(accuracy))

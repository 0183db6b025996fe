"""Ground-truth calibration errors and reliability curves of the simulators."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import CountLimit
from calcore.foundation.validation import freeze_fields
from calcore.simulate._dirichlet_truth import dirichlet_errors, dirichlet_reliability
from calcore.simulate._generators import DirichletSimulator, MixNMatchSimulator
from calcore.simulate._mixnmatch import (
    mix_n_match_accuracy,
    mix_n_match_conf_ece,
    mix_n_match_true_ece,
    mixnmatch_density,
)

__all__ = [
    "TrueCalibrationErrors",
    "TrueReliabilityCurve",
    "true_calibration_errors",
    "true_reliability_curve",
]

ERROR_NAMES = (
    "accuracy",
    "conf_ece",
    "top_label_ece",
    "classwise_ece",
    "canonical_ece_l1",
    "canonical_ece_l2",
)


@dataclass(frozen=True)
class TrueCalibrationErrors:
    """Population values of a simulator's accuracy and calibration errors.

    Attributes
    ----------
    accuracy : float
        ``P(Y = argmax p)``.
    conf_ece : float
        ``E |h - P(Y = c | h)|`` with ``h = max p``, ``c = argmax p``.
    top_label_ece : float
        ``E |h - P(Y = c | c, h)|`` (Gupta & Ramdas 2022, Eq. 4).
    classwise_ece : float
        ``(1/L) sum_l E |p_l - P(Y = l | p_l)|``.
    canonical_ece_l1 : float
        ``E ||p - pi(p)||_1``, ``pi(p) = P(Y = . | p)`` (Mix-n-Match Eq. 2, ``d = 1``).
    canonical_ece_l2 : float
        ``sqrt(E ||p - pi(p)||_2^2)`` (Mix-n-Match Eq. 2, ``d = 2``, rooted).
    standard_errors : dict of str to float
        Monte Carlo standard error of each value above (0 for pure quadrature).
    methods : dict of str to str
        How each value was computed.

    Examples
    --------
    >>> import calcore
    >>> truth = calcore.true_calibration_errors(calcore.mix_n_match_simulator(1))
    >>> round(truth.top_label_ece, 4), round(truth.canonical_ece_l1, 4)  # l1 is twice TL here
    (0.0744, 0.1489)
    >>> round(truth.conf_ece, 4), truth.standard_errors["conf_ece"]  # exact quadrature
    (0.0263, 0.0)
    """

    accuracy: float
    conf_ece: float
    top_label_ece: float
    classwise_ece: float
    canonical_ece_l1: float
    canonical_ece_l2: float
    standard_errors: dict = field(default_factory=dict)
    methods: dict = field(default_factory=dict)

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    def as_dict(self) -> dict:
        """Values and standard errors as plain floats (JSON-ready)."""
        out = {k: getattr(self, k) for k in ERROR_NAMES}
        out.update({f"{k}_se": self.standard_errors[k] for k in ERROR_NAMES})
        return out


def _check_positive_int(value, name: str, minimum: int = 1) -> int:
    return CountLimit(minimum).check(value, name)


def true_calibration_errors(
    simulator,
    *,
    n_inner: int = 2048,
    n_batches: int = 8,
    panels: int = 128,
    n_monte_carlo: int = 1_000_000,
    seed: int = 0,
) -> TrueCalibrationErrors:
    """True accuracy, conf-ECE, TL-ECE, CW-ECE and canonical l1/l2 ECE of a simulator.

    Parameters
    ----------
    simulator : DirichletSimulator or MixNMatchSimulator
    n_inner : int, default 2048
        Dirichlet simulators: Monte Carlo draws of the non-conditioned coordinates at
        each quadrature node (shared by all nodes). With the default 1024 nodes this
        evaluates the calibration map at over 2 * 10^6 points per class.
    n_batches : int, default 8
        The inner draws are split into this many batches; the standard error is the
        spread of the per-batch estimates divided by ``sqrt(n_batches)``.
    panels : int, default 128
        Composite 8-point Gauss-Legendre panels of the outer integrals.
    n_monte_carlo : int, default 1_000_000
        Plain Monte Carlo draws for the canonical errors and the accuracy (Dirichlet).
    seed : int, default 0

    Returns
    -------
    TrueCalibrationErrors

    Notes
    -----
    Mix-n-Match problem: everything is a one-dimensional integral over the input
    ``x`` with the closed-form ``pi_1`` of Eq. 14, done by adaptive quadrature split
    at the kinks (standard errors 0). TL-ECE and CW-ECE equal ``E|z_1 - pi_1(z)|``,
    the canonical l1 error is twice that, and the confidence ECE is smaller (it
    merges the two inputs with equal confidence).

    Dirichlet simulators: conf/TL/CW-ECE by quadrature over the conditioning score
    with an inner Monte Carlo over the other coordinates (see
    :mod:`calcore.simulate._dirichlet_truth`); the accuracy and the canonical errors
    by plain Monte Carlo over ``n_monte_carlo`` draws. For two classes the inner
    expectation is exact and so are all three binned-ECE targets. Classes that are
    exchangeable (symmetric ``alpha``, global map) are computed once.

    References
    ----------
    Zhang, Kailkhura, Han (2020), Mix-n-Match, ICML, Eq. 2 and App. E.1.
    Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
    reductions", ICLR, Sec. 2-3 (conf-, TL- and CW-ECE).
    Overview paper (Silva Filho et al. 2023), Sec. 6 (fake classifiers).

    Examples
    --------
    >>> from calcore.simulate import mix_n_match_simulator
    >>> t = true_calibration_errors(mix_n_match_simulator(2))
    >>> round(t.top_label_ece, 5), t.standard_errors["top_label_ece"]
    (0.02346, 0.0)
    """
    if isinstance(simulator, MixNMatchSimulator):
        gap1 = mix_n_match_true_ece(simulator, order=1)
        gap2 = mix_n_match_true_ece(simulator, order=2)
        values = {
            "accuracy": mix_n_match_accuracy(simulator),
            "conf_ece": mix_n_match_conf_ece(simulator),
            "top_label_ece": gap1,
            "classwise_ece": gap1,
            "canonical_ece_l1": 2.0 * gap1,
            "canonical_ece_l2": float(np.sqrt(2.0 * gap2)),
        }
        return TrueCalibrationErrors(
            **values,
            standard_errors=dict.fromkeys(values, 0.0),
            methods=dict.fromkeys(values, "adaptive quadrature (scipy.integrate.quad)"),
        )
    if not isinstance(simulator, DirichletSimulator):
        raise CalcoreError(
            "simulator must be a DirichletSimulator or MixNMatchSimulator; "
            f"got {type(simulator)!r}."
        )
    n_batches = _check_positive_int(n_batches, "n_batches", 2)
    n_inner = _check_positive_int(n_inner, "n_inner", n_batches)
    res = dirichlet_errors(
        simulator,
        n_inner=n_inner,
        n_batches=n_batches,
        panels=_check_positive_int(panels, "panels"),
        n_mc=_check_positive_int(n_monte_carlo, "n_monte_carlo", 2),
        seed=seed,
    )
    quad_mc = f"Gauss-Legendre quadrature x inner Monte Carlo ({n_inner} draws)"
    plain = f"Monte Carlo ({n_monte_carlo} draws)"
    return TrueCalibrationErrors(
        **{k: res[k][0] for k in ERROR_NAMES},
        standard_errors={k: res[k][1] for k in ERROR_NAMES},
        methods={
            k: quad_mc if k in ("conf_ece", "top_label_ece", "classwise_ece") else plain
            for k in ERROR_NAMES
        },
    )


@dataclass(frozen=True, eq=False)
class TrueReliabilityCurve:
    """The true confidence reliability curve of a simulator.

    Attributes
    ----------
    confidence : ndarray of shape (n_points,)
        Grid of ``h = max p``.
    accuracy : ndarray of shape (n_points,)
        ``P(Y = argmax p | max p = h)``; NaN where ``h`` has no density.
    density : ndarray of shape (n_points,)
        Density of ``h`` at the grid points.

    Examples
    --------
    >>> import calcore
    >>> curve = calcore.true_reliability_curve(calcore.mix_n_match_simulator(1), n_points=3)
    >>> curve.confidence.tolist(), curve.accuracy.round(4).tolist()
    ([0.625, 0.75, 0.875], [0.6476, 0.7876, 0.9114])
    >>> curve.density.shape
    (3,)
    """

    confidence: np.ndarray
    accuracy: np.ndarray
    density: np.ndarray

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it


def true_reliability_curve(
    simulator, *, n_points: int = 101, n_inner: int = 4096, seed: int = 0
) -> TrueReliabilityCurve:
    """True ``P(correct | confidence = h)`` and the density of ``h`` on a grid.

    Parameters
    ----------
    simulator : DirichletSimulator or MixNMatchSimulator
    n_points : int, default 101
        Grid points strictly inside ``(1/L, 1)``.
    n_inner : int, default 4096
        Dirichlet only: inner Monte Carlo draws (exact for the Mix-n-Match problem).
    seed : int, default 0

    Returns
    -------
    TrueReliabilityCurve

    References
    ----------
    Bröcker (2009), reliability diagrams; Mix-n-Match App. E.1 (closed-form pi).

    Examples
    --------
    >>> import calcore
    >>> calibrated = calcore.mix_n_match_simulator(beta0=0.0, beta1=-2.0)
    >>> curve = calcore.true_reliability_curve(calibrated, n_points=3)
    >>> curve.confidence.tolist(), curve.accuracy.round(4).tolist()
    ([0.625, 0.75, 0.875], [0.625, 0.75, 0.875])
    """
    n_points = _check_positive_int(n_points, "n_points", 2)
    L = simulator.n_classes
    h = np.linspace(1.0 / L, 1.0, n_points + 2)[1:-1]
    if isinstance(simulator, MixNMatchSimulator):
        b0, b1 = simulator.beta0, simulator.beta1
        s = np.log(h) - np.log1p(-h)
        x, x2 = (s - b0) / b1, (-s - b0) / b1
        f, f2 = mixnmatch_density(x), mixnmatch_density(x2)
        jac = 1.0 / (abs(b1) * h * (1.0 - h))
        accuracy = (f * expit(-2.0 * x) + f2 * (1.0 - expit(-2.0 * x2))) / (f + f2)
        return TrueReliabilityCurve(h, accuracy, (f + f2) * jac)
    if not isinstance(simulator, DirichletSimulator):
        raise CalcoreError(f"unsupported simulator {type(simulator)!r}.")
    accuracy, density = dirichlet_reliability(
        simulator, h, n_inner=_check_positive_int(n_inner, "n_inner"), seed=seed
    )
    return TrueReliabilityCurve(h, accuracy, density)

"""Known calibration maps pi(p) for fake classifiers.

A map sends a predicted probability vector ``p`` to the true class
probabilities ``pi(p) = P(Y = . | prediction = p)``. The family used here,

    pi(p)_l  proportional to  exp(b_l) * p_l ** (1 / (T * T_l)),

covers global over-confidence (``T > 1``: the truth is flatter than the
prediction), global under-confidence (``T < 1``), class-specific
miscalibration (per-class temperatures ``T_l`` and biases ``b_l``) and mixes
of them, as asked for by the overview paper (Sec. 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import CLASSES
from calcore.foundation.validation import freeze_fields

__all__ = ["MISCALIBRATION_KINDS", "TrueCalibrationMap", "true_calibration_map"]

MISCALIBRATION_KINDS = ("calibrated", "overconfident", "underconfident", "class-specific", "mix")


@dataclass(frozen=True, eq=False)
class TrueCalibrationMap:
    """``pi(p)_l ∝ exp(class_bias_l) * p_l ** (1 / (temperature * class_temperatures_l))``.

    Build it with :func:`true_calibration_map`.

    Attributes
    ----------
    kind : str
        The preset it came from (or ``"custom"``).
    temperature : float
        Global temperature ``T > 0``; ``T > 1`` means the predictions are over-confident.
    class_temperatures : ndarray of shape (n_classes,), float64
        Per-class factors ``T_l > 0`` (all 1 for a global map).
    class_bias : ndarray of shape (n_classes,), float64
        Per-class log-weights ``b_l`` (all 0 for a global map).

    Examples
    --------
    >>> import calcore
    >>> m = calcore.true_calibration_map(2, kind="overconfident", strength=1.0)
    >>> m.kind, m.temperature, m.exchangeable
    ('overconfident', 2.0, True)
    >>> calcore.true_calibration_map(2, kind="calibrated")([0.7, 0.3]).round(4).tolist()
    [0.7, 0.3]
    """

    kind: str
    temperature: float
    class_temperatures: np.ndarray
    class_bias: np.ndarray

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it

    @property
    def n_classes(self) -> int:
        return int(self.class_bias.shape[0])

    @property
    def exponents(self) -> np.ndarray:
        """``1 / (T * T_l)`` per class."""
        return 1.0 / (self.temperature * self.class_temperatures)

    @property
    def exchangeable(self) -> bool:
        """True when every class is treated alike (no class-specific part)."""
        return bool(np.all(self.class_temperatures == 1.0) and np.all(self.class_bias == 0.0))

    def log_apply(self, log_probs) -> np.ndarray:
        """``log pi(p)`` from ``log p`` (last axis = classes); ``-inf`` entries are allowed."""
        lp = np.asarray(log_probs, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            score = self.class_bias + lp * self.exponents
        return score - logsumexp(score, axis=-1, keepdims=True)

    def __call__(self, probs) -> np.ndarray:
        """``pi(p)`` for probability vectors along the last axis."""
        with np.errstate(divide="ignore"):
            return np.exp(self.log_apply(np.log(np.asarray(probs, dtype=np.float64))))


def _positive_vector(values, n_classes: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(values, dtype=np.float64), (n_classes,)).copy()
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise CalcoreError(
            f"{name} must be finite and > 0 for each of {n_classes} classes; got {values!r}."
        )
    return arr


def true_calibration_map(
    n_classes: int,
    *,
    kind: str = "overconfident",
    strength: float = 1.0,
    temperature: float | None = None,
    class_temperatures=None,
    class_bias=None,
) -> TrueCalibrationMap:
    """A known calibration map for ``n_classes`` classes.

    Parameters
    ----------
    n_classes : int
        At least 2.
    kind : {"calibrated", "overconfident", "underconfident", "class-specific", "mix"}
        Preset, scaled by ``strength = s >= 0``:

        - ``calibrated``: ``pi(p) = p``.
        - ``overconfident``: ``T = 1 + s``.
        - ``underconfident``: ``T = 1 / (1 + s)``.
        - ``class-specific``: ``T = 1``; class temperatures geometrically spaced
          from ``1/(1+s)`` (class 0, under-confident) to ``1+s`` (last class,
          over-confident); class biases from ``-s/2`` to ``+s/2``.
        - ``mix``: ``T = sqrt(1 + s)`` with class temperatures from
          ``(1+s)^-1/2`` to ``(1+s)^1/2`` and biases from ``-s/4`` to ``s/4``.
    strength : float, default 1.0
    temperature, class_temperatures, class_bias : optional
        Override the preset's values (then ``kind`` is recorded as ``"custom"``).

    Returns
    -------
    TrueCalibrationMap

    Raises
    ------
    CalcoreError
        Unknown kind, negative strength, fewer than 2 classes, non-positive temperatures.

    References
    ----------
    Silva Filho et al. (2023), "Classifier calibration: a survey on how to assess and
    improve predicted class probabilities" (the overview paper), Sec. 6 "Fake classifiers".
    Guo et al. (2017), "On calibration of modern neural networks", Sec. 4.2 (temperature).

    Examples
    --------
    >>> m = true_calibration_map(3, kind="overconfident", strength=1.0)
    >>> [round(float(v), 4) for v in m([0.8, 0.1, 0.1])]
    [0.5858, 0.2071, 0.2071]
    """
    CLASSES.check(n_classes, "n_classes")
    if kind not in MISCALIBRATION_KINDS:
        raise CalcoreError(f"kind must be one of {MISCALIBRATION_KINDS}; got {kind!r}.")
    s = float(strength)
    if not np.isfinite(s) or s < 0:
        raise CalcoreError(f"strength must be a finite number >= 0; got {strength!r}.")
    L = int(n_classes)
    t, tl, b = 1.0, np.ones(L), np.zeros(L)
    if kind == "overconfident":
        t = 1.0 + s
    elif kind == "underconfident":
        t = 1.0 / (1.0 + s)
    elif kind == "class-specific":
        tl, b = np.geomspace(1.0 / (1.0 + s), 1.0 + s, L), np.linspace(-s / 2, s / 2, L)
    elif kind == "mix":
        root = np.sqrt(1.0 + s)
        t, tl, b = root, np.geomspace(1.0 / root, root, L), np.linspace(-s / 4, s / 4, L)
    custom = temperature is not None or class_temperatures is not None or class_bias is not None
    if temperature is not None:
        t = float(_positive_vector(temperature, 1, "temperature")[0])
    if class_temperatures is not None:
        tl = _positive_vector(class_temperatures, L, "class_temperatures")
    if class_bias is not None:
        b = np.broadcast_to(np.asarray(class_bias, dtype=np.float64), (L,)).copy()
        if not np.all(np.isfinite(b)):
            raise CalcoreError(f"class_bias must be finite; got {class_bias!r}.")
    return TrueCalibrationMap("custom" if custom else kind, float(t), tl, b)

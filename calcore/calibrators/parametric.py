"""Parametric calibrators, one import away (kept for existing imports).

The methods live in one module per kind:

* :mod:`calcore.calibrators.temperature`: ts, ets;
* :mod:`calcore.calibrators.affine`: vs, ms, dirichlet;
* :mod:`calcore.calibrators.binary_scaling`: platt, beta (and their binary cores).
"""

from calcore.calibrators.affine import DirichletCalibration, MatrixScaling, VectorScaling
from calcore.calibrators.binary_scaling import (
    BetaCalibration,
    PlattScaling,
    apply_beta,
    apply_platt,
    fit_beta,
    fit_platt,
)
from calcore.calibrators.temperature import EnsembleTemperatureScaling, TemperatureScaling

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

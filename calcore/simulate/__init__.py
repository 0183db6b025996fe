"""Fake classifiers with a known calibration map, and their true calibration errors.

Generators (all seeded, see :func:`simulate_predictions`):

- :func:`dirichlet_simulator`: predictions ``p ~ Dirichlet(alpha)`` with labels drawn
  from a known map ``pi(p)`` (:func:`true_calibration_map`: global over/under-confidence
  by a temperature, class-specific temperatures and biases, or a mix); accuracy is
  adjustable through the concentration (:func:`concentration_for_accuracy`).
- :func:`mix_n_match_simulator`: the binary logistic problem of Mix-n-Match App. E.1
  with its closed-form ``pi_1(z)`` (cases 1 and 2 of Sec. 5.1).

Ground truth: :func:`true_calibration_errors` (accuracy, conf-, TL-, CW-ECE and
canonical l1/l2 ECE with Monte Carlo standard errors), :func:`mix_n_match_true_ece`
(``E|z_1 - pi_1|^d`` by quadrature) and :func:`true_reliability_curve`.

Estimator accuracy: :func:`estimator_errors` (mean absolute error, bias and spread of
KDE and binned ECE estimators over repeated samples of each size) and
:func:`samples_needed` (the n from which an estimator's error stays within a tolerance).

References
----------
Silva Filho et al. (2023), "Classifier calibration: a survey on how to assess and improve
predicted class probabilities", Sec. 6. Zhang, Kailkhura, Han (2020), "Mix-n-Match:
ensemble and compositional methods for uncertainty calibration in deep learning", ICML,
Sec. 5.1 and App. E.1.
"""

from calcore.simulate._estimators import (
    ESTIMATORS,
    EstimatorErrors,
    estimator_errors,
    samples_needed,
)
from calcore.simulate._generators import (
    MIX_N_MATCH_CASES,
    DirichletSimulator,
    MixNMatchSimulator,
    Simulation,
    concentration_for_accuracy,
    dirichlet_simulator,
    mix_n_match_simulator,
    simulate_predictions,
)
from calcore.simulate._maps import MISCALIBRATION_KINDS, TrueCalibrationMap, true_calibration_map
from calcore.simulate._mixnmatch import (
    mix_n_match_accuracy,
    mix_n_match_conf_ece,
    mix_n_match_true_ece,
)
from calcore.simulate._truth import (
    TrueCalibrationErrors,
    TrueReliabilityCurve,
    true_calibration_errors,
    true_reliability_curve,
)

__all__ = [
    "ESTIMATORS",
    "EstimatorErrors",
    "estimator_errors",
    "samples_needed",
    "MISCALIBRATION_KINDS",
    "MIX_N_MATCH_CASES",
    "DirichletSimulator",
    "MixNMatchSimulator",
    "Simulation",
    "TrueCalibrationErrors",
    "TrueCalibrationMap",
    "TrueReliabilityCurve",
    "concentration_for_accuracy",
    "dirichlet_simulator",
    "mix_n_match_accuracy",
    "mix_n_match_conf_ece",
    "mix_n_match_simulator",
    "mix_n_match_true_ece",
    "simulate_predictions",
    "true_calibration_errors",
    "true_calibration_map",
    "true_reliability_curve",
]

"""The binary-calibrator contract that the M2B wrappers rely on.

A binary calibrator class (:class:`BinaryCalibrator`)

- sets ``binary_only = True``;
- provides ``fit_binary(scores, outcomes, params) -> dict`` (a JSON-able state)
  and ``apply_binary(state, scores, params) -> ndarray`` (values in [0, 1]),
  both classmethods working on 1-D float64 arrays;
- may provide ``min_points(params) -> int``, the fewest calibration points it
  can fit (wrappers leave groups with fewer points unchanged; default 1);
- with ``weighted = True``, ``fit_binary`` also takes ``weights=`` (positive row
  weights, frequency weights) and fits them itself; the wrappers then pass them on;
- fits a 2-class :class:`~calcore.Predictions` on column 1 (the positive class).

:class:`BinaryCalibrator` implements the last two points; subclasses only write
the two classmethods. Randomised methods take ``seed`` and are reproducible.
Class-wise fast paths are optional classmethods (``fit_binary_rows``,
``fit_binary_columns``, ``apply_binary_columns``; see :mod:`calcore.calibrators.m2b`).
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import Calibrator
from calcore.predictions import Predictions

__all__ = ["BinaryCalibrator"]


class BinaryCalibrator(Calibrator):
    """Base of binary calibrators; see the module docstring for the contract."""

    binary_only = True

    @classmethod
    def fit_binary(cls, scores: np.ndarray, outcomes: np.ndarray, params: dict) -> dict:
        raise NotImplementedError

    @classmethod
    def apply_binary(cls, state: dict, scores: np.ndarray, params: dict) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def min_points(cls, params: dict) -> int:
        """Fewest calibration points ``fit_binary`` accepts."""
        return 1

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        outcomes = (preds.labels == 1).astype(np.float64)
        extra = {} if preds.sample_weight is None else {"weights": preds.sample_weight}
        state = self.fit_binary(preds.probs[:, 1], outcomes, self._params, **extra)
        return state, {"n_calibration": preds.n_samples}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        h = self.apply_binary(state, preds.probs[:, 1], self._params)
        return np.column_stack([1.0 - h, h]), None

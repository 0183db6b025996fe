"""Multiclass-to-binary (M2B) wrappers around any binary calibrator.

Registered prefixes (each combines with every binary calibrator, e.g. ``tl-hb``):

======  ====================================================================
``conf`` one binary calibrator on ``(max p, 1{y = argmax p})`` (Alg. 1)
``tl``   top-label: one binary calibrator per predicted class ``l`` on the rows
         with ``argmax p = l`` (Alg. 2, Alg. 8 for HB); a class with fewer
         calibration rows than the binary method needs (``bins`` points, or
         ``points_per_bin`` k, giving ``floor(n_l / k)`` bins) is left
         unchanged and listed in ``fit_info["unchanged_classes"]``.
``cw``   class-wise: one binary calibrator per class on ``(p_l, 1{y = l})``
         over all rows (Alg. 3, Alg. 9); outputs are *not* normalised
         (``normalized=False``) unless built with ``renormalize=True``.
``n``    normalized: class-wise, then each row divided by its sum (Alg. 4;
         ``n-hb`` is N-HB, ``n-iso`` is IROvA).
======  ====================================================================

Full rows for ``conf`` and ``tl``: :func:`top_label_rows` (defined in
:mod:`calcore.calibrators._m2b_base` beside the wrappers' shared base class, and
re-exported here) puts the calibrated top-label probability ``h`` at the
predicted class and shares ``1 - h`` among the others in proportion, keeping
the argmax exactly.

For normalisation (``n``, ``cw`` with ``renormalize``), a row of all-zero
calibrated values becomes uniform.

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Alg. 1-4, 8-9.
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import Param
from calcore.calibrators._m2b_base import (
    M2BWrapper,
    normalize_rows,
    top_label_rows,
    transpose_blocks,
)
from calcore.calibrators._registry import register_wrapper
from calcore.calibrators._state import Fields, Items
from calcore.foundation.errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["top_label_rows", "normalize_rows"]
__all__ += ["ConfidenceCalibrator", "TopLabelCalibrator", "ClassWiseCalibrator"]
__all__ += ["NormalizedCalibrator"]


@register_wrapper("conf")
class ConfidenceCalibrator(M2BWrapper):
    label = "Confidence calibration (Alg. 1)"
    title = "Confidence"
    use = "one map of the top probability over all rows: keeps accuracy, fine with few rows"
    accuracy_preserving = True

    def _reduction_state(self, binary):
        return {"binary": Fields(binary)}

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        state = self._fit_binary(preds.confidence, preds.correct, preds.sample_weight)
        return {"binary": state}, {"n_calibration": preds.n_samples}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        h = self.binary_cls.apply_binary(state["binary"], preds.confidence, self._binary_params)
        return top_label_rows(preds.probs, preds.predicted, h), None


@register_wrapper("tl")
class TopLabelCalibrator(M2BWrapper):
    label = "Top-label calibration (Alg. 2 / 8)"
    title = "Top-label"
    use = "one map per predicted class: keeps accuracy, needs rows of every class"
    accuracy_preserving = True

    def _reduction_state(self, binary):
        # one binary state per class; null for a class left unchanged (too few points)
        return {"classes": Items("L", binary, optional=True)}

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        states, sizes = self._fit_groups(
            preds.confidence, preds.correct, preds.predicted, preds.n_classes, preds.sample_weight
        )
        unchanged = [preds.class_names[g] for g, s in enumerate(states) if s is None]
        info = {
            "points_per_class": sizes,
            "unchanged_classes": unchanged,
            "min_points": self._min_points(),
        }
        if unchanged:
            # said in words too, so reports and the dashboard can show what happened
            described = [
                f"class {name!r} has {sizes[g]} point(s)"
                for g, name in enumerate(preds.class_names)
                if states[g] is None
            ]
            info["message"] = (
                f"{'; '.join(described[:10])}{' ...' if len(described) > 10 else ''}: fewer "
                f"than {self._min_points()} calibration points predicted as the class, so "
                f"{'it is' if len(described) == 1 else 'they are'} left uncalibrated."
            )
        return {"classes": states}, info

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        conf = preds.confidence
        h = self._apply_groups(state["classes"], conf, preds.predicted, conf)
        out = top_label_rows(preds.probs, preds.predicted, h)
        keep = np.isin(preds.predicted, [g for g, s in enumerate(state["classes"]) if s is None])
        out[keep] = preds.probs[keep]  # classes left unchanged keep their rows exactly
        return out, None


class _ClassWiseBase(M2BWrapper):
    def _reduction_state(self, binary):
        return {"classes": Items("L", binary)}  # one binary state per class

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        if preds.n_samples < self._min_points():
            raise CalcoreError(
                f"{self.name}: needs at least {self._min_points()} calibration rows with "
                f"{self._binary_params}; got {preds.n_samples}."
            )
        weights = preds.sample_weight  # set only for a method that fits weights itself
        by_rows = None if weights is not None else getattr(self.binary_cls, "fit_binary_rows", None)
        if by_rows is not None:  # no full transposed copy
            states = by_rows(preds.probs, preds.labels, self._binary_params)
            return {"classes": states}, {"n_calibration": preds.n_samples}
        cols = self._columns(preds.probs)
        batched = (
            None if weights is not None else getattr(self.binary_cls, "fit_binary_columns", None)
        )
        if batched is not None:
            states = batched(cols, preds.labels, self._binary_params)
            return {"classes": states}, {"n_calibration": preds.n_samples}
        onehot_pos = preds.labels
        states = []
        for lab in range(preds.n_classes):
            outcomes = (onehot_pos == lab).astype(np.float64)
            states.append(self._fit_binary(cols[lab], outcomes, weights))
        return {"classes": states}, {"n_calibration": preds.n_samples}

    def _calibrated_columns(self, preds: Predictions, state: dict) -> np.ndarray:
        batched = getattr(self.binary_cls, "apply_binary_columns", None)
        if batched is not None:  # row blocks, no transposed copies; None if it does not apply
            out = batched(state["classes"], preds.probs, self._binary_params)
            if out is not None:
                return out
        cols = self._columns(preds.probs)
        for lab, st in enumerate(state["classes"]):
            cols[lab] = self.binary_cls.apply_binary(st, cols[lab], self._binary_params)
        return transpose_blocks(cols)


@register_wrapper("cw")
class ClassWiseCalibrator(_ClassWiseBase):
    label = "Class-wise calibration (Alg. 3 / 9), unnormalised"
    title = "Class-wise"
    use = "one map per class, rows not renormalised: for the class-wise error"
    normalized = False
    own_parameters = (
        Param(
            "renormalize", False, "bool", "Divide each row by its sum (then rows are normalised)."
        ),
    )

    def __init__(self, **params):
        super().__init__(**params)
        self.normalized = self._params["renormalize"]  # the instance's outputs

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        values = self._calibrated_columns(preds, state)
        return (normalize_rows(values) if self._params["renormalize"] else values), None


@register_wrapper("n")
class NormalizedCalibrator(_ClassWiseBase):
    label = "Normalized class-wise calibration (Alg. 4)"
    title = "Normalised class-wise"
    use = "one map per class, rows renormalised: can change accuracy"

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        return normalize_rows(self._calibrated_columns(preds, state)), None

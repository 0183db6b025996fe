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

Full rows for ``conf`` and ``tl`` (:func:`top_label_rows`): the calibrated
top-label probability ``h`` becomes the predicted class's entry and the other
classes share ``1 - h`` in proportion to their original probabilities. Where a
share would reach ``h``, the shares of that row are mixed with the uniform share
``(1 - h)/(L - 1)`` with the smallest weight that brings their maximum to
``h - 1e-12``; this keeps the order of the other classes and the argmax
exactly. ``h`` is floored at ``1/L + 1e-9``, just above the smallest value that
lets the predicted class stay the strict maximum of a row on the simplex.

For normalisation (``n``, ``cw`` with ``renormalize``), a row of all-zero
calibrated values becomes uniform.

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Alg. 1-4, 8-9.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from calcore._errors import CalcoreError
from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import CalibratorInfo, register_wrapper
from calcore.predictions import Predictions

__all__ = ["top_label_rows", "normalize_rows"]

_TIE_GAP = 1e-12  # others stay at most h - _TIE_GAP
_H_FLOOR = 1e-9  # h >= 1/L + _H_FLOOR


def top_label_rows(probs: np.ndarray, predicted: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Rows with top-label probability ``h`` at ``predicted`` and the argmax kept (see module doc).

    Parameters
    ----------
    probs : ndarray of shape (n_samples, n_classes)
    predicted : ndarray of shape (n_samples,)
        ``argmax probs`` (lowest index on ties).
    h : ndarray of shape (n_samples,)
        Calibrated probabilities of the predicted class, in [0, 1].

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Rows on the simplex whose (first) argmax is ``predicted``.
    """
    n, n_classes = probs.shape
    rows = np.arange(n)
    if n_classes == 1:
        return np.ones_like(probs)
    h = np.clip(h, 1.0 / n_classes + _H_FLOOR, 1.0)
    out = probs.copy()
    out[rows, predicted] = 0.0
    rest = out.sum(axis=1)
    out *= np.divide(1.0 - h, rest, out=np.zeros(n), where=rest > 0)[:, None]
    empty = np.flatnonzero(rest <= 0)
    out[empty] = ((1.0 - h[empty]) / (n_classes - 1))[:, None]
    out[empty, predicted[empty]] = 0.0
    # Where a proportional share would reach h, shrink the shares toward uniform just enough:
    # (1 - lam) * share + lam * (1 - h) / (L - 1) has its maximum at h - _TIE_GAP.
    cap = h - _TIE_GAP
    top_share = out.max(axis=1)
    uniform = (1.0 - h) / (n_classes - 1)
    lam = np.divide(top_share - cap, top_share - uniform, out=np.zeros(n), where=top_share > cap)
    if lam.any():  # in place: rows with lam = 0 are unchanged
        out *= (1.0 - lam)[:, None]
        out += (lam * uniform)[:, None]
        np.minimum(out, cap[:, None], out=out)
    out[rows, predicted] = h
    return out


def _transpose(a: np.ndarray, block: int = 256) -> np.ndarray:
    """Contiguous ``a.T``, copied in row blocks (several times faster than a plain copy of
    ``a.T`` for large arrays, which walks memory with a large stride)."""
    out = np.empty(a.shape[::-1], dtype=a.dtype)
    for start in range(0, a.shape[0], block):
        out[:, start : start + block] = a[start : start + block].T
    return out


def normalize_rows(values: np.ndarray) -> np.ndarray:
    """``values / row sum``; a row summing to 0 becomes uniform."""
    total = values.sum(axis=1, keepdims=True)
    uniform = np.full_like(values, 1.0 / values.shape[1])
    return np.divide(values, total, out=uniform, where=total > 0)


class _M2B(Calibrator):
    """A binary calibrator applied through one M2B reduction (built by the registry)."""

    prefix: ClassVar[str] = ""
    binary_cls: ClassVar[type] = None
    own_parameters: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, **params):
        own_names = {p.name for p in self.own_parameters}
        known = own_names | {p.name for p in self.binary_cls.parameters}
        unknown = sorted(set(params) - known)
        if unknown:
            raise CalcoreError(
                f"{self.name}: unknown parameter(s) {unknown}; the parameters are {sorted(known)}."
            )
        binary = self.binary_cls(**{k: v for k, v in params.items() if k not in own_names})
        own = {k: v for k, v in params.items() if k in own_names}
        super().__init__(**own, **binary.params)
        self._binary_params = binary.params

    # -- helpers for the subclasses ----------------------------------------------
    def _min_points(self) -> int:
        min_points = getattr(self.binary_cls, "min_points", None)
        return 1 if min_points is None else int(min_points(self._binary_params))

    def _fit_groups(self, scores, outcomes, groups, n_groups):
        """One binary state per group (None for groups with too few points), and their sizes."""
        order = np.argsort(groups, kind="stable")
        sizes = np.bincount(groups, minlength=n_groups)
        starts = np.r_[0, np.cumsum(sizes)]
        needed, states = self._min_points(), []
        for g in range(n_groups):
            idx = order[starts[g] : starts[g + 1]]
            ok = sizes[g] >= needed
            states.append(
                self.binary_cls.fit_binary(scores[idx], outcomes[idx], self._binary_params)
                if ok
                else None
            )
        return states, sizes

    def _apply_groups(self, states, scores, groups, default):
        """Calibrated score per point from its group's state (``default`` where it is None)."""
        out = default.copy()
        order = np.argsort(groups, kind="stable")
        starts = np.r_[0, np.cumsum(np.bincount(groups, minlength=len(states)))]
        for g, state in enumerate(states):
            idx = order[starts[g] : starts[g + 1]]
            if state is not None and idx.size:
                out[idx] = self.binary_cls.apply_binary(state, scores[idx], self._binary_params)
        return out

    def _columns(self, probs):
        """Class-wise: the columns as contiguous rows (a transposed copy)."""
        return _transpose(probs)

    # -- wrapper protocol used by the registry -------------------------------------
    @classmethod
    def info_for(cls, prefix: str, binary_cls) -> CalibratorInfo:
        built = cls._subclass(prefix, binary_cls)
        return CalibratorInfo(
            built.name,
            built.family,
            built.description,
            built.accuracy_preserving,
            built.normalized,
            False,
            built.slow,
            built.parameters,
        )

    @classmethod
    def build(cls, prefix: str, binary_cls, params: dict) -> Calibrator:
        return cls._subclass(prefix, binary_cls)(**params)

    _built: ClassVar[dict] = {}

    @classmethod
    def _subclass(cls, prefix: str, binary_cls) -> type:
        key = (cls, prefix, binary_cls)
        if key not in _M2B._built:
            _M2B._built[key] = type(
                f"{cls.__name__}_{binary_cls.__name__}",
                (cls,),
                {
                    "name": f"{prefix}-{binary_cls.name}",
                    "family": binary_cls.family,
                    "description": f"{cls.label} of {binary_cls.name}: {binary_cls.description}",
                    "slow": binary_cls.slow,
                    "parameters": tuple(cls.own_parameters) + tuple(binary_cls.parameters),
                    "prefix": prefix,
                    "binary_cls": binary_cls,
                },
            )
        return _M2B._built[key]


@register_wrapper("conf")
class ConfidenceCalibrator(_M2B):
    label = "Confidence calibration (Alg. 1)"
    accuracy_preserving = True

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        state = self.binary_cls.fit_binary(preds.confidence, preds.correct, self._binary_params)
        return {"binary": state}, {"n_calibration": preds.n_samples}

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        h = self.binary_cls.apply_binary(state["binary"], preds.confidence, self._binary_params)
        return top_label_rows(preds.probs, preds.predicted, h), None


@register_wrapper("tl")
class TopLabelCalibrator(_M2B):
    label = "Top-label calibration (Alg. 2 / 8)"
    accuracy_preserving = True

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        states, sizes = self._fit_groups(
            preds.confidence, preds.correct, preds.predicted, preds.n_classes
        )
        unchanged = [preds.class_names[g] for g, s in enumerate(states) if s is None]
        info = {
            "points_per_class": sizes,
            "unchanged_classes": unchanged,
            "min_points": self._min_points(),
        }
        return {"classes": states}, info

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        conf = preds.confidence
        h = self._apply_groups(state["classes"], conf, preds.predicted, conf)
        out = top_label_rows(preds.probs, preds.predicted, h)
        keep = np.isin(preds.predicted, [g for g, s in enumerate(state["classes"]) if s is None])
        out[keep] = preds.probs[keep]  # classes left unchanged keep their rows exactly
        return out, None


class _ClassWiseBase(_M2B):
    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        if preds.n_samples < self._min_points():
            raise CalcoreError(
                f"{self.name}: needs at least {self._min_points()} calibration rows with "
                f"{self._binary_params}; got {preds.n_samples}."
            )
        by_rows = getattr(self.binary_cls, "fit_binary_rows", None)
        if by_rows is not None:  # no full transposed copy
            states = by_rows(preds.probs, preds.labels, self._binary_params)
            return {"classes": states}, {"n_calibration": preds.n_samples}
        cols = self._columns(preds.probs)
        batched = getattr(self.binary_cls, "fit_binary_columns", None)
        if batched is not None:
            states = batched(cols, preds.labels, self._binary_params)
            return {"classes": states}, {"n_calibration": preds.n_samples}
        onehot_pos = preds.labels
        states = []
        for lab in range(preds.n_classes):
            outcomes = (onehot_pos == lab).astype(np.float64)
            states.append(self.binary_cls.fit_binary(cols[lab], outcomes, self._binary_params))
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
        return _transpose(cols)


@register_wrapper("cw")
class ClassWiseCalibrator(_ClassWiseBase):
    label = "Class-wise calibration (Alg. 3 / 9), unnormalised"
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

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        return normalize_rows(self._calibrated_columns(preds, state)), None

"""Shared internals of the M2B wrappers of :mod:`calcore.calibrators.m2b` and ``topk``.

* :class:`M2BWrapper`, the base of every wrapper: a binary calibrator applied
  through one multiclass-to-binary reduction, built by the registry under
  ``"<prefix>-<binary name>"``;
* :func:`top_label_rows`, full rows from a calibrated top-label probability;
* :func:`normalize_rows` and :func:`transpose_blocks`.

Full rows (:func:`top_label_rows`): the calibrated top-label probability ``h``
becomes the predicted class's entry and the other classes share ``1 - h`` in
proportion to their original probabilities. Where a share would reach ``h``,
the shares of that row are mixed with the uniform share ``(1 - h)/(L - 1)``
with the smallest weight that brings their maximum to ``h - TIE_GAP``; this
keeps the order of the other classes and the argmax exactly. ``h`` is floored
at ``1/L + H_FLOOR``, just above the smallest value that lets the predicted
class stay the strict maximum of a row on the simplex.

References
----------
Gupta & Ramdas (2022), "Top-label calibration and multiclass-to-binary
reductions", ICLR, Alg. 1-4 and 6-9.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import CalibratorInfo
from calcore.foundation.errors import CalcoreError

__all__ = ["M2BWrapper", "top_label_rows", "normalize_rows", "transpose_blocks"]
__all__ += ["TIE_GAP", "H_FLOOR"]

TIE_GAP = 1e-12  # the other classes stay at most h - TIE_GAP
H_FLOOR = 1e-9  # h >= 1/L + H_FLOOR


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
    h = np.clip(h, 1.0 / n_classes + H_FLOOR, 1.0)
    out = probs.copy()
    out[rows, predicted] = 0.0
    rest = out.sum(axis=1)
    with np.errstate(over="ignore"):
        factor = np.divide(1.0 - h, rest, out=np.zeros(n), where=rest > 0)
    huge = np.flatnonzero(~np.isfinite(factor))
    factor[huge] = 0.0
    out *= factor[:, None]
    if huge.size:
        # (1 - h) / rest overflows when the non-top mass is subnormal (logits ~740 apart):
        # those rows divide by rest first, then scale, which stays finite
        shares = probs[huge].copy()
        shares[np.arange(huge.size), predicted[huge]] = 0.0
        out[huge] = shares / rest[huge, None] * (1.0 - h[huge])[:, None]
    empty = np.flatnonzero(rest <= 0)
    out[empty] = ((1.0 - h[empty]) / (n_classes - 1))[:, None]
    out[empty, predicted[empty]] = 0.0
    # Where a proportional share would reach h, shrink the shares toward uniform just enough:
    # (1 - lam) * share + lam * (1 - h) / (L - 1) has its maximum at h - TIE_GAP.
    cap = h - TIE_GAP
    top_share = out.max(axis=1)
    uniform = (1.0 - h) / (n_classes - 1)
    lam = np.divide(top_share - cap, top_share - uniform, out=np.zeros(n), where=top_share > cap)
    if lam.any():  # in place: rows with lam = 0 are unchanged
        out *= (1.0 - lam)[:, None]
        out += (lam * uniform)[:, None]
        np.minimum(out, cap[:, None], out=out)
    out[rows, predicted] = h
    return out


def transpose_blocks(a: np.ndarray, block: int = 256) -> np.ndarray:
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


#: First words of a method's title that are names, kept capitalised after a wrapper's title.
_NAMES = ("Platt",)


def _after_prefix(title: str) -> str:
    """A binary method's title after a wrapper's ("Top-label" + "histogram binning")."""
    if title.split(" ", 1)[0] in _NAMES:
        return title
    return title[:1].lower() + title[1:]


class M2BWrapper(Calibrator):
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
        try:
            binary = self.binary_cls(**{k: v for k, v in params.items() if k not in own_names})
        except CalcoreError as err:  # named as the user wrote it: "tl-hb", not "hb"
            text = str(err).removeprefix(f"{self.binary_cls.name}: ")
            raise CalcoreError(f"{self.name}: {text}") from None
        own = {k: v for k, v in params.items() if k in own_names}
        super().__init__(**own, **binary.params)
        self._binary_params = binary.params
        self._binary = binary  # its declared state is each subproblem's

    def declared_state(self) -> dict:
        """The state of the reduction, each subproblem's being the binary method's."""
        return self._reduction_state(self._binary.declared_state())

    def _reduction_state(self, binary: dict) -> dict:
        raise NotImplementedError

    # -- helpers for the subclasses ----------------------------------------------
    def _min_points(self) -> int:
        min_points = getattr(self.binary_cls, "min_points", None)
        return 1 if min_points is None else int(min_points(self._binary_params))

    def _fit_binary(self, scores, outcomes, weights=None) -> dict:
        """The binary method's state for one subproblem (row ``weights`` if it takes them)."""
        extra = {} if weights is None else {"weights": weights}
        return self.binary_cls.fit_binary(scores, outcomes, self._binary_params, **extra)

    def _fit_groups(self, scores, outcomes, groups, n_groups, weights=None):
        """One binary state per group (None for groups with too few points), and their sizes
        (with row ``weights``, each group's total weight). A group is fitted when it has
        ``min_points`` rows (of positive weight: the fit dropped the others), whatever
        their weights add up to, so scaling every weight changes nothing."""
        order = np.argsort(groups, kind="stable")
        rows = np.bincount(groups, minlength=n_groups)
        sizes = rows if weights is None else np.bincount(groups, weights, minlength=n_groups)
        if weights is not None and np.array_equal(sizes, np.rint(sizes)):
            sizes = np.rint(sizes).astype(np.int64)
        starts = np.r_[0, np.cumsum(rows)]
        needed, states = self._min_points(), []
        for g in range(n_groups):
            idx = order[starts[g] : starts[g + 1]]
            ok = rows[g] >= needed
            w = None if weights is None else weights[idx]
            states.append(self._fit_binary(scores[idx], outcomes[idx], w) if ok else None)
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
        return transpose_blocks(probs)

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
            built.weighted,
            title=built.title,
            use=built.use,
        )

    @classmethod
    def build(cls, prefix: str, binary_cls, params: dict) -> Calibrator:
        return cls._subclass(prefix, binary_cls)(**params)

    _built: ClassVar[dict] = {}

    @classmethod
    def _subclass(cls, prefix: str, binary_cls) -> type:
        key = (cls, prefix, binary_cls)
        if key not in M2BWrapper._built:
            M2BWrapper._built[key] = type(
                f"{cls.__name__}_{binary_cls.__name__}",
                (cls,),
                {
                    "name": f"{prefix}-{binary_cls.name}",
                    "family": binary_cls.family,
                    "description": f"{cls.label} of {binary_cls.name}: {binary_cls.description}",
                    "title": f"{cls.title} {_after_prefix(binary_cls.title)}",
                    "use": f"{cls.use}. Each map: {binary_cls.use}",
                    "slow": binary_cls.slow,
                    "weighted": binary_cls.weighted,
                    "parameters": tuple(cls.own_parameters) + tuple(binary_cls.parameters),
                    "prefix": prefix,
                    "binary_cls": binary_cls,
                },
            )
        return M2BWrapper._built[key]

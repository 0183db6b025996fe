"""Shared fit/transform of the canonical calibrators (:mod:`calcore.calibrators.canonical`).

:class:`CanonicalCalibrator` turns a partition of the simplex (each method's
``_define``/``_index``) into per-bin label distributions, with the fallback rule
for under-filled bins; it also refuses more than :data:`MAX_CLASSES` classes.
"""

from __future__ import annotations

import numpy as np

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._simplex import MAX_GRID_BINS
from calcore.calibrators._state import Array, Number, StateError
from calcore.foundation.errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["CanonicalCalibrator", "MAX_CLASSES", "MIN_COUNT", "FALLBACK"]

#: Largest number of classes the canonical calibrators accept.
MAX_CLASSES = 6

MIN_COUNT = Param(
    "min_count", 1, "int",
    "Bins with fewer calibration rows than this are fallback bins (see 'fallback').", minimum=1,
    maximum=1_000_000_000,  # above any fit's rows (every bin a fallback bin); keeps it an int64
)  # fmt: skip
FALLBACK = Param(
    "fallback", "identity", "str",
    "Prediction in fallback bins: 'identity' keeps the input row, 'uniform' predicts 1/L "
    "(the paper's rule for empty bins).",
    choices=("identity", "uniform"),
)  # fmt: skip


#: The saved state every canonical method shares: per bin (``N``, fixed by the parameters
#: and L) its calibration rows, its label distribution and whether it is a fallback bin.
BINS_STATE = {
    "n_classes": Number(dim="L"),
    "counts": Array(("N",), "int", minimum=0),
    "distribution": Array(("N", "L"), minimum=0.0, maximum=1.0, sums_to_one=True),
    "fallback": Array(("N",), "bool"),
}


class CanonicalCalibrator(Calibrator):
    """Shared fit/transform: bins from :meth:`_bins`, per-bin label distributions."""

    family = "canonical"
    accuracy_preserving = False
    injective = False
    normalized = True
    state_fields = BINS_STATE

    def state_sizes(self, n_classes: int, *, path: str) -> dict[str, int]:
        if n_classes > MAX_CLASSES:
            raise StateError(
                f"{path}.n_classes",
                f"must be at most {MAX_CLASSES} for {self.name}; the saved "
                f"class names list {n_classes}",
            )
        n_bins = self._n_bins_for(n_classes)
        if n_bins > MAX_GRID_BINS:
            raise StateError(
                path, f"cannot hold {n_bins:,} bins (more than {MAX_GRID_BINS:,}) for {self.params}"
            )
        return {"N": n_bins}

    # -- per method ------------------------------------------------------------------
    def _define(self, preds: Predictions) -> dict:
        """Bin definitions (JSON-able) learnt from / sized for ``preds``."""
        raise NotImplementedError

    def _index(self, probs: np.ndarray, state: dict) -> np.ndarray:
        raise NotImplementedError

    def _n_bins_for(self, n_classes: int) -> int:
        raise NotImplementedError

    def _estimation_rows(self, probs: np.ndarray, state: dict) -> np.ndarray | None:
        """Boolean mask of the calibration rows used to estimate Pi (None: all)."""
        return None

    # -- shared ------------------------------------------------------------------------
    def _check_classes(self, n_classes: int) -> None:
        if n_classes > MAX_CLASSES:
            raise CalcoreError(
                f"{self.name}: canonical calibration bins the whole simplex; with L = {n_classes} "
                f"classes that needs {self._n_bins_for(n_classes)} bins with {self.params} "
                f"(and at least 2^(L-1) = {2 ** (n_classes - 1)} just to split every class score "
                f"at 1/2), each needing enough calibration points. calcore allows L <= "
                f"{MAX_CLASSES}; use an M2B method such as tl-hb or cw-hb."
            )

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        self._check_classes(preds.n_classes)
        n_classes = preds.n_classes
        state = {"n_classes": n_classes, **self._define(preds)}
        bins = self._index(preds.probs, state)
        n_bins = self._n_bins_for(n_classes)
        use = self._estimation_rows(preds.probs, state)
        b, y = (bins, preds.labels) if use is None else (bins[use], preds.labels[use])
        counts = np.bincount(b, minlength=n_bins)
        hits = np.bincount(b * n_classes + y, minlength=n_bins * n_classes)
        hits = hits.reshape(n_bins, n_classes).astype(np.float64)
        fallback = counts < self._params["min_count"]
        dist = np.full((n_bins, n_classes), 1.0 / n_classes)  # fallback rows: 1/L (paper)
        np.divide(hits, counts[:, None], out=dist, where=~fallback[:, None])
        state.update(counts=counts, distribution=dist, fallback=fallback)
        info = {
            "n_calibration": preds.n_samples,
            "n_bins": n_bins,
            "n_estimation_rows": int(counts.sum()),
            "n_fallback_bins": int(fallback.sum()),
            "calibration_rows_in_fallback_bins": int(
                np.bincount(bins, minlength=n_bins)[fallback].sum()
            ),
        }
        return state, info

    def bin_index(self, probs) -> np.ndarray:
        """Bin id (``0 .. n_bins - 1``) of each row of ``probs`` (``Predictions`` or array)."""
        if self._state is None:
            raise CalcoreError(f"{self.name} is not fitted yet: call fit(predictions) first.")
        probs = probs.probs if isinstance(probs, Predictions) else np.asarray(probs, np.float64)
        if probs.ndim != 2 or probs.shape[1] != self._state["n_classes"]:
            raise CalcoreError(
                f"{self.name}: probs must have shape (n_samples, {self._state['n_classes']}); "
                f"got {probs.shape}."
            )
        return self._index(probs, self._state)

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, None]:
        bins = self._index(preds.probs, state)
        out = np.asarray(state["distribution"], dtype=np.float64)[bins]
        in_fallback = np.asarray(state["fallback"], dtype=bool)[bins]
        if self._params["fallback"] == "identity":
            out[in_fallback] = preds.probs[in_fallback]
        self._fit_info = {
            **self._fit_info,
            "last_transform": {
                "n_rows": preds.n_samples,
                "rows_in_fallback_bins": int(in_fallback.sum()),
            },
        }
        return out, None

"""A calibrator per slice of metadata columns: the same method fitted on each slice's rows.

One calibrator fitted on every calibration row is one map for all rows; a slice that
stays miscalibrated after it may need a map of its own. :class:`PerSliceCalibrator`
fits the method on every calibration row (the *global* map) and again on the rows of
each slice with at least ``min_rows`` of them; :meth:`~PerSliceCalibrator.transform`
maps each row by its slice's calibrator, and a row of a slice without one (too few
calibration rows, a fit that failed, a value never seen while fitting) by the global
one. The slicing is fixed when fitting: a datetime column's period and a number's
quantile-range edges are stored, so new rows are sliced as the calibration rows were
(values beyond the ranges join the first or last).

The predictions mapped need the metadata columns sliced by: loaded with them
(:func:`calcore.load_predictions` keeps them, :meth:`~calcore.Predictions.with_metadata`
adds them), or streamed with ``scan(..., slice_columns=...)`` and
``with_transform(calibrator.transform, with_metadata=True)``.

It saves to and loads from JSON like every calibrator (``to_dict`` / ``from_dict``, the
slices' calibrators nested), with method name :data:`PER_SLICE`. It is not in the
registry (:func:`calcore.make_calibrator`): it wraps a registered method and needs the
columns to slice by, which the registry's parameters do not describe.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from calcore._errors import CalcoreError
from calcore.calibrators._base import FORMAT_VERSION, Calibrator
from calcore.calibrators._registry import make_calibrator
from calcore.metadata import MAX_SLICE_VALUES
from calcore.predictions import Predictions
from calcore.slicing import Slicing, parse_slice_spec, slicing_of

__all__ = ["MIN_FIT_ROWS", "PER_SLICE", "PerSliceCalibrator", "SliceFit", "fits_summary"]

#: Fewest calibration rows a slice needs for a calibrator of its own (below, it keeps the
#: global fit): about what the binned calibrators need for a few rows per bin.
MIN_FIT_ROWS = 100
#: The ``method`` of a saved per-slice calibrator.
PER_SLICE = "per-slice"


@dataclass(frozen=True)
class SliceFit:
    """How one slice was recalibrated.

    Attributes
    ----------
    values : tuple of str
        The slice's value in each column (as ``SliceResult.values``).
    n_calib : int
        Its calibration rows.
    n_test : int
        Its rows among the predictions mapped (0 where not counted).
    own : bool
        True when a calibrator was fitted on its own calibration rows.
    note : str
        Why not, when not ("" when it was).
    """

    values: tuple[str, ...]
    n_calib: int
    n_test: int
    own: bool
    note: str = ""

    @property
    def label(self) -> str:
        return " | ".join(self.values)


def fits_summary(name: str, columns, fits) -> str:
    """One sentence: how many slices got their own fit, and why the others did not."""
    kept = [f for f in fits if not f.own]
    text = (
        f"{name} fitted per slice of {' x '.join(columns)}: "
        f"{sum(f.own for f in fits)} of {len(fits)} slices have their own fit"
    )
    if not kept:
        return text + "."
    reasons: dict[str, int] = {}
    for f in kept:
        reasons[f.note] = reasons.get(f.note, 0) + 1
    why = "; ".join(f"{n} {r}" for r, n in reasons.items())
    return f"{text}; the others keep the global fit ({why})."


class PerSliceCalibrator:
    """``method`` fitted on every calibration row and again on each slice's rows.

    Parameters
    ----------
    method : str
        A registered calibrator's name (:func:`calcore.make_calibrator`).
    by : str or sequence of str
        Slice specifications, as in :func:`calcore.evaluate_by` (``"country"``,
        ``"age:q4"``, ``"date:week"``); two or more cross.
    params : dict, optional
        The method's parameters.
    min_rows : int, default :data:`MIN_FIT_ROWS`
        Fewest calibration rows for a slice's own fit.
    max_slices : int
        Most slices allowed.

    Raises
    ------
    CalcoreError
        An unknown method or parameter, ``min_rows`` below 1, a bad specification.

    Examples
    --------
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2.0)
    >>> calib = calcore.simulate_predictions(sim, 600, seed=1).preds
    >>> shop = {"shop": np.where(np.arange(600) % 6 == 0, "small", "big")}
    >>> cal = PerSliceCalibrator("ts", by="shop").fit(calib.with_metadata(shop))
    >>> [(f.label, f.n_calib, f.own) for f in cal.fits]
    [('big', 500, True), ('small', 100, True)]
    >>> again = PerSliceCalibrator.from_dict(cal.to_dict())
    >>> test = calcore.simulate_predictions(sim, 600, seed=2).preds.with_metadata(shop)
    >>> bool((again.transform(test).probs == cal.transform(test).probs).all())
    True
    """

    name = PER_SLICE

    def __init__(
        self,
        method: str,
        *,
        by,
        params: dict | None = None,
        min_rows: int = MIN_FIT_ROWS,
        max_slices: int = MAX_SLICE_VALUES,
    ) -> None:
        self.method = str(method)
        self.params = dict(params or {})
        make_calibrator(self.method, **self.params)  # an unknown method or parameter: here
        specs = [by] if isinstance(by, str) else list(by)
        if not specs:
            raise CalcoreError("a per-slice calibrator needs at least one column to slice by.")
        for spec in specs:
            parse_slice_spec(spec)  # a bad grouping fails here, not when fitting
        self.by = tuple(str(s) for s in specs)
        if int(min_rows) < 1:
            raise CalcoreError(f"min_rows must be at least 1; got {min_rows}.")
        self.min_rows, self.max_slices = int(min_rows), int(max_slices)
        self.fallback: Calibrator | None = None
        self.maps: dict[tuple[str, ...], Calibrator] = {}
        self.fits: tuple[SliceFit, ...] = ()
        self.resolved: tuple = ()

    @property
    def is_fitted(self) -> bool:
        return self.fallback is not None

    @property
    def class_names(self) -> tuple[str, ...] | None:
        return None if self.fallback is None else self.fallback.class_names

    @property
    def n_own(self) -> int:
        """Slices with a calibrator of their own."""
        return len(self.maps)

    @property
    def columns(self) -> tuple[str, ...]:
        """The metadata columns read (the specifications' columns, once each)."""
        return tuple(dict.fromkeys(parse_slice_spec(s).column for s in self.by))

    def summary(self, name: str | None = None) -> str:
        """One sentence on the calibration rows' slices (``name``: the method's name)."""
        return fits_summary(name or self.method, self.by, self.fits)

    @property
    def fit_info(self) -> dict:
        """The global fit's facts, and how many slices have a fit of their own."""
        info = dict(self.fallback.fit_info) if self.fallback is not None else {}
        return info | {"slices": len(self.fits), "slices_with_own_fit": self.n_own}

    def fit(
        self,
        preds: Predictions,
        *,
        like: Slicing | None = None,
        fallback: Calibrator | None = None,
    ) -> "PerSliceCalibrator":
        """Fit the global calibrator on every row of ``preds`` and one per slice.

        Parameters
        ----------
        preds : Predictions
            Calibration rows with the metadata columns of ``by``.
        like : Slicing, optional
            A slicing of other rows by the same ``by`` (e.g. the test rows) whose periods
            and quantile ranges to use, so that a slice means the same rows on both
            sides; default: chosen from ``preds``.
        fallback : Calibrator, optional
            The method already fitted on ``preds`` (fitted here when not given).

        Returns
        -------
        PerSliceCalibrator
            Itself, fitted.

        Raises
        ------
        CalcoreError
            A column missing, a slicing :func:`calcore.slicing_of` refuses, or what
            fitting the global calibrator raises. A slice whose own fit fails keeps the
            global one, and :attr:`fits` says why.
        """
        slicing = slicing_of(preds.metadata, self.by, max_slices=self.max_slices, like=like)
        if fallback is None:
            fallback = make_calibrator(self.method, **self.params).fit(preds)
        elif not fallback.is_fitted:
            raise CalcoreError(f"fallback must be a fitted {self.method!r} calibrator.")
        maps, fits = {}, []
        for values, rows in zip(slicing.values, slicing.row_groups(), strict=True):
            n = int(rows.size)
            if n < self.min_rows:
                why = f"with fewer than {self.min_rows:,} calibration rows"
                fits.append(SliceFit(values, n, 0, False, why))
                continue
            try:
                own = make_calibrator(self.method, **self.params)
                maps[values] = own.fit(preds.subset(rows))
            except CalcoreError as err:  # e.g. a slice with one class: its fit is undefined
                first = str(err).split(". ")[0].rstrip(".")
                fits.append(SliceFit(values, n, 0, False, f"whose fit failed: {first}"))
                continue
            fits.append(SliceFit(values, n, 0, True))
        self.fallback, self.maps, self.fits = fallback, maps, tuple(fits)
        self.resolved = tuple(slicing.resolved)
        return self

    def slicing(self, preds: Predictions) -> Slicing:
        """The slices of ``preds``'s rows, cut as the calibration rows were."""
        self._check_fitted()
        like = Slicing(self.by, np.empty(0, dtype=np.intp), (), resolved=self.resolved)
        return slicing_of(preds.metadata, self.by, max_slices=self.max_slices, like=like)

    def transform(self, preds: Predictions) -> Predictions:
        """Each row mapped by its slice's calibrator, or the global one.

        The output keeps the rows' order, labels, weights and metadata, and its
        probabilities only (no logits: they come from several maps).

        Raises
        ------
        CalcoreError
            Not fitted, other classes, a column sliced by missing from ``preds.metadata``.
        """
        self._check_fitted()
        base = self.fallback.transform(preds)  # also checks the classes
        probs = np.array(base.probs, dtype=np.float64)
        slicing = self.slicing(preds)
        for values, rows in zip(slicing.values, slicing.row_groups(), strict=True):
            own = self.maps.get(values)
            if own is not None:
                probs[rows] = own.transform(preds.subset(rows)).probs
        probs.setflags(write=False)
        return replace(
            base,
            probs=probs,
            logits=None,
            load_report=None,
            sample_weight=preds.sample_weight,
            metadata=dict(preds.metadata),
        )

    def fit_transform(self, preds: Predictions) -> Predictions:
        return self.fit(preds).transform(preds)

    def _check_fitted(self) -> None:
        if self.fallback is None:
            raise CalcoreError(
                f"{PER_SLICE} {self.method} is not fitted yet: call fit(calibration_predictions) "
                "first."
            )

    # -- persistence -----------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-able description: the method, the slicing (with its periods and range
        edges), the global calibrator and each slice's, and how every slice was fitted."""
        self._check_fitted()
        return {
            "format": "calcore-calibrator",
            "version": FORMAT_VERSION,
            "method": PER_SLICE,
            "base_method": self.method,
            "params": self.params,
            "by": list(self.by),
            "resolved": [list(r) if isinstance(r, tuple) else r for r in self.resolved],
            "min_rows": self.min_rows,
            "class_names": list(self.fallback.class_names),
            "global": self.fallback.to_dict(),
            "slices": [
                {
                    "values": list(f.values),
                    "n_calib": f.n_calib,
                    "note": f.note,
                    **({"calibrator": self.maps[f.values].to_dict()} if f.own else {}),
                }
                for f in self.fits
            ],
            "fit_info": self.fit_info,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "PerSliceCalibrator":
        """Rebuild a per-slice calibrator saved with :meth:`to_dict`.

        Raises
        ------
        CalcoreError
            Not a saved per-slice calibrator, another format version, a missing field.
        """
        if not isinstance(data, dict) or data.get("method") != PER_SLICE:
            raise CalcoreError(f"Not a saved {PER_SLICE} calibrator.")
        for key in ("base_method", "params", "by", "resolved", "min_rows", "global", "slices"):
            if key not in data:
                raise CalcoreError(f"Saved {PER_SLICE} calibrator is missing the {key!r} field.")
        out = cls(
            data["base_method"], by=data["by"], params=data["params"], min_rows=data["min_rows"]
        )
        if len(data["resolved"]) != len(out.by):
            raise CalcoreError(
                f"Saved {PER_SLICE} calibrator: 'resolved' must have one entry per column."
            )
        out.resolved = tuple(tuple(r) if isinstance(r, list) else r for r in data["resolved"])
        out.fallback = Calibrator.from_dict(data["global"])
        fits, maps = [], {}
        for entry in data["slices"]:
            values = tuple(str(v) for v in entry["values"])
            own = "calibrator" in entry
            if own:
                maps[values] = Calibrator.from_dict(entry["calibrator"])
            fits.append(SliceFit(values, int(entry["n_calib"]), 0, own, str(entry.get("note", ""))))
        out.maps, out.fits = maps, tuple(fits)
        return out

    def __repr__(self) -> str:
        state = f"{self.n_own} of {len(self.fits)} slices" if self.is_fitted else "not fitted"
        return f"PerSliceCalibrator({self.method!r}, by={list(self.by)!r}) [{state}]"

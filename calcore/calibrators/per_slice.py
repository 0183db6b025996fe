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

from calcore.calibrators._base import FORMAT_VERSION, Calibrator
from calcore.calibrators._registry import make_calibrator
from calcore.calibrators._state import LARGEST_INTEGER, Array, Number, StateError, Text
from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import frozen_array
from calcore.predictions import Predictions
from calcore.predictions.metadata import MAX_SLICE_VALUES
from calcore.predictions.slicing import PERIODS, Slicing, parse_slice_spec, slicing_of

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
        return replace(
            base,
            probs=frozen_array(probs, owned=True),
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
        """Rebuild a per-slice calibrator saved with :meth:`to_dict`, every field checked
        (the global and each slice's calibrator as any saved calibrator is).

        Raises
        ------
        CalcoreError
            Not a saved per-slice calibrator, another format version, or a field that
            breaks its declaration, named by its JSON path (``slices[3].calibrator.state``).
        """
        if not isinstance(data, dict) or data.get("method") != PER_SLICE:
            raise CalcoreError(f"Not a saved {PER_SLICE} calibrator.")
        return Calibrator.from_dict(data)

    @classmethod
    def _from_saved(cls, data: dict, *, path: str, load) -> "PerSliceCalibrator":
        """:meth:`from_dict` for a document at JSON ``path``; raises ``StateError``.

        ``load(document, path=...)`` rebuilds the global and each slice's calibrator
        (:func:`calcore.calibrators._saved.load_nested`, which calls this method for a
        per-slice document: the loading side knows every saved layout).
        """
        at = (lambda key: f"{path}.{key}") if path else (lambda key: key)
        for key in ("base_method", "params", "by", "resolved", "min_rows", "global", "slices"):
            if key not in data:
                raise StateError(at(key), f"is missing (a saved {PER_SLICE} calibrator has it)")
        by, resolved = data["by"], data["resolved"]
        Text().check(data["base_method"], at("base_method"), None)
        if not isinstance(data["params"], dict):
            raise StateError(at("params"), "must be an object of parameter values")
        if not isinstance(by, list) or not by or not all(isinstance(b, str) for b in by):
            raise StateError(at("by"), "must be an array of slice specifications (texts)")
        for i, spec in enumerate(by):
            try:
                parse_slice_spec(spec)
            except CalcoreError as err:
                raise StateError(
                    f"{at('by')}[{i}]", f"is refused: {str(err).rstrip('.')}"
                ) from None
        Number(integer=True, minimum=1, maximum=LARGEST_INTEGER).check(
            data["min_rows"], at("min_rows"), None
        )
        try:  # an unknown method or a parameter out of its range
            out = cls(data["base_method"], by=by, params=data["params"], min_rows=data["min_rows"])
        except CalcoreError as err:
            raise StateError(at("params"), f"is refused: {str(err).rstrip('.')}") from None
        out.resolved = _resolved(resolved, at("resolved"), out.by)
        out.fallback = _part(load(data["global"], path=at("global")), out, at("global"))
        names = out.fallback.class_names
        slices = data["slices"]
        if not isinstance(slices, list):
            raise StateError(at("slices"), "must be an array of the slices' fits")
        fits, maps = [], {}
        for i, entry in enumerate(slices):
            where = f"{at('slices')}[{i}]"
            values = _slice_entry(entry, where, len(out.by))
            own = "calibrator" in entry
            if own:
                fitted = load(entry["calibrator"], path=f"{where}.calibrator")
                maps[values] = _part(fitted, out, f"{where}.calibrator")
                if fitted.class_names != names:
                    raise StateError(
                        f"{where}.calibrator.class_names", "must be the global fit's classes"
                    )
            fits.append(SliceFit(values, int(entry["n_calib"]), 0, own, entry.get("note", "")))
        out.maps, out.fits = maps, tuple(fits)
        return out

    def __repr__(self) -> str:
        state = f"{self.n_own} of {len(self.fits)} slices" if self.is_fitted else "not fitted"
        return f"PerSliceCalibrator({self.method!r}, by={list(self.by)!r}) [{state}]"


def _part(fitted, out: PerSliceCalibrator, path: str):
    """A saved fit of a per-slice calibrator: its method with its parameters."""
    probe = make_calibrator(out.method, **out.params)
    if not isinstance(fitted, Calibrator) or (fitted.name, fitted.params) != (
        probe.name,
        probe.params,
    ):
        raise StateError(
            path, f"must be a {out.method} calibrator with the parameters {probe.params}"
        )
    return fitted


def _resolved(value, path: str, specs: tuple[str, ...]) -> tuple:
    """Each column's resolved grouping, as its specification allows: range edges (sorted,
    finite) for a quantile grouping, a period for a datetime column, else null."""
    if not isinstance(value, list) or len(value) != len(specs):
        raise StateError(path, f"must be an array of {len(specs)} entries, one per column")
    out = []
    for i, (entry, spec) in enumerate(zip(value, specs, strict=True)):
        grouping = parse_slice_spec(spec).grouping
        quantiles = grouping is not None and grouping not in PERIODS
        if entry is None:
            out.append(None)
        elif quantiles:
            Array((None,), order="non-decreasing", nonempty=True).check(entry, f"{path}[{i}]", None)
            out.append(tuple(entry))
        elif isinstance(entry, str) and entry in PERIODS and grouping in (None, entry):
            out.append(entry)
        else:
            allowed = list(PERIODS) if grouping is None else [grouping]
            raise StateError(
                f"{path}[{i}]", f"must be null or one of {allowed} for {spec!r}; got {entry!r}"
            )
    return tuple(out)


def _slice_entry(entry, path: str, n_columns: int) -> tuple[str, ...]:
    """One slice's saved fit record: its values (one text per column), rows and note."""
    if not isinstance(entry, dict):
        raise StateError(path, "must be an object (values, n_calib, note, calibrator)")
    values = entry.get("values")
    if not isinstance(values, list) or len(values) != n_columns:
        raise StateError(f"{path}.values", f"must be an array of {n_columns} texts")
    for j, v in enumerate(values):
        Text().check(v, f"{path}.values[{j}]", None)
    if "n_calib" not in entry:
        raise StateError(f"{path}.n_calib", "is missing")
    Number(integer=True, minimum=0, maximum=LARGEST_INTEGER).check(
        entry["n_calib"], f"{path}.n_calib", None
    )
    Text().check(entry.get("note", ""), f"{path}.note", None)
    return tuple(values)

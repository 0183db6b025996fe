"""Calibrators fitted per slice: does a map per slice fix what one global map leaves?

A calibrator fitted on every calibration row is one map for all rows; a slice that
stays miscalibrated after it (:func:`calcore.evaluate_by` of its output) may need a map
of its own. :func:`fit_per_slice` fits the same method on each slice's calibration
rows and applies it to that slice's test rows. The calibration rows are sliced like the
test rows (``slicing_of(..., like=)``: the same periods and quantile ranges), so a slice
means the same rows on both sides. A slice with fewer than ``min_rows`` calibration rows,
or whose fit fails (one class only, say), keeps the global calibrator's output, and
the result says which and why: nothing is dropped silently.

The output is one :class:`~calcore.Predictions` of the test rows, in their order, with
their weights and metadata, so ``evaluate_by`` compares it with the global output slice
by slice. Its probabilities are kept, not its logits (they come from several maps). The
fitted maps are a :class:`~calcore.PerSliceCalibrator` (``.calibrator``), saved and
applied to other rows like any calibrator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calcore.calibrators import Calibrator
from calcore.calibrators.per_slice import (
    MIN_FIT_ROWS,
    PerSliceCalibrator,
    SliceFit,
    fits_summary,
)
from calcore.predictions import Predictions
from calcore.predictions.metadata import MAX_SLICE_VALUES
from calcore.predictions.slicing import slicing_of

__all__ = ["MIN_FIT_ROWS", "PerSliceCalibration", "SliceFit", "fit_per_slice"]


@dataclass(frozen=True, eq=False)
class PerSliceCalibration:
    """The test rows recalibrated slice by slice (:func:`fit_per_slice`).

    Attributes
    ----------
    method : str
    columns : tuple of str
        The slice specifications.
    output : Predictions
        The test rows, each mapped by its slice's calibrator (or the global one).
    slices : tuple of SliceFit
        In the order of the test rows' slicing.
    min_rows : int
    calibrator : PerSliceCalibrator
        The fitted calibrators (global and per slice): what maps the test rows, and
        what to save (``to_dict``) to map other rows alike.

    Examples
    --------
    >>> import calcore, numpy as np
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="underconfident", strength=2.0)
    >>> calib = calcore.simulate_predictions(sim, 300, seed=3).preds
    >>> test = calcore.simulate_predictions(sim, 300, seed=4).preds
    >>> day = {"day": np.repeat(["mon", "tue"], 150)}
    >>> out = calcore.fit_per_slice("ts", calib.with_metadata(day), test.with_metadata(day),
    ...                             "day", min_rows=200)  # fmt: skip
    >>> out.n_own, [s.note for s in out.slices]
    (0, ['with fewer than 200 calibration rows', 'with fewer than 200 calibration rows'])
    >>> out.summary().split("; ")[1]
    'the others keep the global fit (2 with fewer than 200 calibration rows).'
    """

    method: str
    columns: tuple[str, ...]
    output: Predictions
    slices: tuple[SliceFit, ...]
    min_rows: int
    calibrator: PerSliceCalibrator

    @property
    def n_own(self) -> int:
        """Slices with a calibrator of their own."""
        return sum(s.own for s in self.slices)

    def summary(self, name: str | None = None) -> str:
        """One sentence: how many test slices got their own fit, and why the others did
        not (``name``: how to call the method, its name by default)."""
        return fits_summary(name or self.method, self.columns, self.slices)


def fit_per_slice(
    method: str,
    calib: Predictions,
    test: Predictions,
    by,
    *,
    params: dict | None = None,
    global_calibrator: Calibrator | None = None,
    min_rows: int = MIN_FIT_ROWS,
    max_slices: int = MAX_SLICE_VALUES,
) -> PerSliceCalibration:
    """Fit ``method`` on each slice's calibration rows and map that slice's test rows.

    The slices are those of the test rows (:func:`calcore.slicing_of`); the calibration
    rows are cut alike (the same periods and quantile ranges).

    Parameters
    ----------
    method : str
        A calibrator name (:func:`calcore.make_calibrator`).
    calib, test : Predictions
        Both with the metadata columns of ``by``.
    by : str or sequence of str
        Slice specifications, as in :func:`calcore.evaluate_by`.
    params : dict, optional
        The calibrator's parameters.
    global_calibrator : Calibrator, optional
        The method already fitted on every calibration row (fitted here when not given):
        what slices without a fit of their own keep.
    min_rows : int, default :data:`MIN_FIT_ROWS`
        Fewest calibration rows for a slice's own fit.
    max_slices : int
        Most slices allowed.

    Returns
    -------
    PerSliceCalibration

    Raises
    ------
    CalcoreError
        An unknown method or parameter, a column missing from either split, a slicing
        that :func:`slicing_of` refuses, or what fitting the global calibrator raises.

    Examples
    --------
    >>> import calcore, numpy as np
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2.0)
    >>> calib = calcore.simulate_predictions(sim, 600, seed=1).preds
    >>> test = calcore.simulate_predictions(sim, 600, seed=2).preds
    >>> shop = lambda n: {"shop": np.where(np.arange(n) % 6 == 0, "small", "big")}
    >>> out = fit_per_slice("ts", calib.with_metadata(shop(600)),
    ...                     test.with_metadata(shop(600)), "shop")  # fmt: skip
    >>> [(s.label, s.n_calib, s.own) for s in out.slices]
    [('big', 500, True), ('small', 100, True)]
    """
    calibrator = PerSliceCalibrator(
        method, by=by, params=params, min_rows=min_rows, max_slices=max_slices
    )
    test_slicing = slicing_of(test.metadata, calibrator.by, max_slices=max_slices)
    calibrator.fit(calib, like=test_slicing, fallback=global_calibrator)
    fitted = {f.values: f for f in calibrator.fits}
    fits = []
    for values, rows in zip(test_slicing.values, test_slicing.row_groups(), strict=True):
        fit = fitted.get(values)
        if fit is None:
            fits.append(SliceFit(values, 0, int(rows.size), False, "without calibration rows"))
        else:
            fits.append(replace(fit, n_test=int(rows.size)))
    return PerSliceCalibration(
        method,
        test_slicing.columns,
        calibrator.transform(test),
        tuple(fits),
        int(min_rows),
        calibrator,
    )

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
by slice. Its probabilities are kept, not its logits (they come from several maps).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from calcore._errors import CalcoreError
from calcore.calibrators import make_calibrator
from calcore.metadata import MAX_SLICE_VALUES
from calcore.predictions import Predictions
from calcore.slicing import slicing_of

__all__ = ["MIN_FIT_ROWS", "PerSliceCalibration", "SliceFit", "fit_per_slice"]

#: Fewest calibration rows a slice needs for a calibrator of its own (below, it keeps the
#: global fit): about what the binned calibrators need for a few rows per bin.
MIN_FIT_ROWS = 100


@dataclass(frozen=True)
class SliceFit:
    """How one test slice was recalibrated.

    Attributes
    ----------
    values : tuple of str
        The slice's value in each column (as ``SliceResult.values``).
    n_calib, n_test : int
        Its calibration and test rows.
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

    Examples
    --------
    >>> import calcore
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

    @property
    def n_own(self) -> int:
        """Slices with a calibrator of their own."""
        return sum(s.own for s in self.slices)

    def summary(self, name: str | None = None) -> str:
        """One sentence: how many slices got their own fit, and why the others did not
        (``name``: how to call the method, its name by default)."""
        kept = [s for s in self.slices if not s.own]
        text = (
            f"{name or self.method} fitted per slice of {' x '.join(self.columns)}: "
            f"{self.n_own} of {len(self.slices)} slices have their own fit"
        )
        if not kept:
            return text + "."
        reasons: dict[str, int] = {}
        for s in kept:
            reasons[s.note] = reasons.get(s.note, 0) + 1
        why = "; ".join(f"{n} {r}" for r, n in reasons.items())
        return f"{text}; the others keep the global fit ({why})."


def fit_per_slice(
    method: str,
    calib: Predictions,
    test: Predictions,
    by,
    *,
    params: dict | None = None,
    global_output: Predictions | None = None,
    min_rows: int = MIN_FIT_ROWS,
    max_slices: int = MAX_SLICE_VALUES,
) -> PerSliceCalibration:
    """Fit ``method`` on each slice's calibration rows and map that slice's test rows.

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
    global_output : Predictions, optional
        The method fitted on every calibration row, applied to ``test`` (fitted here when
        not given): what slices without a fit of their own keep.
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
    >>> import calcore
    >>> sim = calcore.dirichlet_simulator(2, miscalibration="overconfident", strength=2.0)
    >>> calib = calcore.simulate_predictions(sim, 600, seed=1).preds
    >>> test = calcore.simulate_predictions(sim, 600, seed=2).preds
    >>> shop = lambda n: {"shop": np.where(np.arange(n) % 6 == 0, "small", "big")}
    >>> out = fit_per_slice("ts", calib.with_metadata(shop(600)),
    ...                     test.with_metadata(shop(600)), "shop")  # fmt: skip
    >>> [(s.label, s.n_calib, s.own) for s in out.slices]
    [('big', 500, True), ('small', 100, True)]
    """
    params = dict(params or {})
    if int(min_rows) < 1:
        raise CalcoreError(f"min_rows must be at least 1; got {min_rows}.")
    make_calibrator(method, **params)  # an unknown method or parameter fails here, not per slice
    test_slicing = slicing_of(test.metadata, by, max_slices=max_slices)
    calib_slicing = slicing_of(calib.metadata, by, max_slices=max_slices, like=test_slicing)
    if global_output is None:
        global_output = make_calibrator(method, **params).fit(calib).transform(test)
    probs = np.array(global_output.probs, dtype=np.float64)
    calib_rows = dict(zip(calib_slicing.values, calib_slicing.row_groups(), strict=True))
    fits = []
    for values, rows in zip(test_slicing.values, test_slicing.row_groups(), strict=True):
        own_rows = calib_rows.get(values, np.empty(0, dtype=np.intp))
        n_calib = int(own_rows.size)
        if n_calib < min_rows:
            why = (
                "without calibration rows"
                if n_calib == 0
                else f"with fewer than {min_rows:,} calibration rows"
            )
            fits.append(SliceFit(values, n_calib, int(rows.size), False, why))
            continue
        try:
            fitted = make_calibrator(method, **params).fit(calib.subset(own_rows))
            probs[rows] = fitted.transform(test.subset(rows)).probs
        except CalcoreError as err:  # e.g. a slice with one class: its fit is undefined
            first = str(err).split(". ")[0].rstrip(".")
            fits.append(
                SliceFit(values, n_calib, int(rows.size), False, f"whose fit failed: {first}")
            )
            continue
        fits.append(SliceFit(values, n_calib, int(rows.size), True))
    probs.setflags(write=False)
    output = replace(
        global_output,
        probs=probs,
        logits=None,
        load_report=None,
        sample_weight=test.sample_weight,
        metadata=dict(test.metadata),
    )
    return PerSliceCalibration(method, test_slicing.columns, output, tuple(fits), int(min_rows))

"""The validated, immutable container every calcore function consumes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from calcore.foundation.errors import CalcoreError
from calcore.foundation.softmax import log_softmax_rows
from calcore.foundation.validation import (
    InputContext,
    check_class_names,
    check_labels,
    check_logits,
    check_probs,
    check_sample_weight,
    check_unit_interval,
)

__all__ = ["Predictions"]


def _read_only(arr: np.ndarray | None) -> np.ndarray | None:
    if arr is not None:
        arr.setflags(write=False)
    return arr


def _frozen(arr: np.ndarray, *, fresh: bool) -> np.ndarray:
    """A read-only array with ``arr``'s values that no one else can write to.

    ``fresh``: no one else holds ``arr`` (made here, or handed over by the caller).
    Then a C-contiguous array owning its memory is frozen in place; otherwise it is
    copied (C order), unless it is already read-only and owns its memory
    (immutable, safe to share).
    """
    if arr.base is None and arr.flags.c_contiguous:
        if fresh:
            return _read_only(arr)
        if not arr.flags.writeable:
            return arr
    return _read_only(arr.copy())


@dataclass(frozen=True, eq=False)
class Predictions:
    """Predicted class probabilities with their true labels.

    Build it with :meth:`from_probs`, :meth:`from_logits` or
    :func:`calcore.load_predictions`; the constructors validate, the fields
    are then trusted everywhere. Arrays are read-only.

    Attributes
    ----------
    probs : ndarray of shape (n_samples, n_classes), float64
        Rows on the probability simplex (within the tolerance of
        :func:`calcore.foundation.validation.probability_sum_tolerance`).
    labels : ndarray of shape (n_samples,), int64
        True class indices in ``0 .. n_classes - 1``.
    class_names : tuple of str
        One name per column.
    logits : ndarray of shape (n_samples, n_classes), float64, or None
        Kept when the input was logits, so that temperature scaling can work on
        them rather than on ``log(probs)``.
    load_report : object or None
        What the file loader detected and did (a
        :class:`calcore.io.LoadReport`), when the predictions came from a file.
    normalized : bool
        False only for the outputs of an explicitly unnormalised calibrator
        (e.g. class-wise histogram binning): each entry is then a calibrated
        probability in [0, 1] of its own class, and rows need not sum to 1.
    sample_weight : ndarray of shape (n_samples,), float64, or None
        Row weights (frequency weights: finite, >= 0, not all 0), from a file's weight
        column or :meth:`with_sample_weight`. Every metric, diagram and report of these
        predictions uses them unless given ``sample_weight=`` explicitly; subsets and
        calibrated outputs keep them.
    metadata : dict of str to MetadataColumn
        The file's other columns (country, device, date...), one value per row, for
        slicing (:mod:`calcore.predictions.slicing`); subsets and calibrated outputs keep them.
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    logits: np.ndarray | None = None
    load_report: Any = field(default=None, repr=False)
    normalized: bool = True
    sample_weight: np.ndarray | None = field(default=None, repr=False)
    metadata: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_probs(
        cls,
        probs,
        labels,
        class_names=None,
        *,
        renormalize: bool = False,
        source: str = "probs",
        sample_weight=None,
    ) -> "Predictions":
        """Validate probabilities and labels.

        Parameters
        ----------
        probs : array_like of shape (n_samples, n_classes)
            Non-negative scores whose rows sum to 1.
        labels : array_like of shape (n_samples,)
            Integer class indices.
        class_names : sequence of str, optional
            Defaults to ``("0", "1", ...)``.
        renormalize : bool, default False
            Rescale rows whose sum is off by more than the tolerance instead of
            raising.
        source : str
            Name used in error messages.
        sample_weight : array_like of shape (n_samples,), optional
            Row weights, as :meth:`with_sample_weight`.

        Returns
        -------
        Predictions

        Raises
        ------
        CalcoreError
            See :func:`calcore.foundation.validation.check_probs` and ``check_labels``.

        Examples
        --------
        >>> p = Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
        >>> p.n_samples, p.n_classes
        (2, 2)
        """
        ctx = InputContext(source)
        probs64, _ = check_probs(probs, ctx=ctx, renormalize=renormalize)
        if probs64 is probs:
            probs64 = probs64.copy()  # never alias (or freeze) the caller's array
        labels64 = check_labels(labels, probs64.shape[1], n_rows=probs64.shape[0], ctx=ctx)
        names = check_class_names(class_names, probs64.shape[1], ctx=ctx)
        preds = cls(_read_only(probs64), _read_only(labels64), names)
        return preds if sample_weight is None else preds.with_sample_weight(sample_weight)

    @classmethod
    def from_logits(
        cls, logits, labels, class_names=None, *, source: str = "logits", sample_weight=None
    ) -> "Predictions":
        """Validate logits and labels; probabilities are their softmax.

        The softmax is computed as ``exp(log_softmax(z))`` in float64, which
        subtracts the row maximum first, so logits of any magnitude are safe.

        Parameters
        ----------
        logits : array_like of shape (n_samples, n_classes)
            Unnormalised log-probabilities (any finite reals).
        labels : array_like of shape (n_samples,)
            Integer class indices.
        class_names : sequence of str, optional
            Defaults to ``("0", "1", ...)``.
        source : str
            Name used in error messages.
        sample_weight : array_like of shape (n_samples,), optional
            Row weights, as :meth:`with_sample_weight`.

        Returns
        -------
        Predictions
            With ``logits`` kept.

        Raises
        ------
        CalcoreError
            Non-finite logits, wrong shapes, labels outside the classes.
        """
        ctx = InputContext(source)
        z = check_logits(logits, ctx=ctx)
        if z is logits:
            z = z.copy()
        labels64 = check_labels(labels, z.shape[1], n_rows=z.shape[0], ctx=ctx)
        names = check_class_names(class_names, z.shape[1], ctx=ctx)
        probs = log_softmax_rows(z)  # scipy.special.log_softmax, in row blocks
        np.exp(probs, out=probs)
        preds = cls(_read_only(probs), _read_only(labels64), names, logits=_read_only(z))
        return preds if sample_weight is None else preds.with_sample_weight(sample_weight)

    @classmethod
    def _calibrated(
        cls,
        probs,
        like: "Predictions",
        *,
        logits=None,
        normalized: bool = True,
        owned: bool = False,
    ) -> "Predictions":
        """A calibrator's output for the rows of ``like`` (same labels and classes), validated.

        Normalised outputs must lie on the simplex within the usual tolerance;
        unnormalised ones must lie in [0, 1]; logits must be finite. Raises
        CalcoreError otherwise: a calibrator producing invalid rows is reported,
        never passed on.

        Parameters
        ----------
        probs : array_like of shape (n_samples, n_classes)
        like : Predictions
            The input rows: labels and class names are taken from it.
        logits : array_like, optional
            Logits of the output, kept for composition.
        normalized : bool, default True
        owned : bool, default False
            The caller hands ``probs`` and ``logits`` over: it keeps no reference
            through which it could still write to them. A float64 array that owns
            its memory (``base is None``) is then frozen in place (made read-only)
            instead of copied; copying a 50,000 x 1,000 output costs about 0.7 s.
            A read-only array that owns its memory is shared as it is (nothing can
            change it). Anything else, e.g. a writeable view whose base someone
            else may hold, is still copied. With ``owned=False`` (the default) an
            array passed in is never frozen or aliased, as in the public
            constructors. :meth:`calcore.calibrators.Calibrator.transform` passes
            ``owned=True``: its ``_transform`` returns fresh arrays.
        """
        name = "calibrated probabilities"
        ctx = InputContext(name)
        if normalized:
            probs64, _ = check_probs(probs, ctx=ctx)
        else:
            probs64 = np.asarray(probs)
            # Two reductions, no temporaries; NaN and inf fail them, and then the full
            # check finds the first bad value and raises with its position.
            if not (
                probs64.dtype == np.float64
                and probs64.ndim == 2
                and probs64.size
                and probs64.min() >= 0.0
                and probs64.max() <= 1.0
            ):
                probs64 = check_unit_interval(probs, ctx=ctx)
        if probs64.shape != like.probs.shape:
            raise CalcoreError(
                f"{name}: shape {probs64.shape} differs from the input's {like.probs.shape}."
            )
        probs64 = _frozen(probs64, fresh=probs64 is not probs or owned)
        z = None
        if logits is not None:
            z = np.asarray(logits)
            with np.errstate(over="ignore", invalid="ignore"):
                finite_sum = z.dtype == np.float64 and z.ndim == 2 and np.isfinite(z.sum())
            if not finite_sum:
                # the sum can overflow for finite logits: only then does check_logits pass
                z = check_logits(logits, ctx=InputContext("calibrated logits"))
            if z.shape != probs64.shape:
                raise CalcoreError(
                    f"calibrated logits: shape {z.shape} differs from the input's {probs64.shape}."
                )
            z = _frozen(z, fresh=z is not logits or owned)
        return cls(
            probs64,
            like.labels,
            like.class_names,
            z,
            None,
            normalized,
            like.sample_weight,
            like.metadata,
        )

    # -- derived quantities, computed once ----------------------------------
    @property
    def n_samples(self) -> int:
        return int(self.probs.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.probs.shape[1])

    @cached_property
    def _top(self) -> tuple[np.ndarray, np.ndarray, int]:
        # One blockwise pass: row max, the first column attaining it, and how many rows have a tie.
        # (max + first-True argmax is much faster than a float argmax on wide rows.)
        n = self.n_samples
        if self.n_classes == 2:  # elementwise: a row reduction over 2 columns is ~10x slower
            p0, p1 = self.probs[:, 0], self.probs[:, 1]
            predicted = (p1 > p0).astype(np.int64)  # a tie goes to class 0, as below
            confidence = np.maximum(p0, p1)
            tied = int(np.count_nonzero(p0 == p1))
            return _read_only(predicted), _read_only(confidence), tied
        predicted = np.empty(n, dtype=np.int64)
        confidence = np.empty(n)
        tied = 0
        step = max(1, 4_000_000 // self.n_classes)
        for start in range(0, n, step):
            block = self.probs[start : start + step]
            top = block.max(axis=1)
            at_top = block == top[:, None]
            predicted[start : start + step] = at_top.argmax(axis=1)
            confidence[start : start + step] = top
            tied += int(np.count_nonzero(np.count_nonzero(at_top, axis=1) > 1))
        return _read_only(predicted), _read_only(confidence), tied

    @property
    def predicted(self) -> np.ndarray:
        """Predicted class ``argmax p`` per row; ties go to the lowest index."""
        return self._top[0]

    @property
    def confidence(self) -> np.ndarray:
        """Top probability ``max p`` per row."""
        return self._top[1]

    @property
    def n_tied_rows(self) -> int:
        """Rows whose maximum probability is shared by two or more classes."""
        return self._top[2]

    @cached_property
    def correct(self) -> np.ndarray:
        """``1.0`` where the predicted class is the label, else ``0.0``."""
        return _read_only((self.predicted == self.labels).astype(np.float64))

    @cached_property
    def label_probability(self) -> np.ndarray:
        """``p[i, y_i]``, the probability given to each row's label."""
        if self.n_classes == 2:  # elementwise: no fancy indexing over (n, 2)
            p = np.where(self.labels == 1, self.probs[:, 1], self.probs[:, 0])
        else:
            p = self.probs[np.arange(self.n_samples), self.labels]
        return _read_only(p)

    @cached_property
    def class_counts(self) -> np.ndarray:
        """Number of rows whose label is each class."""
        return _read_only(np.bincount(self.labels, minlength=self.n_classes))

    def subset(self, rows) -> "Predictions":
        """The predictions at ``rows`` (an index array or boolean mask), same classes."""
        rows = np.asarray(rows)
        logits = None if self.logits is None else _read_only(self.logits[rows])
        weights = None if self.sample_weight is None else _read_only(self.sample_weight[rows])
        return Predictions(
            _read_only(self.probs[rows]),
            _read_only(self.labels[rows]),
            self.class_names,
            logits,
            self.load_report,
            self.normalized,
            weights,
            {k: col.take(rows) for k, col in self.metadata.items()},
        )

    def with_metadata(self, metadata) -> "Predictions":
        """The same predictions with metadata columns (for slicing).

        Parameters
        ----------
        metadata : dict of str to MetadataColumn or to array_like
            One value per row. Arrays are read as loaded files' cells are: text
            (``""``/None missing), numbers (NaN missing), booleans or datetimes.

        Raises
        ------
        CalcoreError
            A column whose length is not the number of rows.

        Examples
        --------
        >>> p = Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
        >>> p.with_metadata({"device": ["mobile", "desktop"]}).metadata["device"].describe()
        'device: categorical, 2 values'
        """
        from calcore.predictions.metadata import metadata_column

        columns = {}
        for name, values in dict(metadata).items():
            col = metadata_column(str(name), values)
            if col.n_rows is not None and col.n_rows != self.n_samples:
                raise CalcoreError(
                    f"metadata column {name!r} has {col.n_rows} values for {self.n_samples} rows."
                )
            columns[str(name)] = col
        return replace(self, metadata=columns)

    def with_sample_weight(self, sample_weight, *, source: str = "sample_weight") -> "Predictions":
        """The same predictions with row weights (``None`` removes them).

        Parameters
        ----------
        sample_weight : array_like of shape (n_samples,) or None
            Frequency weights: finite, >= 0, not all 0. Integer weights equal repeated
            rows in every metric.
        source : str
            Name used in error messages.

        Returns
        -------
        Predictions

        Raises
        ------
        CalcoreError
            Wrong shape, a negative, NaN or infinite weight (naming its row), all zero.

        Examples
        --------
        >>> p = Predictions.from_probs([[0.9, 0.1], [0.3, 0.7]], [0, 1])
        >>> p.with_sample_weight([2, 1]).sample_weight
        array([2., 1.])
        """
        if sample_weight is None:
            return replace(self, sample_weight=None)
        w = check_sample_weight(sample_weight, self.n_samples, source=source)
        return replace(self, sample_weight=_read_only(w if w is not sample_weight else w.copy()))

    def __repr__(self) -> str:
        kind = "logits" if self.logits is not None else "probs"
        return (
            f"Predictions(n_samples={self.n_samples}, n_classes={self.n_classes}, "
            f"from={kind}, class_names={self.class_names[:5]}{'...' if self.n_classes > 5 else ''})"
        )

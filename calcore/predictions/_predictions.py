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
    ReadOnlyDict,
    check_class_names,
    check_labels,
    check_logits,
    check_probs,
    check_sample_weight,
    check_unit_interval,
    frozen_array,
)
from calcore.predictions.metadata import concat_columns

__all__ = ["Predictions", "take", "concat"]


def _handed_over(arr: np.ndarray, given, owned: bool) -> bool:
    """Whether a calibrator's validated output ``arr`` may be frozen in place: made by the
    validation (not ``given`` itself) or handed over by its caller (``owned``), and owning
    C-ordered memory, not a view of memory someone else may hold."""
    return (arr is not given or owned) and arr.base is None and arr.flags.c_contiguous


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
        Read-only (a :class:`~calcore.foundation.validation.ReadOnlyDict`): add columns
        with :meth:`with_metadata`.
    """

    probs: np.ndarray
    labels: np.ndarray
    class_names: tuple[str, ...]
    logits: np.ndarray | None = None
    load_report: Any = field(default=None, repr=False)
    normalized: bool = True
    sample_weight: np.ndarray | None = field(default=None, repr=False)
    metadata: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        # The arrays are frozen by the constructors (never the caller's own); the columns
        # dict is shared by every subset and calibrated output of these rows.
        if not isinstance(self.metadata, ReadOnlyDict):
            object.__setattr__(self, "metadata", ReadOnlyDict(self.metadata))

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
        probs64 = frozen_array(probs64, owned=probs64 is not probs)  # never the caller's
        labels64 = check_labels(labels, probs64.shape[1], n_rows=probs64.shape[0], ctx=ctx)
        names = check_class_names(class_names, probs64.shape[1], ctx=ctx)
        preds = cls(probs64, frozen_array(labels64, owned=True), names)
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
        z = frozen_array(z, owned=z is not logits)  # never the caller's
        labels64 = check_labels(labels, z.shape[1], n_rows=z.shape[0], ctx=ctx)
        names = check_class_names(class_names, z.shape[1], ctx=ctx)
        probs = log_softmax_rows(z)  # scipy.special.log_softmax, in row blocks
        np.exp(probs, out=probs)
        preds = cls(
            frozen_array(probs, owned=True), frozen_array(labels64, owned=True), names, logits=z
        )
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
        probs64 = frozen_array(probs64, owned=_handed_over(probs64, probs, owned))
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
            z = frozen_array(z, owned=_handed_over(z, logits, owned))
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
            return frozen_array(predicted, owned=True), frozen_array(confidence, owned=True), tied
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
        return frozen_array(predicted, owned=True), frozen_array(confidence, owned=True), tied

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
        return frozen_array((self.predicted == self.labels).astype(np.float64), owned=True)

    @cached_property
    def label_probability(self) -> np.ndarray:
        """``p[i, y_i]``, the probability given to each row's label."""
        if self.n_classes == 2:  # elementwise: no fancy indexing over (n, 2)
            p = np.where(self.labels == 1, self.probs[:, 1], self.probs[:, 0])
        else:
            p = self.probs[np.arange(self.n_samples), self.labels]
        return frozen_array(p, owned=True)

    @cached_property
    def class_counts(self) -> np.ndarray:
        """Number of rows whose label is each class."""
        return frozen_array(np.bincount(self.labels, minlength=self.n_classes), owned=True)

    def subset(self, rows) -> "Predictions":
        """The predictions at ``rows`` (an index array, boolean mask or slice), same classes.

        The method form of :func:`calcore.predictions.take` (weights, metadata and load
        report kept).
        """
        return take(self, rows)

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
        return replace(self, sample_weight=frozen_array(w, owned=w is not sample_weight))

    def __repr__(self) -> str:
        kind = "logits" if self.logits is not None else "probs"
        return (
            f"Predictions(n_samples={self.n_samples}, n_classes={self.n_classes}, "
            f"from={kind}, class_names={self.class_names[:5]}{'...' if self.n_classes > 5 else ''})"
        )


def _row_indices(rows, n_rows: int) -> np.ndarray:
    """``rows`` (indices or a boolean mask of ``n_rows`` values) as an index array."""
    rows = np.asarray(rows)
    if rows.ndim != 1:
        raise IndexError(f"rows must be one-dimensional; got shape {rows.shape}.")
    if rows.dtype == bool:
        if rows.size != n_rows:
            raise IndexError(f"a boolean mask of {rows.size} values for {n_rows} rows.")
        return np.flatnonzero(rows)
    if rows.size == 0:
        return np.empty(0, dtype=np.intp)
    if rows.dtype.kind not in "iu":
        raise IndexError(f"rows must be integers, a boolean mask or a slice; got {rows.dtype}.")
    return rows


def take(preds: Predictions, rows) -> Predictions:
    """The rows ``rows`` of ``preds``: every per-row field taken the same way.

    Probabilities, labels, logits, row weights and metadata columns are taken at the
    same rows; class names, the normalisation flag and the load report (which describes
    the file the rows came from) are kept. Nothing is validated again.

    Parameters
    ----------
    preds : Predictions
    rows : slice, array_like of int or array_like of bool
        A slice gives read-only views (no copy); indices (negative ones count from the
        end, repeats repeat the row) or a boolean mask of ``n_samples`` values give
        read-only copies, in the order of the indices.

    Returns
    -------
    Predictions

    Raises
    ------
    IndexError
        An index out of range, a mask of the wrong length, rows that are neither.

    Examples
    --------
    >>> p = Predictions.from_probs([[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]], [0, 1, 1])
    >>> take(p.with_sample_weight([1, 2, 3]), [2, 0]).sample_weight
    array([3., 1.])
    >>> take(p, [True, False, True]).labels.tolist(), take(p, slice(1, None)).n_samples
    ([0, 1], 2)
    """
    if isinstance(rows, slice):

        def at(arr):
            return frozen_array(arr[rows], owned=True)  # a view of read-only memory

    else:
        index = _row_indices(rows, preds.n_samples)

        def at(arr):
            # np.take: the same values as arr[index], faster on 2-D rows
            return frozen_array(np.take(arr, index, axis=0), owned=True)

        rows = index
    return type(preds)(
        at(preds.probs),
        at(preds.labels),
        preds.class_names,
        None if preds.logits is None else at(preds.logits),
        preds.load_report,
        preds.normalized,
        None if preds.sample_weight is None else at(preds.sample_weight),
        {name: col.take(rows) for name, col in preds.metadata.items()},
    )


def concat(parts) -> Predictions:
    """The rows of several predictions with the same classes, one part after the other.

    Every per-row field is joined the same way: probabilities and labels; logits when
    every part has them (else none: NLL then uses the probabilities); row weights when
    every part has them (mixing weighted and unweighted parts is an error: it would
    give the unweighted rows a weight no one chose); the metadata columns every part
    has with the same kind (:func:`calcore.predictions.metadata.concat_columns`; a column some part
    lacks could not slice all the joined rows, so it is left out). The result is
    normalised when every part is. One part is returned as it is; the join of several
    has no load report (it describes one file's read). Nothing is validated again.

    Parameters
    ----------
    parts : iterable of Predictions

    Returns
    -------
    Predictions

    Raises
    ------
    CalcoreError
        No parts, parts with different classes, weighted and unweighted parts mixed.

    Examples
    --------
    >>> a = Predictions.from_probs([[0.9, 0.1]], [0])
    >>> b = Predictions.from_probs([[0.2, 0.8], [0.6, 0.4]], [1, 0])
    >>> both = concat([a, b])
    >>> both.n_samples, both.labels.tolist()
    (3, [0, 1, 0])
    """
    parts = list(parts)
    if not parts:
        raise CalcoreError("concat needs at least one Predictions.")
    first = parts[0]
    if len(parts) == 1:
        return first
    for i, part in enumerate(parts[1:], start=1):
        if part.class_names != first.class_names:
            raise CalcoreError(
                f"concat: the parts have different classes (part 0: {list(first.class_names)}, "
                f"part {i}: {list(part.class_names)}); every part must list the same classes "
                "in the same order."
            )
    weighted = [p.sample_weight is not None for p in parts]
    if any(weighted) and not all(weighted):
        raise CalcoreError(
            "concat: some parts have row weights (sample_weight) and others do not; "
            "give every part weights (with_sample_weight) or none."
        )

    def joined(field_name):
        arrays = [getattr(p, field_name) for p in parts]
        if any(a is None for a in arrays):
            return None
        return frozen_array(np.concatenate(arrays), owned=True)

    metadata = {}
    for name in first.metadata:
        if all(name in p.metadata for p in parts):
            column = concat_columns([p.metadata[name] for p in parts])
            if column is not None:
                metadata[name] = column
    return type(first)(
        joined("probs"),
        joined("labels"),
        first.class_names,
        joined("logits"),
        None,
        all(p.normalized for p in parts),
        joined("sample_weight"),
        metadata,
    )

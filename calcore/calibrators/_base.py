"""The protocol every calibrator follows, and its JSON persistence.

A calibrator is configured by keyword parameters (validated against its
declared :class:`Param` list), learns a JSON-able *state* in :meth:`fit`, and
maps predictions with :meth:`transform`. ``to_dict``/``from_dict`` round-trip
the configuration and the state exactly (floats are written with ``repr``,
which Python reads back bit for bit), so a saved calibrator applied later gives
bit-identical outputs. Nothing is ever pickled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from calcore.calibrators._state import check_declared_state, to_jsonable
from calcore.foundation.errors import CalcoreError
from calcore.foundation.limits import MAX_ITERATIONS  # defined there: a limit of a request
from calcore.foundation.validation import row_weights
from calcore.predictions import Predictions

__all__ = ["Param", "Calibrator", "FORMAT_VERSION", "MAX_ITER", "MAX_ITERATIONS", "MAX_SEED"]
__all__ += ["to_jsonable"]

#: Version of the ``to_dict`` layout; bumped when it changes incompatibly.
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Param:
    """One hyper-parameter of a calibrator, for validation and for building UI controls.

    Attributes
    ----------
    name : str
    default : int, float, str, bool or None
    kind : {"int", "float", "str", "bool"}
    description : str
    choices : tuple, optional
        Allowed values for ``kind="str"``.
    minimum, maximum : float, optional
        Inclusive bounds for numbers.
    optional : bool
        Whether ``None`` is allowed.

    Examples
    --------
    >>> import calcore
    >>> param = calcore.CALIBRATORS["hb"].parameters[0]
    >>> param.name, param.default, param.kind, param.minimum
    ('bins', 15, 'int', 1)
    >>> param.check(10.0, owner="hb")
    10
    """

    name: str
    default: Any
    kind: str
    description: str
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    optional: bool = False

    def describe(self) -> str:
        """The rule in words, e.g. "an integer from 1 to 100,000" or "one of ['mse', 'nll']"."""
        if self.kind == "bool":
            rule = "true or false"
        elif self.kind == "str":
            rule = f"one of {list(self.choices)}" if self.choices else "a text"
        else:
            noun = "an integer" if self.kind == "int" else "a finite number"
            lo, hi = (_shown(bound) for bound in (self.minimum, self.maximum))
            if lo is not None and hi is not None:
                rule = f"{noun} from {lo} to {hi}"
            elif lo is not None:
                rule = f"{noun} >= {lo}"
            elif hi is not None:
                rule = f"{noun} <= {hi}"
            else:
                rule = noun
        return rule + (" (or none)" if self.optional else "")

    def check(self, value, *, owner: str):
        """``value`` converted to the parameter's kind, or a :class:`CalcoreError` naming
        ``owner``, the parameter and its range."""
        if value is None and self.optional:
            return None
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise CalcoreError(
                    f"{owner}: parameter {self.name!r} must be true or false; got {value!r}."
                )
            return bool(value)
        if self.kind == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise CalcoreError(
                    f"{owner}: parameter {self.name!r} must be one of {list(self.choices or [])}; "
                    f"got {_shown_value(value)}."
                )
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)
        ):
            raise CalcoreError(
                f"{owner}: parameter {self.name!r} must be a number; got {_shown_value(value)}. "
                f"Its range: {self.describe()}."
            )
        value = self._converted(value, owner=owner)
        if self.minimum is not None and value < self.minimum:
            raise CalcoreError(
                f"{owner}: parameter {self.name!r} must be >= {self.minimum}; got "
                f"{_shown_value(value)}. Its range: {self.describe()}."
            )
        if self.maximum is not None and value > self.maximum:
            raise CalcoreError(
                f"{owner}: parameter {self.name!r} must be <= {self.maximum}; got "
                f"{_shown_value(value)}. Its range: {self.describe()}."
            )
        return value

    def _converted(self, value, *, owner: str):
        """A number as int (``kind="int"``) or finite float; integers of any size are
        compared exactly (never through a float that would overflow)."""
        if isinstance(value, (int, np.integer)):
            if self.kind == "int":
                return int(value)
            if abs(int(value)) > 2**53:  # beyond exact float64 integers (and float() overflow)
                raise CalcoreError(
                    f"{owner}: parameter {self.name!r} must be {self.describe()}; got "
                    f"{_shown_value(value)}."
                )
            return float(value)
        value = float(value)
        if not math.isfinite(value):
            raise CalcoreError(
                f"{owner}: parameter {self.name!r} must be finite; got {value!r}. Its range: "
                f"{self.describe()}."
            )
        if self.kind == "int":
            if not value.is_integer():
                raise CalcoreError(
                    f"{owner}: parameter {self.name!r} must be an integer; got {value!r}."
                )
            return int(value)
        return value


def _shown(bound) -> str | None:
    """A bound for people: integers with thousands separators, others as Python prints them."""
    if bound is None:
        return None
    if float(bound).is_integer() and abs(bound) >= 1000:
        return f"{int(bound):,}"
    return f"{bound}" if not float(bound).is_integer() else f"{int(bound)}"


def _shown_value(value) -> str:
    """``repr`` of a value from the user, cut to 60 characters (a 400-digit number stays short)."""
    if isinstance(value, (int, np.integer)) and abs(int(value)) >= 10**60:
        # str() of a huge integer is slow, and refused beyond 4,300 digits: say its size
        digits = int(abs(int(value)).bit_length() * math.log10(2)) + 1
        return f"an integer of about {digits:,} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


#: Largest seed of the randomised methods: numpy's seeds are non-negative (a negative one
#: raised ValueError from deep inside a fit); 2**32 - 1 is the classic 32-bit seed range.
MAX_SEED = 2**32 - 1

#: The ``max_iter`` parameter of the iteratively fitted methods (ets with NLL, vs, ms, dirichlet,
#: platt, beta).
MAX_ITER = Param(
    "max_iter", 1000, "int", "Iteration limit of the optimiser.", minimum=10,
    maximum=MAX_ITERATIONS,
)  # fmt: skip


#: Most score values a fit on repeated rows may hold (2**26: 512 MiB of float64).
MAX_REPEATED_VALUES = 1 << 26


def _repeated_rows(weights: np.ndarray, n_classes: int, *, owner: str) -> np.ndarray:
    """Row indices, each repeated as often as its integer weight says.

    Raises
    ------
    CalcoreError
        A fractional weight, or more repeated values than :data:`MAX_REPEATED_VALUES`.
    """
    fractional = weights != np.round(weights)
    if fractional.any():
        i = int(np.argmax(fractional))
        raise CalcoreError(
            f"{owner}: row {i} (0-based) of the rows it is fitted on has weight "
            f"{float(weights[i])!r}, but this method fits weighted "
            f"rows by repeating them, which needs integer weights. Round the weights, or use "
            f"a method that takes any weights (ts)."
        )
    total = float(weights.sum())
    if total * n_classes > MAX_REPEATED_VALUES:
        raise CalcoreError(
            f"{owner}: the weights repeat the rows into {total:,.0f} rows x {n_classes} "
            f"classes, more than {MAX_REPEATED_VALUES:,} values. Fit on a sample of the rows "
            f"or scale the weights down."
        )
    return np.repeat(np.arange(weights.size), weights.astype(np.int64))


#: Rebuilds any saved calibrator (set by :func:`register_saved_loader`).
_saved_loader = None


def register_saved_loader(load) -> None:
    """Set the function :meth:`Calibrator.from_dict` rebuilds a saved calibrator with.

    That is :func:`calcore.calibrators._saved.calibrator_from_saved`: it knows every
    method (the registry) and the per-slice document, which all build on this base class,
    so the loading side registers itself here when imported rather than being imported by
    the base class.
    """
    global _saved_loader
    _saved_loader = load


class Calibrator:
    """Base class of calcore's post-hoc calibrators.

    Subclasses set the class attributes and implement :meth:`_fit` (returning a
    JSON-able state dict and a fit-info dict) and :meth:`_transform` (returning
    the new probabilities, and logits when the method produces them).

    Class attributes
    ----------------
    name : str
        Stable short name used by :func:`calcore.make_calibrator`.
    family : str
        ``"parametric"``, ``"binning"``, ``"isotonic"``, ... (the keys of
        :data:`calcore.CALIBRATOR_FAMILIES`).
    title : str
        The method's full name, for people ("Temperature scaling").
    use : str
        One line on when to use it ("one parameter: keeps accuracy, works with few
        calibration rows"); the dashboard's picker shows it.
    accuracy_preserving : bool
        Whether ``argmax`` of every row is unchanged (ties excepted).
    injective : bool
        Whether distinct input rows always map to distinct outputs. With
        ``accuracy_preserving`` it makes the calibration gain exact (Mix-n-Match
        Prop. 4.1); binning methods are not injective.
    normalized : bool
        Whether output rows lie on the simplex. Unnormalised methods (e.g.
        class-wise histogram binning) say so, and renormalise only when built
        with ``renormalize=True``.
    parameters : tuple of Param
    binary_only : bool
        Refuses problems with more than two classes.
    slow : bool
        Whether a fit can take more than a few seconds on 10^4 x 10^2 data.
    state_fields : dict
        The declared fields of the saved state (name -> ``Number``, ``Array``, ...), held
        against a saved calibrator before it is used (:meth:`from_dict`).
    weighted : bool
        Whether :meth:`_fit` uses row weights (``preds.sample_weight``, the positive ones:
        rows of weight 0 are left out before) itself, so any non-negative weights work.
        Other methods fit weighted rows by repeating each
        row as often as its weight says, which is exact for integer weights and
        refused for fractional ones (see :meth:`fit`).

    Examples
    --------
    >>> import calcore
    >>> logits = [[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]
    >>> preds = calcore.Predictions.from_logits(logits, [0, 1, 1, 1])
    >>> ts = calcore.make_calibrator("ts").fit(preds)
    >>> round(ts.fit_info["temperature"], 4), ts.transform(preds).predicted.tolist()
    (0.9881, [0, 1, 0, 1])
    >>> calcore.Calibrator.from_dict(ts.to_dict()).params == ts.params
    True
    """

    name: ClassVar[str] = ""
    family: ClassVar[str] = ""
    description: ClassVar[str] = ""
    title: ClassVar[str] = ""
    use: ClassVar[str] = ""
    accuracy_preserving: ClassVar[bool] = False
    injective: ClassVar[bool] = False
    normalized: ClassVar[bool] = True
    parameters: ClassVar[tuple[Param, ...]] = ()
    binary_only: ClassVar[bool] = False
    slow: ClassVar[bool] = False
    weighted: ClassVar[bool] = False
    #: The fields of the saved state, by name (see :mod:`calcore.calibrators._state`).
    state_fields: ClassVar[dict | None] = None

    def __init__(self, **params):
        known = {p.name: p for p in self.parameters}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise CalcoreError(
                f"{self.name}: unknown parameter(s) {unknown}; the parameters are {sorted(known)}."
            )
        self._params = {
            name: spec.check(params.get(name, spec.default), owner=self.name)
            for name, spec in known.items()
        }
        self._check_params(self._params)
        self._state: dict | None = None
        self._fit_info: dict = {}
        self._class_names: tuple[str, ...] | None = None

    # -- to be provided by subclasses ------------------------------------------
    def _check_params(self, params: dict) -> None:
        """Cross-parameter checks; raise CalcoreError on a bad combination."""

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        raise NotImplementedError

    def _transform(self, preds: Predictions, state: dict) -> tuple[np.ndarray, np.ndarray | None]:
        """New probabilities (and logits or None) for ``preds``.

        The arrays are handed over to the returned :class:`Predictions`, which
        freezes them without a copy (``Predictions._calibrated(owned=True)``):
        return fresh arrays, or read-only ones, and keep no writeable reference
        to them (no array stored in the calibrator, no view of a buffer reused later).
        """
        raise NotImplementedError

    # -- the protocol ------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The hyper-parameters (JSON-able copy)."""
        return dict(self._params)

    @property
    def is_fitted(self) -> bool:
        return self._state is not None

    @property
    def fit_info(self) -> dict:
        """What the fit did, for people: convergence, fitted values, classes left unchanged, ..."""
        return dict(self._fit_info)

    def note_fit(self, **facts) -> "Calibrator":
        """Add facts about how the calibrator was fitted to ``fit_info`` (kept when saved),
        e.g. that it saw a sample of the calibration rows. Returns ``self``."""
        if not self.is_fitted:
            raise CalcoreError(
                f"{self.name}: fit the calibrator before noting facts about the fit."
            )
        self._fit_info.update(to_jsonable(facts))
        return self

    @property
    def class_names(self) -> tuple[str, ...] | None:
        return self._class_names

    def fit(self, preds: Predictions, *, sample_weight=None) -> "Calibrator":
        """Learn the calibration map from ``preds`` (the calibration split). Returns ``self``.

        Parameters
        ----------
        preds : Predictions
        sample_weight : array_like of shape (n_samples,), optional
            Row weights (frequency weights); default ``preds.sample_weight`` (a file's
            weight column). Methods with ``weighted = True`` (the scaling methods, Platt,
            beta, isotonic regression and their wrappers) use them in their objective;
            the others are fitted on each row repeated as often as its weight, which
            equals fitting on repeated rows exactly and
            needs integer weights (at most :data:`MAX_REPEATED_VALUES` values once
            repeated). ``fit_info["sample_weight"]`` says which was done.

        Raises
        ------
        CalcoreError
            Not Predictions, a binary-only method on more classes, bad weights, or
            fractional weights for a method that can only repeat rows.
        """
        if not isinstance(preds, Predictions):
            raise CalcoreError(
                f"{self.name}.fit expects calcore.Predictions; got {type(preds).__name__}."
            )
        if self.binary_only and preds.n_classes != 2:
            raise CalcoreError(
                f"{self.name} is a binary calibrator and the data has {preds.n_classes} classes; "
                f"wrap it in an M2B reduction such as 'tl-{self.name}' or 'cw-{self.name}'."
            )
        weights = row_weights(preds, sample_weight)
        if weights is None:
            state, info = self._fit(preds)
        elif self.weighted:
            # rows of weight 0 are left out, as repeating each row w times leaves them out
            kept = np.flatnonzero(weights > 0)
            fitted = preds if kept.size == preds.n_samples else preds.subset(kept)
            state, info = self._fit(replace(fitted, sample_weight=weights[kept]))
            info = {**info, "sample_weight": "row weights in the fit's objective"}
        else:
            rows = _repeated_rows(weights, preds.n_classes, owner=self.name)
            state, info = self._fit(replace(preds.subset(rows), sample_weight=None))
            info = {**info, "sample_weight": "integer row weights: each row repeated that often"}
        self._state = to_jsonable(state)
        self._fit_info = to_jsonable(info)
        self._class_names = preds.class_names
        return self

    def transform(self, preds: Predictions) -> Predictions:
        """Recalibrated predictions for ``preds`` (same rows, labels and classes)."""
        if self._state is None:
            raise CalcoreError(
                f"{self.name} is not fitted yet: call fit(calibration_predictions) first."
            )
        if not isinstance(preds, Predictions):
            raise CalcoreError(
                f"{self.name}.transform expects calcore.Predictions; got {type(preds).__name__}."
            )
        if preds.class_names != self._class_names:
            raise CalcoreError(
                f"{self.name} was fitted on classes {list(self._class_names)}, but these "
                f"predictions have classes {list(preds.class_names)}; apply it to data with the "
                f"same classes in the same order."
            )
        probs, logits = self._transform(preds, self._state)
        return Predictions._calibrated(
            probs, preds, logits=logits, normalized=self.normalized, owned=True
        )

    def fit_transform(self, preds: Predictions) -> Predictions:
        return self.fit(preds).transform(preds)

    # -- persistence -----------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-able description: name, parameters, fitted state, classes, fit info."""
        if self._state is None:
            raise CalcoreError(
                f"{self.name} is not fitted yet: only fitted calibrators can be saved."
            )
        return {
            "format": "calcore-calibrator",
            "version": FORMAT_VERSION,
            "method": self.name,
            "params": self.params,
            "class_names": list(self._class_names),
            "state": self._state,
            "fit_info": self._fit_info,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Calibrator":
        """Rebuild a fitted calibrator saved with :meth:`to_dict` (any method, via the
        registry; ``Calibrator.from_dict`` also rebuilds a saved
        :class:`~calcore.calibrators.per_slice.PerSliceCalibrator`), with the loader of
        :func:`register_saved_loader`.

        Every field is checked before use: the parameters against their declared ranges,
        the state against the method's declared state (:meth:`declared_state`).

        Raises
        ------
        CalcoreError
            Not a saved calibrator, another format version, or a field that breaks its
            declaration, named by its JSON path (``state.classes[2].edges[3]``).
        """
        if _saved_loader is None:  # the package (calcore.calibrators) sets it when imported
            raise RuntimeError("import calcore.calibrators before loading a saved calibrator")
        calibrator = _saved_loader(data)
        if cls is not Calibrator and not isinstance(calibrator, cls):
            raise CalcoreError(f"Saved calibrator is a {data['method']!r}, not a {cls.name!r}.")
        return calibrator

    # -- the declared state of a saved calibrator --------------------------------------
    def declared_state(self) -> dict | None:
        """The fields of this calibrator's saved state (see :mod:`calcore.calibrators._state`):
        ``state_fields``, or, where the parameters change them, a method's own."""
        return self.state_fields

    def state_sizes(self, n_classes: int, *, path: str) -> dict[str, int]:
        """Sizes of the declared state that the parameters fix (e.g. ``{"K": k}``); raise
        :class:`~calcore.calibrators._state.StateError` at ``path`` when they cannot hold."""
        return {}

    def check_saved_state(self, state, *, path: str, n_classes: int) -> None:
        """Check a saved ``state`` (at JSON ``path``) for ``n_classes`` classes: the declared
        fields, then :meth:`_check_saved_rules`. Raises ``StateError`` naming the field."""
        check_declared_state(self, state, path=path, n_classes=n_classes)
        self._check_saved_rules(state, path=path, n_classes=n_classes)

    def _check_saved_rules(self, state: dict, *, path: str, n_classes: int) -> None:
        """Rules across fields that a declaration cannot state (subclasses)."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({shown}){'' if self.is_fitted else ' [not fitted]'}"

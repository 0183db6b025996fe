"""The declared state of a saved calibrator, and its check before use.

Every calibrator declares the fields of the state it saves (``Calibrator.state_fields``, or
``declared_state()`` where the parameters change it): each field's type, its shape in
terms of named sizes, and its range. :func:`check_state` holds a state read from a file
against that declaration, so a changed or damaged file (a temperature of -1 that inverts
every ranking, reversed bin edges, a bin value of 7.5, state for 1 of 3 classes, a 2-D
array where a vector belongs) is refused with the JSON path of the field and the rule,
never used and never a traceback.

Sizes are named in shapes: ``"L"`` is the number of classes (from ``class_names``), and a
calibrator may fix others (``"K"`` ranks, ``"N"`` bins); any other name is set by the first
field that uses it and must agree in the others. ``"B-1"`` is one less than ``B``.

Specifications
--------------
:class:`Number`, :class:`Flag`, :class:`Text`, :class:`Array` (numbers, counts or flags of a
declared shape and order), :class:`Items` (a list of nested states, one per class or rank),
:class:`Fields` (a nested object), :class:`Saved` (a complete saved calibrator, as a
composition holds) and :class:`Recomputed` (a value the parameters determine exactly).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from calcore.foundation.errors import CalcoreError

__all__ = ["Number", "Flag", "Text", "Array", "Items", "Fields", "Saved", "Recomputed"]
__all__ += ["StateError", "check_state", "LARGEST_INTEGER", "MAX_COEFFICIENT"]
__all__ += ["check_declared_state", "to_jsonable"]

#: Largest integer a saved state may hold: beyond 2**53 integers are not exact in float64,
#: and no count or size of a fit comes near it.
LARGEST_INTEGER = 2**53
#: Largest magnitude of a fitted coefficient (scales, slopes, biases): far beyond any fit
#: (penalised, or started at the identity), and small enough that ``W z`` stays finite.
MAX_COEFFICIENT = 1e12
#: Slack of every range bound, relative (at least 1e-12 absolute): a fitted value at a bound
#: may differ from it in the last bits (a temperature clamped to ``max_temperature`` is
#: stored as ``1 / (1 / T)``; a mean of 0/1 outcomes may round a bit above 1).
BOUND_SLACK = 1e-12
#: Longest text field of a state (an optimiser's message).
MAX_TEXT_CHARS = 10_000
#: Tolerance of "sums to 1" (rows of a distribution, weights on the simplex).
SUM_TOLERANCE = 1e-9


class StateError(CalcoreError):
    """A field of a saved state breaks its declaration; ``path`` is its JSON path.

    ``damaged`` is False where the document is not damaged but of another kind (not a
    calibrator, another format version), so the message does not suggest saving again.
    """

    def __init__(self, path: str, rule: str, *, damaged: bool = True):
        self.path, self.rule, self.damaged = path, rule, damaged
        super().__init__(f"{path} {rule}")


@dataclass
class Context:
    """What a check needs besides the value: the calibrator, its parameters and the sizes."""

    calibrator: Any
    params: dict
    dims: dict[str, int]

    def nested(self) -> "Context":
        """A copy whose new sizes stay local (each class's own number of bins)."""
        return Context(self.calibrator, self.params, dict(self.dims))


def _shown(value) -> str:
    """A value from the file for a message, short (a 400-digit integer is not printed whole)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    if isinstance(value, (list, dict)):
        return f"a JSON {'array' if isinstance(value, list) else 'object'}"
    text = json.dumps(value) if isinstance(value, (str, bool)) or value is None else repr(value)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _bound(spec_bound, ctx: Context):
    """A bound given as a number, or as the name of a parameter whose value it is."""
    return ctx.params[spec_bound] if isinstance(spec_bound, str) else spec_bound


def _slack(value: float | None, *, lower: bool) -> float | None:
    """A bound widened by :data:`BOUND_SLACK` (rounding of a fit, never a real excess)."""
    if value is None:
        return None
    widen = max(abs(value), 1.0) * BOUND_SLACK
    return value - widen if lower else value + widen


def _range_words(lo, hi, *, above=None) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above:g}")
    if lo is not None:
        parts.append(f">= {lo:g}")
    if hi is not None:
        parts.append(f"<= {hi:g}")
    return " and ".join(parts)


_DIM = re.compile(r"^([A-Za-z_]+)([+-]\d+)?$")


def _size(dim, actual: int, path: str, ctx: Context, what: str) -> None:
    """Check (or set) the named size ``dim`` against an ``actual`` length."""
    if dim is None:
        return
    if isinstance(dim, int):
        if actual != dim:
            raise StateError(path, f"must have {dim} {what}; got {actual}")
        return
    name, offset = _DIM.match(dim).groups()
    offset = int(offset or 0)
    if name not in ctx.dims:
        if actual - offset < 0:
            raise StateError(path, f"must have at least {offset} {what}; got {actual}")
        ctx.dims[name] = actual - offset
        return
    wanted = ctx.dims[name] + offset
    if actual != wanted:
        meaning = {"L": "one per class", "K": "one per rank"}.get(name, f"{dim} = {wanted}")
        raise StateError(path, f"must have {wanted} {what} ({meaning}); got {actual}")


def _size_words(dim, ctx: Context | None) -> str:
    """A declared size for people: its number where known (``"L"`` with 3 classes: 3)."""
    if dim is None or isinstance(dim, int):
        return "any" if dim is None else str(dim)
    name, offset = _DIM.match(dim).groups()
    if ctx is not None and name in ctx.dims:
        return str(ctx.dims[name] + int(offset or 0))
    return "any"


@dataclass(frozen=True)
class Number:
    """A JSON number: finite, within ``minimum``/``maximum`` (numbers or parameter names),
    above ``above`` (exclusive), an integer with ``integer``; ``dim`` names the size an
    integer field states (e.g. fwb's ``bins``)."""

    minimum: float | str | None = None
    maximum: float | str | None = None
    above: float | None = None
    integer: bool = False
    dim: str | None = None

    def describe(self, ctx: Context) -> str:
        noun = "an integer" if self.integer or self.dim else "a finite number"
        rng = _range_words(_bound(self.minimum, ctx), _bound(self.maximum, ctx), above=self.above)
        return f"{noun} {rng}".strip()

    def check(self, value, path: str, ctx: Context) -> None:
        rule = f"must be {self.describe(ctx)}"
        integer = self.integer or self.dim is not None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise StateError(path, f"{rule}; got {_type_name(value)} ({_shown(value)})")
        if isinstance(value, int) and abs(value) > LARGEST_INTEGER:
            raise StateError(path, f"{rule}; got {_shown(value)} (more than 2**53)")
        if not math.isfinite(value) or (integer and not float(value).is_integer()):
            raise StateError(path, f"{rule}; got {_shown(value)}")
        lo = _slack(_bound(self.minimum, ctx), lower=True)
        hi = _slack(_bound(self.maximum, ctx), lower=False)
        if (
            (lo is not None and value < lo)
            or (hi is not None and value > hi)
            or (self.above is not None and value <= self.above)
        ):
            raise StateError(path, f"{rule}; got {_shown(value)}")
        if self.dim is not None:
            wanted = ctx.dims.setdefault(self.dim, int(value))
            if int(value) != wanted:
                raise StateError(
                    path,
                    f"must be {wanted}, the size of the fields that have {self.dim} entries; "
                    f"got {_shown(value)}",
                )


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false``."""

    def describe(self, ctx: Context) -> str:
        return "true or false"

    def check(self, value, path: str, ctx: Context) -> None:
        if not isinstance(value, bool):
            raise StateError(path, f"must be true or false; got {_shown(value)}")


@dataclass(frozen=True)
class Text:
    """A text of at most :data:`MAX_TEXT_CHARS` characters."""

    def describe(self, ctx: Context) -> str:
        return "a text"

    def check(self, value, path: str, ctx: Context) -> None:
        if not isinstance(value, str):
            raise StateError(path, f"must be a text; got {_type_name(value)}")
        if len(value) > MAX_TEXT_CHARS:
            raise StateError(
                path, f"must be at most {MAX_TEXT_CHARS:,} characters; got {len(value):,}"
            )


_KINDS = {  # kind -> (plural, one entry, JSON types, dtype)
    "float": ("numbers", "a number", (int, float), np.float64),
    "int": ("integers", "an integer (no decimal point)", (int,), np.int64),
    "bool": ("true/false values", "true or false", (bool,), np.bool_),
}


@dataclass(frozen=True)
class Array:
    """A JSON array (nested for 2-D) of one kind of value, with a declared shape.

    Attributes
    ----------
    shape : tuple
        One entry per axis: a size name (``"L"``, ``"B"``, ``"B-1"``), an int, or None (any).
    kind : {"float", "int", "bool"}
        Floats are finite; ints are integers (not 1.0) within 2**53.
    minimum, maximum : float or str, optional
        Bounds of every entry (or the name of the parameter giving one).
    order : {"non-decreasing", "increasing"}, optional
        Along the (1-D) array: bin edges, isotonic steps.
    sums_to_one : bool
        Every row (the last axis) sums to 1 within :data:`SUM_TOLERANCE`.
    nonempty : bool
        At least one entry.
    """

    shape: tuple
    kind: str = "float"
    minimum: float | str | None = None
    maximum: float | str | None = None
    order: str | None = None
    sums_to_one: bool = False
    nonempty: bool = False

    def describe(self, ctx: Context) -> str:
        noun = _KINDS[self.kind][0]
        dims = " x ".join(_size_words(d, ctx) for d in self.shape)
        words = [f"an array of {noun} of shape ({dims})"]
        rng = _range_words(_bound(self.minimum, ctx), _bound(self.maximum, ctx))
        if rng:
            words.append(f"each {rng}")
        if self.order:
            words.append(self.order)
        if self.sums_to_one:
            words.append("each row summing to 1")
        return ", ".join(words)

    def check(self, value, path: str, ctx: Context) -> None:
        array = self._entries(value, path, ctx, axis=0)
        if self.nonempty and array.size == 0:
            raise StateError(path, "must not be empty")
        if self.kind == "bool":
            return
        bad = ~np.isfinite(array) if self.kind == "float" else np.zeros(array.shape, bool)
        lo, hi = _bound(self.minimum, ctx), _bound(self.maximum, ctx)
        with np.errstate(invalid="ignore"):
            if lo is not None:
                bad |= array < _slack(lo, lower=True)
            if hi is not None:
                bad |= array > _slack(hi, lower=False)
        if bad.any():
            where = np.unravel_index(int(np.argmax(bad)), array.shape)
            shown = array[where].item()
            rule = "must be finite" if not np.isfinite(shown) else f"must be {_range_words(lo, hi)}"
            raise StateError(_indexed(path, where), f"{rule}; got {shown!r}")
        if self.order and array.size > 1:
            step = np.diff(array)
            bad = step <= 0 if self.order == "increasing" else step < 0
            if bad.any():
                i = int(np.argmax(bad)) + 1
                raise StateError(
                    _indexed(path, (i,)),
                    f"must be {'above' if self.order == 'increasing' else 'at least'} the entry "
                    f"before it ({self.order} order); got {array[i].item()!r} after "
                    f"{array[i - 1].item()!r}",
                )
        if self.sums_to_one and array.size:
            totals = array.sum(axis=-1)
            bad = np.abs(totals - 1.0) > SUM_TOLERANCE
            if np.any(bad):
                where = np.unravel_index(int(np.argmax(bad)), np.shape(totals))
                at = _indexed(path, where) if np.ndim(totals) else path
                raise StateError(at, f"must sum to 1; sums to {np.asarray(totals)[where].item()!r}")

    def _entries(self, value, path: str, ctx: Context, *, axis: int) -> np.ndarray:
        """The nested lists as an ndarray, each level's length and each entry's type checked."""
        _, entry, types, dtype = _KINDS[self.kind]
        if not isinstance(value, list):
            whole = self.describe(ctx)
            rule = f"must be an array (a row of {whole})" if axis else f"must be {whole}"
            raise StateError(path, f"{rule}; got {_type_name(value)} ({_shown(value)})")
        _size(self.shape[axis], len(value), path, ctx, "entries")
        if axis + 1 < len(self.shape):
            rows = [
                self._entries(v, f"{path}[{i}]", ctx, axis=axis + 1) for i, v in enumerate(value)
            ]
            uneven = next((i for i, r in enumerate(rows) if r.shape != rows[0].shape), None)
            if uneven is not None:
                raise StateError(
                    f"{path}[{uneven}]",
                    f"must have {rows[0].shape[0]} entries like the rows before it; got "
                    f"{rows[uneven].shape[0]}",
                )
            return np.stack(rows) if rows else np.zeros((0,) * (len(self.shape) - axis), dtype)
        seen = set(map(type, value))
        if not seen <= set(types):  # bool is not a number here, nor 1.0 a count
            i = next(i for i, v in enumerate(value) if type(v) not in types)
            raise StateError(f"{path}[{i}]", f"must be {entry}; got {_shown(value[i])}")
        if int in seen and self.kind != "bool":
            big = next(
                (i for i, v in enumerate(value) if type(v) is int and abs(v) > LARGEST_INTEGER),
                None,
            )
            if big is not None:
                raise StateError(
                    f"{path}[{big}]", f"must be at most 2**53; got {_shown(value[big])}"
                )
        return np.array(value, dtype=dtype)


def _indexed(path: str, where) -> str:
    return path + "".join(f"[{int(i)}]" for i in where)


@dataclass(frozen=True)
class Fields:
    """A nested JSON object with declared fields (no others)."""

    fields: dict

    def describe(self, ctx: Context) -> str:
        return f"an object with the fields {list(self.fields)}"

    def check(self, value, path: str, ctx: Context) -> None:
        check_state(self.fields, value, path, ctx)


@dataclass(frozen=True)
class Items:
    """A JSON array of ``length`` nested states (``null`` allowed where ``optional``)."""

    length: str | int
    item: Any
    optional: bool = False

    def describe(self, ctx: Context) -> str:
        return f"an array of {self.length} entries"

    def check(self, value, path: str, ctx: Context) -> None:
        if not isinstance(value, list):
            raise StateError(path, f"must be {self.describe(ctx)}; got {_type_name(value)}")
        _size(self.length, len(value), path, ctx, "entries")
        item = Fields(self.item) if isinstance(self.item, dict) else self.item
        for i, entry in enumerate(value):
            if entry is None and self.optional:
                continue
            item.check(entry, f"{path}[{i}]", ctx.nested())


@dataclass(frozen=True)
class Saved:
    """A complete saved calibrator (as ``to_dict`` writes it), checked the same way: by
    ``load`` (:func:`calcore.calibrators._saved.load_nested`, given by the declaring
    method: loading any method needs the registry, which sits above these declarations)."""

    load: Callable

    def describe(self, ctx: Context) -> str:
        return "a saved calibrator"

    def check(self, value, path: str, ctx: Context) -> None:
        self.load(value, path=path)


@dataclass(frozen=True)
class Recomputed:
    """A value the parameters and the number of classes determine exactly; ``compute``
    gives it (``compute(calibrator, n_classes)``), ``what`` says what it is."""

    compute: Callable
    what: str

    def describe(self, ctx: Context) -> str:
        return self.what

    def check(self, value, path: str, ctx: Context) -> None:
        expected = to_jsonable(self.compute(ctx.calibrator, ctx.dims["L"]))
        try:  # "true" is not 1: compare as JSON text
            same = json.dumps(value, sort_keys=True) == json.dumps(expected, sort_keys=True)
        except (TypeError, ValueError):
            same = False
        if not same:
            raise StateError(path, f"must be {self.what}; got {_shown(value)}")


def check_state(fields: dict, value, path: str, ctx: Context) -> None:
    """Check a JSON object against declared ``fields`` (every one present, no other).

    Raises
    ------
    StateError
        At the first field that breaks its declaration, with its JSON path.
    """
    if not isinstance(value, dict):
        raise StateError(
            path, f"must be an object with the fields {list(fields)}; got {_type_name(value)}"
        )
    missing = [name for name in fields if name not in value]
    if missing:
        raise StateError(f"{path}.{missing[0]}", "is missing")
    extra = sorted(set(value) - set(fields))
    if extra:
        raise StateError(
            f"{path}.{extra[0]}", f"is not a field of this state (the fields: {list(fields)})"
        )
    for name, spec in fields.items():
        spec.check(value[name], f"{path}.{name}", ctx)


def check_declared_state(calibrator, state, *, path: str, n_classes: int) -> None:
    """``state`` against ``calibrator.declared_state()`` with the sizes it fixes."""
    fields = calibrator.declared_state()
    if fields is None:
        raise StateError(
            path, f"cannot be checked: {calibrator.name!r} declares no saved state", damaged=False
        )
    dims = {"L": n_classes, **calibrator.state_sizes(n_classes, path=path)}
    check_state(fields, state, path, Context(calibrator, calibrator.params, dims))


def to_jsonable(value):
    """Arrays and numpy scalars as nested lists of Python numbers (exact under ``json``)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value

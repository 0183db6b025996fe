"""Reading a saved calibrator: bounded JSON, then the document checked before any use.

A saved calibrator is a file anyone may have edited. :func:`read_calibrator` reads it
within limits (:data:`MAX_SAVED_BYTES`, :data:`MAX_JSON_DEPTH`, integers within 2**53,
finite numbers), and :func:`calibrator_from_saved` checks every field (the top level,
the parameters by their declared ranges, and the state by the method's declared state,
see :mod:`calcore.calibrators._state`) before the calibrator is built. A bad field is
refused with its JSON path (``state.classes[2].edges[3]``) and the rule; nothing in the
file reaches numpy unchecked.
"""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np

from calcore.calibrators._base import FORMAT_VERSION, register_saved_loader
from calcore.calibrators._registry import CALIBRATORS, make_calibrator
from calcore.calibrators._state import LARGEST_INTEGER, StateError
from calcore.calibrators.per_slice import PER_SLICE, PerSliceCalibrator
from calcore.foundation.errors import CalcoreError

__all__ = ["MAX_SAVED_BYTES", "MAX_JSON_DEPTH", "read_calibrator", "parse_json"]
__all__ += ["calibrator_from_saved", "load_nested"]

#: Largest saved calibrator read (bytes). The largest states are isotonic steps and
#: per-class bins: a cw-iso fit on 1,000,000 rows x 100 classes writes well under this.
MAX_SAVED_BYTES = 100_000_000
#: Deepest nesting of arrays and objects in a saved calibrator: the deepest calcore writes
#: (a per-slice calibrator of a composition of top-K-label bins) is about 10.
MAX_JSON_DEPTH = 64
#: Most digits of an integer literal: 2**53 has 16.
MAX_INTEGER_DIGITS = 16

#: What a person can do about a saved calibrator that does not pass its checks.
FIX = (
    "The file was changed or damaged after calcore saved it; save the calibrator again "
    "(calcore calibrate --save, or Calibrator.to_dict)."
)

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _nesting_depth(raw: bytes) -> int:
    """Deepest nesting of ``[``/``{`` outside strings (one vectorised pass, no recursion)."""
    code = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    at = np.flatnonzero(
        (code == ord("[")) | (code == ord("{")) | (code == ord("]")) | (code == ord("}"))
    )
    if at.size == 0:
        return 0
    steps = np.where((code[at] == ord("[")) | (code[at] == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS or abs(int(text)) > LARGEST_INTEGER:
        shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} digits)"
        raise _NumberError(f"the integer {shown} is beyond 2**53 (read exactly only up to there)")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} characters)"
        raise _NumberError(f"the number {shown} is beyond the range of float64")
    return value


def _parse_constant(text: str):
    raise _NumberError(f"{text} is not a number JSON allows (calcore writes strict JSON)")


class _NumberError(ValueError):
    """A number literal outside what a saved calibrator holds (raised inside json.loads)."""


def parse_json(raw: bytes | str, *, source: str, advice: str = ""):
    """JSON text as Python values, bounded: nesting depth, integer size, finite numbers.

    Parameters
    ----------
    raw : bytes or str
        The text (bytes are decoded as UTF-8).
    source : str
        Names the text in messages (a file name, ``"parameter 'bins'"``).
    advice : str
        What a person can do, appended to a message about the limits (e.g. :data:`FIX`).

    Raises
    ------
    CalcoreError
        Not UTF-8, not JSON, nested deeper than :data:`MAX_JSON_DEPTH`, an integer beyond
        2**53, a number beyond float64, or NaN/Infinity.
    """
    if isinstance(raw, str):
        raw = raw.encode("utf-8", errors="surrogatepass")
    depth = _nesting_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise CalcoreError(
            f"{source}: arrays and objects nested {depth:,} deep; calcore reads JSON nested at "
            f"most {MAX_JSON_DEPTH} deep.{advice and ' ' + advice}"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CalcoreError(
            f"{source}: not UTF-8 text (byte {exc.start:,}).{advice and ' ' + advice}"
        ) from None
    try:
        return json.loads(
            text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
        )
    except json.JSONDecodeError as exc:
        raise CalcoreError(
            f"{source}: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})."
        ) from None
    except _NumberError as exc:
        raise CalcoreError(f"{source}: {exc}.{advice and ' ' + advice}") from None


def read_calibrator(path: str | os.PathLike):
    """A saved calibrator from a JSON file, checked field by field before any use.

    Parameters
    ----------
    path : str or path-like
        A file written by ``calcore calibrate --save`` or ``Calibrator.to_dict``.

    Returns
    -------
    Calibrator or PerSliceCalibrator

    Raises
    ------
    CalcoreError
        A file over :data:`MAX_SAVED_BYTES`, JSON beyond the limits of :func:`parse_json`,
        or a field that breaks its declaration (named by its JSON path).
    OSError
        The file cannot be read.

    Examples
    --------
    >>> import json, tempfile, calcore
    >>> from calcore.calibrators import read_calibrator
    >>> preds = calcore.Predictions.from_logits([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1])
    >>> saved = calcore.make_calibrator("ts").fit(preds).to_dict()
    >>> saved["state"]["temperature"] = -1.0  # would invert every ranking
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
    ...     json.dump(saved, fh)
    >>> try:
    ...     read_calibrator(fh.name)
    ... except calcore.CalcoreError as err:
    ...     print(str(err).split(": ", 1)[1][:60])
    state.temperature must be a finite number >= 0.01 and <= 100
    """
    with open(path, "rb") as fh:  # read at most one byte past the limit (a FIFO, /dev/zero)
        raw = fh.read(MAX_SAVED_BYTES + 1)
    if len(raw) > MAX_SAVED_BYTES:
        raise CalcoreError(
            f"{os.fspath(path)}: more than {MAX_SAVED_BYTES:,} bytes, the largest saved "
            f"calibrator calcore reads; this is not a calibrator calcore saved."
        )
    name = os.fspath(path)
    return calibrator_from_saved(parse_json(raw, source=name, advice=FIX), source=name)


def calibrator_from_saved(data, *, source: str = "saved calibrator"):
    """The calibrator a saved document describes (``to_dict``'s layout), every field checked.

    Raises
    ------
    CalcoreError
        ``"<source>: <JSON path> <rule>"`` for the first field that breaks its declaration.
    """
    try:
        return load_nested(data, path="")
    except StateError as err:
        fix = f" {FIX}" if err.damaged else ""
        if err.path:
            raise CalcoreError(f"{source}: {err.path} {err.rule}.{fix}") from None
        rule = err.rule.removeprefix("is ")  # the document itself: "Not a saved ..."
        raise CalcoreError(f"{source}: {rule[:1].upper()}{rule[1:]}.{fix}") from None


def _top(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def load_nested(data, *, path: str):
    """:func:`calibrator_from_saved` for a document at JSON ``path`` inside another
    (a composition's parts, a per-slice calibrator's fits); raises :class:`StateError`."""
    if not isinstance(data, dict) or data.get("format") != "calcore-calibrator":
        raise StateError(
            path,
            "is not a saved calcore calibrator (expected a JSON object with format "
            "'calcore-calibrator')",
            damaged=False,
        )
    if data.get("version") != FORMAT_VERSION:
        raise StateError(
            _top(path, "version"),
            f"is {_shown_version(data.get('version'))}; this calcore reads saved calibrators "
            f"of version {FORMAT_VERSION}",
            damaged=False,
        )
    method = data.get("method")
    if not isinstance(method, str):
        raise StateError(_top(path, "method"), "must be a calibrator name (a text)")
    if method == PER_SLICE:
        return PerSliceCalibrator._from_saved(data, path=path, load=load_nested)
    _require(data, ("params", "class_names", "state"), path)
    params = data["params"]
    if not isinstance(params, dict):
        raise StateError(_top(path, "params"), "must be an object of parameter values")
    try:
        calibrator = make_calibrator(method, **params)
    except StateError:
        raise
    except CalcoreError as err:  # an unknown name or a parameter out of its declared range
        if method not in CALIBRATORS:
            raise StateError(
                _top(path, "method"), f"is not a calibrator: {str(err).rstrip('.')}"
            ) from None
        named = [key for key in params if repr(key) in str(err)]
        where = _top(path, f"params.{named[0]}" if named else "params")
        raise StateError(where, f"is refused: {str(err).rstrip('.')}") from None
    names = _class_names(data["class_names"], _top(path, "class_names"), calibrator)
    fit_info = data.get("fit_info", {})
    if not isinstance(fit_info, dict):
        raise StateError(_top(path, "fit_info"), "must be an object")
    calibrator.check_saved_state(data["state"], path=_top(path, "state"), n_classes=len(names))
    calibrator._state = data["state"]
    calibrator._fit_info = dict(fit_info)
    calibrator._class_names = names
    return calibrator


def _shown_version(value) -> str:
    return repr(value) if isinstance(value, (int, float, str)) else "missing or not a number"


def _require(data: dict, keys, path: str) -> None:
    for key in keys:
        if key not in data:
            raise StateError(_top(path, key), "is missing (a saved calibrator has it)")


def _class_names(value, path: str, calibrator) -> tuple[str, ...]:
    """The saved class names: distinct texts, at least two (exactly two for a binary method)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(path, "must be an array of class names (texts)")
    if len(value) < 2 or len(set(value)) != len(value):
        raise StateError(path, f"must name at least 2 distinct classes; got {len(value)} names")
    if calibrator.binary_only and len(value) != 2:
        raise StateError(
            path, f"must name 2 classes ({calibrator.name} is binary); got {len(value)}"
        )
    return tuple(value)


# Calibrator.from_dict rebuilds with it (the base class cannot import this module).
register_saved_loader(calibrator_from_saved)

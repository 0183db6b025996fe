"""Composition of two calibrators [compose] and IROvA-TS [irova-ts]; IROvA is ``n-iso``.

A composition fits its *first* calibrator on the calibration split, maps that
split with it, and fits the *second* calibrator on the mapped predictions;
``transform`` applies the two in the same order. The first calibrator's output
logits (temperature scaling keeps ``z / T``) are passed on, so a second scaling
method sees them.

Names
-----
``compose``
    Any two registered calibrators, chosen by the string parameters ``first``
    and ``second``; their own parameters are JSON objects in the string
    parameters ``first_params`` / ``second_params`` (calibrator parameters are
    only int/float/str/bool, so nested settings travel as JSON text). From
    Python, :func:`compose` builds one from names, ``(name, params)`` pairs or
    calibrator instances.
``irova``
    IROvA: one isotonic regression per class, one-vs-all, then each row divided
    by its sum. The same method and state as ``n-iso``: an alias of it
    (:data:`~calcore.calibrators._registry.ALIASES`), so ``make_calibrator("irova")``
    and a calibrator saved as ``"irova"`` give an ``n-iso``.
``irova-ts``
    Temperature scaling first, then IROvA on its output (Mix-n-Match Sec. 3.4,
    called IROvA-TS in its experiments).

The saved state of a composition is ``{"first": first.to_dict(), "second":
second.to_dict()}``: two complete saved calibrators, rebuilt with
:meth:`Calibrator.from_dict`, so a round trip through JSON is bit-identical.

References
----------
Zhang, Kailkhura & Han (2020), "Mix-n-Match: ensemble and compositional methods
for uncertainty calibration in deep learning", ICML, Sec. 3.2 (IROvA) and 3.4
(composition).
"""

from __future__ import annotations

import json

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._registry import ALIASES, CALIBRATORS, make_calibrator, register
from calcore.calibrators._saved import load_nested, parse_json
from calcore.calibrators._state import Saved, StateError
from calcore.calibrators.temperature import TemperatureScaling
from calcore.foundation.errors import CalcoreError
from calcore.predictions import Predictions

__all__ = ["Composition", "IROvATS", "compose"]


#: Longest JSON text of a part's parameters (a few parameters need a few dozen characters).
MAX_PARAMS_CHARS = 10_000


def _sub_params(text: str, *, owner: str, param: str) -> dict:
    """The JSON object in the string parameter ``param``, as a dict (bounded: length,
    nesting and numbers as in a saved calibrator)."""
    if len(text) > MAX_PARAMS_CHARS:
        raise CalcoreError(
            f"{owner}: parameter {param!r} must be a JSON object of at most "
            f"{MAX_PARAMS_CHARS:,} characters; got {len(text):,}."
        )
    try:
        value = parse_json(text, source="")
    except CalcoreError as exc:
        reason = str(exc).removeprefix(": ").rstrip(".")
        shown = repr(text) if len(text) <= 60 else repr(text[:40]) + "..."
        raise CalcoreError(
            f"{owner}: parameter {param!r} must be a JSON object such as "
            f"'{{\"bins\": 10}}'; got {shown} ({reason})."
        ) from None
    if not isinstance(value, dict):
        raise CalcoreError(
            f"{owner}: parameter {param!r} must be a JSON object such as "
            f"'{{\"bins\": 10}}'; got {text!r}."
        )
    return value


class _Composed(Calibrator):
    """Two calibrators in sequence; subclasses say which in :meth:`_parts`."""

    family = "composite"
    # two complete saved calibrators, each checked as any saved calibrator is
    state_fields = {"first": Saved(load_nested), "second": Saved(load_nested)}

    def _check_saved_rules(self, state, *, path, n_classes):
        """Each saved part is the method, with the parameters, that this composition names."""
        for role, part in (("first", self._first), ("second", self._second)):
            saved = load_nested(state[role], path=f"{path}.{role}")
            if saved.name != part.name or saved.params != part.params:
                raise StateError(
                    f"{path}.{role}",
                    f"must be the {role} calibrator the parameters name ({part.name} "
                    f"{part.params}); got {saved.name} {saved.params}",
                )
            if len(saved.class_names) != n_classes:
                raise StateError(
                    f"{path}.{role}.class_names", f"must name the same {n_classes} classes"
                )

    def _parts(self) -> tuple[tuple[str, dict], tuple[str, dict]]:
        """``((first name, first params), (second name, second params))``."""
        raise NotImplementedError

    def __init__(self, **params):
        super().__init__(**params)
        (first, first_params), (second, second_params) = self._parts()
        # Built here so unknown names and bad parameters fail at construction.
        self._first = make_calibrator(first, **first_params)
        self._second = make_calibrator(second, **second_params)
        # Flags of this instance (the class attributes describe the defaults).
        self.accuracy_preserving = self._first.accuracy_preserving and (
            self._second.accuracy_preserving
        )
        self.injective = bool(self._first.injective and self._second.injective)
        self.normalized = self._second.normalized
        self._rebuilt: tuple | None = None

    def _fit(self, preds: Predictions) -> tuple[dict, dict]:
        for role, part in (("first", self._first), ("second", self._second)):
            if part.binary_only and preds.n_classes != 2:
                raise CalcoreError(
                    f"{self.name}: the {role} calibrator {part.name!r} is binary and the data has "
                    f"{preds.n_classes} classes; use an M2B form such as 'tl-{part.name}' or "
                    f"'n-{part.name}'."
                )
        self._first.fit(preds)
        self._second.fit(self._first.transform(preds))
        state = {"first": self._first.to_dict(), "second": self._second.to_dict()}
        info = {"first": self._first.fit_info, "second": self._second.fit_info}
        return state, info

    def _fitted_parts(self, state: dict) -> tuple[Calibrator, Calibrator]:
        """The two fitted calibrators in ``state`` (rebuilt once per state, as after from_dict)."""
        if self._rebuilt is None or self._rebuilt[0] is not state:
            parts = (Calibrator.from_dict(state["first"]), Calibrator.from_dict(state["second"]))
            self._rebuilt = (state, parts)
        return self._rebuilt[1]

    def _transform(self, preds: Predictions, state: dict):
        first, second = self._fitted_parts(state)
        out = second.transform(first.transform(preds))
        return out.probs, out.logits


@register
class Composition(_Composed):
    """Any calibrator followed by any other (Mix-n-Match Sec. 3.4), chosen by name.

    Parameters
    ----------
    first, second : str, default "ts" and "irm"
        Names in :data:`~calcore.calibrators.CALIBRATORS`, applied in this order.
    first_params, second_params : str, default "{}"
        Their parameters as JSON objects, e.g. ``'{"bins": 10}'``; stored
        re-serialised with sorted keys.

    Notes
    -----
    ``accuracy_preserving`` and ``injective`` of an instance hold when they hold
    for both parts; ``normalized`` is the second part's. The class attributes
    (shown in ``CALIBRATORS["compose"]``) make no promise: a composition keeps
    the argmax only if both parts do. ``fit_info`` holds the two parts'
    ``fit_info`` under ``"first"`` and ``"second"``. A binary part on data with
    more than two classes is refused at fit.

    Raises
    ------
    CalcoreError
        Unknown names, parameters that are not a JSON object, or parameters the
        named calibrators reject (at construction).

    See Also
    --------
    compose : the same from Python objects.

    Examples
    --------
    >>> import numpy as np
    >>> from calcore import Predictions
    >>> rng = np.random.default_rng(0)
    >>> z = 3 * rng.normal(size=(600, 3)); y = rng.integers(0, 3, 600)
    >>> cal = Composition(first="ts", second="irm").fit(Predictions.from_logits(z, y))
    >>> cal.accuracy_preserving, sorted(cal.fit_info)
    (True, ['first', 'second'])
    """

    name = "compose"
    description = "Composition: fit the first calibrator, then the second on its output."
    title = "Composition of two calibrators"
    use = "one method, then another on its output (choose both below)"
    parameters = (
        Param("first", "ts", "str", "Calibrator applied first (a calibrator name)."),
        Param("second", "irm", "str", "Calibrator applied to the first one's output."),
        Param("first_params", "{}", "str", 'Parameters of the first, as JSON: {"bins": 10}.'),
        Param("second_params", "{}", "str", 'Parameters of the second, as JSON: {"bins": 10}.'),
    )

    def _check_params(self, params: dict) -> None:
        for role in ("first", "second"):
            params[role] = ALIASES.get(params[role], params[role])  # one name per method
            if params[role] not in CALIBRATORS:
                raise CalcoreError(
                    f"{self.name}: parameter {role!r} must be a calibrator name; got "
                    f"{params[role]!r}. The calibrators are {sorted(CALIBRATORS)}."
                )
            key = f"{role}_params"
            value = _sub_params(params[key], owner=self.name, param=key)
            params[key] = json.dumps(value, sort_keys=True)

    def _parts(self):
        p = self._params
        return (
            (p["first"], json.loads(p["first_params"])),
            (p["second"], json.loads(p["second_params"])),
        )


def _name_and_params(part, role: str) -> tuple[str, dict]:
    if isinstance(part, Calibrator):
        return part.name, part.params
    if isinstance(part, str):
        return part, {}
    if isinstance(part, (tuple, list)) and len(part) == 2 and isinstance(part[1], dict):
        return part[0], dict(part[1])
    raise CalcoreError(
        f"compose: {role} must be a calibrator name, a (name, params) pair or a Calibrator; "
        f"got {part!r}."
    )


def compose(first, second) -> Composition:
    """A :class:`Composition` of ``first`` followed by ``second`` (not fitted).

    Parameters
    ----------
    first, second : str, (str, dict) or Calibrator
        A calibrator name, a name with its parameters, or a calibrator instance
        (only its name and parameters are used: a fitted instance is refitted).

    Returns
    -------
    Composition

    Raises
    ------
    CalcoreError
        Unknown names, invalid parameters, or an argument of another type.

    Examples
    --------
    >>> cal = compose("ts", ("n-hb", {"bins": 10}))
    >>> cal.params["second_params"]
    '{"bins": 10}'
    """
    a, a_params = _name_and_params(first, "first")
    b, b_params = _name_and_params(second, "second")
    try:
        a_json, b_json = json.dumps(a_params), json.dumps(b_params)
    except TypeError as exc:
        raise CalcoreError(
            f"compose: parameters must be numbers, strings, booleans or None; {exc}."
        ) from None
    return Composition(first=a, second=b, first_params=a_json, second_params=b_json)


@register
class IROvATS(_Composed):
    """IROvA-TS (Mix-n-Match Sec. 3.4): temperature scaling, then IROvA on its output.

    Parameters
    ----------
    min_temperature, max_temperature : float, default 0.01 and 100
        Passed to the temperature scaling step.

    Notes
    -----
    State and ``fit_info`` as for :class:`Composition` (``"first"``: ``ts``,
    ``"second"``: ``n-iso``, which a calibrator saved before the alias names ``irova``).
    Not accuracy preserving (IROvA is not).
    """

    name = "irova-ts"
    description = "IROvA-TS: temperature scaling, then IROvA on its output (Mix-n-Match)."
    title = "Temperature scaling, then IROvA (IROvA-TS)"
    use = "Mix-n-Match's composition: can change accuracy"
    parameters = TemperatureScaling.parameters

    def _parts(self):
        return ("ts", dict(self._params)), ("n-iso", {})

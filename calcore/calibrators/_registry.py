"""Stable short names for every calibrator: ``make_calibrator`` and ``CALIBRATORS``.

Methods register their class with :func:`register`. Multiclass-to-binary
wrappers register a prefix with :func:`register_wrapper`; every binary method
then also exists wrapped, under ``"<prefix>-<binary name>"`` (``"tl-hb"``,
``"cw-iso"``, ...), with the wrapper's parameters followed by the binary
method's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calcore._errors import CalcoreError
from calcore.calibrators._base import Calibrator, Param

__all__ = ["CalibratorInfo", "CALIBRATORS", "register", "register_wrapper", "make_calibrator"]


@dataclass(frozen=True)
class CalibratorInfo:
    """What the dashboard needs to list a method and build its controls.

    Examples
    --------
    >>> import calcore
    >>> info = calcore.CALIBRATORS["ts"]
    >>> info.family, info.accuracy_preserving, info.binary_only
    ('parametric', True, False)
    >>> info.defaults
    {'min_temperature': 0.01, 'max_temperature': 100.0}
    """

    name: str
    family: str
    description: str
    accuracy_preserving: bool
    normalized: bool
    binary_only: bool
    slow: bool
    parameters: tuple[Param, ...]
    weighted: bool = False  # fits any row weights itself (else integer weights, repeated)
    #: The binary method applied: the method itself for a binary one (``"hb"``), the
    #: wrapped one for an M2B or top-K wrapper (``"tl-hb"`` -> ``"hb"``), else None.
    binary_method: str | None = None

    @property
    def discrete_output(self) -> bool:
        """Whether a fitted map takes finitely many values (binning and canonical
        families), so that its outputs are binned by their distinct values (``"unique"``)
        in validity plots, as Gupta & Ramdas (2021) do."""
        return self.family in ("binning", "canonical")

    @property
    def defaults(self) -> dict:
        return {p.name: p.default for p in self.parameters}


_METHODS: dict[str, type[Calibrator]] = {}
_WRAPPERS: dict[str, type] = {}
#: Every buildable name (methods and wrapped binary methods), kept up to date on registration.
CALIBRATORS: dict[str, CalibratorInfo] = {}


def _info(name: str, cls) -> CalibratorInfo:
    return CalibratorInfo(
        name,
        cls.family,
        cls.description,
        cls.accuracy_preserving,
        cls.normalized,
        cls.binary_only,
        cls.slow,
        tuple(cls.parameters),
        cls.weighted,
        cls.name if cls.binary_only else None,
    )


def _rebuild() -> None:
    CALIBRATORS.clear()
    for name, cls in sorted(_METHODS.items()):
        CALIBRATORS[name] = _info(name, cls)
    for prefix, wrapper in sorted(_WRAPPERS.items()):
        for name, cls in sorted(_METHODS.items()):
            if cls.binary_only:
                info = wrapper.info_for(prefix, cls)
                CALIBRATORS[f"{prefix}-{name}"] = replace(info, binary_method=cls.name)


def register(cls: type[Calibrator]) -> type[Calibrator]:
    """Class decorator: make a calibrator buildable by its ``name``."""
    if not cls.name or cls.name in _METHODS or cls.name in _WRAPPERS:
        raise ValueError(f"calibrator name {cls.name!r} is empty or taken")  # programming error
    if cls.state_fields is None and cls.declared_state is Calibrator.declared_state:
        # a saved state must be checked before use, so every method declares it
        raise ValueError(f"calibrator {cls.name!r} declares no state_fields")
    _METHODS[cls.name] = cls
    _rebuild()
    return cls


def register_wrapper(prefix: str):
    """Class decorator for an M2B wrapper: builds ``"<prefix>-<binary method>"`` names.

    The wrapper class must provide ``info_for(prefix, binary_cls) -> CalibratorInfo``
    and ``build(prefix, binary_cls, params) -> Calibrator``.
    """

    def decorate(wrapper):
        if prefix in _WRAPPERS or prefix in _METHODS:
            raise ValueError(f"wrapper prefix {prefix!r} is taken")  # programming error
        _WRAPPERS[prefix] = wrapper
        _rebuild()
        return wrapper

    return decorate


def make_calibrator(name: str, **params) -> Calibrator:
    """Build a calibrator by its short name.

    Parameters
    ----------
    name : str
        A key of :data:`CALIBRATORS`, e.g. ``"ts"`` or ``"tl-hb"``.
    **params
        Its parameters (see ``CALIBRATORS[name].parameters``); the others keep
        their defaults.

    Returns
    -------
    Calibrator
        Not fitted yet.

    Raises
    ------
    CalcoreError
        Unknown name or invalid parameters.

    Examples
    --------
    >>> import calcore
    >>> calcore.make_calibrator("ts", max_temperature=10.0)
    TemperatureScaling(min_temperature=0.01, max_temperature=10.0) [not fitted]
    >>> try:
    ...     calcore.make_calibrator("hb", bins=0)
    ... except calcore.CalcoreError as err:
    ...     print(err)
    hb: parameter 'bins' must be >= 1; got 0. Its range: an integer from 1 to 100,000 (or none).
    """
    if not isinstance(name, str):
        raise CalcoreError(f"A calibrator name must be a string; got {name!r}.")
    if name in _METHODS:
        return _METHODS[name](**params)
    prefix, _, binary = name.partition("-")
    if prefix in _WRAPPERS and binary in _METHODS and _METHODS[binary].binary_only:
        return _WRAPPERS[prefix].build(prefix, _METHODS[binary], params)
    raise CalcoreError(f"Unknown calibrator {name!r}; the calibrators are {sorted(CALIBRATORS)}.")

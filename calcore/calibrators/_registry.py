"""Stable short names for every calibrator: ``make_calibrator`` and ``CALIBRATORS``.

Methods register their class with :func:`register`. Multiclass-to-binary
wrappers register a prefix with :func:`register_wrapper`; every binary method
then also exists wrapped, under ``"<prefix>-<binary name>"`` (``"tl-hb"``,
``"cw-iso"``, ...), with the wrapper's parameters followed by the binary
method's.

Each method carries its full name (``title``) and one line on when to use it (``use``)
beside its code; :data:`FAMILIES` names and describes the families, in the order a
picker lists them. :data:`ALIASES` maps the old names of a method listed under another
name (``"irova"`` is ``"n-iso"``): they are not in :data:`CALIBRATORS` (one name per
method), and :func:`make_calibrator`, a saved calibrator and a link still take them.
:func:`recommend_calibrators` picks a default set from the data's shape.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calcore.calibrators._base import Calibrator, Param
from calcore.calibrators._bins import BINS
from calcore.foundation import limits as _limits
from calcore.foundation.errors import CalcoreError
from calcore.foundation.validation import freeze_fields

__all__ = [
    "ALIASES",
    "CALIBRATORS",
    "CalibratorInfo",
    "FAMILIES",
    "Recommendation",
    "canonical_name",
    "make_calibrator",
    "recommend_calibrators",
    "register",
    "register_wrapper",
]


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
    >>> info.title, calcore.CALIBRATORS["tl-hb"].title
    ('Temperature scaling', 'Top-label histogram binning')
    >>> calcore.CALIBRATORS["n-iso"].aliases
    ('irova',)
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
    #: The method's full name ("Temperature scaling") and when to use it, in one line.
    title: str = ""
    use: str = ""
    #: Older names of this method that still load (:data:`ALIASES`).
    aliases: tuple[str, ...] = ()

    @property
    def family_title(self) -> str:
        """The family's name for people ("Parametric scaling")."""
        return FAMILIES.get(self.family, (self.family,))[0]

    @property
    def discrete_output(self) -> bool:
        """Whether a fitted map takes finitely many values (binning and canonical
        families), so that its outputs are binned by their distinct values (``"unique"``)
        in validity plots, as Gupta & Ramdas (2021) do."""
        return self.family in ("binning", "canonical")

    @property
    def defaults(self) -> dict:
        return {p.name: p.default for p in self.parameters}


#: Family key -> (name for people, what the family does), in the order a picker lists them.
FAMILIES: dict[str, tuple[str, str]] = {
    "parametric": (
        "Parametric scaling",
        "a few parameters fitted to the log-loss: smooth, and fine with few calibration rows",
    ),
    "binning": (
        "Binning",
        "a value per bin of scores: finite outputs whose calibration can be checked; "
        "they need rows in every bin",
    ),
    "isotonic": (
        "Isotonic regression",
        "monotone step maps with no bins to choose: flexible, and they need more rows",
    ),
    "canonical": (
        "Simplex binning (canonical)",
        "bins of the whole probability vector, for 2 to 6 classes",
    ),
    "composite": ("Compositions", "one calibrator applied after another"),
}

#: Old name -> the name the method is listed under (the same method, fit and state).
ALIASES: dict[str, str] = {"irova": "n-iso"}

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
        title=cls.title or name,
        use=cls.use,
    )


def _with_aliases(info: CalibratorInfo) -> CalibratorInfo:
    aliases = tuple(old for old, new in sorted(ALIASES.items()) if new == info.name)
    return replace(info, aliases=aliases) if aliases else info


def _rebuild() -> None:
    CALIBRATORS.clear()
    for name, cls in sorted(_METHODS.items()):
        CALIBRATORS[name] = _with_aliases(_info(name, cls))
    for prefix, wrapper in sorted(_WRAPPERS.items()):
        for name, cls in sorted(_METHODS.items()):
            if cls.binary_only:
                info = replace(wrapper.info_for(prefix, cls), binary_method=cls.name)
                CALIBRATORS[f"{prefix}-{name}"] = _with_aliases(info)


def register(cls: type[Calibrator]) -> type[Calibrator]:
    """Class decorator: make a calibrator buildable by its ``name``."""
    if not cls.name or cls.name in _METHODS or cls.name in _WRAPPERS or cls.name in ALIASES:
        raise ValueError(f"calibrator name {cls.name!r} is empty or taken")  # programming error
    if not cls.title or not cls.use or cls.family not in FAMILIES:
        # the picker lists every method by family with its full name and use
        raise ValueError(f"calibrator {cls.name!r} needs a title, a use and a known family")
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
        if not getattr(wrapper, "title", "") or not getattr(wrapper, "use", ""):
            raise ValueError(f"wrapper {prefix!r} needs a title and a use")
        _WRAPPERS[prefix] = wrapper
        _rebuild()
        return wrapper

    return decorate


def make_calibrator(name: str, **params) -> Calibrator:
    """Build a calibrator by its short name.

    Parameters
    ----------
    name : str
        A key of :data:`CALIBRATORS`, e.g. ``"ts"`` or ``"tl-hb"``, or an old name of
        one (:data:`ALIASES`: ``"irova"`` builds ``"n-iso"``).
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
    >>> calcore.make_calibrator("irova").name
    'n-iso'
    """
    if not isinstance(name, str):
        raise CalcoreError(f"A calibrator name must be a string; got {name!r}.")
    name = ALIASES.get(name, name)
    if name in _METHODS:
        return _METHODS[name](**params)
    prefix, _, binary = name.partition("-")
    if prefix in _WRAPPERS and binary in _METHODS and _METHODS[binary].binary_only:
        return _WRAPPERS[prefix].build(prefix, _METHODS[binary], params)
    raise CalcoreError(f"Unknown calibrator {name!r}; the calibrators are {sorted(CALIBRATORS)}.")


def canonical_name(name: str) -> str:
    """The name a method is listed under: ``name`` itself, or the method it is an alias of.

    Parameters
    ----------
    name : str
        A calibrator name, current or old; an unknown name is returned unchanged
        (:func:`make_calibrator` says it is unknown).

    Returns
    -------
    str

    Examples
    --------
    >>> canonical_name("irova"), canonical_name("ts")
    ('n-iso', 'ts')
    """
    return ALIASES.get(name, name)


#: Calibration rows from which a binning map is recommended beside the parametric one:
#: enough to fill histogram binning's default bins with the rows per bin below which the
#: verdict warns that bins are noise
#: (:data:`calcore.foundation.limits.MIN_CALIBRATION_ROWS_PER_BIN`), so the recommended set
#: never draws that warning on its own data.
FEW_ROWS = _limits.MIN_CALIBRATION_ROWS_PER_BIN * BINS.default
#: Rows per class from which a map per class (top-label binning) is recommended: the same
#: rows per bin in each predicted class's bins.
ROWS_PER_CLASS_FOR_TOP_LABEL = FEW_ROWS


@dataclass(frozen=True)
class Recommendation:
    """A default set of calibrators for a data shape, with the reason for each.

    Attributes
    ----------
    methods : tuple of str
        Names in :data:`CALIBRATORS`, the parametric one first.
    reasons : dict of str to str
        Why each method is in the set, in words.

    Examples
    --------
    >>> r = recommend_calibrators(2, 150)
    >>> r.methods, r.reasons["platt"]
    (('platt',), 'two parameters: fits 150 calibration rows')
    """

    methods: tuple[str, ...]
    reasons: dict[str, str]

    def __post_init__(self):
        freeze_fields(self)  # shared across sessions: no reader may change it


def recommend_calibrators(
    n_classes: int, n_calibration: int, rows_per_class: float | None = None
) -> Recommendation:
    """A default set of calibrators for data of this shape (the dashboard preselects it).

    The rules, each method one line of the dashboard's guide:

    * always a parametric map, the safest with few rows: Platt scaling for two
      classes, temperature scaling (keeps accuracy) for more;
    * with at least :data:`FEW_ROWS` calibration rows, a binning method beside it:
      histogram binning of the positive score for two classes; for more classes
      top-label histogram binning (a map per predicted class) when every class has
      :data:`ROWS_PER_CLASS_FOR_TOP_LABEL` rows, else confidence histogram binning
      (one map over all rows). Both keep accuracy.

    Parameters
    ----------
    n_classes : int
        Classes of the data (2 or more).
    n_calibration : int
        Rows the calibrators are fitted on.
    rows_per_class : float, optional
        Calibration rows of the rarest class (or a typical class); default
        ``n_calibration / n_classes``.

    Returns
    -------
    Recommendation

    Raises
    ------
    CalcoreError
        Fewer than 2 classes, or a negative number of rows.

    Examples
    --------
    >>> recommend_calibrators(10, 20_000).methods
    ('ts', 'tl-hb')
    >>> recommend_calibrators(10, 5_000).methods  # 500 rows a class: 33 a bin, too few
    ('ts', 'conf-hb')
    >>> recommend_calibrators(100, 5_000).methods
    ('ts', 'conf-hb')
    >>> recommend_calibrators(2, 10_000).methods
    ('platt', 'hb')
    """
    if int(n_classes) < 2 or n_calibration < 0 or (rows_per_class or 0) < 0:
        raise CalcoreError(
            f"recommend_calibrators needs 2 or more classes and row counts >= 0; got "
            f"{n_classes} classes, {n_calibration} rows, {rows_per_class} rows per class."
        )
    if rows_per_class is None:
        rows_per_class = n_calibration / n_classes
    rows = f"{int(n_calibration):,} calibration rows"
    if n_classes == 2:
        methods = {"platt": f"two parameters: fits {rows}"}
        if n_calibration >= FEW_ROWS:
            methods["hb"] = (
                f"equal-mass bins of the positive score: {rows} fill {BINS.default} bins"
            )
    else:
        methods = {"ts": f"one parameter, keeps accuracy: fits {rows}"}
        if rows_per_class >= ROWS_PER_CLASS_FOR_TOP_LABEL:
            methods["tl-hb"] = (
                f"a binning per predicted class, keeps accuracy: about {rows_per_class:,.0f} "
                f"rows per class fill its {BINS.default} bins"
            )
        elif n_calibration >= FEW_ROWS:
            methods["conf-hb"] = (
                f"one binning of the top probability over all rows, keeps accuracy: "
                f"{rows_per_class:,.0f} rows per class are too few for a map per class"
            )
    return Recommendation(tuple(methods), methods)

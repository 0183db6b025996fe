"""The page's settings, and their round trip through the URL query string.

A shared link must reopen the same view, so everything the sidebar decides lives in one
frozen :class:`Settings` and is written to (and read back from) ``st.query_params`` in a
short, readable form::

    ?sample=cifar10-resnet110&m=ts&m=tl-hb:bins=20&binning=equal-mass&bins=15&view=top-label
    ?sample=credit-default-logreg&view=slices&by=education&by=age:q4&rank=conf_ece
    ?data=clicks_10m.parquet&view=slices&by=segment&by=device&fit=slice

Parsing never trusts the URL: unknown methods, parameters or values are dropped and
reported (a link from an older version still opens), and every value is checked again by
calcore when it is used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import calcore
from dashboard.calibration.datadir import MAX_NAME_CHARS

__all__ = [
    "BINS_RANGE",
    "BOOTSTRAP_CHOICES",
    "MAX_METHODS",
    "BINNING_CHOICES",
    "DEFAULT_METHODS",
    "MAX_SLICE_COLUMNS",
    "PER_SLICE_FIT",
    "RANK_CHOICES",
    "SPLIT_MODES",
    "VIEWS",
    "MethodChoice",
    "Settings",
    "parse_method",
    "settings_from_query",
    "settings_to_query",
]

#: View key -> tab title, in page order.
VIEWS = {
    "metrics": "Metrics",
    "confidence": "Confidence reliability",
    "top-label": "Top-label reliability",
    "class-wise": "Class-wise reliability",
    "validity": "Validity",
    "kde": "KDE-ECE vs binned ECE",
    "learning": "Learning curves",
    "simplex": "Simplex (3 classes)",
    "slices": "Slices",
}

#: Evaluation binning schemes offered in the sidebar (calcore names).
BINNING_CHOICES = {
    "equal-width": "equal-width",
    "equal-mass": "equal-mass (adaptive)",
    "points-per-bin": "points per bin",
    "sturges": "data-dependent: Sturges' rule",
    "cube-root": "data-dependent: cube-root rule",
}

SPLIT_MODES = {
    "column": "split column of the file",
    "second-file": "a second file for the test set",
    "random": "seeded random split",
    "same": "same rows (in-sample; optimistic)",
}

#: Bins (or points per bin) the page offers, in the sidebar and in a link alike.
BINS_RANGE = (2, 5000)
#: Bootstrap resamples the sidebar offers; a link with another count is reported, not bent.
BOOTSTRAP_CHOICES = (0, 50, 200, 1000)

#: Slice specifications a link may carry (``by=country&by=age:q4``): at most two columns
#: (crossed), each at most this long; whether the column exists is checked on use.
MAX_SLICE_COLUMNS = 2
MAX_SLICE_SPEC_CHARS = 200
#: Metrics the Slices view ranks by: the calibration test runs on one of them per slice.
RANK_CHOICES = {
    k: calcore.METRICS[k].label
    for k in ("top_label_ece", "conf_ece", "classwise_ece", "positive_class_ece")
}
#: ``fit=slice``: the Slices view also fits every chosen method per slice.
PER_SLICE_FIT = "slice"

#: What a newcomer sees: one parametric and one binning method.
DEFAULT_METHODS = ("ts", "tl-hb")
#: Calibrators compared at once, in the sidebar and in a link alike: each is a fit and an
#: evaluation per view, so a link naming all 60 methods would hold the server for minutes.
MAX_METHODS = 8


@dataclass(frozen=True)
class MethodChoice:
    """A calibrator by short name with the parameters that differ from its defaults."""

    name: str
    params: tuple[tuple[str, object], ...] = ()

    @property
    def kwargs(self) -> dict:
        return dict(self.params)

    @property
    def label(self) -> str:
        """Display name, unique per (name, params): ``tl-hb`` or ``tl-hb(bins=20)``."""
        if not self.params:
            return self.name
        return f"{self.name}(" + ", ".join(f"{k}={v}" for k, v in self.params) + ")"

    @property
    def key(self) -> str:
        """Cache key: name and parameters as canonical JSON."""
        return json.dumps([self.name, list(map(list, self.params))], sort_keys=True)

    def to_query(self) -> str:
        if not self.params:
            return self.name
        return self.name + ":" + ";".join(f"{k}={_format_value(v)}" for k, v in self.params)


def _format_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else str(value)


#: Longest parameter value a link may carry (a number needs a few dozen characters; a
#: longer one is refused before it is parsed).
MAX_PARAM_VALUE_CHARS = 100


def _parse_value(method: str, param: calcore.Param, text: str):
    """One parameter value from the URL, by the parameter's kind and its declared range.

    Raises
    ------
    calcore.CalcoreError
        Not a value of the parameter's kind, or outside its range; the message names the
        method, the parameter and the range (the parameter's one definition says it).
    """
    if len(text) > MAX_PARAM_VALUE_CHARS:
        raise calcore.CalcoreError(
            f"{method}: parameter {param.name!r} must be {param.describe()}; got a value of "
            f"{len(text):,} characters."
        )
    if text == "none" and param.optional:
        return None
    value = text
    if param.kind == "bool":
        value = {"true": True, "false": False}.get(text, text)
    elif param.kind in ("int", "float"):
        try:
            value = int(text) if param.kind == "int" else float(text)
        except ValueError:
            pass  # the check below says what the parameter takes
    return param.check(value, owner=method)


def parse_method(text: str) -> tuple[MethodChoice | None, str | None]:
    """``"tl-hb:bins=20;seed=1"`` -> (MethodChoice, None), or (None, why it was dropped).

    Parameters equal to the default are dropped so that equal choices have equal keys.
    """
    name, _, rest = text.partition(":")
    name = calcore.CALIBRATOR_ALIASES.get(name, name)  # an old name: the method it names now
    info = calcore.CALIBRATORS.get(name)
    if info is None:
        return None, f"unknown calibrator {name!r}"
    known = {p.name: p for p in info.parameters}
    params = {}
    for item in filter(None, rest.split(";")):
        key, _, value = item.partition("=")
        if key not in known:
            return None, f"{name}: unknown parameter {key!r}"
        try:
            params[key] = _parse_value(name, known[key], value)
        except calcore.CalcoreError as err:
            return None, str(err)  # names the parameter and its range
    return method_choice(name, params), None


def method_choice(name: str, params: dict) -> MethodChoice:
    """A MethodChoice keeping only the parameters that differ from the defaults, in order."""
    defaults = calcore.CALIBRATORS[name].defaults
    kept = tuple((k, params[k]) for k in defaults if k in params and params[k] != defaults[k])
    return MethodChoice(name, kept)


@dataclass(frozen=True)
class Settings:
    """Everything the sidebar decides; the cache keys and the query string derive from it."""

    sample: str | None  # a key of dashboard.calibration.samples.SAMPLES, or None for an upload
    upload_name: str | None  # shown only; untrusted text
    dataset: str | None = None  # a dataset of the server's data directory; untrusted text
    kept: str | None = None  # the workspace id of a kept upload; untrusted text
    methods: tuple[MethodChoice, ...] = ()
    binning: str = "equal-width"
    bins: int = 15
    view: str = "metrics"
    split_mode: str = "column"
    test_fraction: float = 0.5
    split_seed: int = 0
    n_resamples: int = 200
    by: tuple[str, ...] = ()  # slice specifications of the Slices view ("age:q4"); untrusted
    #: The Slices view's ranking metric; "" for the data's default (calcore's
    #: default_primary: the ECE of class 1 for two classes, the TL-ECE otherwise).
    rank_by: str = ""
    per_slice_fit: bool = False  # the Slices view also fits every method per slice
    dropped: tuple[str, ...] = field(default=(), compare=False)  # URL parts that were ignored


def settings_to_query(s: Settings) -> dict[str, str | list[str]]:
    """The query string of ``s`` (only what differs from the defaults, plus the source)."""
    q: dict[str, str | list[str]] = {}
    if s.sample is not None:
        q["sample"] = s.sample
    elif s.dataset is not None:
        q["data"] = s.dataset
    elif s.kept is not None:
        q["ws"] = s.kept  # the id alone: the file name stays on the server
    elif s.upload_name:
        q["upload"] = s.upload_name
    q["m"] = [m.to_query() for m in s.methods] or ["none"]
    default = Settings(None, None)
    for key, attr in (
        ("binning", "binning"),
        ("bins", "bins"),
        ("view", "view"),
        ("split", "split_mode"),
        ("frac", "test_fraction"),
        ("seed", "split_seed"),
        ("boot", "n_resamples"),
        ("rank", "rank_by"),
    ):
        value = getattr(s, attr)
        if value != getattr(default, attr):
            q[key] = str(value)
    if s.by:
        q["by"] = list(s.by)
    if s.per_slice_fit:
        q["fit"] = PER_SLICE_FIT
    return q


def _slice_specs(values: list[str], dropped: list) -> tuple[str, ...]:
    """The link's slice specifications: at most MAX_SLICE_COLUMNS, each non-empty and short."""
    kept = []
    for text in values:
        if not text.strip() or len(text) > MAX_SLICE_SPEC_CHARS:
            dropped.append(f"by {text[:40]!r} (empty or longer than {MAX_SLICE_SPEC_CHARS})")
        elif len(kept) == MAX_SLICE_COLUMNS:
            dropped.append(f"by {text[:40]!r} (at most {MAX_SLICE_COLUMNS} slice columns)")
        elif text not in kept:
            kept.append(text)
    return tuple(kept)


#: A kept upload's id is 32 hex characters; a longer text is cut (it is "not found" anyway).
MAX_KEPT_ID_CHARS = 64


def _dataset_name(value: str | None, dropped: list) -> str | None:
    """A link's server dataset name, if short and printable; whether it is a dataset of the
    server (inside the data directory) is checked when it is opened."""
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_NAME_CHARS or not value.isprintable():
        dropped.append(f"data {value[:40]!r} (empty, unprintable or too long)")
        return None
    return value


def _choice(value, allowed, fallback, what: str, dropped: list):
    if value is None:
        return fallback
    if value in allowed:
        return value
    dropped.append(f"{what} {value!r}")
    return fallback


def _number(value, kind, lo, hi, fallback, what: str, dropped: list):
    if value is None:
        return fallback
    try:
        number = kind(value)
    except ValueError:
        dropped.append(f"{what} {value!r}")
        return fallback
    if not lo <= number <= hi:
        dropped.append(f"{what} {value!r} (outside {lo}..{hi})")
        return fallback
    return number


def _one_of(value, choices: tuple[int, ...], fallback: int, what: str, dropped: list) -> int:
    """An integer that must be one of ``choices`` (a selectbox's options)."""
    if value is None:
        return fallback
    try:
        number = int(value)
    except ValueError:
        number = None
    if number not in choices:
        dropped.append(f"{what} {value!r} (one of {', '.join(map(str, choices))})")
        return fallback
    return number


def settings_from_query(query: dict[str, list[str]], *, samples, default_sample: str) -> Settings:
    """Settings from a query string (``{key: [values]}``); invalid parts are listed in ``dropped``.

    Parameters
    ----------
    query : dict of str to list of str
        Every value of every key, as ``st.query_params.get_all`` gives them.
    samples : collection of str
        Valid sample keys.
    default_sample : str
        The sample when the query names neither a sample nor an upload.
    """
    dropped: list[str] = []

    def one(key):
        values = query.get(key) or []
        return values[-1] if values else None

    upload = one("upload")
    dataset = _dataset_name(one("data"), dropped)
    kept = one("ws")
    kept = kept[:MAX_KEPT_ID_CHARS] if kept else None  # checked (or "not found") on use
    fallback = None if upload or dataset or kept else default_sample
    sample = _choice(one("sample"), samples, fallback, "sample", dropped)
    if sample is not None:
        dataset = kept = None
    elif dataset is not None:
        kept = None
    if "m" in query:
        methods = []
        for text in query["m"]:
            if text == "none":
                continue
            choice, why = parse_method(text)
            if choice is None:
                dropped.append(why)
            elif len(methods) == MAX_METHODS and choice not in methods:
                dropped.append(f"{choice.label}: at most {MAX_METHODS} calibrators at once")
            elif choice not in methods:
                methods.append(choice)
        methods = tuple(methods)
    else:
        methods = tuple(MethodChoice(m) for m in DEFAULT_METHODS)
    return Settings(
        sample=sample,
        upload_name=None if sample is not None or dataset is not None else upload,
        dataset=dataset,
        kept=kept,
        methods=methods,
        binning=_choice(one("binning"), BINNING_CHOICES, "equal-width", "binning", dropped),
        bins=_number(one("bins"), int, *BINS_RANGE, 15, "bins", dropped),
        view=_choice(one("view"), VIEWS, "metrics", "view", dropped),
        # "theme" (the dark figure theme, removed) in old links is ignored without a word
        split_mode=_choice(one("split"), SPLIT_MODES, "column", "split", dropped),
        test_fraction=_number(one("frac"), float, 0.05, 0.95, 0.5, "frac", dropped),
        split_seed=_number(one("seed"), int, 0, 2**31 - 1, 0, "seed", dropped),
        n_resamples=_one_of(one("boot"), BOOTSTRAP_CHOICES, 200, "boot", dropped),
        by=_slice_specs(query.get("by") or [], dropped),
        rank_by=_choice(one("rank"), RANK_CHOICES, "", "rank", dropped),
        per_slice_fit=_choice(one("fit"), (PER_SLICE_FIT,), None, "fit", dropped) is not None,
        dropped=tuple(dropped),
    )

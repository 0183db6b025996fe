"""JSON Schemas of the ``--json`` outputs of ``calcore metrics``, ``check``, ``compare`` and
``calibrate``: the interface CI scripts parse, stated once.

``calcore schema COMMAND`` prints one (JSON Schema draft 2020-12). Every output carries
``schema_version``: it grows when a field is removed or changes meaning, not when a field
is added; a reader that checks it can rely on every documented field. The test suite
validates real outputs of every command against these schemas (with ``jsonschema``), so
a field the code adds without documenting it here fails there.

The metric keys come from :data:`calcore.METRICS`, so each metric's description is the
registry's own.
"""

from __future__ import annotations

from calcore.cli.gates import COMPARE_ON
from calcore.metrics.registry import METRICS

__all__ = ["SCHEMA_VERSION", "SCHEMAS", "schema_of"]

#: The version of every ``--json`` output's layout (its ``schema_version`` field).
SCHEMA_VERSION = 1

_NUMBER = {"type": ["number", "null"], "description": "null where not finite or not computed"}
_INTEGER = {"type": "integer"}
_TEXT = {"type": "string"}
_TEXTS = {"type": "array", "items": _TEXT}
_FLAG = {"type": "boolean"}


def _object(properties: dict, *, required=None, closed: bool = True, about: str = "") -> dict:
    """An object schema; ``required`` defaults to every property; ``closed``: no others."""
    out = {
        "type": "object",
        "properties": properties,
        "required": list(properties if required is None else required),
        "additionalProperties": not closed,
    }
    return out | ({"description": about} if about else {})


def _map(values: dict, *, keys: tuple | None = None, about: str = "") -> dict:
    """An object whose keys are names (methods, metrics) and whose values are ``values``."""
    out = {"type": "object", "additionalProperties": values}
    if keys is not None:
        out["propertyNames"] = {"enum": list(keys)}
    return out | ({"description": about} if about else {})


_METRIC_KEYS = tuple(METRICS)
_METRIC_VALUES = {
    k: {"type": ["number", "null"], "description": f"{spec.label}: {spec.description}"}
    for k, spec in METRICS.items()
}
_INTERVAL = _object(
    {
        "low": _NUMBER,
        "high": _NUMBER,
        "confidence_level": {"type": "number"},
        "method": _TEXT,
        "caveat": _TEXT,
    },
    required=("low", "high", "confidence_level", "method"),
)
_TEST = _object(
    {"p_value": _NUMBER, "n_resamples": _INTEGER},
    about="the calibration test of one metric: labels redrawn from the predictions",
)
_REPORT_PROPERTIES = {
    "n": _INTEGER,
    "n_classes": _INTEGER,
    **_METRIC_VALUES,
    "bins": {"type": ["integer", "string"], "description": "a count, or a rule's name"},
    "binning": _TEXT,
    "seed": _INTEGER,
    "n_bootstrap": _INTEGER
    | {"description": "bootstrap resamples: evaluate's n_resamples (the key keeps its name)"},
    "n_tied_rows": _INTEGER,
    "intervals": _map(_INTERVAL, keys=_METRIC_KEYS, about="with --bootstrap R"),
    "calibration_test": _map(_TEST, keys=_METRIC_KEYS, about="with --bootstrap R"),
    "notes": _TEXTS,
}
_REPORT_REQUIRED = [k for k in _REPORT_PROPERTIES if k not in ("intervals", "calibration_test")]
_REPORT = _object(_REPORT_PROPERTIES, required=_REPORT_REQUIRED)

_SPLIT = {
    "enum": ["test", "calib", "all", None],
    "description": "the rows evaluated: a split of the split column, 'all' (both, on "
    "purpose), or null (the file has no split column)",
}
_SLICE = _object(
    {
        "column": _TEXT,
        "value": _TEXT,
        "n": _INTEGER,
        "weight": {"type": "number"},
        **_METRIC_VALUES,
        "intervals": _map(_INTERVAL, keys=_METRIC_KEYS),
        **{
            k: _NUMBER
            for k in (
                "p_value",
                "q_value",
                "share",
                "excess",
                "z",
                "observed",
                "expected",
                "ratio",
                "beyond_q",
            )  # fmt: skip
        },
        "p_method": {"type": ["string", "null"]},
        "direction": _TEXT,
        "note": _TEXT,
    },
    required=("column", "value", "n", "p_value", "q_value", "share", "direction"),
)
_SLICES = {
    "by": _TEXTS,
    "rank_metric": {"enum": list(_METRIC_KEYS)},
    "n_resamples": _INTEGER,
    "min_slice_rows": _INTEGER,
    "overall_effect": _NUMBER,
    "headline": _TEXT,
    "standouts": _TEXTS,
    "slices": {"type": "array", "items": _SLICE},
    "change": _object(
        {"metric": _TEXT, "first": _TEXT, "last": _TEXT, "p_value": _NUMBER},
        closed=False,
        about="a datetime column sliced by period: the first period against the last",
    ),
}
_FITTED = _object(
    {"method": _TEXT, "params": {"type": "object"}},
    about="--after: the calibrator fitted on the calib rows before slicing",
)


def _metrics_schema() -> dict:
    properties = {
        "schema_version": {"const": SCHEMA_VERSION},
        **_REPORT_PROPERTIES,
        "file": _TEXT,
        "split": _SPLIT,
        **_SLICES,
        "after": _FITTED,
    }
    required = ["schema_version", *_REPORT_REQUIRED, "file", "split"]
    return _object(properties, required=required)


_GATE = _object(
    {
        "metric": {"enum": list(_METRIC_KEYS)},
        "kind": {"enum": ["max", "min"]},
        "limit": {"type": "number"},
        "estimate": _NUMBER,
        "low": _NUMBER,
        "high": _NUMBER,
        "compared": _NUMBER,
        "passed": _FLAG,
        "reason": {"type": ["string", "null"]},
        "slice": {"type": ["string", "null"]},
    }
)


def _check_schema() -> dict:
    return _object(
        {
            "schema_version": {"const": SCHEMA_VERSION},
            "file": _TEXT,
            "n_rows": _INTEGER,
            "on": {"enum": list(COMPARE_ON)},
            "passed": _FLAG,
            "gates": {"type": "array", "items": _GATE},
            "notes": _TEXTS,
            "split": _SPLIT,
        }
    )


_PAIRED = _object(
    {
        "method": _TEXT,
        "reference": _TEXT,
        "metric": {"enum": list(_METRIC_KEYS)},
        "difference": _NUMBER,
        "low": _NUMBER,
        "high": _NUMBER,
        "confidence_level": {"type": "number"},
        "interval_method": _TEXT,
    },
    about="a method's metric minus the reference's on the same resamples",
)
_ESTIMATE = _object({"estimate": _NUMBER, "low": _NUMBER, "high": _NUMBER})


def _compare_schema() -> dict:
    method = _object(
        {
            "params": {"type": "object"},
            "fit_info": {"type": "object", "description": "the fit's details, by method"},
            "metrics": _map(_ESTIMATE, keys=_METRIC_KEYS),
        }
    )
    return _object(
        {
            "schema_version": {"const": SCHEMA_VERSION},
            "primary": {"enum": list(_METRIC_KEYS)},
            "recommended": _TEXT,
            "improves": _FLAG,
            "best": _TEXT,
            "tied_with_best": _TEXTS,
            "sentence": _TEXT,
            "reason": _TEXT,
            "confidence_level": {"type": "number"},
            "n_resamples": _INTEGER,
            "estimates": _map(_NUMBER),
            "paired": _map(_PAIRED),
            "improvement": {"anyOf": [_PAIRED, {"type": "null"}]},
            "guards": _map(_map(_PAIRED)),
            "warnings": _map(_TEXTS),
            "file": {"type": ["string", "null"]},
            "calib_file": {"type": ["string", "null"]},
            "test_file": {"type": ["string", "null"]},
            "split": _SPLIT,
            "n_calib": _INTEGER,
            "n_test": _INTEGER,
            "n_classes": _INTEGER,
            "bins": {"type": ["integer", "string"]},
            "binning": _TEXT,
            "seed": _INTEGER,
            "methods": _map(method),
            "notes": _TEXTS,
        }
    )


def _calibrate_schema() -> dict:
    per_slice = _object(
        {
            "by": _TEXTS,
            "min_rows": _INTEGER,
            "slices": {
                "type": "array",
                "items": _object(
                    {"value": _TEXT, "n_calib": _INTEGER, "own_fit": _FLAG, "note": _TEXT},
                    required=("value", "n_calib", "own_fit"),
                ),
            },
        }
    )
    return _object(
        {
            "schema_version": {"const": SCHEMA_VERSION},
            "method": _TEXT,
            "params": {"type": "object"},
            "fit_info": {"type": "object", "description": "full precision; by method"},
            "warnings": _TEXTS,
            "before": _REPORT,
            "after": _REPORT,
            "notes": _TEXTS,
            "per_slice": per_slice,
        },
        required=(
            "schema_version",
            "method",
            "params",
            "fit_info",
            "warnings",
            "before",
            "after",
            "notes",
        ),  # fmt: skip
    )


#: Command -> the builder of its schema.
SCHEMAS = {
    "metrics": _metrics_schema,
    "check": _check_schema,
    "compare": _compare_schema,
    "calibrate": _calibrate_schema,
}


def schema_of(command: str) -> dict:
    """The JSON Schema of ``calcore COMMAND --json``.

    Parameters
    ----------
    command : {"metrics", "check", "compare", "calibrate"}

    Returns
    -------
    dict
        A JSON Schema (draft 2020-12) with a title and the ``schema_version`` it describes.

    Raises
    ------
    KeyError
        For a command without JSON output.

    Examples
    --------
    >>> schema = schema_of("check")
    >>> schema["properties"]["schema_version"], schema["required"][:3]
    ({'const': 1}, ['schema_version', 'file', 'n_rows'])
    """
    body = SCHEMAS[command]()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"calcore {command} --json (schema_version {SCHEMA_VERSION})",
        **body,
    }

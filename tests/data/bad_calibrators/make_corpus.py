"""Write the tampered saved-calibrator corpus of ``tests/data/bad_calibrators/``.

Run from anywhere: ``python tests/data/bad_calibrators/make_corpus.py [OUT_DIR]`` (default:
this folder). Deterministic: the documents are written out literally here (no fit, so no
floating-point result that could differ between machines). ``tests/test_bad_calibrators.py``
checks that the committed files are what this script writes, and that ``calcore apply``
refuses each one (exit 2, one line) naming ``path`` (the JSON path of the bad field, or
what is wrong with the file as a whole) and each of ``phrases`` (the rule).

The cases are issue 33's red-team findings, one file per class of problem: a temperature
that inverts or erases the ranking, reversed or NaN bin edges, a bin value outside [0, 1],
state for 1 of 3 classes, 2-D weights where a vector belongs, wrong types, a missing key,
extreme nesting, a huge integer, a parameter out of its range.

Prediction rows to apply them to: ``PREDICTIONS`` (3 classes ``a``, ``b``, ``c``;
``BINARY_PREDICTIONS`` for the binary methods).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PREDICTIONS = "label,p_a,p_b,p_c\na,0.7,0.2,0.1\nb,0.1,0.8,0.1\nc,0.2,0.2,0.6\na,0.5,0.3,0.2\n"
BINARY_PREDICTIONS = "label,p_a,p_b\na,0.7,0.3\nb,0.1,0.9\na,0.6,0.4\nb,0.45,0.55\n"

THREE = ["a", "b", "c"]
TWO = ["a", "b"]


def saved(method: str, params: dict, state, class_names=THREE) -> dict:
    """A document in ``Calibrator.to_dict``'s layout."""
    return {
        "format": "calcore-calibrator",
        "version": 1,
        "method": method,
        "params": params,
        "class_names": class_names,
        "state": state,
        "fit_info": {},
    }


TS = {"min_temperature": 0.01, "max_temperature": 100.0}
HB = {
    "bins": 3, "points_per_bin": None, "variant": "paper", "randomized": False, "delta": 1e-10,
    "seed": 0,
}  # fmt: skip
HB_STATE = {"edges": [0.3, 0.6], "values": [0.1, 0.5, 0.9], "counts": [2, 2, 2]}


def _hb(**change) -> dict:
    return saved("hb", HB, {**HB_STATE, **change}, TWO)


def _tl_hb(classes) -> dict:
    return saved("tl-hb", HB, {"classes": classes})


def _text(document, **replace) -> bytes:
    """JSON of ``document`` with some values written as raw JSON text (NaN, Infinity)."""
    text = json.dumps(document, indent=1)
    for marker, raw in replace.items():
        text = text.replace(json.dumps(marker), raw)
    return (text + "\n").encode("utf-8")


def case(file: str, content: bytes, *phrases: str, path=None, binary=False) -> dict:
    """One file; ``path``: the JSON path the message names (None: the file as a whole)."""
    return {"file": file, "content": content, "path": path, "phrases": list(phrases),
            "binary": binary}  # fmt: skip


CASES = [
    case(
        "ts_negative_temperature.json",
        _text(saved("ts", TS, {"temperature": -1.0})),
        "must be a finite number >= 0.01 and <= 100",
        path="state.temperature",
    ),
    case(
        "ts_infinite_temperature.json",
        _text(saved("ts", TS, {"temperature": "INF"}), INF="Infinity"),
        "Infinity is not a number JSON allows",
    ),
    case(
        "ts_huge_temperature.json",
        _text(saved("ts", TS, {"temperature": 1e308})),
        "<= 100",
        path="state.temperature",
    ),
    case(
        "ts_temperature_as_text.json",
        _text(saved("ts", TS, {"temperature": "2.0"})),
        "got a text",
        path="state.temperature",
    ),
    case(
        "ts_missing_state_field.json",
        _text(saved("ts", TS, {})),
        "is missing",
        path="state.temperature",
    ),
    case(
        "ts_missing_state.json",
        _text({k: v for k, v in saved("ts", TS, {}).items() if k != "state"}),
        "is missing",
        path="state",
    ),
    case(
        "ts_parameter_out_of_range.json",
        _text(saved("ts", {**TS, "max_temperature": 1e300}, {"temperature": 2.0})),
        "Its range: a finite number from 1e-06 to 1,000,000",
        path="params.max_temperature",
    ),
    case(
        "hb_reversed_edges.json",
        _text(_hb(edges=[0.6, 0.3])),
        "non-decreasing order",
        path="state.edges[1]",
        binary=True,
    ),
    case(
        "hb_nan_edge.json",
        _text(_hb(edges=[0.3, "NAN"]), NAN="NaN"),
        "NaN is not a number JSON allows",
        binary=True,
    ),
    case(
        "hb_bin_value_above_one.json",
        _text(_hb(values=[0.1, 7.5, 0.9])),
        "<= 1",
        path="state.values[1]",
        binary=True,
    ),
    case(
        "hb_count_fractional.json",
        _text(_hb(counts=[2, 2.5, 2])),
        "must be an integer (no decimal point)",
        path="state.counts[1]",
        binary=True,
    ),
    case(
        "tl_hb_state_for_one_of_three_classes.json",
        _text(_tl_hb([HB_STATE])),
        "must have 3 entries (one per class)",
        path="state.classes",
    ),
    case(
        "vs_two_dimensional_weights.json",
        _text(
            saved(
                "vs",
                {"reg": 0.0, "max_iter": 1000},
                {"weights": [[1.0, 1.0, 1.0]], "bias": [0.0, 0.0, 0.0]},
            )
        ),  # fmt: skip
        "must have 3 entries",
        path="state.weights",
    ),
    case(
        "ms_vector_weights.json",
        _text(
            saved(
                "ms",
                {"reg": 0.0001, "max_iter": 1000},
                {"weights": [1.0, 1.0, 1.0], "bias": [0.0, 0.0, 0.0]},
            )
        ),  # fmt: skip
        "must be an array",
        path="state.weights[0]",
    ),
    case(
        "state_as_list.json",
        _text(saved("ts", TS, [2.0])),
        "must be an object with the fields ['temperature']",
        path="state",
    ),
    case(
        "class_names_not_texts.json",
        _text(saved("ts", TS, {"temperature": 2.0}, [1, 2, 3])),
        "must be an array of class names",
        path="class_names",
    ),
    case(
        "deep_nesting.json",
        b"[" * 100_000 + b"]" * 100_000,
        "nested 100,000 deep",
    ),
    case(
        "huge_integer.json",
        _text(saved("ts", TS, {"temperature": "BIG"}), BIG="9" * 400),
        "beyond 2**53",
    ),
    case("not_a_calibrator.json", b'{"hello": 1}\n', "Not a saved calcore calibrator"),
]


def manifest() -> list[dict]:
    return [{k: v for k, v in c.items() if k != "content"} for c in CASES]


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        (out / c["file"]).write_bytes(c["content"])
    text = json.dumps(manifest(), indent=1) + "\n"
    (out / "MANIFEST.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)

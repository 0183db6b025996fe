"""The resampling engine gives the numbers it gave before it was made faster.

``tests/data/resample_pins.json`` was written by ``tests/data/resample_pins_make.py``
with the engine as it stood before the blocked replicate products (issue 34, item 1):
interval endpoints, bootstrap / double-bootstrap / jackknife replicates and the
calibration test's p-values and null values, for fixed seeds, on four samples (10, 100,
2 and 3 classes) and a paired ``compare``. Same seed, same method: same numbers to 1e-12.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
PINS = json.loads((DATA / "resample_pins.json").read_text(encoding="utf-8"))
TOL = 1e-12


def _maker():
    spec = importlib.util.spec_from_file_location(
        "resample_pins_make", DATA / "resample_pins_make.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _maker()


def same(got, want, where: str) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want), f"{where}: keys {sorted(set(got) ^ set(want))}"
        for key in want:
            same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            same(g, w, f"{where}[{k}]")
    elif isinstance(want, float):
        assert got is not None and math.isclose(got, want, rel_tol=TOL, abs_tol=TOL), (
            f"{where}: got {got!r}, pinned {want!r}"
        )
    else:
        assert got == want, f"{where}: got {got!r}, pinned {want!r}"


@pytest.mark.parametrize("name", [c[0] for c in MAKE.CASES])
def test_evaluate_resamples_match_pins(name):
    same(json.loads(json.dumps(MAKE.compute(name))), PINS[name], name)


def test_compare_paired_resamples_match_pins():
    same(json.loads(json.dumps(MAKE.compute_compare())), PINS["compare_cifar10"], "compare")


def test_pins_cover_intervals_replicates_and_the_test():
    for name, *_ in MAKE.CASES:
        pinned = PINS[name]
        assert len(pinned["intervals"]) >= 15 and pinned["p_values"], name
        assert {"kde_ece", "top_label_ece"} <= set(pinned["replicates"]), name
    assert PINS["overconfident_bca_900"]["jackknife"]
    assert PINS["cifar10_1500"]["double_replicates"]

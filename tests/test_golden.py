"""Golden values: metrics, bootstrap intervals and calibrators on the bundled samples.

``tests/data/golden.json`` holds values computed by ``tests/data/golden_make.py`` and
the tolerances they are compared with (stated and justified in the file): relative
1e-9 for metrics and seeded bootstrap intervals, 1e-6 for the outputs of the
optimiser-fitted calibrators (ts, vs). A failure means a result changed: if the
change is intended, regenerate the file and review its diff.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = json.loads((DATA / "golden.json").read_text(encoding="utf-8"))
TOL = GOLDEN["tolerance"]


def _generator():
    spec = importlib.util.spec_from_file_location("golden_make", DATA / "golden_make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _generator()


@pytest.fixture(scope="module", params=sorted(GOLDEN["samples"]))
def sample(request):
    name = request.param
    return name, GOLDEN["samples"][name], MAKE.compute(name)


def close(got, want, tol, where: str) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for key in want:
            close(got[key], want[key], tol, f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            close(g, w, tol, f"{where}[{k}]")
    elif isinstance(want, float):
        assert math.isclose(got, want, rel_tol=tol["rel"], abs_tol=tol["abs"]), (
            f"{where}: got {got!r}, golden {want!r} (tolerance rel {tol['rel']}, abs {tol['abs']})"
        )
    else:
        assert got == want, where


def test_tolerances_are_stated_and_tight():
    assert TOL["metrics"]["rel"] <= 1e-9 and TOL["bootstrap"]["rel"] <= 1e-9
    assert TOL["optimised"]["rel"] <= 1e-6
    assert all(t["why"] for t in TOL.values())


def test_the_sample_is_the_one_the_values_were_computed_on(sample):
    name, golden, got = sample
    assert got["sha256"] == golden["sha256"], (
        f"assets/{name}.npz changed; if intended, run tests/data/golden_make.py and review"
    )
    assert (got["n_test"], got["n_classes"]) == (golden["n_test"], golden["n_classes"])


def test_metrics_match_the_golden_values(sample):
    name, golden, got = sample
    close(got["metrics"], golden["metrics"], TOL["metrics"], f"{name}.metrics")


def test_bootstrap_intervals_match_for_the_seed(sample):
    name, golden, got = sample
    close(
        got["bootstrap_intervals"],
        golden["bootstrap_intervals"],
        TOL["bootstrap"],
        f"{name}.bootstrap_intervals",
    )


def test_calibrators_match_the_golden_values(sample):
    name, golden, got = sample
    assert set(got["calibrators"]) == set(golden["calibrators"])
    for method, want in golden["calibrators"].items():
        tol = TOL["optimised"] if method in TOL["optimised"]["calibrators"] else TOL["metrics"]
        close(got["calibrators"][method], want, tol, f"{name}.calibrators.{method}")


def test_known_published_values_of_the_cifar10_sample():
    """An independent anchor: assets/README.md's numbers for CIFAR-10 ResNet-110."""
    m = GOLDEN["samples"]["cifar10_resnet110"]["metrics"]["equal-width"]
    assert m["accuracy"] == pytest.approx(0.945, abs=5e-4)
    assert m["top_label_ece"] == pytest.approx(0.029, abs=5e-4)
    assert 100 * m["classwise_ece"] == pytest.approx(0.59, abs=5e-3)


def test_two_fits_in_one_process_are_bit_identical():
    import calcore
    from calcore.calibrators import make_calibrator

    splits = calcore.load_splits(MAKE.REPO / "assets" / "synthetic_overconfident.npz")
    for method in ("ts", "tl-hb", "irm"):
        a = make_calibrator(method).fit(splits["calib"]).transform(splits["test"]).probs
        b = make_calibrator(method).fit(splits["calib"]).transform(splits["test"]).probs
        np.testing.assert_array_equal(a, b, err_msg=method)

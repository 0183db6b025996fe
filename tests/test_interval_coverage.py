"""The coverage study in its reduced, seeded form (issue 13): the default intervals still
reach the goal on a few miscalibrated cells of ``benchmarks/study_intervals.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import calcore

STUDY = Path(__file__).resolve().parent.parent / "benchmarks" / "study_intervals.py"
spec = importlib.util.spec_from_file_location("study_intervals", STUDY)
study = importlib.util.module_from_spec(spec)
spec.loader.exec_module(study)

#: The errors whose default interval the issue sets a coverage goal for.
GOAL_METRICS = ("conf_ece", "top_label_ece", "classwise_ece", "kde_ece")


@pytest.fixture(scope="module")
def cells():
    out = []
    for kind in study.QUICK["kinds"]:
        truth = calcore.true_calibration_errors(study.simulator(kind, 3))
        metrics = study.run_cell(kind, 3, 1000, reps=30, resamples=100, level=0.95, truth=truth)
        out.append((kind, metrics))
    return out


@pytest.mark.timeout(300)
def test_default_intervals_cover_the_truth_on_miscalibrated_cells(cells):
    coverages = []
    for kind, metrics in cells:
        for key in GOAL_METRICS:
            default = metrics[key]["methods"]["default"]
            assert default["coverage"] >= 0.8, (kind, key, default)
            assert default["excludes_estimate"] == 0.0, (kind, key)
            coverages.append(default["coverage"])
    assert sum(coverages) / len(coverages) >= 0.9, coverages


@pytest.mark.timeout(300)
def test_the_percentile_interval_is_what_the_default_improves_on(cells):
    # The finding that started the study: percentile intervals of a binned ECE sit above
    # the truth more often than a 95% interval may (here TL-/CW-ECE of the 3-class cells).
    worst = min(
        metrics[key]["methods"]["percentile"]["coverage"]
        for _, metrics in cells
        for key in ("top_label_ece", "classwise_ece")
    )
    assert worst < 0.85


@pytest.mark.timeout(300)
def test_the_iterated_interval_covers_where_sparse_cells_defeat_the_once_corrected_one():
    # 10 classes x 1,000 rows: about 7 rows per (class, bin) cell of the TL-ECE, where the
    # bias is far from linear in the noise and the once-corrected ("normal") interval
    # contained the truth in 70% of samples in the first study.
    truth = calcore.true_calibration_errors(study.simulator("class-specific", 10))
    cell = study.run_cell(
        "class-specific", 10, 1000, reps=30, resamples=100, level=0.95, truth=truth,
        metrics=["top_label_ece"],
    )["top_label_ece"]  # fmt: skip
    assert calcore.METRICS["top_label_ece"].interval_method == "iterated"
    methods = cell["methods"]
    assert methods["default"]["coverage"] >= 0.8, methods["default"]
    assert methods["normal"]["coverage"] < methods["iterated"]["coverage"], methods
    assert cell["test_rejection_rate"] >= 0.9  # the test sees this miscalibration

"""Published values on real data: the "Base" column of Tables 2-3 of Gupta & Ramdas (2022),
"Top-label calibration and multiclass-to-binary reductions" (ICLR), for the four CIFAR-10
models of Mukhoti et al. (2020) kept in ``assets/reference`` (see its README.md).

Softmax of the TEST logits, 15 equal-width bins. The paper prints TL-ECE to 3 decimals and
CW-ECE x 100 to 2 decimals; we require equality at that printed precision.

The data folder comes from the ``reference_data`` fixture of ``tests/conftest.py``, which
fails rather than skips when a file is missing, so a run without the data cannot pass
silently.
"""

from __future__ import annotations

import numpy as np
import pytest

import calcore

# model: (TL-ECE, CW-ECE x 100, test accuracy) as printed in the paper / data README
PAPER = {
    "resnet50": (0.025, 0.46, 0.950),
    "resnet110": (0.029, 0.59, 0.945),
    "densenet121": (0.027, 0.46, 0.949),
    "wide_resnet": (0.023, 0.44, 0.959),
}


@pytest.fixture(scope="module", params=list(PAPER))
def model(request, reference_data):
    name = request.param
    folder = reference_data / "cifar10"
    logits = np.load(folder / f"{name}_test_logits.npy")
    labels = np.load(folder / f"{name}_test_labels.npy")
    assert logits.shape == (10_000, 10) and labels.shape == (10_000,)
    return name, calcore.Predictions.from_logits(logits, labels)


def test_top_label_ece_matches_paper(model):
    name, preds = model
    tl = calcore.top_label_ece(preds, bins=15, binning="equal-width")
    assert round(tl, 3) == PAPER[name][0], tl


def test_classwise_ece_matches_paper(model):
    name, preds = model
    cw = calcore.classwise_ece(preds, bins=15, binning="equal-width")
    assert round(100 * cw, 2) == PAPER[name][1], 100 * cw


def test_accuracy_matches_paper(model):
    name, preds = model
    assert round(calcore.accuracy(preds), 3) == PAPER[name][2]


def test_top_label_at_least_confidence_ece(model):
    # Gupta & Ramdas (2022), Prop. 4: conf-ECE <= TL-ECE with the same bins, strictly here
    _, preds = model
    conf = calcore.confidence_ece(preds, bins=15)
    tl = calcore.top_label_ece(preds, bins=15)
    assert 0 < conf < tl


def test_report_agrees_on_the_paper_values(model):
    # the one-call report reproduces the same published numbers (shared bins, blockwise CW path)
    name, preds = model
    report = calcore.evaluate(preds, bins=15, binning="equal-width", kde_classwise_max_classes=0)
    assert round(report.top_label_ece, 3) == PAPER[name][0]
    assert round(100 * report.classwise_ece, 2) == PAPER[name][1]
    assert round(report.accuracy, 3) == PAPER[name][2]

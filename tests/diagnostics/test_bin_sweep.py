"""ECE against the number of bins (calcore.diagnostics.bin_sweep): at each B, the ECEs of
calcore's metric functions."""

from __future__ import annotations

import numpy as np
import pytest
from _synthetic import random_discrete_preds  # tests/ is on sys.path

import calcore
from calcore import CalcoreError, Predictions
from calcore.diagnostics.bin_sweep import ece_by_bins


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_ece_by_bins_matches_metrics(binning):
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.full(4, 0.5), size=500)
    q = p**1.5 / (p**1.5).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=row) for row in q])
    preds = Predictions.from_probs(p, y)
    bins = [2, 5, 7, 15, 25]
    res = ece_by_bins(preds, bins=bins, binning=binning)
    np.testing.assert_array_equal(res.bins, bins)
    assert res.binning == binning
    for i, b in enumerate(bins):
        assert res.confidence_ece[i] == pytest.approx(
            calcore.confidence_ece(preds, bins=b, binning=binning), rel=1e-12
        )
        assert res.top_label_ece[i] == pytest.approx(
            calcore.top_label_ece(preds, bins=b, binning=binning), rel=1e-12
        )
        assert res.classwise_ece[i] == pytest.approx(
            calcore.classwise_ece(preds, bins=b, binning=binning), rel=1e-12
        )
    if binning == "equal-width":  # Jensen: with shared fixed edges TL-ECE >= conf-ECE at every B
        assert np.all(res.top_label_ece >= res.confidence_ece - 1e-12)
        assert (res.top_label_ece > res.confidence_ece + 1e-3).any()


def test_ece_by_bins_default_range():
    preds = random_discrete_preds(n=200)
    res = ece_by_bins(preds)
    np.testing.assert_array_equal(res.bins, np.arange(5, 26))
    assert np.all(res.top_label_ece >= res.confidence_ece - 1e-12)


@pytest.mark.parametrize("bins", [[], [0, 5], [5, -1], [2.5, 3]])
def test_ece_by_bins_errors(bins):
    pattern = r"^bins must be a non-empty sequence of positive integers; got \[.*\]\.$"
    with pytest.raises(CalcoreError, match=pattern):
        ece_by_bins(random_discrete_preds(n=50), bins=bins)


def test_ece_by_bins_computes_only_the_chosen_views():
    preds = random_discrete_preds(n=200)
    res = ece_by_bins(preds, bins=[3, 9], views=["top-label", "confidence"])
    assert res.classwise_ece is None
    for i, b in enumerate([3, 9]):
        assert res.confidence_ece[i] == pytest.approx(calcore.confidence_ece(preds, bins=b))
        assert res.top_label_ece[i] == pytest.approx(calcore.top_label_ece(preds, bins=b))
    only_cw = ece_by_bins(preds, bins=[4], views=("class-wise",))
    assert only_cw.confidence_ece is None and only_cw.top_label_ece is None
    assert only_cw.classwise_ece[0] == pytest.approx(calcore.classwise_ece(preds, bins=4))
    for views in ([], ["confidence", "canonical"]):
        with pytest.raises(CalcoreError, match=r"^views must be a non-empty subset"):
            ece_by_bins(preds, views=views)

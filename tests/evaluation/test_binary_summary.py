"""calcore.binary_summary: the words follow the binary measures' intervals."""

from __future__ import annotations

import numpy as np

import calcore


def _preds(scale_events=1.0, slope=1.0, n=6000, seed=0):
    """Binary rows whose true log-odds are ``slope`` times the model's, events scaled."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 1.0, n)
    truth = 1 / (1 + np.exp(-slope * z))
    y = (rng.random(n) < np.clip(scale_events * truth, 0, 1)).astype(int)
    p = 1 / (1 + np.exp(-z))
    return calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y, ("no", "yes"))


def _words(preds):
    report = calcore.evaluate(preds, n_resamples=100)
    return report, calcore.binary_summary(report, positive="yes")


def test_under_prediction_is_named_with_the_interval_of_o_over_e():
    report, words = _words(_preds(scale_events=1.4))
    lo, hi = report.intervals["oe_ratio"].low, report.intervals["oe_ratio"].high
    assert lo > 1
    assert words.startswith(f"The model under-predicts yes: {report.metrics['oe_ratio']:.2f}")
    assert f"[{lo:.2f}, {hi:.2f}]" in words


def test_over_prediction_and_a_slope_below_one():
    report, words = _words(_preds(scale_events=0.7, slope=0.6))
    assert "over-predicts yes" in words
    assert report.intervals["calibration_slope"].high < 1
    assert "too extreme" in words


def test_a_calibrated_model_gets_no_alarm():
    report, words = _words(_preds(seed=1))  # seed 0's HL p is 0.015: a 1-in-70 draw
    assert "predicts the rate of yes right overall" in words
    assert "spread is right" in words
    assert report.metrics["hosmer_lemeshow_p"] > 0.05 and "Hosmer" not in words


def test_multiclass_reports_have_no_binary_sentence():
    sim = calcore.dirichlet_simulator(3, miscalibration="calibrated")
    preds = calcore.simulate_predictions(sim, 300, seed=0).preds
    assert calcore.binary_summary(calcore.evaluate(preds)) == ""


def test_without_intervals_the_size_alone_is_said():
    words = calcore.binary_summary(calcore.evaluate(_preds(scale_events=1.4)), positive="yes")
    assert "(no interval computed)" in words
    assert "under-predicts" not in words


def test_hosmer_lemeshow_p_keeps_its_level_on_held_out_calibrated_rows():
    """chi2 with G degrees of freedom (not G - 2, which is for a logistic model's own
    fitting rows): on calibrated test sets the p-value is about uniform."""
    p = np.array([calcore.hosmer_lemeshow_p(_preds(seed=s, n=3000)) for s in range(200)])
    assert 0.01 <= np.mean(p < 0.05) <= 0.09
    assert 0.35 <= np.mean(p < 0.5) <= 0.65

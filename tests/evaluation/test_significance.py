"""The test of calibration by consistency resampling (issue 13, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calcore
from calcore.cli import main
from calcore.foundation.errors import CalcoreError
from calcore.foundation.keyed_random import row_uniforms


def _sim(kind, n_classes=3, **kw):
    return calcore.dirichlet_simulator(n_classes, miscalibration=kind, **kw)


def test_p_values_equal_a_brute_force_reference():
    preds = calcore.simulate_predictions(_sim("overconfident", strength=0.3), 150, seed=3).preds
    test = calcore.calibration_test(
        preds, metrics=["top_label_ece", "classwise_ece"], n_resamples=30, seed=9, bins=8
    )
    # By hand: labels from the documented uniforms by inverse CDF, metrics from the
    # stand-alone functions (not the statistics engine).
    cumulative = np.cumsum(preds.probs, axis=1)
    for key, metric in [
        ("top_label_ece", calcore.top_label_ece),
        ("classwise_ece", calcore.classwise_ece),
    ]:
        observed = metric(preds, bins=8)
        null = []
        for r in range(30):
            u = row_uniforms(np.arange(preds.n_samples), 9, stream=r + 1)
            labels = np.array(
                [
                    int(np.searchsorted(c, x, side="right"))
                    for c, x in zip(cumulative, u, strict=True)
                ]
            )
            labels = np.minimum(labels, 2)
            null.append(metric(calcore.Predictions.from_probs(preds.probs, labels), bins=8))
        expected = (1 + np.sum(np.array(null) >= observed - 1e-15)) / 31
        assert test.observed[key] == pytest.approx(observed, abs=1e-12)
        np.testing.assert_allclose(test.null_values[key], null, atol=1e-12)
        assert test.p_values[key] == pytest.approx(expected)


def test_type_one_error_on_calibrated_generators_is_at_most_nominal():
    # 120 calibrated data sets; a valid level-0.05 test rejects about 6 (at most ~11 by
    # chance: 0.05 + 2.5 standard errors). The seeds are fixed, so the count is too.
    rejections = {k: 0 for k in calcore.evaluation.significance.DEFAULT_TESTED}
    for seed in range(120):
        n_classes = (2, 3, 5)[seed % 3]
        sim = _sim("calibrated", n_classes)
        preds = calcore.simulate_predictions(sim, 300, seed=seed).preds
        test = calcore.calibration_test(preds, n_resamples=39, seed=seed)
        for k, p in test.p_values.items():
            rejections[k] += p <= 0.05
    assert max(rejections.values()) <= 11, rejections


@pytest.mark.parametrize("kind", ["overconfident", "underconfident", "class-specific"])
def test_miscalibrated_generators_are_rejected(kind):
    preds = calcore.simulate_predictions(_sim(kind, 4, strength=1.5), 3000, seed=1).preds
    test = calcore.calibration_test(preds, n_resamples=49)
    assert min(test.p_values.values()) == pytest.approx(1 / 50)
    assert test.verdict("top_label_ece").startswith("miscalibrated")


def test_verdict_and_json():
    preds = calcore.simulate_predictions(_sim("calibrated"), 500, seed=2).preds
    test = calcore.calibration_test(preds, metrics="conf_ece", n_resamples=19, seed=4)
    p = test.p_values["conf_ece"]
    assert p in {k / 20 for k in range(1, 21)}
    words = "miscalibrated" if p <= 0.05 else "consistent with calibrated"
    assert test.verdict("conf_ece") == f"{words} (p = {p:.2g})"
    assert test.as_dict() == {"conf_ece": {"p_value": p, "n_resamples": 19}}


def test_bad_arguments_are_refused():
    preds = calcore.simulate_predictions(_sim("calibrated"), 50, seed=0).preds
    with pytest.raises(CalcoreError, match="must be among"):
        calcore.calibration_test(preds, metrics=["accuracy"])
    with pytest.raises(CalcoreError, match="n_resamples"):
        calcore.calibration_test(preds, n_resamples=1)
    with pytest.raises(CalcoreError, match="at least 2 rows"):
        calcore.calibration_test(preds.subset([0]))
    hb = calcore.make_calibrator("cw-hb").fit(preds).transform(preds)
    if not hb.normalized:
        with pytest.raises(CalcoreError, match="sum to 1"):
            calcore.calibration_test(hb)


def test_evaluate_reports_the_test_with_its_intervals():
    preds = calcore.simulate_predictions(_sim("overconfident"), 400, seed=5).preds
    report = calcore.evaluate(preds, n_resamples=30, seed=2)
    test = report.calibration_test
    # every calibration error that applies to 3 classes (the ECE of class 1 is binary)
    applies = {k for k in calcore.evaluation.significance.TESTABLE_METRICS}
    assert set(test.p_values) == applies - {"positive_class_ece"}
    assert test.n_resamples == 30
    alone = calcore.calibration_test(
        preds, metrics=["top_label_ece"], n_resamples=30, seed=2, bins=15
    )
    assert test.p_values["top_label_ece"] == alone.p_values["top_label_ece"]
    assert report.as_dict()["calibration_test"]["top_label_ece"]["n_resamples"] == 30
    assert calcore.evaluate(preds).calibration_test is None


def test_cli_json_gives_the_test_whenever_intervals_are_asked(tmp_path, capsys):
    preds = calcore.simulate_predictions(_sim("overconfident"), 300, seed=6).preds
    path = tmp_path / "p.csv"
    rows = ["label,p_a,p_b,p_c"] + [
        f"{'abc'[y]},{float(p[0])!r},{float(p[1])!r},{float(1 - p[0] - p[1])!r}"
        for p, y in zip(preds.probs, preds.labels, strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")
    assert main(["metrics", str(path), "--json", "--bootstrap", "20"]) == 0
    got = json.loads(capsys.readouterr().out)
    for key, entry in got["calibration_test"].items():
        assert set(entry) == {"p_value", "n_resamples"} and entry["n_resamples"] == 20, key
        assert 0 < entry["p_value"] <= 1
    assert main(["metrics", str(path), "--json"]) == 0
    assert "calibration_test" not in json.loads(capsys.readouterr().out)

"""Every registered calibrator against the protocol promises of issue 3, one test per name.

For each name in ``CALIBRATORS`` (wrapped binary methods included), on held-out data:

* rows on the simplex where the registry says ``normalized`` (else entries in [0, 1]);
* the argmax kept exactly where it says ``accuracy_preserving``;
* a JSON round trip of the fitted calibrator transforms to the same bits;
* the method's target metric improves on a miscalibrated synthetic generator with known
  truth (closing at least half of the gap to the true probabilities' value), and gets no
  worse on a perfectly calibrated one than the noise of the metric's estimator plus, for
  binning methods, the noise of their bin means (see ``_bin_mean_noise``).

Generator (``tests/_synthetic.py``): logits ``z``, labels drawn from ``softmax(z / t)``, so
the model is calibrated for ``t = 1`` and over-confident for ``t = 2``. Binary methods get
the 2-class version. Target metrics: the quantity each reduction calibrates (Gupta & Ramdas
2022, Sec. 2-3): confidence ECE for ``conf-*``, top-label ECE for ``tl-*`` and top-label
methods, class-wise ECE for ``cw-*``/``n-*`` and canonical methods, the top-K ECEs for
``tkc-*``/``tkl-*``, NLL for the likelihood-fitted maps, Brier for ``ets`` (MSE loss).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from _synthetic import softmax_synthetic

import calcore
from calcore import Predictions
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator

N_CALIB, N_TEST, N_CLASSES = 5000, 15000, 4
N_CALIB_CALIBRATED = 20_000  # more rows: the no-harm margin shrinks with the bin-mean noise


@functools.cache
def _data(temperature: float, binary: bool):
    rng = np.random.default_rng(17 if temperature == 1.0 else 18)
    n_classes = 2 if binary else N_CLASSES
    n_calib = N_CALIB_CALIBRATED if temperature == 1.0 else N_CALIB
    calib = softmax_synthetic(n_calib, n_classes, rng, temperature)
    test = softmax_synthetic(N_TEST, n_classes, rng, temperature)
    return calib, test


@functools.cache
def _fitted(name: str, temperature: float):
    calib, test = _data(temperature, CALIBRATORS[name].binary_only)
    calibrator = make_calibrator(name).fit(calib)
    return calibrator, calibrator.transform(test)


def _target(name: str):
    """(metric, largest allowed increase on calibrated data); the metric's binning noise."""
    prefix = name.split("-")[0] if "-" in name and name not in ("na-fir", "irova-ts") else ""
    ece = {"bins": 15}
    targets = {
        "conf": (lambda p: calcore.confidence_ece(p, **ece), 0.01),
        "tl": (lambda p: calcore.top_label_ece(p, **ece), 0.015),
        "cw": (lambda p: calcore.classwise_ece(p, **ece), 0.01),
        "n": (lambda p: calcore.classwise_ece(p, **ece), 0.01),
        "tkc": (lambda p: calcore.top_k_confidence_ece(p, k=2, **ece), 0.01),
        "tkl": (lambda p: calcore.top_k_label_ece(p, k=2, **ece), 0.02),
    }
    if prefix in targets:
        return targets[prefix]
    if name == "ets":
        return calcore.brier_score, 0.005
    if name in ("irm", "irova", "irova-ts", "compose", "sierpinski", "grid", "projection-hb"):
        return (lambda p: calcore.classwise_ece(p, **ece)), 0.01
    if name in ("hb", "ums", "fwb", "iso", "sb"):  # binary: both columns of one problem
        return (lambda p: calcore.classwise_ece(p, **ece)), 0.01
    return calcore.negative_log_likelihood, 0.01  # ts, vs, ms, dirichlet, platt, beta, *fir, scir


def _bin_mean_noise(name: str) -> float:
    """Expected |bin mean - truth| of a binning method with 15 bins fitted on the calibrated data.

    A bin of m points estimates its outcome rate with standard error at most
    ``0.5 / sqrt(m)``, and ``E|N(0, s^2)| = sqrt(2 / pi) s``: a binned predictor is off by
    about that much even on a perfectly calibrated model. m is the calibration rows per bin
    in one binary problem: ``n / 15``, per predicted class for ``tl``/``tkl`` (``n / (L 15)``),
    and half of that for ``ums`` (one half of the data sets the edges).
    """
    if CALIBRATORS[name].family != "binning":
        return 0.0
    rows = N_CALIB_CALIBRATED / (N_CLASSES if name.split("-")[0] in ("tl", "tkl") else 1)
    rows /= 2 if name.endswith("ums") else 1
    return float(np.sqrt(2 / np.pi) * 0.5 / np.sqrt(rows / 15))


def _is_scaling_binning(name: str) -> bool:
    # sb bins scores that a scaling method has calibrated already: it keeps calibration but
    # is not meant to repair an over-confident model by itself (Kumar et al. 2019).
    return name == "sb" or name.endswith("-sb")


ALL = sorted(CALIBRATORS)


@pytest.mark.parametrize("name", ALL)
def test_outputs_keep_the_registry_promises(name):
    info = CALIBRATORS[name]
    _, test = _data(2.0, info.binary_only)
    calibrator, out = _fitted(name, 2.0)
    assert out.probs.shape == test.probs.shape and out.normalized == calibrator.normalized
    assert out.probs.min() >= 0.0 and out.probs.max() <= 1.0
    if info.normalized:
        np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    if info.accuracy_preserving:
        np.testing.assert_array_equal(out.predicted, test.predicted)


@pytest.mark.parametrize("name", ALL)
def test_json_round_trip_transforms_to_the_same_bits(name):
    _, test = _data(2.0, CALIBRATORS[name].binary_only)
    calibrator, out = _fitted(name, 2.0)
    document = json.dumps(calibrator.to_dict(), allow_nan=False)  # strict JSON, no NaN/inf
    restored = Calibrator.from_dict(json.loads(document))
    again = restored.transform(test)
    assert restored.name == name and restored.params == calibrator.params
    np.testing.assert_array_equal(again.probs, out.probs)
    assert (again.logits is None) == (out.logits is None)
    if out.logits is not None:
        np.testing.assert_array_equal(again.logits, out.logits)


@pytest.mark.parametrize("name", [n for n in ALL if not _is_scaling_binning(n)])
def test_improves_its_target_metric_on_a_miscalibrated_model(name):
    # The known truth softmax(z / 2) sets the floor: the NLL of the true probabilities, or
    # the estimator's noise for an ECE. The method must close at least half of the gap.
    metric, _ = _target(name)
    _, test = _data(2.0, CALIBRATORS[name].binary_only)
    _, out = _fitted(name, 2.0)
    truth = metric(Predictions.from_logits(test.logits / 2.0, test.labels))
    before, after = metric(test), metric(out)
    assert before - truth > 0.03, (before, truth)  # the generator is clearly miscalibrated
    assert after - truth < 0.5 * (before - truth), (before, after, truth)


@pytest.mark.parametrize("name", ALL)
def test_does_no_harm_on_a_calibrated_model(name):
    metric, noise = _target(name)
    _, test = _data(1.0, CALIBRATORS[name].binary_only)
    _, out = _fitted(name, 1.0)
    before, after = metric(test), metric(out)
    assert after < before + noise + _bin_mean_noise(name), (before, after)


def test_every_binary_method_is_offered_through_every_wrapper():
    binary = sorted(n for n, i in CALIBRATORS.items() if i.binary_only)
    assert binary == ["beta", "fwb", "hb", "iso", "platt", "sb", "ums"]
    for prefix in ("conf", "tl", "cw", "n", "tkc", "tkl"):
        assert all(f"{prefix}-{b}" in CALIBRATORS for b in binary)
    assert isinstance(_data(1.0, True)[0], Predictions)

"""Numerical robustness (issue 6): extreme but valid predictions through every metric,
calibrator and dashboard view.

Cases (seeded, 200-1,000 rows, 2/3/10 classes): probabilities of exactly 0 and 1 in most
rows (wrong one-hot rows give the true class probability 0), logits of +-1e4, all rows
identical, a single predicted class, perfect accuracy, zero accuracy, a class never
predicted, a class predicted on 3 rows only, and one-hot rows that are all right / all
wrong (metrics at the ends of their ranges).

What must hold:

- every metric of :data:`calcore.METRICS` from ``calcore.evaluate(bins=15,
  n_resamples=50)`` is a finite number inside its registered range (or None with a note
  saying why), with finite bootstrap intervals inside the range; exact values where the
  answer is known (one-hot rows, identical rows, the NLL's documented clip for
  probabilities and its exactness for logits);
- every applicable calibrator, fitted on the first half and applied to the second, either
  gives finite outputs on the simplex (in [0, 1] when declared unnormalised) that keep the
  argmax when declared accuracy preserving, or refuses with a CalcoreError that names
  it -- and only where :data:`EXPECTED_REFUSALS` says so; its ``fit_info`` is strict JSON
  and says what it did in the notable cases (temperature clamped at a bound, classes
  left unchanged);
- every dashboard view renders an uploaded extreme file without an exception, with a
  chart or a plain message.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from _keys import interval_keys, multiclass_keys  # tests/ is on sys.path
from scipy.special import logsumexp

import calcore
from calcore import CALIBRATORS, METRICS, CalcoreError, CalcoreWarning, Predictions
from calcore.calibrators._canonical_base import MAX_CLASSES as CANONICAL_MAX_CLASSES
from calcore.statistics.scoring import NLL_CLIP

ECE_KEYS = [k for k in multiclass_keys() if k not in ("accuracy", "nll", "brier")]
N_METRIC_ROWS = 600
N_FIT_ROWS = 200  # calibrators: first half fits, second half is transformed


# -- the extreme cases ---------------------------------------------------------------------------
def _onehot(idx, k):
    out = np.zeros((len(idx), k))
    out[np.arange(len(idx)), idx] = 1.0
    return out


def _shift(labels, k, rng):
    """A class different from each label."""
    return (labels + rng.integers(1, k, labels.size)) % k


def exact_zero_one(n, k, seed=0):
    """60% of rows one-hot (a fifth of them on a wrong class: p_true = 0 exactly), rest soft."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    hard = np.where(rng.random(n) < 0.8, labels, _shift(labels, k, rng))
    soft = rng.dirichlet(np.ones(k), n)
    probs = np.where((rng.random(n) < 0.6)[:, None], _onehot(hard, k), soft)
    return Predictions.from_probs(probs, labels)


def huge_logits(n, k, seed=1):
    """Logits of +-1e4: the predicted class at +1e4, the others at -1e4 or just below +1e4
    (softmax probabilities of exactly 0 and 1, and a few near 0.993); ties for the top in
    about 5% of rows; the predicted class is right in about 70% of rows."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    pred = np.where(rng.random(n) < 0.7, labels, _shift(labels, k, rng))
    z = np.where(rng.random((n, k)) < 0.8, -1e4, 1e4 - 5.0)
    z[np.arange(n), pred] = 1e4
    tied = rng.random(n) < 0.05
    z[np.flatnonzero(tied), (pred[tied] + 1) % k] = 1e4
    return Predictions.from_logits(z, labels)


def identical_rows(n, k, seed=2):
    row = {2: [0.7, 0.3], 3: [0.5, 0.3, 0.2]}.get(k, [0.5, 0.3, 0.2] + [0.0] * (k - 3))
    labels = np.random.default_rng(seed).integers(0, k, n)
    return Predictions.from_probs(np.tile(np.array(row, dtype=float), (n, 1)), labels)


def single_predicted_class(n, k, seed=3):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    p[:, 0] += 2.0
    return Predictions.from_probs(p / p.sum(axis=1, keepdims=True), rng.integers(0, k, n))


def perfect_accuracy(n, k, seed=4):
    z = np.random.default_rng(seed).normal(size=(n, k)) * 2.0
    return Predictions.from_logits(z, z.argmax(axis=1))


def zero_accuracy(n, k, seed=5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    return Predictions.from_probs(p, _shift(p.argmax(axis=1), k, rng))


def never_predicted(n, k, seed=6):
    """The last class is a label in about 1/k of the rows but never the argmax."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), n)
    p[:, -1] *= 0.01
    return Predictions.from_probs(p / p.sum(axis=1, keepdims=True), rng.integers(0, k, n))


def rare_class(n, k, seed=7):
    """Class 7 is predicted (and right) on rows 0-2 only: 3 points in the first half."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    z[:, 7] -= 50.0
    z[:3, 7] += 100.0
    labels = np.where(rng.random(n) < 0.7, z.argmax(axis=1), rng.integers(0, k, n))
    labels[labels == 7] = 0
    labels[:3] = 7
    return Predictions.from_logits(z, labels)


def one_hot_right(n, k, seed=8):
    labels = np.random.default_rng(seed).integers(0, k, n)
    return Predictions.from_probs(_onehot(labels, k), labels)


def one_hot_wrong(n, k, seed=9):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    return Predictions.from_probs(_onehot(_shift(labels, k, rng), k), labels)


BUILDERS = {
    "exact-0-1": exact_zero_one,
    "logits-1e4": huge_logits,
    "identical-rows": identical_rows,
    "single-predicted-class": single_predicted_class,
    "perfect-accuracy": perfect_accuracy,
    "zero-accuracy": zero_accuracy,
    "one-hot-right": one_hot_right,
    "one-hot-wrong": one_hot_wrong,
}
CASES = [f"{name}-{k}" for name in BUILDERS for k in (2, 3, 10)]
CASES += ["never-predicted-3", "rare-class-10"]


def build(case: str, n: int) -> Predictions:
    name, _, k = case.rpartition("-")
    builder = {**BUILDERS, "never-predicted": never_predicted, "rare-class": rare_class}[name]
    return builder(n, int(k))


def halves(preds: Predictions) -> tuple[Predictions, Predictions]:
    half = preds.n_samples // 2
    rows = (np.arange(half), np.arange(half, preds.n_samples))
    return tuple(
        Predictions.from_logits(preds.logits[r], preds.labels[r])
        if preds.logits is not None
        else Predictions.from_probs(preds.probs[r], preds.labels[r])
        for r in rows
    )


_CACHE: dict = {}


def cached(case: str, n: int) -> Predictions:
    """Predictions are immutable: build each (case, n) once per session."""
    if (case, n) not in _CACHE:
        _CACHE[case, n] = build(case, n)
    return _CACHE[case, n]


def test_the_cases_are_what_they_claim():
    """The builders make the extremes they are named after (else the tests below are vacuous)."""
    for case in CASES:
        preds = cached(case, N_METRIC_ROWS)
        k = preds.n_classes
        assert preds.n_classes == int(case.rpartition("-")[2]), case
        if case.startswith(("exact-0-1", "one-hot")):
            assert np.mean(np.any(preds.probs == 1.0, axis=1)) >= 0.5, case
        if case.startswith(("exact-0-1", "one-hot-wrong")):
            p_true = preds.probs[np.arange(preds.n_samples), preds.labels]
            assert np.mean(p_true == 0.0) > 0.05, case
        if case.startswith("logits-1e4"):
            assert np.abs(preds.logits).max() == 1e4 and preds.n_tied_rows > 0
            assert np.mean(preds.probs.max(axis=1) == 1.0) > 0.1
            assert np.mean(np.any(preds.probs == 0.0, axis=1)) > 0.5
        if case.startswith("identical-rows"):
            assert np.all(preds.probs == preds.probs[0])
        if case.startswith(("single-predicted-class", "identical-rows")):
            assert set(preds.predicted) == {0} and len(set(preds.labels)) == k
        if case.startswith(("perfect-accuracy", "one-hot-right")):
            assert preds.correct.all()
        if case.startswith(("zero-accuracy", "one-hot-wrong")):
            assert not preds.correct.any()
        if case.startswith("never-predicted"):
            assert k - 1 not in set(preds.predicted) and k - 1 in set(preds.labels)
        if case.startswith("rare-class"):
            assert np.flatnonzero(preds.predicted == 7).tolist() == [0, 1, 2]


# -- metrics -------------------------------------------------------------------------------------
def _in_range(key: str, value: float) -> bool:
    low, high = METRICS[key].bounds
    return low <= value <= high


@pytest.mark.parametrize("case", CASES)
def test_every_metric_is_finite_and_in_range(case):
    preds = cached(case, N_METRIC_ROWS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow / 0-division / NaN inside
        report = calcore.evaluate(preds, bins=15, n_resamples=50)
    assert list(report.metrics) == list(METRICS)
    for key, value in report.metrics.items():
        if value is None:
            assert any(key in note for note in report.notes), (key, report.notes)
            continue
        if math.isnan(value):  # documented NaNs of the binary measures (their docstrings)
            assert METRICS[key].binary_only, key
            if key in ("calibration_slope", "calibration_intercept"):  # a note says why
                assert any(note.startswith(f"{key} is NaN: ") for note in report.notes), key
            continue
        assert isinstance(value, float) and _in_range(key, value), (key, value)
        assert math.isfinite(value) or key == "hosmer_lemeshow", (key, value)  # inf: see HL doc
        assert not (value == 0 and math.copysign(1.0, value) < 0), (key, value)  # no -0.0
    assert set(report.intervals) == interval_keys(report)
    for key, interval in report.intervals.items():
        if METRICS[key].binary_only and not math.isfinite(interval.estimate):
            continue  # NaN estimate, NaN bounds
        if key in ("calibration_slope", "calibration_intercept", "hosmer_lemeshow") and not (
            math.isfinite(interval.low) and math.isfinite(interval.high)
        ):
            continue  # some resample's fit has no maximum (NaN), or an HL group is certain
        assert math.isfinite(interval.low) and math.isfinite(interval.high), (key, interval)
        assert interval.low <= interval.high, (key, interval)
        assert _in_range(key, interval.low) and _in_range(key, interval.high), (key, interval)
        assert not (interval.low == 0 and math.copysign(1.0, interval.low) < 0), (key, interval)
    json.dumps(report.as_dict(), allow_nan=False)  # strict JSON for the CLI and exports
    # NLL: clipped at the documented eps for probabilities, exact for logits.
    p_true = preds.probs[np.arange(preds.n_samples), preds.labels]
    if preds.logits is not None:
        z = preds.logits
        exact = np.mean(logsumexp(z, axis=1) - z[np.arange(preds.n_samples), preds.labels])
        assert report.nll == pytest.approx(exact, rel=1e-12, abs=1e-12)
    else:
        clipped = -np.mean(np.log(np.maximum(p_true, NLL_CLIP)))
        assert report.nll == pytest.approx(clipped, rel=1e-12, abs=1e-15)
        assert report.nll <= -math.log(NLL_CLIP) + 1e-9
    assert report.accuracy == preds.correct.mean()


@pytest.mark.parametrize("k", [2, 3, 10])
def test_metrics_at_the_ends_of_their_ranges(k):
    right = calcore.evaluate(cached(f"one-hot-right-{k}", N_METRIC_ROWS), bins=15).metrics
    wrong = calcore.evaluate(cached(f"one-hot-wrong-{k}", N_METRIC_ROWS), bins=15).metrics
    binned = [key for key in ECE_KEYS if not key.startswith("kde")]
    assert right["accuracy"] == 1.0 and right["nll"] == 0.0 and right["brier"] == 0.0
    for key in binned:
        assert right[key] == pytest.approx(0.0, abs=1e-12), key
    assert wrong["accuracy"] == 0.0 and wrong["brier"] == 2.0
    assert wrong["nll"] == pytest.approx(-math.log(NLL_CLIP), rel=1e-12)  # ~36.04: the clip
    for key in ("conf_ece", "conf_ece_l2", "conf_mce", "top_label_ece", "top_label_mce"):
        assert wrong[key] == pytest.approx(1.0, abs=1e-12), key
    for key in ECE_KEYS:
        assert 0.0 <= right[key] <= wrong[key] <= 1.0, key


@pytest.mark.parametrize("k", [2, 3, 10])
def test_identical_rows_give_the_one_bin_answer(k):
    preds = cached(f"identical-rows-{k}", N_METRIC_ROWS)
    m = calcore.evaluate(preds, bins=15).metrics
    row = preds.probs[0]
    gap = abs(row.max() - preds.correct.mean())
    for key in ("conf_ece", "conf_ece_l2", "conf_mce", "top_label_ece", "top_label_mce"):
        assert m[key] == pytest.approx(gap, abs=1e-12), key
    freq = np.bincount(preds.labels, minlength=k) / preds.n_samples
    assert m["classwise_ece"] == pytest.approx(np.mean(np.abs(row - freq)), abs=1e-12)
    assert m["classwise_mce"] == pytest.approx(np.mean(np.abs(row - freq)), abs=1e-12)


# -- calibrators ---------------------------------------------------------------------------------
#: The only refusals allowed, by calibrator and case, with a pattern of the message. ETS keeps
#: the argmax by refusing the all-uniform ensemble (w3 = 1), the best fit when the scores
#: carry no information about the labels (or anti-information).
_NO_SIGNAL = [
    f"{c}-{k}" for c in ("identical-rows", "zero-accuracy", "one-hot-wrong") for k in (2, 3, 10)
]
EXPECTED_REFUSALS = {
    "ets": {case: r"w3 = 1\).*no usable information" for case in _NO_SIGNAL},
}


def n_classes_of(case: str) -> int:
    return int(case.rpartition("-")[2])


def applies(name: str, n_classes: int) -> bool:
    info = CALIBRATORS[name]
    if info.binary_only and n_classes != 2:
        return False
    return not (info.family == "canonical" and n_classes > CANONICAL_MAX_CLASSES)


FIT_PAIRS = [(c, m) for c in CASES for m in CALIBRATORS if applies(m, n_classes_of(c))]


def cached_halves(case: str, n: int = N_FIT_ROWS):
    if (case, n, "halves") not in _CACHE:
        _CACHE[case, n, "halves"] = halves(cached(case, n))
    return _CACHE[case, n, "halves"]


def fit_quietly(name: str, fit: Predictions, **params):
    """Fitted calibrator and the CalcoreWarnings it gave (anything else is an error here)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calibrator = calcore.make_calibrator(name, **params).fit(fit)
    others = [w for w in caught if not issubclass(w.category, CalcoreWarning)]
    assert not others, [f"{w.category.__name__}: {w.message}" for w in others]
    return calibrator, [str(w.message) for w in caught]


@pytest.mark.parametrize(("case", "name"), FIT_PAIRS)
def test_calibrator_works_or_refuses_clearly(case, name):
    fit, test = cached_halves(case)
    info = CALIBRATORS[name]
    refusal = EXPECTED_REFUSALS.get(name, {}).get(case)
    try:
        calibrator, _ = fit_quietly(name, fit)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = calibrator.transform(test)
    except CalcoreError as err:
        message = str(err)
        assert refusal is not None, f"unexpected refusal: {message}"
        assert message.startswith(f"{name}:") and re.search(refusal, message), message
        return
    assert refusal is None, f"expected a refusal matching {refusal!r}; it fitted"
    probs = out.probs
    assert probs.shape == test.probs.shape and np.array_equal(out.labels, test.labels)
    assert np.isfinite(probs).all(), "non-finite output"
    assert probs.min() >= 0.0 and probs.max() <= 1.0, (probs.min(), probs.max())
    assert out.normalized == info.normalized
    if info.normalized:
        assert np.abs(probs.sum(axis=1) - 1.0).max() <= 1e-9
    if out.logits is not None:
        assert np.isfinite(out.logits).all()
    if info.accuracy_preserving:  # ties excepted: rows with a unique top probability
        unique = (test.probs == test.probs.max(axis=1, keepdims=True)).sum(axis=1) == 1
        kept = probs[np.arange(test.n_samples), test.predicted] >= probs.max(axis=1)
        assert kept[unique].all(), f"argmax changed on {np.sum(~kept[unique])} rows"
    assert isinstance(calibrator.fit_info, dict)
    json.dumps(calibrator.fit_info, allow_nan=False)  # strict JSON: saved and shown as is


#: Where the NLL-optimal temperature lies on these data: a bound, or inside (None).
TS_BOUND = {
    "perfect-accuracy": "min_temperature",
    "one-hot-right": "min_temperature",
    "zero-accuracy": "max_temperature",
    "one-hot-wrong": "max_temperature",
    "identical-rows": "max_temperature",
    "exact-0-1": "max_temperature",
    "logits-1e4": "max_temperature",
    "single-predicted-class": None,
    "never-predicted": None,
    "rare-class": None,
}


@pytest.mark.parametrize("case", CASES)
def test_temperature_scaling_says_where_t_ended(case):
    fit, test = cached_halves(case)
    bound = TS_BOUND[case.rpartition("-")[0]]
    ts, said = fit_quietly("ts", fit)
    info = ts.fit_info
    assert info["converged"] is True and info["bound"] == bound and info["at_bound"] == bool(bound)
    if bound is None:
        assert 0.01 < info["temperature"] < 100 and not said
        return
    value = {"min_temperature": 0.01, "max_temperature": 100.0}[bound]
    which = {"min_temperature": "lower", "max_temperature": "upper"}[bound]
    assert info["temperature"] == value
    assert f"temperature hit the {which} bound {value:g}" in info["message"]
    assert f"T clamped to {value:g}" in info["message"]
    assert said == [f"ts: {info['message']}"]
    # The clamped T is applied: logits (or log-probabilities) divided by exactly that T.
    scores = test.logits if test.logits is not None else np.log(np.maximum(test.probs, 1e-300))
    np.testing.assert_array_equal(ts.transform(test).logits, scores / value)
    # Methods built on ts report its fit the same way.
    for name in ("irova-ts", "compose", "ets"):
        if name == "ets" and case in EXPECTED_REFUSALS["ets"]:
            continue
        other, _ = fit_quietly(name, fit)
        first = other.fit_info.get("first", other.fit_info)
        assert first["bound"] == bound and first["message"] == info["message"], name


def test_temperature_scaling_on_constant_rows_keeps_t_at_one():
    rows = Predictions.from_probs(np.full((200, 3), 1 / 3), np.arange(200) % 3)
    ts, said = fit_quietly("ts", rows)
    assert ts.fit_info["temperature"] == 1.0 and not ts.fit_info["at_bound"] and not said
    assert "constant" in ts.fit_info["message"] and "T left at 1" in ts.fit_info["message"]
    np.testing.assert_allclose(ts.transform(rows).probs, 1 / 3, rtol=1e-15)


def test_top_label_binning_leaves_a_three_point_class_unchanged_and_says_so():
    fit, _ = cached_halves("rare-class-10", N_METRIC_ROWS)
    hb, _ = fit_quietly("tl-hb", fit)
    info = hb.fit_info
    assert info["points_per_class"][7] == 3 and 3 < info["min_points"]
    assert "7" in info["unchanged_classes"]
    assert all(
        info["points_per_class"][int(c)] < info["min_points"] for c in info["unchanged_classes"]
    )
    out = hb.transform(fit)
    rows = np.flatnonzero(fit.predicted == 7)
    np.testing.assert_array_equal(out.probs[rows, 7], fit.probs[rows, 7])
    assert np.any(out.confidence[fit.predicted != 7] != fit.confidence[fit.predicted != 7])


@pytest.mark.parametrize(
    "case", ["single-predicted-class-3", "never-predicted-3", "identical-rows-10"]
)
def test_top_label_binning_names_the_classes_it_never_saw_predicted(case):
    fit, _ = cached_halves(case)
    info = fit_quietly("tl-hb", fit)[0].fit_info
    never = [str(c) for c in range(fit.n_classes) if c not in set(fit.predicted)]
    assert never and set(never) <= set(info["unchanged_classes"])
    assert all(info["points_per_class"][int(c)] == 0 for c in never)


@pytest.mark.parametrize("name", ["grid", "sierpinski", "projection-hb"])
def test_canonical_binning_of_identical_rows_says_what_it_did(name):
    fit, test = cached_halves("identical-rows-3")
    calibrator, _ = fit_quietly(name, fit)
    info, out = calibrator.fit_info, calibrator.transform(test)
    if info["n_estimation_rows"] == 0:  # projection-hb: all rows tie on the projections
        assert info["n_fallback_bins"] == info["n_bins"]
        np.testing.assert_array_equal(out.probs, test.probs)  # fallback "identity"
        return
    assert info["n_fallback_bins"] == info["n_bins"] - 1  # every row in one bin
    assert info["calibration_rows_in_fallback_bins"] == 0
    freq = np.bincount(fit.labels, minlength=3) / fit.n_samples
    np.testing.assert_allclose(out.probs, np.tile(freq, (test.n_samples, 1)), atol=1e-15)


# -- dashboard views -----------------------------------------------------------------------------
APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
#: Uploaded files: case -> scores written as probabilities ("p") or logits ("z"), bootstrap.
APP_FILES = {
    "exact-0-1-3": ("p", 50),
    "single-predicted-class-3": ("p", 0),
    "perfect-accuracy-10": ("p", 0),
    "zero-accuracy-2": ("p", 0),
    "logits-1e4-3": ("z", 0),
    "one-hot-right-3": ("p", 0),  # NLL 0 and every ECE 0: once shown as "-0.0000"
}


def csv_of(preds: Predictions, scores: str) -> bytes:
    """label + one column per class; floats written with repr (read back bit for bit)."""
    values = preds.logits if scores == "z" else preds.probs
    header = "label," + ",".join(f"{scores}_{c}" for c in range(preds.n_classes))
    body = (
        f"{y}," + ",".join(repr(float(v)) for v in row)
        for y, row in zip(preds.labels, values, strict=True)
    )
    return ("\n".join([header, *body]) + "\n").encode()


def _text(elements, attr="value") -> list[str]:
    return [re.sub(r"\\(.)", r"\1", str(getattr(e, attr))) for e in elements]


@pytest.fixture
def app_test():
    pytest.importorskip("streamlit")  # the calcore-only install has no dashboard extra
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    st.cache_resource.clear()
    yield AppTest
    st.cache_data.clear()
    st.cache_resource.clear()


def upload_app(app_test, case: str, methods=("ts", "tl-hb"), first_view="metrics"):
    from dashboard.calibration import controls

    scores, boot = APP_FILES.get(case, ("p", 0))
    at = app_test.from_file(str(APP), default_timeout=120)
    at.query_params["m"] = list(methods)
    at.query_params["boot"] = str(boot)
    at.query_params["view"] = first_view
    at.run()
    at.radio(key=controls.KEY_SOURCE).set_value(controls.SOURCE_UPLOAD).run()
    data = csv_of(cached(case, N_METRIC_ROWS), scores)
    at.file_uploader(key=controls.KEY_UPLOAD).upload(f"{case}.csv", data, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("case", list(APP_FILES))
def test_every_view_renders_an_extreme_upload(app_test, case):
    from dashboard.calibration import controls
    from dashboard.calibration.state import VIEWS

    at = upload_app(app_test, case)
    assert not at.error, _text(at.error)  # ts and tl-hb fit every one of these files
    (table,) = [t.value for t in at.table if "metric" in t.value.columns]
    cells = " ".join(str(v) for v in table.drop(columns=["metric", "better"]).to_numpy().ravel())
    assert cells and not re.search(r"nan|inf|-0\.0000\b", cells, re.IGNORECASE), cells
    n_classes = cached(case, N_METRIC_ROWS).n_classes
    offered = controls.offered_views(n_classes)
    assert ("simplex" in offered) == (n_classes == 3) and set(offered) <= set(VIEWS)
    for view in offered:
        at.radio(key=controls.KEY_VIEW).set_value(view).run()
        assert not at.exception, (view, [e.value for e in at.exception])
        assert at.radio(key=controls.KEY_VIEW).value == view
        charts = at.get("plotly_chart")
        said = [m for m in _text(at.info) + _text(at.error) if m.strip()]
        if view == "metrics":  # a table, not a chart
            assert [t for t in at.table if "metric" in t.value.columns], "no metrics table"
            continue
        assert charts or said, f"{view}: neither a chart nor a message"
        if view == "slices":  # these uploads carry no metadata column
            assert any("no metadata columns to slice by" in m for m in said), said
        else:
            assert charts, (view, said)
        for chart in charts:
            # JSON has no NaN or Infinity literal (a browser would refuse the figure); inside
            # plotly's base64 typed arrays NaN is a legitimate gap, and the letters "NaN" can
            # occur in any base64 text, so those strings are left out of the search.
            text = re.sub(r'"bdata":\s*"[^"]*"', '"bdata":""', chart.proto.spec)
            literal = re.search(r"\bNaN\b|\bInfinity\b", text)
            assert literal is None, (view, text[max(0, literal.start() - 80) : literal.end()])


@pytest.mark.parametrize(
    ("case", "bound"),
    [("perfect-accuracy-10", "lower bound 0.01"), ("zero-accuracy-2", "upper bound 100")],
)
def test_the_page_says_where_the_temperature_ended(app_test, case, bound):
    at = upload_app(app_test, case)
    shown = " ".join(_text(at.markdown))
    assert f"temperature hit the {bound}" in shown and "T clamped to" in shown


def test_a_refusing_calibrator_is_named_and_the_others_still_shown(app_test):
    at = upload_app(app_test, "zero-accuracy-2", methods=("ts", "ets", "tl-hb"))
    errors = _text(at.error)
    assert len(errors) == 1 and errors[0].startswith("ets could not be fitted: ets:"), errors
    assert "w3 = 1" in errors[0]
    (table,) = [t.value for t in at.table if "metric" in t.value.columns]
    shown = " ".join(map(str, table.columns)) + " " + " ".join(map(str, table.to_numpy().ravel()))
    assert "ts" in shown and "tl-hb" in shown


@pytest.mark.parametrize(
    ("view", "case"), [("learning", "single-predicted-class-3"), ("validity", "never-predicted-3")]
)
def test_a_method_refusing_on_a_subset_leaves_the_other_curves(app_test, view, case):
    from dashboard.calibration import controls

    at = upload_app(app_test, case, methods=("ts", "ets", "tl-hb"))
    assert not at.error, _text(at.error)  # ets fits on all calibration rows ...
    at.radio(key=controls.KEY_VIEW).set_value(view).run()
    assert not at.exception
    assert at.get("plotly_chart"), _text(at.error)  # ... but not on some subsets
    warned = " ".join(w.value for w in at.warning)
    assert "left out of this view" in warned and "ets" in warned, warned

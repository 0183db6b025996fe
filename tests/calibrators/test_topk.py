"""Top-K wrappers tkl-* (top-K-label, Alg. 6) and tkc-* (top-K-confidence, Alg. 7)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _synthetic import calib_test_pair  # tests/ is on sys.path

from calcore import (
    CalcoreError,
    Predictions,
    top_k_confidence_ece,
    top_k_confidence_view,
    top_k_label_ece,
    top_k_label_view,
)
from calcore.calibrators import CALIBRATORS, Calibrator, make_calibrator
from calcore.calibrators._state import to_jsonable
from calcore.calibrators.histogram_binning import HistogramBinning
from calcore.calibrators.topk import top_k_classes, top_k_rows


@pytest.fixture(scope="module")
def miscal():
    return calib_test_pair(0, 2.0)


@pytest.fixture(scope="module")
def calibrated():
    return calib_test_pair(1, 1.0)


@pytest.fixture(scope="module")
def tied():
    """Rows with ties, zeros and one-hot entries (ranks then follow the class index)."""
    rng = np.random.default_rng(2)
    probs = np.round(rng.dirichlet(np.full(4, 0.4), size=3000), 1)
    probs[:200] = [0.4, 0.4, 0.2, 0.0]
    probs[200:300] = [0.0, 0.0, 1.0, 0.0]
    probs[300:400] = 0.25
    probs[probs.sum(axis=1) == 0] = 0.25
    probs /= probs.sum(axis=1, keepdims=True)
    return Predictions.from_probs(probs, rng.integers(0, 4, 3000))


@pytest.mark.parametrize("n_classes", [4, 12])  # k argmax passes (k <= 8) and the sort path
def test_top_k_classes_is_the_stable_descending_order(n_classes):
    rng = np.random.default_rng(3)
    probs = np.round(rng.dirichlet(np.ones(n_classes), size=500), 2)
    probs /= probs.sum(axis=1, keepdims=True)
    preds = Predictions.from_probs(probs, rng.integers(0, n_classes, 500))
    k = n_classes if n_classes < 8 else 10
    classes, values = top_k_classes(preds.probs, preds.predicted, k)
    order = np.argsort(-preds.probs, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(classes, order)
    np.testing.assert_array_equal(values, np.take_along_axis(preds.probs, order, axis=1))
    for r in range(k):  # same ranks as the metrics' views
        np.testing.assert_array_equal(values[:, r], top_k_confidence_view(preds, r + 1).scores)


@pytest.mark.parametrize("binary", ["hb", "iso"])
def test_k1_equals_conf_and_tl(binary, miscal, tied):
    for calib, test in (miscal, (tied, tied)):
        kw = {"points_per_bin": 200} if binary == "hb" else {}  # tl-hb leaves small classes alone
        for topk, m2b in (("tkc", "conf"), ("tkl", "tl")):
            ours = make_calibrator(f"{topk}-{binary}", k=1, **kw).fit(calib)
            theirs = make_calibrator(f"{m2b}-{binary}", **kw).fit(calib)
            np.testing.assert_array_equal(ours.transform(test).probs, theirs.transform(test).probs)


def test_states_are_the_binary_fits_on_the_rank_views(miscal):
    calib, _ = miscal
    params = HistogramBinning(bins=10).params
    tkc = make_calibrator("tkc-hb", k=3, bins=10).fit(calib).to_dict()["state"]["ranks"]
    tkl = make_calibrator("tkl-hb", k=3, bins=10).fit(calib)
    for r in range(3):
        view = top_k_confidence_view(calib, r + 1)
        expected = HistogramBinning.fit_binary(view.scores, view.outcomes, params)
        assert json.dumps(tkc[r]) == json.dumps(to_jsonable(expected))
        view = top_k_label_view(calib, r + 1)
        for cls in range(5):
            mine = view.groups == cls
            expected = HistogramBinning.fit_binary(view.scores[mine], view.outcomes[mine], params)
            mine_state = tkl.to_dict()["state"]["ranks"][r][cls]
            assert json.dumps(mine_state) == json.dumps(to_jsonable(expected))
        sizes = np.bincount(view.groups, minlength=5).tolist()
        assert tkl.fit_info["points_per_group"][r] == sizes


def test_rows_by_hand():
    probs = np.array([[0.4, 0.3, 0.2, 0.1]] * 4 + [[0.1, 0.2, 0.3, 0.4]])
    classes = np.array([[0, 1]] * 4 + [[3, 2]])
    h = np.array([[0.5, 0.2], [0.6, 0.5], [0.3, 0.35], [0.9, 0.0], [0.5, 0.2]])
    out = top_k_rows(probs, classes, h)
    np.testing.assert_allclose(out[0], [0.5, 0.2, 0.2, 0.1], rtol=1e-12)  # others 2:1 of 0.3
    np.testing.assert_allclose(out[1], [0.6, 0.4, 0.0, 0.0], atol=1e-15)  # sum > 1: rank 2 shrunk
    assert out[2, 0] == 0.3 and out[2, 1] < 0.3  # running min ties rank 2 to rank 1, then the cap
    np.testing.assert_allclose(out[3], [0.9, 0.0, 2 / 30, 1 / 30], rtol=1e-12)
    np.testing.assert_allclose(out[4], [0.1, 0.2, 0.2, 0.5], rtol=1e-12)
    # k = L: ranks 2..L are scaled to exactly 1 - h_1.
    full = top_k_rows(
        np.array([[0.5, 0.3, 0.2]]), np.array([[0, 1, 2]]), np.array([[0.6, 0.3, 0.05]])
    )
    np.testing.assert_allclose(full[0], [0.6, 0.4 * 0.3 / 0.35, 0.4 * 0.05 / 0.35], rtol=1e-12)
    # Other classes all zero: they share the remaining mass equally.
    zero = top_k_rows(np.array([[0.7, 0.3, 0.0, 0.0]]), np.array([[0, 1]]), np.array([[0.6, 0.2]]))
    np.testing.assert_allclose(zero[0], [0.6, 0.2, 0.1, 0.1], rtol=1e-12)


def test_top_k_rows_keeps_argmax_and_rank_order_for_any_h():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.full(6, 0.3), size=3000)
    probs[:5] = [0.5, 0.5, 0, 0, 0, 0]
    preds = Predictions.from_probs(probs, np.zeros(3000, dtype=int))
    for k in (2, 3, 6):
        classes, _ = top_k_classes(preds.probs, preds.predicted, k)
        out = top_k_rows(preds.probs, classes, rng.random((3000, k)))
        np.testing.assert_array_equal(out.argmax(axis=1), preds.predicted)
        assert (out.max(axis=1) > np.sort(out, axis=1)[:, -2]).all()  # strict maximum
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
        ranked = np.take_along_axis(out, classes, axis=1)
        assert (np.diff(ranked, axis=1) <= 0).all()  # non-increasing over ranks, exactly


@pytest.mark.parametrize("prefix", ["tkl", "tkc"])
@pytest.mark.parametrize(("binary", "k"), [("hb", 2), ("iso", 3), ("ums", 5)])
def test_accuracy_preserved_exactly_and_rows_on_simplex(prefix, binary, k, miscal, tied):
    assert CALIBRATORS[f"{prefix}-{binary}"].accuracy_preserving
    calib, test = miscal
    kw = {} if binary == "iso" else {"bins": 10}
    for c, t in ((calib, test), (tied, tied)):
        k_used = min(k, c.n_classes)
        out = make_calibrator(f"{prefix}-{binary}", k=k_used, **kw).fit(c).transform(t)
        np.testing.assert_array_equal(out.predicted, t.predicted)
        np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-12)
        assert out.normalized


def test_small_groups_unchanged_and_reported():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=600)
    probs[:, 2:] *= 0.05  # classes 2 and 3 are rarely in the top 2
    probs = np.r_[probs / probs.sum(axis=1, keepdims=True), [[0.05, 0.05, 0.5, 0.4]] * 5]
    preds = Predictions.from_probs(probs, rng.integers(0, 4, 605))
    cal = make_calibrator("tkl-hb", k=2, points_per_bin=50).fit(preds)
    sizes = np.array(cal.fit_info["points_per_group"])
    expected = [
        {"rank": r + 1, "class": str(c)} for r in range(2) for c in range(4) if sizes[r, c] < 50
    ]
    assert {"rank": 1, "class": "3"} in expected
    assert cal.fit_info["unchanged_groups"] == expected
    for r, rank_states in enumerate(cal.to_dict()["state"]["ranks"]):
        assert [s is None for s in rank_states] == (sizes[r] < 50).tolist()
    out = cal.transform(preds)
    classes, _ = top_k_classes(preds.probs, preds.predicted, 2)
    small = (sizes[0][classes[:, 0]] < 50) & (sizes[1][classes[:, 1]] < 50)
    assert small.any()
    np.testing.assert_array_equal(out.probs[small], preds.probs[small])
    one = (sizes[0][classes[:, 0]] < 50) & ~small  # rank 1 unchanged, rank 2 calibrated
    assert one.any()
    top = np.take_along_axis(out.probs, classes[:, :1], axis=1)[:, 0]
    np.testing.assert_array_equal(top[one], preds.confidence[one])


def test_fit_info_counts_clipping_and_overflow(miscal):
    calib, _ = miscal
    cal = make_calibrator("tkl-iso", k=5).fit(calib)
    info = cal.fit_info
    assert info["k"] == 5 and info["min_points"] == 1 and info["unchanged_groups"] == []
    assert 0 < info["rows_rank_order_clipped"] <= calib.n_samples
    assert 0 < info["rows_top_k_sum_above_one"] <= calib.n_samples


@pytest.mark.parametrize("name", ["tkl-hb", "tkc-hb", "tkl-iso", "tkc-platt"])
def test_json_round_trip_is_bit_identical(name, miscal):
    calib, test = miscal
    cal = make_calibrator(name, k=3).fit(calib)
    loaded = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    np.testing.assert_array_equal(cal.transform(test).probs, loaded.transform(test).probs)
    assert loaded.params == cal.params


def test_improves_miscalibrated_and_does_no_harm_on_calibrated(miscal, calibrated):
    calib, test = miscal
    tkc = make_calibrator("tkc-hb").fit(calib).transform(test)
    tkl = make_calibrator("tkl-hb").fit(calib).transform(test)
    assert top_k_confidence_ece(tkc, k=2) < 0.25 * top_k_confidence_ece(test, k=2)
    assert top_k_label_ece(tkl, k=2) < 0.4 * top_k_label_ece(test, k=2)
    calib, test = calibrated
    tkc = make_calibrator("tkc-hb").fit(calib).transform(test)
    tkl = make_calibrator("tkl-hb").fit(calib).transform(test)
    # Within binning noise (about 0.01 at 15 bins of a few hundred points each).
    assert top_k_confidence_ece(tkc, k=2) < top_k_confidence_ece(test, k=2) + 0.01
    assert top_k_label_ece(tkl, k=2) < top_k_label_ece(test, k=2) + 0.02


def test_registry_entries():
    info = CALIBRATORS["tkl-hb"]
    assert [p.name for p in info.parameters][:2] == ["k", "bins"] and info.defaults["k"] == 2
    assert not info.binary_only and info.normalized
    assert make_calibrator("tkc-sb", k=3).params["k"] == 3


def test_errors(miscal):
    calib, _ = miscal
    with pytest.raises(
        CalcoreError, match=r"parameter 'k' must be at most the number of classes \(5\); got 6"
    ):
        make_calibrator("tkl-hb", k=6).fit(calib)
    with pytest.raises(CalcoreError, match=r"parameter 'k' must be >= 1; got 0"):
        make_calibrator("tkc-hb", k=0)
    with pytest.raises(CalcoreError, match=r"tkc-hb: needs at least 15 calibration rows"):
        make_calibrator("tkc-hb").fit(Predictions.from_probs(calib.probs[:10], calib.labels[:10]))
    with pytest.raises(CalcoreError, match=r"tkl-hb: unknown parameter\(s\) \['K'\]"):
        make_calibrator("tkl-hb", K=2)
    with pytest.raises(CalcoreError, match=r"tkl-iso is not fitted yet"):
        make_calibrator("tkl-iso").transform(calib)

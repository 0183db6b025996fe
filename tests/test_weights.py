"""Row weights end to end: a file's weight column, Predictions that carry weights, reports,
metric functions and diagrams of weighted rows, and calibrator fits. The reference is always
the same rows repeated as often as their integer weight, or, for fractional weights, an
objective minimised independently."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _keys import assert_same_metrics, multiclass_keys  # tests/ is on sys.path
from _synthetic import dirichlet_preds as _preds
from scipy.optimize import minimize, minimize_scalar
from scipy.special import log_softmax

import calcore
from calcore.calibrators._registry import CALIBRATORS
from calcore.cli import main
from calcore.predictions import concat


def _logits(n, n_classes, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    z = (
        rng.normal(size=(n, n_classes)) + 2.5 * np.eye(n_classes)[y]
    )  # informative, overconfident x2
    return 2.0 * z, y


def test_a_weight_column_is_detected_checked_and_carried():
    text = b"label,p_cat,p_dog,Weight\ncat,0.8,0.2,2\ndog,0.4,0.6,1\ncat,0.3,0.7,0\n"
    preds = calcore.load_predictions(io.BytesIO(text), name="w.csv")
    np.testing.assert_array_equal(preds.sample_weight, [2.0, 1.0, 0.0])
    assert preds.load_report.weight_column == "Weight" and preds.load_report.total_weight == 3
    assert any("weighted by column 'Weight'" in m for m in preds.load_report.messages())
    # weighted rows: cat 0.8 (right) x2, dog 0.6 (right) x1, cat 0.3 (wrong) x0: accuracy 1
    assert calcore.evaluate(preds).metrics["accuracy"] == pytest.approx(1.0)
    assert calcore.evaluate(preds, sample_weight=[1, 1, 1]).metrics["accuracy"] == pytest.approx(
        2 / 3
    )
    bad = b"label,p_cat,p_dog,weight\ncat,0.8,0.2,2\ndog,0.4,0.6,-1\n"
    with pytest.raises(calcore.CalcoreError, match=r"w\.csv, line 3, column 'weight': weight -1"):
        calcore.load_predictions(io.BytesIO(bad), name="w.csv")
    zero = b"label,p_cat,p_dog,weight\ncat,0.8,0.2,0\ndog,0.4,0.6,0\n"
    with pytest.raises(calcore.CalcoreError, match="every weight is 0"):
        calcore.load_predictions(io.BytesIO(zero), name="w.csv")


def test_weight_column_by_name_without_prefix_is_not_a_class():
    text = b"y,a,b,importance\na,0.8,0.2,3\nb,0.4,0.6,1\n"
    preds = calcore.load_predictions(io.BytesIO(text), name="n.csv", weight_column="importance")
    assert preds.class_names == ("a", "b")
    np.testing.assert_array_equal(preds.sample_weight, [3.0, 1.0])
    schema = calcore.inspect_table(io.BytesIO(text), name="n.csv", weight_column="importance")
    assert schema.weight_column == "importance" and schema.class_columns == ("a", "b")
    unweighted = calcore.load_predictions(io.BytesIO(text), name="n.csv")
    assert unweighted.class_names == ("a", "b", "importance")  # a score column (logits)


def test_parquet_and_npz_weights_and_split_selection(tmp_path):
    pq.write_table(
        pa.table(
            {
                "y": [0, 1, 1, 0],
                "p_x": [0.2, 0.7, 0.4, 0.1],
                "sample_weight": [1.0, 2.0, 0.5, 4.0],
                "split": ["calib", "test", "test", "calib"],
            }
        ),
        tmp_path / "w.parquet",
    )
    test = calcore.load_predictions(tmp_path / "w.parquet", split="test")
    np.testing.assert_array_equal(test.sample_weight, [2.0, 0.5])
    splits = calcore.load_splits(tmp_path / "w.parquet")
    np.testing.assert_array_equal(splits["calib"].sample_weight, [1.0, 4.0])
    np.savez(
        tmp_path / "w.npz",
        probs=np.array([[0.2, 0.8], [0.6, 0.4]]),
        labels=np.array([1, 0]),
        weight=np.array([3, 1]),
    )
    np.testing.assert_array_equal(
        calcore.load_predictions(tmp_path / "w.npz").sample_weight, [3, 1]
    )
    pq.write_table(
        pa.table({"y": [0, 1], "p_x": [0.2, 0.7], "weight": ["a", "b"]}), tmp_path / "s.parquet"
    )
    with pytest.raises(calcore.CalcoreError, match=r"s\.parquet, column 'weight': has type string"):
        calcore.load_predictions(tmp_path / "s.parquet")


def test_weighted_predictions_equal_repeated_rows_in_every_metric():
    z, y = _logits(800, 3, seed=1)
    w = np.random.default_rng(1).integers(0, 4, 800)
    weighted = calcore.Predictions.from_logits(z, y, sample_weight=w)
    rows = np.repeat(np.arange(800), w)
    repeated = calcore.Predictions.from_logits(z[rows], y[rows])
    got, want = calcore.evaluate(weighted), calcore.evaluate(repeated)
    for k in calcore.METRICS:
        if calcore.METRICS[
            k
        ].binary_only:  # 3 classes: not computed (tests/metrics/test_binary_measures.py)
            assert got.metrics[k] is None and want.metrics[k] is None
            continue
        assert got.metrics[k] == pytest.approx(want.metrics[k], rel=1e-9, abs=1e-13), k
    # subsets and concatenation keep the weights; mixing weighted and unweighted is an error
    half = weighted.subset(np.arange(400))
    np.testing.assert_array_equal(half.sample_weight, w[:400])
    both = concat([half, weighted.subset(np.arange(400, 800))])
    np.testing.assert_array_equal(both.sample_weight, w)
    with pytest.raises(calcore.CalcoreError, match="some parts have row weights"):
        concat([half, calcore.Predictions.from_logits(z[:5], y[:5])])
    assert weighted.with_sample_weight(None).sample_weight is None


def test_temperature_scaling_takes_fractional_weights_in_its_objective():
    z, y = _logits(3_000, 4, seed=2)
    w = np.random.default_rng(2).random(3_000)
    preds = calcore.Predictions.from_logits(z, y)
    ts = calcore.make_calibrator("ts").fit(preds, sample_weight=w)

    def weighted_nll(t):
        return -(w * log_softmax(z / t, axis=1)[np.arange(3_000), y]).sum() / w.sum()

    best = minimize_scalar(
        weighted_nll, bounds=(0.05, 20), method="bounded", options={"xatol": 1e-10}
    )
    assert ts.fit_info["temperature"] == pytest.approx(best.x, rel=1e-6)
    assert ts.fit_info["sample_weight"] == "row weights in the fit's objective"
    unweighted = calcore.make_calibrator("ts").fit(preds).fit_info["temperature"]
    assert abs(unweighted - best.x) > 1e-4  # the weights matter


def _fit_cases():
    for name, info in sorted(CALIBRATORS.items()):
        if info.slow or name in ("compose",):
            continue
        yield name


@pytest.mark.parametrize("name", list(_fit_cases()))
def test_every_calibrator_fits_integer_weights_as_repeated_rows(name):
    """The plumbing of weights into every fit (taken from ``preds``, rows repeated in order,
    fit_info says so); for methods without native weights this is their definition, so
    the check is of the mechanism, and for temperature scaling of its weighted objective."""
    n_classes = 2 if CALIBRATORS[name].binary_only else 3
    z, y = _logits(600, n_classes, seed=3)
    w = np.random.default_rng(3).integers(0, 3, 600)
    preds = calcore.Predictions.from_logits(z, y)
    rows = np.repeat(np.arange(600), w)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            weighted = calcore.make_calibrator(name).fit(preds.with_sample_weight(w))
            repeated = calcore.make_calibrator(name).fit(preds.subset(rows))
    assert "sample_weight" in weighted.fit_info
    tol = 1e-7 if CALIBRATORS[name].weighted else 1e-12
    np.testing.assert_allclose(
        weighted.transform(preds).probs, repeated.transform(preds).probs, rtol=tol, atol=tol
    )


def _weighted_cases():
    return [name for name in _fit_cases() if CALIBRATORS[name].weighted]


def test_the_common_methods_fit_any_weights_themselves():
    """Platt, beta, isotonic, vector/matrix scaling, Dirichlet and their M2B wrappers take
    fractional weights in their objective (not only integer weights repeated)."""
    names = {name for name, info in CALIBRATORS.items() if info.weighted}
    wanted = {"ts", "platt", "beta", "iso", "vs", "ms", "dirichlet"}
    wanted |= {f"{p}-{m}" for p in ("conf", "tl", "cw", "n") for m in ("platt", "beta", "iso")}
    assert wanted <= names, sorted(wanted - names)
    assert not CALIBRATORS["hb"].weighted  # repeats integer weights (and refuses others)


@pytest.mark.parametrize("name", _weighted_cases())
def test_fractional_weights_fit_as_the_rows_repeated_in_proportion(name):
    """Weights k / 7 give the fit of each row repeated k times: a weighted mean does not
    change when every weight is scaled, and integer weights are repeated rows."""
    n_classes = 2 if CALIBRATORS[name].binary_only else 3
    z, y = _logits(500, n_classes, seed=8)
    k = np.random.default_rng(8).integers(0, 4, 500)
    preds = calcore.Predictions.from_logits(z, y)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = calcore.make_calibrator(name).fit(preds.with_sample_weight(k / 7.0))
        repeated = calcore.make_calibrator(name).fit(preds.subset(np.repeat(np.arange(500), k)))
    assert weighted.fit_info["sample_weight"] == "row weights in the fit's objective"
    np.testing.assert_allclose(
        weighted.transform(preds).probs, repeated.transform(preds).probs, rtol=1e-6, atol=1e-7
    )


def test_platt_with_fractional_weights_minimises_the_weighted_log_loss():
    z, y = _logits(2_000, 2, seed=9)
    w = np.random.default_rng(9).random(2_000)
    preds = calcore.Predictions.from_logits(z, y)
    platt = calcore.make_calibrator("platt").fit(preds, sample_weight=w)
    logit = z[:, 1] - z[:, 0]

    def loss(theta):
        eta = theta[0] * logit + theta[1]
        return float(np.sum(w * (np.logaddexp(0.0, eta) - y * eta)) / w.sum())

    best = minimize(
        loss, [1.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-15}
    )
    want = 1.0 / (1.0 + np.exp(-(best.x[0] * logit + best.x[1])))
    np.testing.assert_allclose(platt.transform(preds).probs[:, 1], want, atol=1e-6)
    unweighted = calcore.make_calibrator("platt").fit(preds).transform(preds).probs[:, 1]
    assert np.max(np.abs(unweighted - want)) > 1e-4  # the weights matter


def test_isotonic_with_fractional_weights_pools_ties_by_their_weight():
    """Hand-worked: scores 0.2 (w 0.5, y 1), 0.2 (w 1.5, y 0), 0.6 (w 1, y 0), 0.9 (w 2, y 1).
    The tie pools to 0.5 / 2 = 0.25; 0.6's 0 violates order and pools with it:
    (0.5 + 0) / 3 = 1/6 for both; 0.9 keeps 1."""
    probs = np.array([[0.8, 0.2], [0.8, 0.2], [0.4, 0.6], [0.1, 0.9]])
    preds = calcore.Predictions.from_probs(probs, [1, 0, 0, 1])
    iso = calcore.make_calibrator("iso").fit(preds, sample_weight=[0.5, 1.5, 1.0, 2.0])
    np.testing.assert_allclose(iso.transform(preds).probs[:, 1], [1 / 6, 1 / 6, 1 / 6, 1.0])
    plain = calcore.make_calibrator("iso").fit(preds)  # unweighted: 0.5, 0, then 1
    np.testing.assert_allclose(plain.transform(preds).probs[:, 1], [1 / 3, 1 / 3, 1 / 3, 1.0])


def test_fractional_weights_are_refused_where_rows_can_only_be_repeated():
    z, y = _logits(100, 2, seed=4)
    preds = calcore.Predictions.from_logits(z, y, sample_weight=np.full(100, 0.5))
    with pytest.raises(
        calcore.CalcoreError,
        match=r"hb: row 0 \(0-based\) of the rows it is fitted on has weight 0\.5.*integer weights",
    ):
        calcore.make_calibrator("hb").fit(preds)
    calcore.make_calibrator("ts").fit(preds)  # takes them


def test_cli_weight_col_for_metrics_and_calibrate(tmp_path, capsys):
    z, y = _logits(400, 2, seed=5)
    p = np.exp(log_softmax(z, axis=1))[:, 1]
    w = np.random.default_rng(5).integers(1, 4, 400)
    split = np.where(np.arange(400) % 2 == 0, "calib", "test")
    lines = ["label,p_pos,imp,split"] + [
        f"{y[i]},{float(p[i])!r},{w[i]},{split[i]}" for i in range(400)
    ]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    argv = ["metrics", str(tmp_path / "d.csv"), "--weight-col", "imp", "--split", "all"]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = np.repeat(np.arange(400), w)
    want = calcore.evaluate(
        calcore.Predictions.from_probs(np.column_stack([1 - p, p])[rows], y[rows])
    )
    assert got["conf_ece"] == pytest.approx(want.metrics["conf_ece"], rel=1e-10)
    assert (
        main(
            [
                "calibrate",
                str(tmp_path / "d.csv"),
                "--method",
                "hb",
                "--weight-col",
                "imp",
                "--json",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "each row repeated" in out, out[:2000]


def test_calibration_gain_is_weighted_like_repeated_rows():
    z, y = _logits(500, 3, seed=6)
    w = np.random.default_rng(6).integers(0, 4, 500)
    preds = calcore.Predictions.from_logits(z, y, sample_weight=w)
    ts = calcore.make_calibrator("ts").fit(preds)
    gain = calcore.calibration_gain(preds, ts.transform(preds)).value
    rows = np.repeat(np.arange(500), w)
    plain = preds.with_sample_weight(None)
    want = calcore.calibration_gain(plain.subset(rows), ts.transform(plain).subset(rows)).value
    assert gain == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda p: calcore.consistency_bands(p, n_resamples=5),
        lambda p: calcore.ece_by_bins(p, bins=[5, 10]),
        lambda p: calcore.kde_confidence_curve(p),
        lambda p: calcore.validity_curve(p, n_resamples=2),
    ],
    ids=["consistency_bands", "ece_by_bins", "kde_confidence_curve", "validity_curve"],
)
def test_functions_without_weights_refuse_weighted_rows_instead_of_ignoring_them(call):
    z, y = _logits(200, 2, seed=7)
    preds = calcore.Predictions.from_logits(z, y, sample_weight=np.full(200, 2.0))
    with pytest.raises(calcore.CalcoreError, match="does not use row weights yet"):
        call(preds)
    call(preds.with_sample_weight(None))  # unweighted on request


def test_rows_left_with_only_zero_weights_are_an_error_not_a_crash():
    z, y = _logits(40, 2, seed=8)
    w = np.zeros(40)
    w[0] = 1.0
    rest = calcore.Predictions.from_logits(z, y, sample_weight=w).subset(np.arange(1, 40))
    with pytest.raises(calcore.CalcoreError, match="every row of these predictions has weight 0"):
        calcore.evaluate(rest)
    with pytest.raises(calcore.CalcoreError, match="every row of these predictions has weight 0"):
        calcore.make_calibrator("ts").fit(rest)


def test_weighted_predictions_are_written_with_their_weights(tmp_path):
    from calcore.io.export import write_predictions_csv
    from calcore.io.stream_write import write_predictions

    z, y = _logits(60, 3, seed=9)
    w = np.random.default_rng(9).integers(0, 4, 60).astype(float)
    preds = calcore.Predictions.from_logits(z, y, sample_weight=w)
    write_predictions_csv(preds, tmp_path / "w.csv")
    write_predictions(preds, tmp_path / "w.parquet")
    for name in ("w.csv", "w.parquet"):
        back = calcore.load_predictions(tmp_path / name)
        np.testing.assert_array_equal(back.sample_weight, w)


def test_cli_streams_a_compressed_npz_over_the_budget(tmp_path, capsys):
    z, y = _logits(3_000, 3, seed=10)
    np.savez_compressed(tmp_path / "z.npz", logits=np.round(z, 1), labels=y)
    assert main(["metrics", str(tmp_path / "z.npz"), "--json"]) == 0
    loaded = json.loads(capsys.readouterr().out)
    # ~100 kB decoded from a smaller archive: over a 50 kB budget it is streamed, not refused
    assert main(["metrics", str(tmp_path / "z.npz"), "--json", "--max-decoded-bytes", "50000"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    assert streamed["conf_ece"] == pytest.approx(loaded["conf_ece"], rel=1e-12)


@pytest.mark.parametrize("replicates", [None, 3])
def test_the_worker_thread_split_equals_one_thread(monkeypatch, replicates):
    """``update`` adds half of its chunks on a worker thread; with weights (and bootstrap
    replicate weights) the merged sums equal a single thread's, to rounding."""
    import calcore.statistics.accumulator as accumulator
    from calcore.evaluation.report_statistics import report_cell_specs, report_kde_specs
    from calcore.statistics import CalibrationStatistics

    z, y = _logits(3_000, 3, seed=11)
    preds = calcore.Predictions.from_logits(z, y)
    rng = np.random.default_rng(11)
    w = rng.random(3_000) if replicates is None else rng.poisson(1.0, (replicates, 3_000))
    specs = report_cell_specs(preds, bins=10, binning="equal-mass")
    kde = report_kde_specs(preds, confidence=True, classwise=False)
    monkeypatch.setattr(accumulator, "_CHUNK_VALUES", 300)  # 30 chunks
    monkeypatch.setattr(accumulator, "_CHUNK_VALUES_REPLICATED", 300)
    out = {}
    for split_from in (4, 10**9):  # a worker thread, and none
        monkeypatch.setattr(accumulator, "_SPLIT_CHUNKS", split_from)
        stats = CalibrationStatistics.empty(preds.class_names, specs, kde, replicates=replicates)
        stats.update(preds, weights=w)
        out[split_from] = stats
    a, b = out[4], out[10**9]
    for key in a.cells:
        np.testing.assert_allclose(a.cells[key].score, b.cells[key].score, rtol=1e-12)
        np.testing.assert_allclose(a.cells[key].outcome, b.cells[key].outcome, rtol=1e-12)
    np.testing.assert_allclose(a.kde_ece("kde_ece"), b.kde_ece("kde_ece"), rtol=1e-10)
    np.testing.assert_allclose(a.nll, b.nll, rtol=1e-12)


# Metrics whose definition has no count in it (means and weighted shares only): scaling every
# weight by a constant changes nothing. Left out: ACE and TACE (equal-mass ranks
# floor(k m / B) of the total weight m), the debiased ECE (n_b - 1) and the KDE-ECEs (the
# bandwidth's n); ACE, TACE and the debiased ECE are checked against loop references below.
# The binary measures have their own weight tests (tests/metrics/test_binary_measures.py).
COUNTING = ("ace", "tace", "debiased_ece", "kde_ece", "kde_ece_classwise")
SCALE_FREE = [k for k in multiclass_keys() if k not in COUNTING]


def test_fractional_weights_equal_rows_repeated_in_proportion_in_every_scale_free_metric():
    z, y = _logits(900, 4, seed=11)
    k = np.random.default_rng(11).integers(0, 5, 900)
    weighted = calcore.Predictions.from_logits(z, y, sample_weight=k / 3.0)
    rows = np.repeat(np.arange(900), k)
    repeated = calcore.Predictions.from_logits(z[rows], y[rows])
    got = calcore.evaluate(weighted, metrics=SCALE_FREE, bins=10)
    want = calcore.evaluate(repeated, metrics=SCALE_FREE, bins=10)
    for key in SCALE_FREE:
        assert got.metrics[key] == pytest.approx(want.metrics[key], rel=1e-9, abs=1e-13), key


def _adaptive_reference(probs, labels, w, bins, threshold):
    """ACE / TACE with row weights, written from the definition with Python loops: per
    class, the rows of positive weight (and score >= threshold); thresholds ``u_k``, the
    smallest score whose cumulative weight reaches ``floor(k m / B)``, ``m`` the total weight
    rounded down (the group's size, as for the count rules); a score's bin is
    ``#{k : s > u_k}``; the unweighted mean of |weighted accuracy - weighted confidence| over
    the non-empty (class, bin) pairs."""
    import math

    gaps = []
    n, n_classes = probs.shape
    for c in range(n_classes):
        kept = [i for i in range(n) if w[i] > 0 and (threshold is None or probs[i, c] >= threshold)]
        total = math.floor(float(np.sum([w[i] for i in kept])) + 1e-9)  # the group's size
        ordered = sorted(kept, key=lambda i: probs[i, c])
        cuts = []
        for k in range(1, bins):
            rank = (k * total) // bins  # Python integers: exact for any total
            cum, cut = 0.0, -math.inf
            if rank > 0:
                for i in ordered:
                    cum += w[i]
                    if cum >= rank:
                        cut = probs[i, c]
                        break
            cuts.append(cut)
        mass, score, hits = {}, {}, {}
        for i in kept:
            b = sum(1 for t in cuts if probs[i, c] > t)
            mass[b] = mass.get(b, 0.0) + w[i]
            score[b] = score.get(b, 0.0) + w[i] * probs[i, c]
            hits[b] = hits.get(b, 0.0) + w[i] * (labels[i] == c)
        gaps += [abs(hits[b] / mass[b] - score[b] / mass[b]) for b in mass]
    return sum(gaps) / len(gaps)


@pytest.mark.parametrize("metric", ["ace", "tace"])
def test_ace_and_tace_with_fractional_weights_equal_a_loop_reference(metric):
    z, y = _logits(400, 3, seed=12)
    rng = np.random.default_rng(12)
    w = rng.random(400) * 3.0
    w[rng.random(400) < 0.1] = 0.0  # rows of weight 0 are not there
    preds = calcore.Predictions.from_logits(z, y, sample_weight=w)
    got = calcore.evaluate(preds, metrics=[metric], bins=7).metrics[metric]
    threshold = 1e-3 if metric == "tace" else None
    want = _adaptive_reference(preds.probs, y, w, 7, threshold)
    assert got == pytest.approx(want, rel=1e-12)
    unweighted = calcore.evaluate(preds.with_sample_weight(None), metrics=[metric], bins=7)
    assert abs(unweighted.metrics[metric] - want) > 1e-4  # the weights matter


@pytest.mark.parametrize("name", ["tl-iso", "tl-platt"])
def test_tiny_uniform_weights_fit_as_no_weights(name):
    """Uniform weights of 0.001 change no weighted mean, so the fit is the unweighted one; a
    class is fitted for its rows, not skipped because its weights add up to less than 1."""
    z, y = _logits(300, 3, seed=13)
    preds = calcore.Predictions.from_logits(z, y)
    tiny = calcore.make_calibrator(name).fit(preds, sample_weight=np.full(300, 1e-3))
    plain = calcore.make_calibrator(name).fit(preds)
    assert tiny.fit_info["unchanged_classes"] == []
    np.testing.assert_allclose(
        tiny.transform(preds).probs, plain.transform(preds).probs, rtol=1e-6, atol=1e-7
    )


def test_debiased_ece_with_fractional_weights_equals_a_loop_reference():
    """Kumar et al.'s estimate with frequency weights, from its formula: per equal-width bin,
    ``n_b`` the bin's total weight, ``N`` the total; ``sum_b n_b/N [(acc_b - conf_b)^2 -
    acc_b (1 - acc_b) / (n_b - 1)]`` (no correction where ``n_b <= 1``), square root of its
    positive part."""
    z, y = _logits(600, 3, seed=14)
    w = np.random.default_rng(14).random(600) * 2.0
    preds = calcore.Predictions.from_logits(z, y, sample_weight=w)
    conf, correct = preds.confidence, preds.predicted == y
    assert np.min(np.abs(conf * 10 - np.round(conf * 10))) > 1e-9  # no score on an edge
    mass, score, hits = np.zeros(10), np.zeros(10), np.zeros(10)
    for i in range(600):
        b = min(int(conf[i] * 10), 9)
        mass[b] += w[i]
        score[b] += w[i] * conf[i]
        hits[b] += w[i] * correct[i]
    total, squared = w.sum(), 0.0
    for b in range(10):
        if mass[b] > 0:
            acc, cf = hits[b] / mass[b], score[b] / mass[b]
            correction = acc * (1 - acc) / (mass[b] - 1) if mass[b] > 1 else 0.0
            squared += mass[b] / total * ((acc - cf) ** 2 - correction)
    want = np.sqrt(max(squared, 0.0))
    assert want > 0.01  # a miscalibrated model: the estimate is not clipped to 0
    got = calcore.evaluate(preds, metrics=["debiased_ece"], bins=10).metrics["debiased_ece"]
    assert got == pytest.approx(want, rel=1e-10)


def test_integer_weights_up_to_the_total_limit_give_exact_equal_mass_bins():
    """Frequency weights scaled by 2**40 (total 1.3e15, below 2**53): ACE and TACE equal the
    loop reference in exact integer arithmetic; the int64 product k*m of the old ranks
    overflowed for such totals at 15 bins and moved ACE by 0.01."""
    z, y = _logits(400, 3, seed=14)
    w = np.random.default_rng(14).integers(1, 5, 400).astype(np.float64) * 2.0**40
    preds = calcore.Predictions.from_logits(z, y, sample_weight=w)
    for metric, threshold in (("ace", None), ("tace", 1e-3)):
        got = calcore.evaluate(preds, metrics=[metric], bins=15).metrics[metric]
        assert got == pytest.approx(
            _adaptive_reference(preds.probs, y, w, 15, threshold), rel=1e-12
        )


@pytest.mark.parametrize(
    "weights, said",
    [
        ([2.0**52, 2.0**52, 2.0], "total weight is 9.01e+15"),  # 2**53 + 2: just past the limit
        ([1e300, 1e300, 1e300], "total weight is 3e+300"),
        ([1e308, 1e308, 1e308], "total weight is inf"),  # each finite, the sum is not
    ],
)
def test_a_total_weight_above_2_53_is_refused_naming_the_limit(tmp_path, capsys, weights, said):
    probs = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6]])
    with pytest.raises(calcore.CalcoreError, match=r"above 2\*\*53 = 9.01e\+15") as err:
        calcore.Predictions.from_probs(probs, [0, 1, 1], sample_weight=weights)
    assert said in str(err.value) and "Divide every weight by one common factor" in str(err.value)
    path = tmp_path / "w.csv"
    rows = [
        f"{y},{p[0]},{p[1]},{w!r}"
        for y, p, w in zip([0, 1, 1], probs.tolist(), weights, strict=True)
    ]
    path.write_text("label,p0,p1,weight\n" + "\n".join(rows) + "\n")
    # an input error, not a failed gate (it used to pass the gate on a NaN ECE, exit 0)
    assert main(["check", str(path), "--max", "conf_ece=0.5"]) == 2
    err_line = capsys.readouterr().err
    assert "w.csv, column 'weight'" in err_line and said in err_line


def test_a_stream_whose_batches_pass_but_whose_total_does_not_is_refused(tmp_path):
    """Each row group's total is 2**53 exactly (allowed); the file's is 2**54."""
    path = tmp_path / "w.parquet"
    table = pa.table(
        {
            "label": [0, 1, 1, 0],
            "p0": [0.8, 0.3, 0.4, 0.6],
            "p1": [0.2, 0.7, 0.6, 0.4],
            "weight": [2.0**52] * 4,
        }
    )
    pq.write_table(table, path, row_group_size=2)
    for metrics in (["conf_ece"], ["ace"]):  # the end of the pass, and the equal-mass ranks
        with pytest.raises(calcore.CalcoreError, match=r"total weight is 1.8e\+16, above 2\*\*53"):
            calcore.evaluate(calcore.scan(path, batch_rows=2), metrics=metrics)


@pytest.mark.parametrize("tiny", [5e-324, 1e-310])
def test_a_subnormal_weight_is_refused_naming_its_row(tiny):
    w = np.ones(5)
    w[3] = tiny
    with pytest.raises(
        calcore.CalcoreError, match=r"row 3 \(0-based\) has weight .*smallest float64"
    ):
        calcore.Predictions.from_probs(np.full((5, 2), 0.5), [0, 1, 0, 1, 0], sample_weight=w)
    w[3] = np.finfo(np.float64).tiny  # the smallest normal float is a weight
    calcore.Predictions.from_probs(np.full((5, 2), 0.5), [0, 1, 0, 1, 0], sample_weight=w)


def test_equal_mass_ranks_equal_exact_integer_arithmetic_up_to_the_limits():
    from calcore.statistics.edges import equal_mass_ranks

    rng = np.random.default_rng(15)
    totals = [0, 1, 7, 2**31 + 3, 2**52 + 12345, 2**53] + [
        int(t) for t in rng.integers(0, 2**53, 20)
    ]
    for total in totals:
        for bins in (2, 15, 1000, 100_000):
            want = [(k * total) // bins for k in range(1, bins)]  # Python ints never overflow
            assert equal_mass_ranks(float(total), bins).tolist() == want, (total, bins)


@pytest.mark.parametrize(("binning", "bins"), [("equal-width", 10), ("equal-mass", 7)])
def test_weighted_evaluate_equals_repeated_rows_for_every_metric(binning, bins):
    preds = _preds(240, 3, seed=28)
    w = np.random.default_rng(29).integers(0, 4, 240)
    rows = np.repeat(np.arange(240), w)
    got = calcore.evaluate(preds, binning=binning, bins=bins, sample_weight=w)
    want = calcore.evaluate(preds.subset(rows), binning=binning, bins=bins)
    assert got.n == 240  # rows, not weight
    assert_same_metrics(got, want, rel=1e-9, abs=1e-13)


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (np.r_[np.ones(5), -1.0, np.ones(4)], r"row 5 \(0-based\) has weight -1\.0"),
        (np.r_[np.ones(3), np.nan, np.ones(6)], r"row 3 \(0-based\) has weight nan"),
        (np.zeros(10), "every weight is 0"),
        (np.ones(9), r"one weight per row is needed, shape \(10,\)"),
        (np.array(["a"] * 10), "weights must be numbers"),
    ],
)
def test_bad_sample_weights_are_named(weights, message):
    with pytest.raises(calcore.CalcoreError, match=message):
        calcore.evaluate(_preds(10, 2, seed=30), sample_weight=weights)


# (3 classes: the binary measures have their own weight tests,
# tests/metrics/test_binary_measures.py)
@pytest.mark.parametrize("key", multiclass_keys())
@pytest.mark.parametrize(("binning", "bins"), [("equal-width", 8), ("equal-mass", 5)])
def test_every_metric_function_takes_weights_equal_to_repeated_rows(key, binning, bins):
    preds = _preds(150, 3, seed=37)
    w = np.random.default_rng(38).integers(0, 4, 150)
    rows = np.repeat(np.arange(150), w)
    got = calcore.compute_metric(key, preds, bins=bins, binning=binning, sample_weight=w)
    want = calcore.compute_metric(key, preds.subset(rows), bins=bins, binning=binning)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-13)


def test_weighted_top_k_and_debiased_views_equal_repeated_rows():
    preds = _preds(120, 4, seed=39)
    w = np.random.default_rng(40).integers(0, 3, 120)
    rep = preds.subset(np.repeat(np.arange(120), w))
    for f in (calcore.top_k_confidence_ece, calcore.top_k_label_ece):
        assert f(preds, k=3, sample_weight=w) == pytest.approx(f(rep, k=3), rel=1e-12)
    for view in ("top-label", "class-wise"):
        got = calcore.debiased_ece(preds, view=view, sample_weight=w)
        assert got == pytest.approx(calcore.debiased_ece(rep, view=view), rel=1e-12, abs=1e-15)
    with pytest.raises(calcore.CalcoreError, match="row 2 \\(0-based\\) has weight -1"):
        calcore.confidence_ece(preds, sample_weight=np.r_[1, 1, -1, np.ones(117)])


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_weighted_diagrams_equal_repeated_rows(binning):
    preds = _preds(160, 3, seed=41)
    w = np.random.default_rng(42).integers(0, 4, 160)
    rep = preds.subset(np.repeat(np.arange(160), w))

    def same(a, b):
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_allclose(a.confidence, b.confidence, rtol=1e-12)
        np.testing.assert_allclose(a.accuracy, b.accuracy, rtol=1e-12)
        np.testing.assert_allclose(a.ci_lower, b.ci_lower, rtol=1e-12)
        assert a.ece == pytest.approx(b.ece, rel=1e-12) and a.n == b.n

    kw = {"bins": 6, "binning": binning}
    same(
        calcore.reliability_diagram(preds, sample_weight=w, **kw),
        calcore.reliability_diagram(rep, **kw),
    )
    for a, b in zip(
        calcore.classwise_reliability_diagrams(preds, sample_weight=w, **kw),
        calcore.classwise_reliability_diagrams(rep, **kw),
        strict=True,
    ):
        same(a, b)
    ta = calcore.top_label_reliability_diagram(preds, sample_weight=w, **kw)
    tb = calcore.top_label_reliability_diagram(rep, **kw)
    same(ta.confidence_diagram, tb.confidence_diagram)
    np.testing.assert_array_equal(ta.class_count, tb.class_count)
    assert ta.top_label_ece == pytest.approx(tb.top_label_ece, rel=1e-12)
    for a, b in zip(ta.per_class, tb.per_class, strict=True):
        same(a, b)

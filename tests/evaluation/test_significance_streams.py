"""The test of calibration on streamed sources, by the statistics engine (issue 13, item 3).

The redrawn labels are keyed by row position, so a stream of the rows gives the p-values
of the same rows in memory, whatever the batching; the redrawn sums merge by addition.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calcore
from calcore.cli import main
from calcore.evaluation.report_statistics import report_cell_specs, report_kde_specs
from calcore.foundation.keyed_random import row_uniforms
from calcore.statistics import CalibrationStatistics, LabelRedraws, redrawn_labels


def _preds(n, n_classes, seed, kind="overconfident"):
    sim = calcore.dirichlet_simulator(n_classes, miscalibration=kind, strength=1.5)
    return calcore.simulate_predictions(sim, n, seed=seed).preds


def _write(path, preds, cuts):
    """Predictions as Parquet files cut at ``cuts`` (columns label, p_<class>)."""
    path.mkdir()
    bounds = [0, *cuts, preds.n_samples]
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        columns = {"label": [preds.class_names[y] for y in preds.labels[a:b]]}
        for c, name in enumerate(preds.class_names):
            columns[f"p_{name}"] = preds.probs[a:b, c]
        pq.write_table(pa.table(columns), path / f"part-{k}.parquet", row_group_size=53)


def test_redrawn_labels_follow_the_inverse_distribution_function():
    rng = np.random.default_rng(0)
    for n_classes in (2, 5, 8, 9, 40):  # both the comparison and the bisection paths
        probs = rng.dirichlet(np.full(n_classes, 0.3), size=60)
        probs[:5, 1:] = 0.0  # zero-probability classes are never drawn
        probs[:5, 0] = 1.0
        positions = np.arange(100, 160)
        got = redrawn_labels(probs, positions, 3, range(2, 6))
        cumulative = np.cumsum(probs, axis=1)
        for i, r in enumerate(range(2, 6)):
            u = row_uniforms(positions, 3, stream=r + 1)
            want = [min(int(np.searchsorted(c, x, "right")), n_classes - 1)
                    for c, x in zip(cumulative, u, strict=True)]  # fmt: skip
            assert got[i].tolist() == want
        assert (got[:, :5] == 0).all()


def _counted_labels(probs, positions, seed, redraws):
    """The plain reference: per redraw and row, the thresholds at or below the uniform."""
    cumulative = np.cumsum(probs, axis=1)
    out = []
    for r in redraws:
        u = row_uniforms(positions, seed, stream=r + 1)
        out.append([min(int(np.searchsorted(c, x, "right")), probs.shape[1] - 1)
                    for c, x in zip(cumulative, u, strict=True)])  # fmt: skip
    return np.array(out)


@pytest.mark.parametrize("n_classes", [30, 100, 300])
def test_redrawn_labels_of_confident_rows_match_the_count(n_classes):
    """The predicted class's step decides most rows (_predicted_steps); rows whose
    uniform sits exactly on a step's end, last-class and one-hot rows included."""
    from calcore.statistics.redraws import _predicted_steps

    rng = np.random.default_rng(n_classes)
    m, positions, seed, redraws = 80, np.arange(7, 87), 5, range(4)
    logits = rng.normal(size=(m, n_classes)) * 4.0
    logits[np.arange(m), rng.integers(0, n_classes, m)] += 20.0  # confident rows
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    probs[0] = 0.0
    probs[0, -1] = 1.0  # the last class predicted, its step open above
    probs[1] = 0.0
    probs[1, 0] = 1.0  # the first class
    u0 = row_uniforms(positions, seed, stream=1)
    for i in (2, 3):  # a uniform of redraw 0 exactly on the start of the predicted step
        probs[i] = 0.0
        probs[i, 0] = min(u0[i], 1.0 - u0[i])
        probs[i, 1] = 1.0 - probs[i, 0]
    probs[4] = 0.0
    probs[4, 0], probs[4, 2] = u0[4], 1.0 - u0[4]  # a zero-width step in between
    assert _predicted_steps(probs, np.cumsum(probs, axis=1)) is not None
    got = redrawn_labels(probs, positions, seed, redraws)
    np.testing.assert_array_equal(got, _counted_labels(probs, positions, seed, redraws))


def test_redrawn_frequencies_match_the_probabilities():
    probs = np.tile([0.1, 0.6, 0.3], (20_000, 1))
    labels = redrawn_labels(probs, np.arange(20_000), 0, range(5))
    share = np.bincount(labels.ravel(), minlength=3) / labels.size
    np.testing.assert_allclose(share, [0.1, 0.6, 0.3], atol=0.005)  # 10 standard errors


def test_redraws_merge_in_any_grouping_to_one_pass():
    preds = _preds(500, 4, seed=1)
    specs = report_cell_specs(preds, bins=7, binning="equal-mass")
    kde = report_kde_specs(preds, confidence=True, classwise=True)
    w = np.random.default_rng(2).uniform(0, 3, 500)
    data = CalibrationStatistics.empty(preds.class_names, specs, kde)
    data.update(preds, weights=w)

    def redraws(rows):
        out = LabelRedraws(preds.class_names, specs, kde, redraws=range(6), seed=4)
        out.update(preds.subset(rows), rows, w[rows])
        return out

    whole = redraws(np.arange(500)).statistics(data)
    parts = [np.arange(0, 90), np.arange(90, 91), np.arange(91, 400), np.arange(400, 500)]
    merged = (
        redraws(parts[3]).merge(redraws(parts[0])).merge(redraws(parts[2]).merge(redraws(parts[1])))
    )
    got = merged.statistics(data)
    for key in specs:
        np.testing.assert_allclose(got.cells[key].outcome, whole.cells[key].outcome, rtol=1e-12)
    for key in kde:
        for a, b in zip(got.kde[key], whole.kde[key], strict=True):
            np.testing.assert_allclose(a.moments, b.moments, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.correct, whole.correct, rtol=1e-12)
    np.testing.assert_allclose(got.label_weight, whole.label_weight, rtol=1e-12)


@pytest.mark.parametrize("chunk_values", [1 << 22, 3 * 37])  # one chunk; nine, half on a thread
@pytest.mark.parametrize("n_classes", [3, 12])  # indicator products; flat bincounts (TACE's cut)
def test_each_redraw_equals_a_full_update_with_its_labels(monkeypatch, chunk_values, n_classes):
    # Brute force: replicate r of the redrawn statistics is the statistics engine run on
    # the rows with the labels of redraw r (weights included).
    from calcore.statistics import redraws as module

    monkeypatch.setattr(module, "_CHUNK_VALUES", chunk_values)
    preds = _preds(300, n_classes, seed=5)
    specs = report_cell_specs(preds, bins=6, binning="equal-mass")
    kde = report_kde_specs(preds, confidence=True, classwise=True)
    w = np.random.default_rng(6).integers(0, 4, 300).astype(float)
    data = CalibrationStatistics.empty(preds.class_names, specs, kde)
    data.update(preds, weights=w)
    redraws = LabelRedraws(preds.class_names, specs, kde, redraws=range(3), seed=8)
    redraws.update(preds, np.arange(300), w)
    null = redraws.statistics(data)
    labels = redrawn_labels(preds.probs, np.arange(300), 8, range(3))
    for r in range(3):
        want = CalibrationStatistics.empty(preds.class_names, specs, kde)
        want.update(calcore.Predictions.from_probs(preds.probs, labels[r]), weights=w)
        got = null.replicate(r)
        for key in specs:
            np.testing.assert_allclose(got.cells[key].outcome, want.cells[key].outcome, rtol=1e-12)
            np.testing.assert_allclose(got.cells[key].weight, want.cells[key].weight, rtol=1e-12)
        for key in kde:
            np.testing.assert_allclose(got.kde_ece(key), want.kde_ece(key), rtol=1e-9)
        assert float(got.correct) == pytest.approx(float(want.correct), rel=1e-12)


@pytest.mark.parametrize(("binning", "bins"), [("equal-width", 15), ("equal-mass", 8)])
def test_streamed_p_values_equal_in_memory_whatever_the_batching(tmp_path, binning, bins):
    preds = _preds(700, 3, seed=9)
    _write(tmp_path / "data", preds, [250, 251, 600])
    kw = dict(bins=bins, binning=binning, n_resamples=19, seed=3)
    memory = calcore.evaluate(preds, **kw).calibration_test
    reports = [
        calcore.evaluate(calcore.scan(tmp_path / "data", batch_rows=b), **kw) for b in (37, 700)
    ]
    for report in reports:
        test = report.calibration_test
        assert test is not None and test.n_resamples == 19
        assert set(test.p_values) == set(memory.p_values)
        for k, p in memory.p_values.items():
            np.testing.assert_allclose(test.null_values[k], memory.null_values[k], rtol=1e-9)
            assert test.p_values[k] == p, k
        assert any(n.startswith("Calibration test:") for n in report.notes)
    assert memory.p_values["top_label_ece"] == pytest.approx(1 / 20)  # over-confident


def test_streamed_test_is_left_out_when_asked(tmp_path):
    preds = _preds(200, 3, seed=10)
    _write(tmp_path / "data", preds, [100])
    stream = calcore.scan(tmp_path / "data")
    assert calcore.evaluate(stream, n_resamples=5, test_calibration=False).calibration_test is None
    assert calcore.evaluate(stream).calibration_test is None
    only = calcore.evaluate(stream, n_resamples=5, metrics=["accuracy", "conf_ece"])
    assert set(only.calibration_test.p_values) == {"conf_ece"}


def test_cli_metrics_json_on_a_streamed_parquet_gives_the_test(tmp_path, capsys):
    preds = _preds(400, 3, seed=11)
    _write(tmp_path / "data", preds, [150])
    # a directory of Parquet files is streamed (Poisson bootstrap, redraws in the same pass)
    code = main(["metrics", str(tmp_path / "data"), "--json", "--bootstrap", "19"])
    assert code == 0
    got = json.loads(capsys.readouterr().out)
    tested = got["calibration_test"]
    assert tested["top_label_ece"] == {"p_value": pytest.approx(0.05), "n_resamples": 19}
    assert set(tested) >= {"conf_ece", "classwise_ece", "kde_ece"}

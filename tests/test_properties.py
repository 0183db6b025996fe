"""Property-based tests (hypothesis): loader, every metric, and the main calibrators.

Inputs are generated with exact 0 and 1 probabilities, ties (rows drawn from a few
prototypes, or all identical), 2..50 classes and 1..2000 rows, with labels that are
random, all one class, always right or always wrong. Properties:

* loader: a valid CSV written in any supported dialect reads back exactly; any
  corruption of it either still loads to valid predictions or raises ``CalcoreError``,
  never another exception;
* metrics (``calcore.METRICS``): finite, within the registered bounds, unchanged by a
  permutation of the rows;
* calibrators: fit + transform give finite outputs in [0, 1], on the simplex when the
  method is normalised, the argmax kept when it is accuracy-preserving; the only
  allowed failure is a ``CalcoreError`` with a message.

Examples per test are capped (``max_examples``; ``deadline=None``) so that the module
runs in about a minute on a busy 2-core machine; examples are derandomised (the same
on every run) and no example database is written. The number of examples that ran is
printed at the end of the module (``pytest -s``).
"""

from __future__ import annotations

import csv
import io
import warnings
from collections import Counter

import numpy as np
import pytest
from _calibrator_checks import fit_and_check
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import calcore
import calcore.io
from calcore import CalcoreError, CalcoreWarning, Predictions
from calcore.foundation.validation import probability_sum_tolerance

EXAMPLES: Counter = Counter()  # examples run per test; "<calibrator> fitted": outputs checked

SETTINGS = dict(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module", autouse=True)
def report_examples():
    yield
    total = sum(v for k, v in EXAMPLES.items() if not k.endswith(" fitted"))
    print(f"\nhypothesis examples run: {total} " + str(dict(sorted(EXAMPLES.items()))))


# -- generated predictions ---------------------------------------------------------------------
@st.composite
def prediction_arrays(draw, max_rows: int = 2000, max_classes: int = 50, min_rows: int = 1):
    """(probs, labels): float64 rows on the simplex, with exact 0/1, ties and label patterns."""
    n = draw(
        st.one_of(
            st.integers(min_rows, min(max_rows, 10)),
            st.integers(min(max_rows, 10), max_rows),
            st.integers(max(min_rows, max_rows // 2), max_rows),
        )
    )
    k = draw(st.one_of(st.integers(2, 4), st.integers(2, max_classes)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = draw(st.sampled_from(["dirichlet", "prototypes", "identical", "one-hot", "mixed"]))
    concentration = draw(st.sampled_from([0.05, 0.5, 1.0, 5.0]))
    if shape == "dirichlet":
        probs = rng.dirichlet(np.full(k, concentration), size=n)
    elif shape == "prototypes":  # ties: a few distinct rows, repeated
        protos = rng.dirichlet(np.full(k, concentration), size=draw(st.integers(1, 4)))
        probs = protos[rng.integers(0, len(protos), size=n)]
    elif shape == "identical":
        probs = np.repeat(rng.dirichlet(np.full(k, concentration), size=1), n, axis=0)
    elif shape == "one-hot":  # probabilities of exactly 0 and 1
        probs = np.eye(k)[rng.integers(0, k, size=n)]
    else:
        probs = rng.dirichlet(np.full(k, concentration), size=n)
        hot = rng.random(n) < 0.3
        probs[hot] = np.eye(k)[rng.integers(0, k, size=int(hot.sum()))]
        half = rng.random(n) < 0.2
        probs[half] = 0.0
        probs[half, 0] = probs[half, 1] = 0.5  # a tie for the argmax
    probs = probs / probs.sum(axis=1, keepdims=True)
    labels_kind = draw(st.sampled_from(["random", "one-class", "argmax", "never-argmax"]))
    if labels_kind == "random":
        labels = rng.integers(0, k, size=n)
    elif labels_kind == "one-class":
        labels = np.full(n, int(rng.integers(0, k)))
    elif labels_kind == "argmax":
        labels = probs.argmax(axis=1)
    else:
        labels = (probs.argmax(axis=1) + 1) % k
    return probs, labels.astype(np.int64)


def as_predictions(arrays) -> Predictions:
    probs, labels = arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        return Predictions.from_probs(probs, labels)


# -- loader ------------------------------------------------------------------------------------
_NAME_CHARS = st.characters(
    codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"), exclude_characters="\ufeff"
)
class_name = st.text(
    st.one_of(_NAME_CHARS, st.sampled_from(',;\t"=+-@<>')), min_size=1, max_size=12
).filter(lambda s: s == s.strip() and s.strip() != "")


@st.composite
def csv_files(draw):
    """A valid predictions CSV in a random dialect: (bytes, probs, labels, names, dialect)."""
    k = draw(st.integers(2, 8))
    names = draw(st.lists(class_name, min_size=k, max_size=k, unique=True))
    probs, labels = draw(prediction_arrays(max_rows=60, max_classes=k))
    k = probs.shape[1]
    names = names[:k]
    assume(len(names) == k)
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    bom = draw(st.booleans())
    label_as_index = draw(st.booleans())
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=newline)
    writer.writerow(["label", *("p_" + c for c in names)])
    for y, row in zip(labels, probs, strict=True):
        writer.writerow([str(y) if label_as_index else names[y], *map(repr, row.tolist())])
    data = (("\ufeff" if bom else "") + buf.getvalue()).encode("utf-8")
    return data, probs, labels, names, delimiter


@settings(max_examples=60, **SETTINGS)
@given(csv_files())
def test_valid_csv_reads_back_exactly(sample):
    EXAMPLES["loader round trip"] += 1
    data, probs, labels, names, delimiter = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        try:
            preds = calcore.load_predictions(data, name="gen.csv")
        except CalcoreError as exc:
            # class names that are integers in another order make integer labels ambiguous
            assert "ambiguous" in str(exc) or "indices" in str(exc), str(exc)
            return
    assert preds.class_names == tuple(names)
    assert preds.load_report.delimiter == delimiter
    np.testing.assert_array_equal(preds.labels, labels)
    np.testing.assert_array_equal(preds.probs, probs)  # repr of float64 reads back exactly


@settings(max_examples=40, **SETTINGS)
@given(
    prediction_arrays(max_rows=200, max_classes=12),
    st.sampled_from(["parquet", "npz-probs", "npz-logits"]),
    st.data(),
)
def test_parquet_and_npz_read_back_exactly(arrays, fmt, data):
    import pyarrow as pa
    import pyarrow.parquet as pq

    EXAMPLES["loader parquet/npz round trip"] += 1
    probs, labels = arrays
    k = probs.shape[1]
    names = data.draw(st.lists(class_name, min_size=k, max_size=k, unique=True))
    buf = io.BytesIO()
    if fmt == "parquet":
        columns = {"label": pa.array([names[y] for y in labels])}
        columns |= {"p_" + c: pa.array(probs[:, j]) for j, c in enumerate(names)}
        pq.write_table(pa.table(columns), buf)
    elif fmt == "npz-probs":
        np.savez(buf, probs=probs, labels=labels, class_names=np.array(names, dtype=str))
    else:
        logits = np.log(np.clip(probs, 1e-300, None))
        np.savez(buf, logits=logits, labels=labels, class_names=np.array(names, dtype=str))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        preds = calcore.load_predictions(buf.getvalue(), name="gen." + fmt.split("-")[0])
    assert preds.class_names == tuple(names)
    np.testing.assert_array_equal(preds.labels, labels)
    if fmt == "npz-logits":
        np.testing.assert_array_equal(preds.logits, logits)
        np.testing.assert_allclose(preds.probs.sum(axis=1), 1.0, atol=1e-12)
    else:
        np.testing.assert_array_equal(preds.probs, probs)


_CORRUPTIONS = st.sampled_from(
    ["delete", "insert", "truncate", "replace-cell", "duplicate-line", "swap-bytes"]
)
_JUNK = st.binary(min_size=1, max_size=8) | st.sampled_from(
    [b'"', b",", b";", b"\t", b"\r", b"\n", b"\x00", b"\xff", b"\xe9", b"=1+1", b"nan", b"-1", b"2"]
)


@settings(max_examples=150, **SETTINGS)
@given(csv_files(), _CORRUPTIONS, st.integers(0, 10**6), _JUNK)
def test_corrupted_csv_loads_validly_or_raises_calcore_error(sample, how, where, junk):
    EXAMPLES["loader corruption"] += 1
    data = bytearray(sample[0])
    i = where % max(1, len(data))
    if how == "delete":
        del data[i : i + len(junk)]
    elif how == "insert":
        data[i:i] = junk
    elif how == "truncate":
        del data[i:]
    elif how == "replace-cell":
        j = data.find(b"\n", i)
        data[i : (j if j >= 0 else len(data))] = junk
    elif how == "duplicate-line":
        j = data.find(b"\n", i)
        data[i:i] = data[i : (j + 1 if j >= 0 else len(data))]
    else:
        data[i : i + 2] = data[i : i + 2][::-1]
    try:  # what the dashboard shows first: detection only
        calcore.io.inspect_table(bytes(data), name="fuzz.csv")
    except CalcoreError as exc:
        assert "fuzz.csv" in str(exc), str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        try:
            preds = calcore.load_predictions(bytes(data), name="fuzz.csv")
        except CalcoreError as exc:
            assert "fuzz.csv" in str(exc) and "\n" not in str(exc), str(exc)
            return
    assert np.isfinite(preds.probs).all() and (preds.probs >= 0).all()
    tol = probability_sum_tolerance(preds.n_classes, np.dtype(np.float64))  # the loader's rule
    assert np.abs(preds.probs.sum(axis=1) - 1.0).max() <= tol
    assert ((preds.labels >= 0) & (preds.labels < preds.n_classes)).all()


@settings(max_examples=40, **SETTINGS)
@given(st.binary(max_size=400), st.sampled_from(["x.csv", "x.npz", "x.parquet", "x"]))
def test_random_bytes_never_crash_the_loader(data, name):
    EXAMPLES["loader random bytes"] += 1
    try:
        calcore.load_predictions(data, name=name)
    except CalcoreError as exc:
        assert name in str(exc)


def _binary_samples() -> dict[str, bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = {}
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        probs=np.full((20, 3), 1 / 3),
        labels=np.arange(20) % 3,
        class_names=np.array(["a", "b", "c"]),
        split=np.array(["calib", "test"] * 10),
    )
    out["x.npz"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez(buf, logits=np.zeros((20, 3)), labels=np.arange(20) % 3)
    out["y.npz"] = buf.getvalue()
    sink = io.BytesIO()
    table = pa.table({"label": ["a", "b"] * 10, "p_a": [0.5] * 20, "p_b": [0.5] * 20})
    pq.write_table(table, sink)
    out["z.parquet"] = sink.getvalue()
    return out


BINARY = _binary_samples()


@settings(max_examples=200, **SETTINGS)
@given(
    st.sampled_from(sorted(BINARY)),
    st.lists(
        st.tuples(st.sampled_from(["set", "delete", "insert", "truncate"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=4,
    ),
    st.binary(min_size=1, max_size=8),
)
def test_corrupted_npz_and_parquet_raise_calcore_error(name, edits, junk):
    """Damaged archives (bad deflate data, headers, CRCs, flags) never raise anything else."""
    EXAMPLES["loader binary corruption"] += 1
    data = bytearray(BINARY[name])
    for how, where in edits:
        if not data:
            break
        i = where % len(data)
        if how == "set":
            data[i : i + len(junk)] = junk
        elif how == "delete":
            del data[i : i + len(junk)]
        elif how == "insert":
            data[i:i] = junk
        else:
            del data[i:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        try:
            preds = calcore.load_predictions(bytes(data), name=name)
        except CalcoreError as exc:
            assert name in str(exc) and "\n" not in str(exc), str(exc)
            return
    assert np.isfinite(preds.probs).all() and (preds.probs >= 0).all()


# -- metrics -----------------------------------------------------------------------------------
@settings(max_examples=80, **SETTINGS)
@given(prediction_arrays(), st.sampled_from(["equal-width", "equal-mass"]), st.integers(0, 99))
def test_every_metric_is_finite_in_range_and_row_order_free(arrays, binning, seed):
    EXAMPLES["metrics"] += 1
    preds = as_predictions(arrays)
    order = np.random.default_rng(seed).permutation(preds.n_samples)
    shuffled = as_predictions((arrays[0][order], arrays[1][order]))
    for key, spec in calcore.METRICS.items():
        options = {"bins": 15, "binning": binning} if spec.takes_binning_scheme else {}
        try:
            value = spec.function(preds, **options)
        except CalcoreError as exc:
            assert str(exc), key
            with pytest.raises(CalcoreError):
                spec.function(shuffled, **options)
            continue
        low, high = spec.bounds
        again = spec.function(shuffled, **options)
        if spec.binary_only and not np.isfinite(value):
            # documented: NaN for a fit without a maximum, a zero variance or < 3 HL groups;
            # inf for an O/E with no expected event or a certain HL group that failed
            assert np.isnan(value) == np.isnan(again) and (np.isnan(value) or value == again)
            continue
        assert np.isfinite(value), (key, value)
        assert low - 1e-12 <= value <= high + 1e-12, (key, value)
        assert again == pytest.approx(value, rel=1e-9, abs=1e-12), (key, value, again)


# -- calibrators -------------------------------------------------------------------------------
CALIBRATOR_NAMES = ["ts", "vs", "tl-hb", "cw-hb", "conf-iso", "irm", "n-iso"]
CALIBRATOR_EXAMPLES = {"vs": 40, "irm": 40}


def check_calibrator(name: str, arrays, split: float):
    probs, labels = arrays
    n_fit = max(1, int(round(split * len(labels))))
    calib = as_predictions((probs[:n_fit], labels[:n_fit]))
    test = as_predictions((probs[n_fit:], labels[n_fit:])) if n_fit < len(labels) else calib
    fit_and_check(name, calib, test, EXAMPLES)


@pytest.mark.parametrize("name", CALIBRATOR_NAMES)
def test_calibrators_on_generated_inputs(name):
    @settings(max_examples=CALIBRATOR_EXAMPLES.get(name, 60), **SETTINGS)
    @given(prediction_arrays(min_rows=2), st.sampled_from([0.3, 0.5, 0.8]))
    def run(arrays, split):
        EXAMPLES[f"calibrator {name}"] += 1
        check_calibrator(name, arrays, split)

    run()
    # the outputs were checked on a good share of the examples, not only error paths
    assert EXAMPLES[f"calibrator {name} fitted"] >= EXAMPLES[f"calibrator {name}"] // 4


# -- row weights across their range --------------------------------------------------------------
@st.composite
def row_weights(draw, n: int) -> np.ndarray:
    """Frequency weights of ``n`` rows: small or large integers, fractions, zeros, scaled
    by a power of two from 2**-1070 (subnormal) to 2**70 (exact in float64 down to the
    subnormals, so the scaled weights are the same weights in another unit)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["ones", "small", "wide", "fractional", "with-zeros"]))
    w = {
        "ones": np.ones(n),
        "small": rng.integers(1, 5, n).astype(float),
        "wide": 2.0 ** rng.integers(0, 40, n),
        "fractional": rng.random(n) + 1e-3,
        "with-zeros": rng.integers(0, 3, n).astype(float),
    }[kind]
    if not (w > 0).any():
        w[0] = 1.0
    edges = st.sampled_from([-1070, -1040, -1022, -1000, 0, 30, 45, 60, 70])
    return w * 2.0 ** draw(st.one_of(edges, st.integers(-1070, 70)))


#: Metrics whose value a common factor of the weights cannot change: weighted means and
#: fixed (equal-width) bins. Not: the equal-mass ranks floor(k m / B), which count whole
#: units of weight, and what depends on the sample size that frequency weights give (the
#: tests' statistics grow with it, the debiasing term and the KDE bandwidth shrink with it).
_SIZE_DEPENDENT = (
    *("ace", "tace", "debiased_ece", "kde_ece", "kde_ece_classwise"),
    *("spiegelhalter_z", "spiegelhalter_p", "hosmer_lemeshow", "hosmer_lemeshow_p"),
)
_SCALE_FREE = [k for k in calcore.METRICS if k not in _SIZE_DEPENDENT]


@settings(max_examples=60, **SETTINGS)
@given(prediction_arrays(max_rows=300, max_classes=6), st.data())
def test_weights_across_their_range_give_unit_free_metrics_or_a_refusal(arrays, data):
    """A weight below the smallest normal float or a total above 2**53 is refused naming
    the limit; any other weights give finite metrics, the same in every unit of weight."""
    EXAMPLES["weights"] += 1
    probs, labels = arrays
    w = data.draw(row_weights(len(labels)))
    positive = w[w > 0]
    too_small = positive.min() < np.finfo(np.float64).tiny
    too_large = w.sum() > 2.0**53
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        if too_small or too_large:
            rule = "smallest float64" if too_small else r"above 2\*\*53"
            with pytest.raises(CalcoreError, match=rule):
                Predictions.from_probs(probs, labels, sample_weight=w)
            EXAMPLES["weights refused"] += 1
            return
        unit = np.ldexp(w, -int(np.frexp(positive.max())[1]))  # the largest back to 0.5-1
        assume(unit[unit > 0].min() >= np.finfo(np.float64).tiny)
        got = calcore.evaluate(Predictions.from_probs(probs, labels, sample_weight=w))
        ref = calcore.evaluate(Predictions.from_probs(probs, labels, sample_weight=unit))
    for key in _SCALE_FREE:
        a, b = got.metrics[key], ref.metrics[key]
        if a is None or b is None or not (np.isfinite(a) and np.isfinite(b)):
            assert (a is None) == (b is None), key
            continue
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (key, a, b)


# -- integer metadata across int64 and uint64 --------------------------------------------------
_INT_EDGES = [0, 1, -1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1]


@settings(max_examples=40, **SETTINGS)
@given(
    st.lists(
        st.one_of(st.sampled_from(_INT_EDGES), st.integers(-(2**63), 2**64 - 1)),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from(["csv", "parquet"]),
)
def test_integer_metadata_is_read_exactly_across_int64_and_uint64(tmp_path_factory, ids, fmt):
    """Every integer an int64 or uint64 column can hold (a file holds one of the two) comes
    back exactly, as a Python int, and slices by value: ids that differ in their last bits
    stay distinct slices, never merged by a round trip through float64."""
    EXAMPLES["integers"] += 1
    signed = min(ids) < 0
    assume(not (signed and max(ids) >= 2**63))  # no single 64-bit type holds both
    rows = [ids[i % len(ids)] for i in range(2 * len(ids))]
    path = tmp_path_factory.mktemp("ints") / f"ids.{fmt}"
    labels = [i % 2 for i in range(len(rows))]
    if fmt == "csv":
        lines = ["label,p_1,uid"] + [f"{y},0.5,{v}" for y, v in zip(labels, rows, strict=True)]
        path.write_text("\n".join(lines) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        kind = pa.int64() if signed or max(rows) < 2**63 else pa.uint64()
        table = {"label": labels, "p_1": [0.5] * len(rows), "uid": pa.array(rows, kind)}
        pq.write_table(pa.table(table), path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        preds = calcore.load_predictions(path, slice_columns=["uid"])
    col = preds.metadata["uid"]
    assert col.kind == "integer", (fmt, col.kind)
    assert [int(v) for v in col.values] == rows
    assert col.n_distinct == len(set(rows))
    from calcore.predictions.slicing import slicing_of

    assert sorted(slicing_of(preds.metadata, ["uid"]).labels) == sorted(str(v) for v in set(rows))

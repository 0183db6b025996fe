"""Every loader error that says how to fix it with an option names that option and the
sentence (``CalcoreError.fixes``), so that a program with its own controls (the dashboard)
can say it in its own words; the sentence is in the message, whole."""

from __future__ import annotations

import io

import numpy as np
import pytest

import calcore
from calcore.foundation.errors import LOGITS_FIX


def _error(data: bytes, name: str = "f.csv", **options) -> calcore.CalcoreError:
    with pytest.raises(calcore.CalcoreError) as caught:
        calcore.load_predictions(data, name=name, **options)
    return caught.value


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


CASES = {
    "negative, scores given": (b"label,p_a,p_b\na,-0.5,1.5\n", {"scores": "probs"}),
    "above 1, scores given": (b"label,p_a,p_b\na,1.5,-0.5\n", {"scores": "probs"}),
    "one column outside [0, 1]": (b"label,p_a\na,-1.5\nb,0.5\n", {"scores": "probs"}),
    "negative, detected": (b"label,p_a,p_b\na,-0.5,1.5\n", {}),
    "percent with logit columns": (b"label,logit_a,logit_b\na,1,2\n", {"percent": True}),
    "percent and logits": (b"label,p_a,p_b\na,0.5,0.5\n", {"percent": True, "scores": "logits"}),
    "labels are names": (b"label,score\nspam,0.5\nham,0.5\negg,0.5\n", {}),
    "label like an index": (b"label,p_1\n+1,0.5\n0,0.5\n", {}),
    "not UTF-8": (b"label,p_a,p_b\n\xff,0.5,0.5\n", {}),
}
OPTIONS = {
    "negative, scores given": ["scores_logits"],
    "above 1, scores given": ["scores_logits"],
    "one column outside [0, 1]": ["scores_logits"],
    "negative, detected": ["scores_logits"],
    "percent with logit columns": ["percent_logits"],
    "percent and logits": ["percent_logits"],
    "labels are names": ["positive_class"],
    "label like an index": ["positive_class_index"],
    "not UTF-8": ["encoding"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_fix_is_named_and_in_the_message(case):
    data, options = CASES[case]
    err = _error(data, **options)
    assert [option for option, _ in err.fixes] == OPTIONS[case], str(err)
    for _, fix in err.fixes:
        assert str(err).count(fix) == 1, (fix, str(err))


def test_rows_off_the_simplex_read_as_probabilities_name_both_ways_out():
    err = _error(b"label,p_a,p_b\na,0.5,0.2\nb,0.3,0.3\n")
    assert [option for option, _ in err.fixes] == ["renormalize", "scores_logits"]
    message = str(err)
    assert "(They were read as probabilities because every value is in [0, 1].)" in message
    assert message.endswith(err.fixes[-1][1]) and "scores='auto'" not in message


def test_detection_says_logits_once():
    # check_probs' own advice is replaced by detection's, which also names logit_* columns
    err = _error(b"label,p_a,p_b\na,-0.5,1.5\n")
    message = str(err)
    assert LOGITS_FIX not in message and message.count("scores='logits'") == 1
    assert message.endswith("If they are logits, pass scores='logits' or name the columns logit_*.")


def test_an_archive_without_labels_names_the_array_option():
    err = _error(_npz(probs=np.array([[0.5, 0.5]]), y=np.array([0])), name="a.npz")
    assert err.option == "label_array" and str(err).endswith(err.fix)


def test_extended_keeps_the_fixes_and_adds_one():
    err = calcore.CalcoreError("x. Pass a=1.", option="a", fix="Pass a=1.")
    more = err.extended("Or pass b=2.", option="b", fix="Or pass b=2.")
    assert str(more) == "x. Pass a=1. Or pass b=2."
    assert more.fixes == (("a", "Pass a=1."), ("b", "Or pass b=2."))
    assert err.extended("(note)").fixes == err.fixes


def test_several_weight_columns_are_a_detection_problem_with_the_same_message(tmp_path):
    data = b"label,p_a,p_b,weight,Weights\na,0.5,0.5,1,2\nb,0.25,0.75,1,2\n"
    schema = calcore.inspect_table(data, name="w.csv")
    (problem,) = schema.problems  # inspecting shows the columns to choose from
    assert problem.startswith("w.csv: several weight columns ['weight', 'Weights'].")
    assert problem.option == "weight_column" and problem.endswith(problem.fix)
    assert schema.class_columns == ("p_a", "p_b")  # neither is taken for scores
    assert set(schema.ignored_columns) == {"weight", "Weights"}
    (tmp_path / "w.csv").write_bytes(data)
    for read in (calcore.load_predictions, calcore.scan):
        with pytest.raises(calcore.CalcoreError) as caught:
            read(tmp_path / "w.csv")
        assert str(caught.value) == problem and caught.value.option == "weight_column"
    chosen = calcore.inspect_table(data, name="w.csv", weight_column="Weights")
    assert chosen.problems == () and chosen.weight_column == "Weights"


def test_a_blank_column_name_names_its_fix():
    err = _error(b",label,p_a,p_b\n0,a,0.5,0.5\n")
    assert err.option == "header_names" and str(err).endswith(err.fix)

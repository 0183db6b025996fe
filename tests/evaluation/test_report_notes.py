"""calcore.evaluation.report_notes: the notes of reports of different metrics, said once."""

import numpy as np

import calcore
from calcore.evaluation.report_notes import merged_notes


def test_merged_notes_leave_other_notes_alone():
    notes = (
        "Intervals of the calibration errors (ACE, TACE) are bias-corrected: x.",
        "Intervals of the calibration errors (conf-ECE, KDE-ECE (CW)) are bias-corrected: x.",
        "Rows (3 of them) were tied.",
        "Rows (5 of them) were tied.",  # not metrics: kept apart
        "The fit stopped.",
        "The fit stopped early.",  # another note: kept
    )
    assert merged_notes(notes) == (
        "Intervals of the calibration errors (conf-ECE, ACE, TACE, KDE-ECE (CW)) are "
        "bias-corrected: x.",
        *notes[2:],
    )


def test_each_note_is_said_once_in_the_order_first_said():
    notes = ("B note.", "Other note.", "B note.", "Other note.")
    assert merged_notes(notes) == ("B note.", "Other note.")


def test_combined_reports_carry_the_notes_of_one_evaluate():
    # the parts the page caches: ACE/TACE, the other binned errors, the bin-free metrics
    rng = np.random.default_rng(3)
    preds = calcore.Predictions.from_logits(
        rng.standard_normal((300, 4)) * 2, rng.integers(0, 4, 300)
    )
    binned = [k for k in calcore.METRICS if k not in calcore.BIN_FREE_METRICS]
    adaptive = [k for k in binned if calcore.METRICS[k].cells in ("ace", "tace")]
    rest = [k for k in binned if k not in adaptive]
    options = dict(bins=8, binning="equal-mass", n_resamples=20, seed=0)
    parts = [
        calcore.evaluate(preds, metrics=keys, **options)
        for keys in (rest, adaptive, calcore.BIN_FREE_METRICS)
    ]
    both = parts[0].combined_with(parts[1]).combined_with(parts[2])
    one = calcore.evaluate(preds, **options)
    assert set(both.notes) == set(one.notes)
    assert len(both.notes) == len(set(both.notes))
    # without the merge the parts would say the bias correction twice (two metric lists)
    raw = parts[0].notes + parts[1].notes + parts[2].notes
    assert len(set(raw)) > len(set(one.notes))

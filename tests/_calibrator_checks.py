"""What every calibrator's output must satisfy (shared by the property-test modules)."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np

from calcore import CALIBRATORS, CalcoreError, CalcoreWarning, make_calibrator


def fit_and_check(name: str, calib, test, examples: Counter) -> None:
    """Fit ``name`` on ``calib``, transform ``test``, and check the output's contract.

    A refusal must be a ``CalcoreError`` with a message that names the method or a class.
    Otherwise: same shape, finite, in [0, 1], rows on the simplex when the method is
    normalised, argmax kept (on rows without a top tie) when it is accuracy-preserving,
    and labels unchanged. ``examples`` counts the fitted cases per method.
    """
    info = CALIBRATORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalcoreWarning)
        try:
            out = make_calibrator(name).fit(calib).transform(test)
        except CalcoreError as exc:
            message = str(exc)
            assert len(message) > 20 and (name in message or "class" in message), message
            return
    examples[f"calibrator {name} fitted"] += 1
    p = out.probs
    assert p.shape == test.probs.shape
    assert np.isfinite(p).all(), name
    assert (p >= 0).all() and (p <= 1 + 1e-12).all(), name
    if info.normalized:
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-9, err_msg=name)
    if info.accuracy_preserving:
        top = np.sort(test.probs, axis=1)
        clear = top[:, -1] > top[:, -2] + 1e-9  # rows whose argmax is not a tie
        np.testing.assert_array_equal(
            p[clear].argmax(axis=1), test.probs[clear].argmax(axis=1), err_msg=name
        )
    np.testing.assert_array_equal(out.labels, test.labels)

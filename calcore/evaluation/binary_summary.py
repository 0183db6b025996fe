"""A binary model's calibration in one sentence: which way it is off, by how much, how sure.

Read off a :class:`~calcore.CalibrationReport`'s binary measures (:mod:`calcore.metrics.binary`):
calibration-in-the-large (O/E, with its interval when the report has one), the calibration
slope (are the probabilities too extreme or too moderate), and Hosmer-Lemeshow (a shape that
neither of those shows). A difference is called only when its interval excludes the ideal
value; without intervals the words say that the size alone is shown.

References
----------
Van Calster et al. (2016), "A calibration hierarchy for risk models was defined: from
utopia to empirical data", J. Clin. Epidemiol. 74 (calibration in the large, weak and
moderate calibration: the order of this sentence).
"""

from __future__ import annotations

import math

from calcore.foundation.deprecation import renamed_keywords

__all__ = ["binary_summary"]


def _interval(report, key):
    iv = report.intervals.get(key)
    if iv is None or not (math.isfinite(iv.low) and math.isfinite(iv.high)):
        return None
    return iv.low, iv.high


def _p(value: float) -> str:
    """A p-value in words: ``p = 0.012``, or ``p < 1e-300`` where it underflows to 0."""
    return f"p = {value:.2g}" if value > 0 else "p < 1e-300"


@renamed_keywords(level="alpha")
def binary_summary(report, *, positive: str = "class 1", alpha: float = 0.05) -> str:
    """One sentence on a binary report's calibration, or "" when it has no binary measures.

    Parameters
    ----------
    report : CalibrationReport
        From :func:`calcore.evaluate` of two-class predictions (with ``n_resamples`` the
        sentence says how sure).
    positive : str
        How class 1 is named (its class name).
    alpha : float, default 0.05
        The significance level of Hosmer-Lemeshow's test: its p-value is called small at
        ``p <= alpha``. Until 0.1 ``level``, which still works for one release, with a
        DeprecationWarning.

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np, calcore
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.5, 4000)
    >>> y = (rng.random(4000) < 1.3 * p).astype(int)   # 30% more events than predicted
    >>> preds = calcore.Predictions.from_probs(np.column_stack([1 - p, p]), y)
    >>> calcore.binary_summary(calcore.evaluate(preds, n_resamples=100), positive="click")[:50]
    'The model under-predicts click: 1.29 [1.24, 1.34] '
    """
    m = report.metrics
    oe = m.get("oe_ratio")
    if oe is None or not math.isfinite(oe):
        return ""
    parts, flagged = [], False
    oe_iv = _interval(report, "oe_ratio")
    shown = f"{oe:.2f}" + (f" [{oe_iv[0]:.2f}, {oe_iv[1]:.2f}]" if oe_iv else "")
    if oe_iv and oe_iv[0] > 1:
        parts.append(f"The model under-predicts {positive}: {shown} observed per predicted")
        flagged = True
    elif oe_iv and oe_iv[1] < 1:
        parts.append(f"The model over-predicts {positive}: {shown} observed per predicted")
        flagged = True
    elif oe_iv:
        parts.append(f"The model predicts the rate of {positive} right overall (O/E {shown})")
    else:
        parts.append(f"Observed per predicted {positive}: {shown} (no interval computed)")
    slope = m.get("calibration_slope")
    if slope is not None and math.isfinite(slope):
        s_iv = _interval(report, "calibration_slope")
        # three decimals: an end of 0.9997 must not read as the ideal 1.00
        s_shown = f"{slope:.3f}" + (f" [{s_iv[0]:.3f}, {s_iv[1]:.3f}]" if s_iv else "")
        if s_iv and s_iv[1] < 1:
            parts.append(
                f"its probabilities are too extreme (calibration slope {s_shown}: they should "
                "be closer to the base rate)"
            )
            flagged = True
        elif s_iv and s_iv[0] > 1:
            parts.append(
                f"its probabilities are too moderate (calibration slope {s_shown}: they "
                "should be further from the base rate)"
            )
            flagged = True
        elif s_iv:
            parts.append(f"their spread is right (calibration slope {s_shown})")
        else:
            parts.append(f"calibration slope {s_shown}")
    hl_p = m.get("hosmer_lemeshow_p")
    if hl_p is not None and math.isfinite(hl_p) and hl_p <= alpha:
        if flagged:  # the rate or the slope already says the deciles are off
            parts.append(f"Hosmer-Lemeshow on deciles agrees ({_p(hl_p)})")
        else:  # a shape that neither the overall rate nor the slope shows
            parts.append(
                f"but the deciles of risk depart from their predictions somewhere "
                f"(Hosmer-Lemeshow {_p(hl_p)}, a test that depends on the grouping): see "
                "where in the diagram"
            )
    return "; ".join(parts) + "."

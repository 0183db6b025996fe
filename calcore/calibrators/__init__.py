"""Post-hoc calibrators behind one protocol (see :class:`Calibrator`).

Importing this package registers every method, so that
:func:`make_calibrator` and :data:`CALIBRATORS` know them all.
"""

from calcore.calibrators._base import FORMAT_VERSION, Calibrator, Param
from calcore.calibrators._registry import CALIBRATORS, CalibratorInfo, make_calibrator

__all__ = [
    "CALIBRATORS",
    "FORMAT_VERSION",
    "Calibrator",
    "CalibratorInfo",
    "Param",
    "make_calibrator",
]

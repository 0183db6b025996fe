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
from calcore.calibrators import binning as _binning  # noqa: E402,F401  (registers hb, ums, fwb, sb)
from calcore.calibrators import isotonic as _isotonic  # noqa: E402,F401  (registers iso, irm)
from calcore.calibrators import m2b as _m2b  # noqa: E402,F401  (registers conf-/tl-/cw-/n- wrappers)
from calcore.calibrators import normalization_aware as _normalization_aware  # noqa: F401, E402
from calcore.calibrators import parametric as _parametric  # noqa: F401  (registers)

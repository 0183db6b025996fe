"""Post-hoc calibrators behind one protocol (see :class:`Calibrator`).

Importing this package registers every method, so that
:func:`make_calibrator` and :data:`CALIBRATORS` know them all:

* parametric: ts, ets (``temperature``), vs, ms, dirichlet (``affine``), platt, beta
  (``binary_scaling``);
* binary binning and isotonic building blocks (``histogram_binning``, ``uniform_binning``,
  ``isotonic``): hb, ums, fwb, sb, iso, and irm;
* M2B wrappers (``m2b``): ``conf-``, ``tl-``, ``cw-``, ``n-`` + any binary method;
* normalisation-aware isotonic (``normalization_aware``): fir, na-fir, scir;
* compositions (``composite``): compose, irova-ts;
* top-K wrappers (``topk``): ``tkl-``, ``tkc-`` + any binary method.

One name per method: ``irova`` (IROvA) is listed as ``n-iso``, and the old name still
builds and loads it (:data:`ALIASES`). Each method's full name, family and one-line use
are in its :class:`CalibratorInfo`; :func:`recommend_calibrators` picks a default set
from the data's shape.

A saved calibrator (``to_dict``, ``calcore calibrate --save``) is read back with
:func:`read_calibrator` (a file, within size and JSON limits) or
:meth:`Calibrator.from_dict`; both check every field against the method's declared
state (:mod:`calcore.calibrators._state`) before use.
"""

from calcore.calibrators import affine as _affine  # noqa: F401  (registers)
from calcore.calibrators import binary_scaling as _binary_scaling  # noqa: F401
from calcore.calibrators import canonical as _canonical  # noqa: F401
from calcore.calibrators import composite as _composite  # noqa: F401
from calcore.calibrators import histogram_binning as _histogram_binning  # noqa: F401
from calcore.calibrators import isotonic as _isotonic  # noqa: F401
from calcore.calibrators import m2b as _m2b  # noqa: F401
from calcore.calibrators import normalization_aware as _normalization_aware  # noqa: F401
from calcore.calibrators import temperature as _temperature  # noqa: F401
from calcore.calibrators import topk as _topk  # noqa: F401
from calcore.calibrators import uniform_binning as _uniform_binning  # noqa: F401
from calcore.calibrators._base import FORMAT_VERSION, Calibrator, Param
from calcore.calibrators._registry import (
    ALIASES,
    CALIBRATORS,
    FAMILIES,
    CalibratorInfo,
    Recommendation,
    make_calibrator,
    recommend_calibrators,
)
from calcore.calibrators._saved import read_calibrator

__all__ = [
    "ALIASES",
    "CALIBRATORS",
    "FAMILIES",
    "Recommendation",
    "recommend_calibrators",
    "FORMAT_VERSION",
    "Calibrator",
    "CalibratorInfo",
    "Param",
    "make_calibrator",
    "read_calibrator",
]

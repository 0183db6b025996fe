"""The version of this calcore and where it is installed.

Its own module, at the bottom of the layers, because the functions that run on Spark's
workers check their calcore against the driver's here (:func:`calcore.spark.check_workers`,
the tasks of every pass): they need the version, not the package's public map, so they
import nothing above the foundations. ``calcore.__version__`` is this same value."""

from __future__ import annotations

from pathlib import Path

__all__ = ["__version__", "installed_at"]

__version__ = "0.1.0"


def installed_at() -> str:
    """Path of the installed package's ``__init__.py`` (what ``calcore.__file__`` says).

    Returns
    -------
    str
        The file, so a message can say which calcore a Spark worker imported.

    Examples
    --------
    >>> installed_at().endswith("__init__.py")
    True
    """
    return str(Path(__file__).resolve().parent.parent / "__init__.py")

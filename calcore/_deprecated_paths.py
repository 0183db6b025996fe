"""Module paths that moved, importable at their old names for one release, with a warning.

The modules of each layer live in that layer's package (issue 36): ``calcore.binning`` is
now :mod:`calcore.foundation.binning`, ``calcore.kde`` is
:mod:`calcore.foundation.kernel_density`, and so on (:data:`MOVED`). Importing an old path
(``import calcore.kde``, ``from calcore import kde``, ``from calcore.kde import kde_ece``)
warns with a :class:`DeprecationWarning` naming the new path and gives the module at the
new path itself, so everything in it is there and nothing is copied.

One table rather than a re-exporting file at each old path: a file left at the old path
would make every move a rewrite of that path for git, so edits made elsewhere to the old
file would not follow the module to its new place when branches are merged.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED", "install", "moved_attribute"]

#: Old module path -> new module path. Removed in the release after 0.1.
MOVED = {
    "calcore.binning": "calcore.foundation.binning",
    "calcore.kde": "calcore.foundation.kernel_density",
    "calcore.metadata": "calcore.predictions.metadata",
    "calcore.slicing": "calcore.predictions.slicing",
    "calcore.slicing_batches": "calcore.predictions.slicing_batches",
    "calcore.reductions": "calcore.predictions.reductions",
    "calcore.export": "calcore.io.export",
    "calcore.gates": "calcore.cli.gates",
    "calcore.json_schemas": "calcore.cli.json_schemas",
    "calcore.diagnostics.bin_statistics": "calcore.statistics.bin_statistics",
    "calcore.metrics.scoring": "calcore.statistics.scoring",
    "calcore.metrics.kde": "calcore.metrics.kde_ece",
    "calcore.statistics.poisson": "calcore.foundation.keyed_random",
    "calcore.statistics.quantiles": "calcore.foundation.exact_ranks",
    # Private paths too, for the same release: code written against them elsewhere (a
    # branch made before the move) still runs, and tests/test_layering.py names each use.
    "calcore._errors": "calcore.foundation.errors",
    "calcore._validation": "calcore.foundation.validation",
    "calcore._softmax": "calcore.foundation.softmax",
    "calcore._limits": "calcore.foundation.limits",
    "calcore._threads": "calcore.foundation.threads",
    "calcore.io._budget": "calcore.foundation.limits",
}


class _MovedModuleLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new path (the same module object)."""

    def __init__(self, new: str):
        self.new = new
        self.spec = None

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} has moved to {self.new}; import it from there "
            f"(the old path goes in the next release).",
            DeprecationWarning,
            stacklevel=2,  # warnings skips importlib's frames: the importing line
        )
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # importlib gave the shared module the old path's spec: give it its own back.
        module.__spec__ = self.spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` (no file is left at them)."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _MovedModuleLoader(new))


def install() -> None:
    """Let the old paths of :data:`MOVED` be imported (once per interpreter)."""
    # First: another finder (an editable install of another checkout) could still know a
    # file at an old path.
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())


def moved_attribute(name: str):
    """``calcore.<name>`` for a module that moved out of the top level (``calcore.kde``
    without importing it first), with the warning; the package's ``__getattr__``.

    Raises
    ------
    AttributeError
        ``name`` is not a moved module of the top level.
    """
    if f"calcore.{name}" in MOVED:
        return importlib.import_module(f"calcore.{name}")
    raise AttributeError(f"module 'calcore' has no attribute {name!r}")

"""Run OpenBLAS on one thread for the duration of an iterative fit.

Why: the iterative fits (L-BFGS-B over the ``L^2 + L`` parameters of matrix
scaling and Dirichlet calibration) alternate many short BLAS calls: two
``(n, L) x (L, L)`` products per evaluation, plus the optimiser's own level-1/2
calls on the parameter vector. With OpenBLAS's default thread pool every call
wakes the pool's threads, and when another process holds the other cores the
wake-up dominates. Measured on the 2-core development machine while other jobs
ran (5,000 x 100 Dirichlet fit, 188 L-BFGS-B iterations): 62 s with the default
threads, 4.4 s on one thread; 100 L-BFGS-B iterations on 10,000 variables alone
took 0.9-8.7 s versus 0.2 s. On an idle machine one thread loses little (the
products are only ``5,000 x 100 x 100``). One thread also makes the fitted
values independent of the thread count.

How: OpenBLAS exposes ``openblas_get_num_threads`` / ``openblas_set_num_threads``
(with a ``scipy_`` prefix and/or a ``64_`` suffix in the builds that numpy and
scipy ship, each with its own copy of the library). The loaded copies are found
in ``/proc/self/maps`` (Linux) and opened with ``RTLD_NOLOAD``, so nothing new
is ever loaded. Elsewhere, or with another BLAS, :func:`single_threaded_blas` does
nothing. ``threadpoolctl`` does the same more generally; it is not a dependency
of calcore, hence this small helper.

Caveat: the OpenBLAS setting is global to the process (its "thread-local"
setter is global too). While a fit runs, BLAS calls made by other Python threads
of the same process also run on one thread; only their speed changes. Nested and
concurrent uses are reference-counted, and the first caller's thread counts are
restored when the last one leaves.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Iterator

__all__ = ["single_threaded_blas", "blas_thread_counts"]

_SYMBOLS = (
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
)
_MAPS = "/proc/self/maps"

_lock = threading.Lock()
_depth = 0
_saved: list[tuple[object, int]] = []
_handles: dict[str, list[tuple[object, object]]] = {}


def _loaded_openblas_paths() -> list[str]:
    try:
        with open(_MAPS, encoding="utf-8", errors="replace") as fh:
            paths = {line.split(maxsplit=5)[-1].strip() for line in fh if "openblas" in line}
    except OSError:  # not Linux, or no procfs
        return []
    return sorted(p for p in paths if p.startswith("/") and "openblas" in os.path.basename(p))


def _controls() -> list[tuple[object, object]]:
    """``(getter, setter)`` pairs of every loaded OpenBLAS copy (cached per library path)."""
    found = []
    mode = getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_NOW", 0)
    for path in _loaded_openblas_paths():
        if path not in _handles:
            pairs = []
            try:
                lib = ctypes.CDLL(path, mode=mode)
            except OSError:
                lib = None
            for get_name, set_name in _SYMBOLS if lib is not None else ():
                getter, setter = getattr(lib, get_name, None), getattr(lib, set_name, None)
                if getter is not None and setter is not None:
                    getter.restype, getter.argtypes = ctypes.c_int, []
                    setter.restype, setter.argtypes = None, [ctypes.c_int]
                    pairs.append((getter, setter))
                    break  # one pair per library: the names are aliases of one setting
            _handles[path] = pairs
        found += _handles[path]
    return found


def blas_thread_counts() -> list[int]:
    """Current thread count of each loaded OpenBLAS copy (empty when none is found)."""
    return [int(getter()) for getter, _ in _controls()]


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: every loaded OpenBLAS runs on one thread inside, as before outside.

    See the module docstring for why and for the process-wide caveat. Does
    nothing when no OpenBLAS is found.
    """
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = [(setter, int(getter())) for getter, setter in _controls()]
            for setter, count in _saved:
                if count != 1:
                    setter(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for setter, count in _saved:
                    if count != 1:
                        setter(count)
                _saved = []

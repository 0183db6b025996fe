"""What the server holds, for every session together: a byte budget, compute slots, freed memory.

Three parts, each for one way a shared server grew with its users (issue 34):

* :data:`BUDGET`, a :class:`CacheBudget`: the tables the page caches (loaded files, splits,
  calibrated outputs) counted in bytes across ``st.cache_resource`` functions and sessions;
  beyond ``CALCORE_CACHE_BUDGET_MB`` (default :data:`DEFAULT_BUDGET_MB`) the least recently
  used entries are evicted (the next use recomputes them) instead of the server growing.
  ``max_entries`` of each function alone could not bound bytes: one entry of a
  50,000 x 1,000 file is 400 MB, one of a 1,000 x 3 file 24 kB.
* :data:`COMPUTE_SLOTS`: at most one heavy calcore call (an evaluation with resamples, a
  resampling diagnostic) per core runs at once, whatever the number of sessions. Each
  evaluation of 10,000 x 100 rows with 200 resamples needs ~300 MB while it runs; eight at
  once (four uploaders, two threads each) would need 2.4 GB for no gain in speed on 2
  cores. Loading, fitting and point estimates take no slot, so that every session's first
  table comes quickly.
* :func:`return_freed_arrays` and :func:`release_freed_memory`: glibc's malloc raises its
  mmap threshold after large arrays are freed, so later arrays of up to 32 MB come from
  heaps that keep them once freed, one heap per thread. Measured with four reviewers
  uploading 20,000 x 100 files at once: peak 3,525 MB with glibc's dynamic threshold and
  ``malloc_trim`` after the work, 1,789 MB with the threshold fixed at 128 KiB (one upload:
  1,119 MB against 885-946 MB). At 128 KiB the fixed threshold cost 60-70% more CPU in the
  resampling (every fresh mid-sized array page-faulted in); at 1 MiB, the default
  (:data:`DEFAULT_MMAP_THRESHOLD`), the cost is within noise.
  ``CALCORE_MALLOC_MMAP_THRESHOLD`` sets it (bytes; 0 leaves glibc's dynamic one, for a
  server with memory to spare). ``malloc_trim`` runs when the last heavy call
  ends and after each script run.

Both environment variables are read through one :class:`EnvSetting` each
(:data:`CACHE_BUDGET_SETTING`, :data:`MMAP_THRESHOLD_SETTING`), where their default and
accepted range are defined: a value that is not a number or is out of range is not
silently replaced, nor a crash at start, but one warning in the server's log naming the
variable, the value given, the accepted range and the value used instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import inspect
import logging
import math
import os
import sys
import threading
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass

import numpy as np

from calcore.foundation.errors import quoted
from calcore.foundation.threads import worker_count

__all__ = [
    "BUDGET",
    "CACHE_BUDGET_SETTING",
    "EnvSetting",
    "MMAP_THRESHOLD_SETTING",
    "COMPUTE_SLOTS",
    "CacheBudget",
    "DEFAULT_BUDGET_MB",
    "budgeted",
    "heavy",
    "holding_slot",
    "resampling",
    "nbytes",
    "release_freed_memory",
    "return_freed_arrays",
]

#: What the cached tables of all sessions may hold together, in MiB, unless
#: ``CALCORE_CACHE_BUDGET_MB`` says otherwise: a 20,000 x 100 upload holds about 60 MB
#: (the file's rows, its split and two calibrated outputs), a 50,000 x 1,000 one 1.6 GB
#: (beyond the budget alone: its entries are kept while in use and evicted by the next).
DEFAULT_BUDGET_MB = 1024
BUDGET_ENV = "CALCORE_CACHE_BUDGET_MB"

#: The server's log (Streamlit's stderr): where a bad setting is reported at start.
LOG = logging.getLogger("calibration-lens")


@dataclass(frozen=True)
class EnvSetting:
    """A number the server's operator sets with an environment variable: its default and
    accepted range, defined once, and how a bad value is handled.

    Parameters
    ----------
    name : str
        The environment variable.
    default : int or float
        The value used when the variable is unset or empty, or its value is bad.
    low, high : int or float
        The accepted range, both ends included.
    unit : str
        What the number counts, for the log ("MiB", "bytes").
    integer : bool, default False
        Only whole numbers are accepted (else any finite number).
    off : int or float or None, default None
        A value outside ``[low, high]`` accepted too, meaning "off" (e.g. 0).
    off_words : str, default "off"
        What :attr:`off` means, for the log.

    Examples
    --------
    >>> setting = EnvSetting("X_MB", 64, low=1, high=100, unit="MiB")
    >>> setting.read({"X_MB": "12.5"}), setting.read({}), setting.problem("500")
    (12.5, 64, "X_MB='500' is out of range: accepted 1 to 100 MiB; using 64 MiB instead.")
    """

    name: str
    default: int | float
    low: int | float
    high: int | float
    unit: str
    integer: bool = False
    off: int | float | None = None
    off_words: str = "off"

    def accepted(self) -> str:
        """The accepted values, in words."""
        words = f"{self.low:,} to {self.high:,} {self.unit}"
        if self.integer:
            words = "a whole number, " + words
        return words if self.off is None else f"{words}, or {self.off} ({self.off_words})"

    def problem(self, text: str) -> str | None:
        """Why ``text`` is not accepted (the log's sentence), or None when it is."""
        value = self._parsed(text)
        if value is not None and (value == self.off or self.low <= value <= self.high):
            return None
        why = "is out of range"
        if value is None:
            number = _float(text)
            why = "is not a number" if number is None else "is not a whole number"
            if number is not None and not math.isfinite(number):
                why = "is not a finite number"
        return (
            f"{self.name}={quoted(text)} {why}: accepted {self.accepted()}; using "
            f"{self.default:,} {self.unit} instead."
        )

    def read(self, environ=None, *, log: logging.Logger | None = None):
        """The value set in ``environ`` (default ``os.environ``), or :attr:`default` when
        it is unset, empty or bad (then a warning goes to ``log``, default the server's)."""
        text = (os.environ if environ is None else environ).get(self.name, "").strip()
        if not text:
            return self.default
        problem = self.problem(text)
        if problem is None:
            return self._parsed(text)
        _warn_once(log or LOG, problem)
        return self.default

    def _parsed(self, text: str):
        try:
            value = int(text) if self.integer else float(text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


_warned: set = set()
_warned_guard = threading.Lock()


def _warn_once(log: logging.Logger, message: str) -> None:
    """``message`` as a warning in ``log``, once per process (settings are read on every
    script run: the log must not repeat it for every page view)."""
    with _warned_guard:
        if (log.name, message) in _warned:
            return
        _warned.add((log.name, message))
    log.warning(message)


#: ``CALCORE_CACHE_BUDGET_MB``: 0 keeps only the entry in use; 1 TiB is more than any
#: server this page runs on (a typo's extra digits are caught).
CACHE_BUDGET_SETTING = EnvSetting(BUDGET_ENV, DEFAULT_BUDGET_MB, low=0, high=2**20, unit="MiB")


def nbytes(value, *, _seen: set | None = None, _depth: int = 0) -> int:
    """The bytes of the numpy arrays reachable from ``value`` (each array once).

    Walks dataclasses, objects' ``__dict__``, dicts, lists and tuples a few levels deep:
    enough for calcore's ``Predictions`` (probabilities, labels, logits, weights and
    metadata columns) and the page's containers of them. Other objects count 0: the
    arrays are what grows with the data.
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen or _depth > 6:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value if value.base is None or not isinstance(value.base, np.ndarray) else None
        return int(value.nbytes) if base is not None else nbytes(value.base, _seen=seen)
    if isinstance(value, (str, bytes, int, float, bool, type(None))):
        return len(value) if isinstance(value, bytes) else 0
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    elif is_dataclass(value):
        children = [getattr(value, f.name, None) for f in fields(value)]
        children += list(getattr(value, "__dict__", {}).values())  # cached properties
    elif hasattr(value, "__dict__"):
        children = list(vars(value).values())
    else:
        return 0
    return sum(nbytes(c, _seen=seen, _depth=_depth + 1) for c in children)


class CacheBudget:
    """A ledger of cached entries and their bytes, evicting the least recently used.

    Each entry is a cached function with its arguments (``fn.clear(*args)`` removes it
    from the function's cache); :meth:`use` records or refreshes an entry and evicts the
    oldest others while the total is above ``max_bytes``. The entry just used is never
    evicted by its own call, so a file larger than the budget still works, alone.

    Examples
    --------
    >>> cleared = []
    >>> class Fn:
    ...     def clear(self, *args):
    ...         cleared.append(args)
    >>> budget = CacheBudget(max_bytes=100)
    >>> budget.use(Fn(), ("a",), 60); budget.use(Fn(), ("b",), 60)
    >>> cleared, budget.total
    ([('a',)], 60)
    """

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict = OrderedDict()  # (fn, args) -> bytes
        self._guard = threading.Lock()

    @property
    def total(self) -> int:
        with self._guard:
            return sum(self._entries.values())

    def use(self, fn, args: tuple, size: int) -> None:
        """Record that ``fn(*args)`` (``size`` bytes) was just used; evict beyond budget."""
        evicted = []
        with self._guard:
            key = (fn, args)
            self._entries[key] = size
            self._entries.move_to_end(key)
            total = sum(self._entries.values())
            while total > self.max_bytes and len(self._entries) > 1:
                old, old_size = self._entries.popitem(last=False)
                total -= old_size
                evicted.append(old)
        for old_fn, old_args in evicted:  # outside the guard: clearing takes the cache's lock
            old_fn.clear(*old_args)

    def forget(self) -> None:
        """Drop the ledger (when the caches it describes were cleared wholesale)."""
        with self._guard:
            self._entries.clear()


def _budget_bytes(environ=None) -> int:
    """The byte budget: ``CALCORE_CACHE_BUDGET_MB`` (checked, :data:`CACHE_BUDGET_SETTING`)."""
    return int(CACHE_BUDGET_SETTING.read(environ) * 2**20)


BUDGET = CacheBudget(max_bytes=_budget_bytes())


def budgeted(fn, *args):
    """``fn(*args)`` of a ``st.cache_resource`` function, its entry counted in :data:`BUDGET`.

    The ledger keeps the arguments Streamlit hashes, and None for the ``_``-named ones it
    does not (the tables themselves): ``fn.clear`` finds the entry by the hashed ones, and
    the ledger must not keep an evicted table alive.
    """
    value = fn(*args)
    BUDGET.use(fn, _hashed_args(fn, args), nbytes(value))
    return value


def _hashed_args(fn, args: tuple) -> tuple:
    names = list(inspect.signature(fn).parameters)
    return tuple(None if n.startswith("_") else a for n, a in zip(names, args, strict=False))


#: One heavy calcore call per worker thread (:func:`calcore.foundation.threads.worker_count`: the
#: CPUs the server may run on) at once, across every session of the server.
COMPUTE_SLOTS = threading.BoundedSemaphore(worker_count())
_active = [0]  # heavy calls running now
_active_guard = threading.Lock()


@contextmanager
def heavy():
    """Hold one of :data:`COMPUTE_SLOTS` for a heavy calcore call (never nest them: a
    thread that waits for a cached value must not hold a slot); the last one to end
    gives the freed memory back (:func:`release_freed_memory`)."""
    with COMPUTE_SLOTS:
        with _active_guard:
            _active[0] += 1
        try:
            yield
        finally:
            with _active_guard:
                _active[0] -= 1
                last = _active[0] == 0
    if last:
        release_freed_memory()


@contextmanager
def resampling(n_resamples: int):
    """:func:`heavy` for a computation with resamples; none for point estimates, which must
    not wait behind other sessions' intervals (in the four-uploader benchmark two sessions
    waited 5 minutes for their first table when every evaluation took a slot)."""
    if n_resamples:
        with heavy():
            yield
    else:
        yield


def holding_slot(fn):
    """``fn`` run while holding one of :data:`COMPUTE_SLOTS` (for a cached diagnostic whose
    body calls no other function that takes a slot)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with heavy():
            return fn(*args, **kwargs)

    return wrapper


def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None  # glibc only, not musl
    except OSError:
        return None


_LIBC = _libc()


def release_freed_memory() -> bool:
    """Give the memory malloc holds free back to the system (glibc's ``malloc_trim``);
    True when it could (glibc on Linux). Milliseconds when little is free."""
    if _LIBC is None:
        return False
    _LIBC.malloc_trim(0)
    return True


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD_ENV = "CALCORE_MALLOC_MMAP_THRESHOLD"
#: Fixed so that arrays above it are given back when freed. 1 MiB, not glibc's starting
#: 128 KiB: one 10,000 x 100 evaluation with 200 resamples (/tmp script, 2 runs each, CPU
#: seconds, peak RSS) took 6.1-6.2 CPU-s and 466 MB at 1 MiB, 10.2-10.5 CPU-s and 435 MB
#: at 128 KiB (every mid-sized temporary page-faulted in afresh), 6.1 CPU-s and 491 MB
#: with glibc's dynamic threshold.
DEFAULT_MMAP_THRESHOLD = 1024 * 1024
#: ``CALCORE_MALLOC_MMAP_THRESHOLD``: 0 leaves glibc's dynamic threshold; otherwise from one
#: page (4 KiB; below, every small allocation would be a system call) to glibc's largest on
#: 64-bit Linux, 32 MiB (``mallopt`` refuses more).
MMAP_THRESHOLD_SETTING = EnvSetting(
    MMAP_THRESHOLD_ENV,
    DEFAULT_MMAP_THRESHOLD,
    low=4096,
    high=32 * 2**20,
    unit="bytes",
    integer=True,
    off=0,
    off_words="glibc's dynamic threshold",
)


def return_freed_arrays(environ=None) -> bool:
    """Fix glibc's mmap threshold (``CALCORE_MALLOC_MMAP_THRESHOLD`` bytes in ``environ``,
    default ``os.environ``; checked, :data:`MMAP_THRESHOLD_SETTING`; 0: leave it dynamic),
    so that freed large arrays go back to the system at once; True when it was set.

    A bad value is a warning in the server's log and the default is used; so is a
    threshold that glibc refuses."""
    threshold = MMAP_THRESHOLD_SETTING.read(environ)
    if _LIBC is None or threshold == 0:
        return False
    done = bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, threshold))
    if not done:
        _warn_once(LOG, f"{MMAP_THRESHOLD_ENV}: glibc refused the mmap threshold {threshold:,} "
                        "bytes; its dynamic threshold stays.")  # fmt: skip
    return done

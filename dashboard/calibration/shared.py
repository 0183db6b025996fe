"""A cache shared by every session of the server, computing each entry once.

For the long streamed computations of server datasets (sampling, evaluating every row):
``st.cache_resource`` records the page elements a cached function draws and replays them,
so a function that reports progress into the caller's placeholder cannot be cached by it.
This cache holds plain results only, with a lock per key: when several reviewers open the
same dataset at once, the first computes and the others wait for its result instead of
streaming the same files again. Entries expire after ``ttl_s`` and the least recently used
go first beyond ``max_entries``. An exception is not cached (the next call tries again).

The wait is bounded (``wait_s``): a computation stuck on a read that never ends must not
hold every other session too. A caller that has waited that long gets a
:class:`~calcore.CalcoreError` saying another session is loading the data, to show on
its page; the computation goes on, and a later call finds its result.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

import calcore

__all__ = ["SharedCache", "WAIT_S"]

#: How long a session waits for another session's computation of the same entry before
#: it is told to try again: longer than opening or evaluating the 100M-row demo takes on
#: 2 cores (under a minute), short enough that a stuck read shows up as a message.
WAIT_S = 120.0


class SharedCache:
    """``get(key, compute)``: the cached value of ``key``, computed once by ``compute()``.

    Examples
    --------
    >>> cache = SharedCache(max_entries=2, ttl_s=60)
    >>> cache.get("a", lambda: 1), cache.get("a", lambda: 2)
    (1, 1)
    """

    def __init__(self, *, max_entries: int, ttl_s: float, wait_s: float = WAIT_S) -> None:
        self.max_entries, self.ttl_s, self.wait_s = max_entries, ttl_s, wait_s
        self._values: OrderedDict = OrderedDict()  # key -> (created, value)
        self._locks: dict = {}  # key -> the lock held while the key is computed
        self._guard = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], object], *, what: str = "this data"):
        """The value of ``key``; ``what`` names it in the message of a wait that ran out.

        Raises
        ------
        calcore.CalcoreError
            Another session has been computing ``key`` for more than ``wait_s`` seconds.
        """
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        if not lock.acquire(timeout=self.wait_s):  # one computation per key; others wait
            raise calcore.CalcoreError(
                f"Another session is loading {what}; this page waited {self.wait_s:.0f} "
                "seconds for it. Try again in a minute."
            )
        try:
            with self._guard:
                hit = self._fresh(key)
                if hit is not None:
                    self._values.move_to_end(key)
                    return hit[1]
            value = compute()
            with self._guard:
                self._values[key] = (time.monotonic(), value)
                self._values.move_to_end(key)
                while len(self._values) > self.max_entries:
                    old, _ = self._values.popitem(last=False)
                    self._locks.pop(old, None)
            return value
        finally:
            lock.release()

    def peek(self, key: Hashable):
        """The cached value of ``key`` if it is there and fresh, else None (nothing is
        computed)."""
        with self._guard:
            hit = self._fresh(key)
            return None if hit is None else hit[1]

    def _fresh(self, key: Hashable):
        """``(created, value)`` of ``key`` if cached and not expired (hold the guard)."""
        hit = self._values.get(key)
        return hit if hit is not None and time.monotonic() - hit[0] < self.ttl_s else None

    def clear(self) -> None:
        with self._guard:
            self._values.clear()

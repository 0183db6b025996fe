"""A cache shared by every session of the server, computing each entry once.

For the long streamed computations of server datasets (sampling, evaluating every row):
``st.cache_resource`` records the page elements a cached function draws and replays them,
so a function that reports progress into the caller's placeholder cannot be cached by it.
This cache holds plain results only, with a lock per key: when several reviewers open the
same dataset at once, the first computes and the others wait for its result instead of
streaming the same files again. Entries expire after ``ttl_s`` and the least recently used
go first beyond ``max_entries``. An exception is not cached (the next call tries again).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Hashable

__all__ = ["SharedCache"]


class SharedCache:
    """``get(key, compute)``: the cached value of ``key``, computed once by ``compute()``.

    Examples
    --------
    >>> cache = SharedCache(max_entries=2, ttl_s=60)
    >>> cache.get("a", lambda: 1), cache.get("a", lambda: 2)
    (1, 1)
    """

    def __init__(self, *, max_entries: int, ttl_s: float) -> None:
        self.max_entries, self.ttl_s = max_entries, ttl_s
        self._values: OrderedDict = OrderedDict()  # key -> (created, value)
        self._locks: dict = {}  # key -> the lock held while the key is computed
        self._guard = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], object]):
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one computation per key; the other callers wait here
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

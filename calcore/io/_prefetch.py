"""Read ahead: produce the next batches on a thread while the caller works on this one."""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

from calcore.foundation.threads import worker_count

__all__ = ["prefetched"]

T = TypeVar("T")
_DONE = object()


def prefetched(items: Iterable[T], *, depth: int = 2) -> Iterator[T]:
    """Yield ``items`` in order, computing up to ``depth`` of them ahead on a thread.

    Reading and validating a batch (pyarrow decoding, numpy checks) and accumulating the
    previous one (numpy bincounts) both release the GIL for most of their time, so on two
    cores they overlap. Order is kept (one producer). An exception raised while producing
    is raised here, at the position it happened; closing the generator early stops the
    producer.

    With one worker (:func:`calcore.foundation.threads.worker_count`, e.g.
    ``CALCORE_THREADS=1``) no thread is started: the items are produced in line, on the
    caller's thread, when asked for. The read-ahead would keep a second core busy beside
    the caller's work, which is what one worker rules out.

    Raises
    ------
    CalcoreError
        ``$CALCORE_THREADS`` is set but not a positive whole number (when the first item
        is asked for).
    """
    if worker_count() == 1:
        yield from items
        return
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            put((_DONE, exc))
            return
        put((_DONE, None))

    worker = threading.Thread(target=produce, name="calcore-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item, error = q.get()
            if item is _DONE:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stop.set()
        worker.join(timeout=5)

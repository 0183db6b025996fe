"""Read ahead: produce the next batches on a thread while the caller works on this one."""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

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
    """
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

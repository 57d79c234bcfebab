"""Work spread over a few threads, its results kept in order: what the write's commit encodes
with (``payload/sas_dataset_writer.py``'s observations, ``transports/mq/dmpmqmsg.py``'s text).

Threads, not processes: the work handed out is compiled kernels (``compiled.py``, nogil),
numpy over large arrays and Arrow compute, which release the GIL, so two threads use two cores
without copying data between processes. Work that holds the GIL (small Python steps) gains
nothing and loses little.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Deque, Iterable, Iterator, Optional, TypeVar

# Threads the ordered work runs on; 1: on the calling thread, in order (what the tests compare with).
WORK_THREADS = min(os.cpu_count() or 1, 4)

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_POOL: Optional[ThreadPoolExecutor] = None


def _pool() -> ThreadPoolExecutor:
    """One pool for the process (a commit a micro-batch must not start one each time)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(WORK_THREADS, thread_name_prefix="cmi-work")
    return _POOL


def _forget_pool_after_fork() -> None:
    """A forked child has none of its parent's threads: it starts a pool of its own."""
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def ordered_map(work: Callable[[_Item], _Result], items: Iterable[_Item]) -> Iterator[_Result]:
    """``map(work, items)``, the calls spread over WORK_THREADS threads: ``items`` is drawn on the
    calling thread, results come in the order of ``items``, each as soon as it and those before it
    are done, and at most WORK_THREADS + 1 items are in work or waiting to be taken, so that
    memory stays bounded by a few items whatever their number. ``work``'s exception is raised
    here, for the first item that fails; the work not yet started is then dropped. ``work`` must
    not wait for other work of the pool (an ordered_map inside it): with every thread waiting,
    none would be left to do it."""
    if WORK_THREADS < 2:
        yield from map(work, items)
        return
    pool = _pool()
    pending: Deque[Future] = deque()
    try:
        for item in items:
            pending.append(pool.submit(work, item))
            # Results are taken as soon as they are done (what they say reaches the file early),
            # and waited for only when WORK_THREADS + 1 items are out.
            while pending and (len(pending) > WORK_THREADS or pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:  # a consumer that stopped early, or an error: nothing more for it
            future.cancel()

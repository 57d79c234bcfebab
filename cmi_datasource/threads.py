"""Work spread over a few threads, its results kept in order: what the write's commit encodes
with (``payload/sas_dataset_writer.py``'s observations, ``transports/mq/dmpmqmsg.py``'s text).

Threads, not processes: the work handed out is compiled kernels (``compiled.py``, nogil),
numpy over large arrays and Arrow compute, which release the GIL, so two threads use two cores
without copying data between processes. Work that holds the GIL (small Python steps) gains
nothing and loses little.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO, Callable, Deque, Iterable, Iterator, Optional, TypeVar

import numpy as np

# Threads the ordered work runs on; 1: on the calling thread, in order (what the tests compare with).
WORK_THREADS = min(os.cpu_count() or 1, 4)

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class ProcessPool:
    """A thread pool made at its first use and kept for the process (a load of 10,000 small files
    or a commit per micro-batch must not start one each time). A forked child has none of its
    parent's threads: work handed to the parent's pool would wait for ever (a read in a child
    forked after one in the parent hung), so the child makes its own."""

    def __init__(self, threads: int, name: str):
        self.threads, self.name = threads, name
        self._pool: Optional[ThreadPoolExecutor] = None
        os.register_at_fork(after_in_child=self._forget)

    def __call__(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)
        return self._pool

    def _forget(self) -> None:
        self._pool = None


_pool = ProcessPool(WORK_THREADS, "cmi-work")


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


# One thread a process for written_behind: file writes release the GIL and need no more.
_write_pool = ProcessPool(1, "cmi-write")


class SpareBuffers:
    """Byte buffers taken for a piece of work and given back once what they hold is used, for the
    pieces after it. A buffer of a MiB freshly allocated for each piece came back from the kernel
    each time as new pages, faulted in and zeroed one by one: in a commit of 5M rows (0.6 GB of
    encoded rows and 1.2 GB of dump text), about 0.35 s of system time (bench/bench_commit.py). ``take`` and
    ``give`` may be called from any thread; at most ``keep`` buffers wait to be taken again."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self._free: Deque[np.ndarray] = deque()  # append and pop are atomic: no lock

    def take(self, size: int) -> np.ndarray:
        """``size`` uint8 bytes, their content left over from earlier work: a view of a buffer
        given back when one is large enough, else of a new one."""
        try:
            buffer = self._free.pop()
        except IndexError:
            buffer = None
        if buffer is None or len(buffer) < size:
            buffer = np.empty(size, dtype=np.uint8)  # one too small is dropped: sizes change little
        return buffer[:size]

    def give(self, taken: np.ndarray) -> None:
        """The buffer behind ``taken`` (what ``take`` returned, or a view of it), for later work:
        nothing may read or write it after this."""
        while isinstance(taken.base, np.ndarray):
            taken = taken.base
        if len(self._free) < self.keep:
            self._free.append(taken)


def written_behind(out: BinaryIO, pieces: Iterable[bytes], ahead: int = 2,
                   written: Optional[Callable[[bytes], None]] = None) -> None:
    """Each of ``pieces`` written to ``out``, in order, on a thread of its own while this one draws
    the next: copying a commit's 1.2 GB of dump text into the file takes about 0.35 s, which the
    thread drawing messages (Python, holding the GIL) need not wait for. At most ``ahead``
    pieces wait to be written (memory stays bounded). ``written`` is called with each piece once
    ``out.write`` has returned (on the writing thread). A write's exception is raised here; the
    writes not yet started are then dropped."""
    pool = _write_pool()
    pending: Deque[Future] = deque()
    failed = threading.Event()

    def write(piece: bytes) -> None:
        if failed.is_set():
            return  # an earlier piece's write failed: one after it would leave a hole in the file
        try:
            out.write(piece)
        except BaseException:
            failed.set()
            raise
        if written is not None:
            written(piece)

    try:
        for piece in pieces:
            pending.append(pool.submit(write, piece))
            while len(pending) > ahead or (pending and pending[0].done()):
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        for future in pending:  # none may write after the caller goes on (and closes ``out``)
            if not future.cancelled():
                future.exception()

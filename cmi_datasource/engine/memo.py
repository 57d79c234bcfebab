"""What a Python worker keeps of earlier loads in memory, within bounds that do not follow the
size of the captures: a worker lives for many jobs, and one that planned a 20M-row dump kept its
index and capture (150 MB) through every later task."""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
from collections import OrderedDict
from typing import Callable, Generic, Hashable, Iterator, Optional, TypeVar

Value = TypeVar("Value")


class KeptInMemory(Generic[Value]):
    """The most recently used values, at most ``count`` of them and, when given, ``weight`` in
    all as ``weigh`` measures them; a value heavier than ``weight`` on its own is not kept."""

    def __init__(self, count: int, weight: Optional[int] = None, weigh: Callable[[Value], int] = lambda value: 0):
        self.count, self.weight, self.weigh = count, weight, weigh
        self._values: "OrderedDict[Hashable, Value]" = OrderedDict()
        self._weights: "dict[Hashable, int]" = {}

    def get(self, key: Hashable) -> Optional[Value]:
        found = self._values.get(key)
        if found is not None:
            self._values.move_to_end(key)
        return found

    def put(self, key: Hashable, value: Value) -> Value:
        weight = self.weigh(value)
        self._forget(key)
        if self.weight is None or weight <= self.weight:
            self._values[key] = value
            self._weights[key] = weight
            while len(self._values) > self.count or (self.weight is not None
                                                     and sum(self._weights.values()) > self.weight):
                self._forget(next(iter(self._values)))
        return value

    def _forget(self, key: Hashable) -> None:
        if self._values.pop(key, None) is not None:
            del self._weights[key]

    def clear(self) -> None:
        self._values.clear()
        self._weights.clear()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._values


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a message index is built and stored, or a load
    planned: they make many small objects (a few per message, no cycles among them: reference
    counting frees what is dropped) that only accumulate, and the collector kept traversing
    them and the index they sit beside: about a third of the time of indexing a dump of 130,000
    small messages, and half of planning a 5M-row dump (20,000 messages: 0.7 s -> 0.37 s). It
    runs again after, as it would have."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _malloc_trim() -> Optional[Callable[[int], int]]:
    """glibc's ``malloc_trim``; None elsewhere (macOS, musl, Windows)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def return_freed_memory() -> None:
    """Hand the C allocator's free pages back to the system. glibc keeps what a process freed
    (the pieces of a capture decoded on two threads, each in an arena of its own) for its next
    allocations, which an idle worker never makes."""
    if _TRIM is not None:
        _TRIM(0)

"""How the decode kernels are compiled: one place for every ``@kernel`` in the package.

The hot loops of decoding (hex text to bytes, SAS numerics, fixed-width text) are
compiled by numba so that no Python runs per line, value or row. They are compiled once
per machine and cached beside their modules (``__pycache__``), so a Spark Python worker
loads them in milliseconds.

numba itself is imported at a kernel's first call, not when the package is imported: a
Python worker that only plans a read (Spark's discovery, schema and partition calls) never
pays its import (0.3 s) nor its compiler's set-up.

Bounds checks are off, so a kernel must keep every index inside its arrays itself: each
one says how, and the Python function that calls it checks the sizes it relies on.
"""
from __future__ import annotations

import threading

_OPTIONS = dict(nogil=True, boundscheck=False, error_model="numpy")
_LOCK = threading.RLock()


class Kernel:
    """A function compiled by numba at its first call (``kernel`` below). Until then nothing of
    numba is imported; afterwards every call goes straight to numba's dispatcher, which also
    replaces this object in the module that defined it and in every module whose kernels call
    it (numba compiles a kernel's calls to other kernels only when those are its dispatchers)."""

    def __init__(self, function):
        self.function = function
        self.dispatcher = None
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__
        self.__doc__ = function.__doc__
        self.__module__ = function.__module__
        self.__wrapped__ = function

    def compiled(self):
        if self.dispatcher is None:
            with _LOCK:
                if self.dispatcher is None:
                    self.dispatcher = _dispatcher_of(self.function)
        return self.dispatcher

    def __call__(self, *args):
        return self.compiled()(*args)


def _dispatcher_of(function):
    """numba's dispatcher of ``function``, cached on disk where numba finds a writable place
    (``__pycache__`` beside the module, else a user cache directory, or ``NUMBA_CACHE_DIR``).
    Where it finds none (a read-only install and home on a cluster node), numba refuses to cache:
    the function is then compiled in each process instead. The kernels it calls are made
    dispatchers first, in its module's namespace."""
    import numba
    namespace = function.__globals__
    for name in function.__code__.co_names:
        called = namespace.get(name)
        if isinstance(called, Kernel):
            namespace[name] = called.compiled()
    try:
        dispatcher = numba.njit(cache=True, **_OPTIONS)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        dispatcher = numba.njit(cache=False, **_OPTIONS)(function)
    if namespace.get(function.__name__) is not None and isinstance(namespace[function.__name__], Kernel):
        namespace[function.__name__] = dispatcher
    return dispatcher


def kernel(function) -> Kernel:
    """``function`` compiled by numba on its first call (see ``Kernel``)."""
    return Kernel(function)

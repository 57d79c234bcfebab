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

The kernels a warm read runs (hex of dumps, TIB/RV's ATO rows, numeric, character and temporal
fields) and those of a write's commit (X lines, numbers and text placed in the rows) also exist in
C, compiled when the package is built (``_native.c``; issue 30): ``@kernel(native="name")`` runs
that twin instead, so that such a read or write imports no numba at all
(0.35 s in each fresh Python worker). The numba kernel stays the reference the tests compare the
C with, and runs instead when the extension is missing (built without a C compiler) or when the
environment variable ``CMI_NATIVE=0`` asks for it. This module alone decides which runs: callers do not change.
"""
from __future__ import annotations

import importlib
import os
import threading
from types import ModuleType
from typing import Any, Callable, Optional, Tuple

_OPTIONS = dict(nogil=True, boundscheck=False, error_model="numpy")
_LOCK = threading.RLock()


_UNSET: Any = object()
_native: Any = _UNSET


def native_module() -> Optional[ModuleType]:
    """The C kernels (``cmi_datasource._native``), or None when they are not built or
    ``CMI_NATIVE=0`` asks for numba's. Decided once per process, at the first kernel call."""
    global _native
    if _native is _UNSET:
        with _LOCK:
            if _native is _UNSET:
                if os.environ.get("CMI_NATIVE", "1").strip() == "0":
                    _native = None
                else:
                    try:
                        _native = importlib.import_module(f"{__package__}._native")
                    except ImportError:  # built without a C compiler: numba's kernels
                        _native = None
    return _native


class Kernel:
    """A function compiled by numba at its first call (``kernel`` below). Until then nothing of
    numba is imported; afterwards every call goes straight to numba's dispatcher, which also
    replaces this object in the module that defined it and in every module whose kernels call
    it (numba compiles a kernel's calls to other kernels only when those are its dispatchers).

    A kernel with a C twin (``native``, called with ``native_args`` after the kernel's own
    arguments) runs that twin when ``native_module()`` has it; it stays in its module's namespace,
    and only Python calls it (a numba kernel cannot call C: ``_dispatcher_of`` refuses)."""

    def __init__(self, function, native: Optional[str] = None, native_args: Tuple = ()):
        self.function = function
        self.native = native
        self.native_args = native_args
        self.dispatcher = None
        self.chosen: Optional[Callable] = None
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

    def native_function(self) -> Optional[Callable]:
        """The C twin of this kernel, with its ``native_args``; None when numba's kernel runs."""
        module = native_module() if self.native is not None else None
        if module is None or self.native is None:
            return None
        function, bound = getattr(module, self.native), self.native_args
        return (lambda *args: function(*args, *bound)) if bound else function

    def __call__(self, *args):
        if self.chosen is None:
            self.chosen = self.native_function() or self.compiled()
        return self.chosen(*args)


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
            if called.native is not None:
                raise TypeError(f"kernel {function.__name__} calls {name}, which has a C twin: only Python may call it")
            namespace[name] = called.compiled()
    try:
        dispatcher = numba.njit(cache=True, **_OPTIONS)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        dispatcher = numba.njit(cache=False, **_OPTIONS)(function)
    defined = namespace.get(function.__name__)
    if isinstance(defined, Kernel) and defined.native is None:
        namespace[function.__name__] = dispatcher
    return dispatcher


def kernel(function=None, *, native: Optional[str] = None, native_args: Tuple = ()):
    """``function`` compiled by numba on its first call (see ``Kernel``); ``@kernel(native="name")``:
    run by ``_native.name`` when the C kernels are there."""
    if function is None:
        return lambda defined: Kernel(defined, native, native_args)
    return Kernel(function, native, native_args)


def check_rows_hold(rows: Any, count: int, at: int, width: int) -> None:
    """What a kernel writing ``count`` values of ``width`` bytes into bytes at..at + width - 1 of each
    row of ``rows`` (a C-ordered (rows, row length) uint8 matrix) relies on, since numba's kernels
    check no bounds (the C twins check again): a ValueError otherwise."""
    if not 0 <= at <= rows.shape[1] - width or count != rows.shape[0] or rows.dtype != "uint8" \
            or not rows.flags.c_contiguous:
        raise ValueError(f"{count} values of {width} bytes do not fit at {at} of a {rows.shape} {rows.dtype} matrix")

"""How the decode kernels are compiled: one place for every ``@kernel`` in the package.

The hot loops of decoding (hex text to bytes, SAS numerics, fixed-width text) are
compiled by numba so that no Python runs per line, value or row. They are compiled once
per machine and cached beside their modules (``__pycache__``), so a Spark Python worker
loads them in milliseconds.

Bounds checks are off, so a kernel must keep every index inside its arrays itself: each
one says how, and the Python function that calls it checks the sizes it relies on.
"""
from __future__ import annotations

import numba

_OPTIONS = dict(nogil=True, boundscheck=False, error_model="numpy")
_cached = numba.njit(cache=True, **_OPTIONS)
_uncached = numba.njit(cache=False, **_OPTIONS)


def kernel(function):
    """``function`` compiled on first use, and cached on disk where numba finds a writable place
    (``__pycache__`` beside the module, else a user cache directory, or ``NUMBA_CACHE_DIR``).
    Where it finds none (a read-only install and home on a cluster node), numba refuses the
    function as it is defined, which would make importing the package fail: it is then compiled
    in each process instead."""
    try:
        return _cached(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return _uncached(function)

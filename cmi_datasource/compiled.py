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

kernel = numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")

"""Fixed-width numpy columns as Arrow arrays, built from their buffers.

``pa.array`` on a numpy array (or a list) imports pandas to ask whether the input is one of
its types: 0.4 s the first time in every fresh Python worker, for a library this package does
not use. Arrays built from buffers skip that, and copy nothing: the Arrow array keeps the
numpy array's memory.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa


def from_numpy(values: np.ndarray, arrow_type: pa.DataType, missing: Optional[np.ndarray] = None) -> pa.Array:
    """``values`` (contiguous, of ``arrow_type``'s width: float64, int32 for date32, int64 for
    timestamps and time64) as an Arrow array, null where ``missing`` is true."""
    values = np.ascontiguousarray(values)
    if values.dtype.itemsize * 8 != arrow_type.bit_width:
        raise TypeError(f"a {values.dtype} column cannot be an Arrow {arrow_type}")
    validity, nulls = None, 0
    if missing is not None:
        nulls = int(np.count_nonzero(missing))
        if nulls:
            validity = pa.py_buffer(np.packbits(~np.asarray(missing, dtype=bool), bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [validity, pa.py_buffer(values)], null_count=nulls)


def null_mask(array: pa.Array) -> np.ndarray:
    """Where ``array`` (a one-buffer-validity array: primitive, string, binary) is null, as a numpy
    boolean array read from its validity bitmap: no Arrow compute call (``is_null`` costs about
    as much as the column's encoding)."""
    validity = array.buffers()[0] if array.null_count else None
    if validity is None:
        return np.zeros(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=array.offset + len(array), bitorder="little")
    return bits[array.offset:] == 0


def booleans(flags: np.ndarray) -> pa.BooleanArray:
    """A numpy boolean array as an Arrow one (a filter mask), with no nulls."""
    flags = np.asarray(flags, dtype=bool)
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(np.packbits(flags, bitorder="little"))])

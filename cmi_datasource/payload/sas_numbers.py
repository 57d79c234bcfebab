"""SAS numerics: truncated doubles in IEEE (either byte order) or S/390 hexadecimal float.

Everything works on a (rows, width) uint8 matrix of one variable's bytes and is
vectorised with numpy. A stored value of ``width`` bytes is the high-order
``width`` bytes of an 8-byte double (formats.md section 3).
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..mq.encoding import FloatFormat

# SAS missing "." in IEEE: sign and exponent all ones, tag byte 0xFE (ReadStat's rule).
IEEE_MISSING_DOT = np.uint64(0xFFFFFE0000000000)
# S/390 (and SAS XPORT): the tag character in the first byte, zero fraction. "." = 0x2E.
S390_MISSING_DOT = np.uint64(0x2E00000000000000)
_FRACTION_MASK = np.uint64(0x00FFFFFFFFFFFFFF)


def _widen(matrix: np.ndarray, big_endian: bool) -> np.ndarray:
    """(rows, width) stored bytes -> (rows, 8) bytes of a full double, low-order bytes zero."""
    rows, width = matrix.shape
    if width == 8:
        return np.ascontiguousarray(matrix)
    full = np.zeros((rows, 8), dtype=np.uint8)
    if big_endian:
        full[:, :width] = matrix
    else:
        full[:, 8 - width:] = matrix
    return full


def decode_numbers(matrix: np.ndarray, fmt: FloatFormat) -> Tuple[np.ndarray, np.ndarray]:
    """(values as native float64, missing mask) from a (rows, width) uint8 matrix."""
    if fmt is FloatFormat.IEEE_LITTLE:
        values = _widen(matrix, False).view("<f8").reshape(-1)
        if values.dtype != np.float64:  # a big-endian machine
            values = values.astype(np.float64)
        return values, np.isnan(values)
    bits = _widen(matrix, True).view(">u8").reshape(-1).astype(np.uint64)
    if fmt is FloatFormat.IEEE_BIG:
        values = bits.view(np.float64)
        return values, np.isnan(values)
    return _decode_s390(bits)


def _decode_s390(bits: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    first_byte = (bits >> np.uint64(56)).astype(np.int64)
    fraction = bits & _FRACTION_MASK
    exponent = (first_byte & 0x7F) - 64
    magnitude = np.ldexp(fraction.astype(np.float64), (4 * exponent - 56).astype(np.int32))
    values = np.where(first_byte & 0x80, -magnitude, magnitude)
    # A zero fraction under a non-zero first byte is not a number SAS writes (zero is all
    # zero bytes): it is a missing value whose tag is that byte.
    missing = (fraction == 0) & (first_byte != 0) & (first_byte != 0x80)
    return values, missing


def encode_numbers(values: np.ndarray, missing: np.ndarray, width: int, fmt: FloatFormat) -> np.ndarray:
    """(rows, width) uint8 matrix; missing rows get SAS's "." and low-order bytes are dropped."""
    values = np.asarray(values, dtype=np.float64)
    missing = np.asarray(missing, dtype=bool) | np.isnan(values)
    if fmt is FloatFormat.S390:
        bits = _encode_s390(np.where(missing, 0.0, values))
        bits = np.where(missing, S390_MISSING_DOT, bits)
        full = bits.astype(">u8").view(np.uint8).reshape(-1, 8)
        return np.ascontiguousarray(full[:, :width])
    bits = values.view(np.uint64).copy()
    bits[missing] = IEEE_MISSING_DOT
    if fmt is FloatFormat.IEEE_BIG:
        full = bits.astype(">u8").view(np.uint8).reshape(-1, 8)
        return np.ascontiguousarray(full[:, :width])
    full = bits.astype("<u8").view(np.uint8).reshape(-1, 8)
    return np.ascontiguousarray(full[:, 8 - width:])


class S390RangeError(ValueError):
    pass


def _encode_s390(values: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(values)):
        raise S390RangeError("infinite values cannot be written as S/390 hexadecimal floats")
    sign = np.signbit(values) & (values != 0)
    mantissa, exp2 = np.frexp(np.abs(values))  # |v| = mantissa * 2**exp2, mantissa in [0.5, 1)
    exp16 = -((-exp2) // 4)  # ceil(exp2 / 4)
    shift = 4 * exp16 - exp2  # 0..3
    fraction = np.rint(np.ldexp(mantissa, 56 - shift)).astype(np.uint64)  # < 2**56
    overflow = fraction >= np.uint64(1 << 56)
    fraction = np.where(overflow, fraction >> np.uint64(4), fraction)
    exp16 = exp16 + overflow
    characteristic = exp16 + 64
    zero = (values == 0) | (characteristic < 0)  # underflow flushes to zero as the hardware does
    if np.any((characteristic > 127) & ~zero):
        raise S390RangeError("values above 7.2e75 cannot be written as S/390 hexadecimal floats")
    bits = ((sign.astype(np.uint64) << np.uint64(63))
            | (np.clip(characteristic, 0, 127).astype(np.uint64) << np.uint64(56))
            | fraction)
    return np.where(zero, np.uint64(0), bits)

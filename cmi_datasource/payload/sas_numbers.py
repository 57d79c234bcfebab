"""SAS numerics: truncated doubles in IEEE (either byte order) or S/390 hexadecimal float.

Decoding reads one variable's bytes straight out of a (rows, row length) uint8 matrix of
observations with a compiled kernel. Encoding places doubles made by numpy (``place_numbers``),
or, for IEEE numerics of the common Arrow types, reads the column's value slots and validity
bitmap as they come and writes the values in one kernel pass (``place_slots``). A stored value of
``width`` bytes is the high-order ``width`` bytes of an 8-byte double (docs/spec/sas-records.md#numeric-values).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from ..compiled import check_rows_hold, kernel
from ..encoding import FloatFormat

# SAS missing "." in IEEE: sign and exponent all ones, tag byte 0xFE (ReadStat's rule).
IEEE_MISSING_DOT = np.uint64(0xFFFFFE0000000000)
# S/390 (and SAS XPORT): the tag character in the first byte, zero fraction. "." = 0x2E.
S390_MISSING_DOT = np.uint64(0x2E00000000000000)
_FRACTION_MASK = np.uint64(0x00FFFFFFFFFFFFFF)
_EXPONENT_BITS = np.uint64(0x7FF0000000000000)
_MANTISSA_BITS = np.uint64(0x000FFFFFFFFFFFFF)


@kernel(native="gather_fields")
def _gather_fields(flat, stride, count, offsets, widths, little_endian, bits, nan):
    """For each of ``count`` rows of ``stride`` bytes in ``flat`` and each field j (``widths[j]``
    bytes at ``offsets[j]``): the full 8-byte pattern in bits[j, row] (the stored high-order
    bytes, low-order bytes zero) and whether it is an IEEE NaN. Row by row, so that each row is
    read from memory once whatever the number of fields. Bounds: the caller passes
    offsets[j] + widths[j] <= stride, widths[j] <= 8, count * stride <= len(flat) and
    (len(offsets), count) outputs. Unsigned indexes spare numba's negative-index handling."""
    eight = np.uint64(8)
    for i in range(np.uint64(count)):
        row = i * np.uint64(stride)
        for j in range(np.uint64(offsets.shape[0])):
            at = row + np.uint64(offsets[j])
            width = np.uint64(widths[j])
            value = np.uint64(0)
            if little_endian:
                shift = eight * (eight - width)
                for k in range(width):
                    value |= np.uint64(flat[at + k]) << shift
                    shift += eight
            else:
                shift = np.uint64(56)
                for k in range(width):
                    value |= np.uint64(flat[at + k]) << shift
                    shift -= eight
            bits[j, i] = value
            nan[j, i] = (value & _EXPONENT_BITS) == _EXPONENT_BITS and (value & _MANTISSA_BITS) != 0


def decode_number_fields(rows: np.ndarray, fmt: FloatFormat, offsets: Sequence[int],
                         widths: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
    """(values as native float64, missing mask), each (fields, rows), of the numeric fields at
    ``offsets`` (``widths`` bytes each) of a (rows, row length) uint8 matrix."""
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    field_starts = np.asarray(offsets, dtype=np.int64)
    field_widths = np.asarray(widths, dtype=np.int64)
    if len(field_starts) != len(field_widths) or ((field_starts < 0) | (field_widths < 1) | (field_widths > 8)
                                                  | (field_starts + field_widths > rows.shape[1])).any():
        raise ValueError(f"numeric fields {list(zip(field_starts.tolist(), field_widths.tolist()))} "
                         "(offset, width) lie outside "
                         f"rows of {rows.shape[1]} bytes or are not 1 to 8 bytes long")
    bits = np.empty((len(field_starts), rows.shape[0]), dtype=np.uint64)
    nan = np.empty((len(field_starts), rows.shape[0]), dtype=np.bool_)
    _gather_fields(rows.reshape(-1), rows.shape[1], rows.shape[0], field_starts, field_widths,
                   fmt is FloatFormat.IEEE_LITTLE, bits, nan)
    if fmt is FloatFormat.S390:
        return _decode_s390(bits)
    return bits.view(np.float64), nan


def decode_numbers(rows: np.ndarray, fmt: FloatFormat) -> Tuple[np.ndarray, np.ndarray]:
    """(values, missing mask) of a (rows, width) matrix holding one numeric variable."""
    values, missing = decode_number_fields(rows, fmt, [0], [rows.shape[1]])
    return values[0], missing[0]


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
    out = np.empty((len(values), width), dtype=np.uint8)
    place_numbers(values, missing, fmt, out, 0, width)
    return out


def place_numbers(values: np.ndarray, missing: np.ndarray, fmt: FloatFormat, rows: np.ndarray, at: int,
                  width: int) -> None:
    """The values as SAS numerics of ``width`` bytes into ``rows[:, at:at + width]`` of a (rows,
    row length) uint8 matrix, in place: what ``encode_numbers`` returns, written where the
    observations are assembled without a matrix of its own (a write encodes millions of rows)."""
    values = np.asarray(values, dtype=np.float64)
    missing = np.asarray(missing, dtype=bool) | np.isnan(values)
    if not 1 <= width <= 8 or len(missing) != len(values):
        raise ValueError(f"{len(values)} numbers of {width} bytes (1 to 8) with {len(missing)} missing flags")
    check_rows_hold(rows, len(values), at, width)
    if fmt is FloatFormat.S390:
        bits = np.where(missing, S390_MISSING_DOT, _encode_s390(np.where(missing, 0.0, values)))
    else:
        bits = values.view(np.uint64).copy()
        bits[missing] = IEEE_MISSING_DOT
    _put_high_bytes(bits, rows.reshape(-1), rows.shape[1], at, width, fmt is not FloatFormat.IEEE_LITTLE)


_NO_NULLS = np.zeros(0, dtype=np.uint8)


def place_slots(values: np.ndarray, validity: Optional[np.ndarray], validity_offset: int, add: int, divisor: float,
                fmt: FloatFormat, rows: np.ndarray, at: int, width: int) -> None:
    """An Arrow column's value slots (``values``: float64, float32, int32 or int64) and validity
    bitmap (None: no nulls; bit ``validity_offset + i`` for value i) as IEEE SAS numerics of
    ``width`` bytes into ``rows[:, at:at + width]``, each value made a double as
    ``_put_arrow_numbers`` says: what ``place_numbers`` writes of those doubles, without them."""
    if fmt is FloatFormat.S390 or values.dtype not in (np.float64, np.float32, np.int32, np.int64):
        raise ValueError(f"{values.dtype} values are not placed as {fmt.name} numerics here: place_numbers")
    if add and values.dtype.kind == "f":
        raise ValueError("an integer added to floating-point values")
    bitmap = _NO_NULLS if validity is None else np.asarray(validity, dtype=np.uint8)
    if not 1 <= width <= 8 or validity_offset < 0 or (len(bitmap) and len(bitmap) * 8 < validity_offset + len(values)):
        raise ValueError(f"{len(values)} numbers of {width} bytes (1 to 8) with a bitmap of {len(bitmap)} bytes "
                         f"from bit {validity_offset}")
    check_rows_hold(rows, len(values), at, width)
    if not values.flags.aligned:  # an Arrow buffer need not be aligned to its items; the C kernel's loads must be
        values = values.copy()
    _put_arrow_numbers(values, bitmap, validity_offset, add, divisor, rows.reshape(-1), rows.shape[1], at, width,
                       fmt is not FloatFormat.IEEE_LITTLE)


@kernel(native="put_high_bytes")
def _put_high_bytes(bits, flat, row_length, at, width, big_endian):
    """The high-order ``width`` bytes of each bits[i] into row i's bytes at..at + width - 1 of
    ``flat`` (rows of ``row_length`` bytes end to end), in big-endian order or, when
    ``big_endian`` is false, as they stand in a little-endian double. Bounds: the caller checks
    that flat holds a row per value, 1 <= width <= 8 and at + width <= row_length."""
    for i in range(bits.shape[0]):
        _put_bits(flat, i * row_length + at, bits[i], width, big_endian)


@kernel
def _put_bits(flat, o, b, width, big_endian):
    """The high-order ``width`` bytes of ``b`` at flat[o:o + width] (see ``_put_high_bytes``)."""
    if big_endian:
        for k in range(width):
            flat[o + k] = (b >> np.uint64(56 - 8 * k)) & np.uint64(0xFF)
    else:
        b = b >> np.uint64(64 - 8 * width)
        for k in range(width):
            flat[o + k] = b & np.uint64(0xFF)
            b = b >> np.uint64(8)


@kernel(native="put_arrow_numbers")
def _put_arrow_numbers(values, validity, validity_offset, add, divisor, flat, row_length, at, width, big_endian):
    """Each of ``values`` (an Arrow column's slots as they come: float64, float32, int32 or int64)
    as an IEEE SAS numeric of ``width`` bytes into row i's bytes at..at + width - 1 of ``flat``,
    as ``place_numbers`` writes the doubles ``_numbers`` makes of them: an integer plus ``add``
    (wrapping, as numpy's int64 sums do; 0 for floats), then divided by ``divisor`` (1 for none),
    the double's bits; "." where the value is NaN or null (bit ``validity_offset + i`` of the
    Arrow validity bitmap ``validity`` clear; an empty ``validity``: no nulls). Bounds: the caller
    checks that the bitmap holds those bits, flat holds a row per value, 1 <= width <= 8,
    at + width <= row_length and flat overlaps neither input."""
    double = np.empty(1, dtype=np.float64)
    pattern = double.view(np.uint64)
    for i in range(values.shape[0]):
        if add != 0:
            x = np.float64(np.int64(values[i]) + np.int64(add)) / divisor
        else:
            x = np.float64(values[i]) / divisor
        bit = validity_offset + i
        if x != x or (validity.shape[0] > 0 and (validity[bit >> 3] >> (bit & 7)) & 1 == 0):
            b = IEEE_MISSING_DOT
        else:
            double[0] = x
            b = pattern[0]
        _put_bits(flat, i * row_length + at, b, width, big_endian)


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

"""Fixed-width character fields <-> Arrow string arrays, vectorised.

SAS character values are fixed-width and blank padded. Decoding trims trailing
blanks and NULs (the code page's own blank: 0x40 in EBCDIC), turns all-blank
values into null (SAS's missing character value), and converts single-byte code
pages to UTF-8 through the code page's byte -> UTF-8 table with numpy gathers.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..charsets import CodePage


def trimmed_lengths(matrix: np.ndarray, blank: int) -> np.ndarray:
    """Length of each row once trailing blanks and NULs are removed."""
    rows, width = matrix.shape
    if width == 0:
        return np.zeros(rows, dtype=np.int64)
    keep = (matrix != blank) & (matrix != 0)
    last_kept_from_end = np.argmax(keep[:, ::-1], axis=1)
    return np.where(keep.any(axis=1), width - last_kept_from_end, 0).astype(np.int64)


def _utf8_payload(matrix: np.ndarray, lengths: np.ndarray, codepage: CodePage) -> Tuple[np.ndarray, np.ndarray]:
    """(UTF-8 bytes of all values of a single-byte code page concatenated, int64 offsets of each value)."""
    width = matrix.shape[1]
    inside = np.arange(width) < lengths[:, None]
    kept = matrix[inside]  # row-major: values one after another
    out_lengths = codepage.utf8_length[kept]
    byte_ends = np.cumsum(out_lengths)
    starts = byte_ends - out_lengths
    total = int(byte_ends[-1]) if len(byte_ends) else 0
    out = np.empty(total, dtype=np.uint8)
    table = codepage.utf8_bytes
    for k in range(int(out_lengths.max()) if len(out_lengths) else 0):
        has = out_lengths > k
        out[starts[has] + k] = table[kept[has], k]
    # Row offsets: UTF-8 position of each row's first source byte.
    value_ends = np.cumsum(lengths)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    nonempty_end = value_ends > 0
    offsets[1:][nonempty_end] = byte_ends[value_ends[nonempty_end] - 1]
    return out, offsets


def strings_from_fixed_width(matrix: np.ndarray, codepage: CodePage) -> pa.Array:
    """Arrow string array from a (rows, width) uint8 matrix of one character variable: UTF-8
    through Arrow's kernels, single-byte code pages through the code page's UTF-8 table.

    Raises UnicodeDecodeError (with the row in ``.start``) when UTF-8 text is invalid.
    """
    if codepage.is_utf8:
        return _utf8_strings(matrix)
    rows = matrix.shape[0]
    lengths = trimmed_lengths(matrix, codepage.space)
    data, offsets = _utf8_payload(matrix, lengths, codepage)
    if offsets[-1] >= 2 ** 31:
        raise OverflowError("more than 2 GiB of text in one batch; lower the batch size")
    valid = lengths > 0
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if not valid.all() else None
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets.astype(np.int32)),
                                       pa.py_buffer(data), validity, int(rows - valid.sum()))


def _utf8_strings(matrix: np.ndarray) -> pa.Array:
    """UTF-8 values: Arrow's kernels validate, trim and null the blank ones without a copy per step in Python."""
    rows, width = matrix.shape
    if width == 0:
        return pa.nulls(rows, pa.string())
    data = np.ascontiguousarray(matrix)
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), rows, [None, pa.py_buffer(data)])
    try:
        text = fixed.cast(pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        offsets = np.arange(rows + 1, dtype=np.int64) * width
        bad_row = _first_invalid_utf8_row(data.reshape(-1), offsets)
        raise UnicodeDecodeError("utf-8", data[bad_row].tobytes(), bad_row, bad_row + 1, "invalid UTF-8") from None
    trimmed = pc.utf8_rtrim(text, characters=" \x00")
    return pc.if_else(pc.equal(pc.binary_length(trimmed), 0), pa.scalar(None, pa.string()), trimmed)


def _first_invalid_utf8_row(data: np.ndarray, offsets: np.ndarray) -> int:
    # Only runs when validation already failed: per-value work on the failure path is fine.
    raw = data.tobytes()
    for row in range(len(offsets) - 1):
        try:
            raw[offsets[row]:offsets[row + 1]].decode("utf-8")
        except UnicodeDecodeError:
            return row
    return 0


def fixed_width_from_strings(values: pa.Array, codepage: CodePage, width: int) -> np.ndarray:
    """(rows, width) matrix of blank-padded encoded values; nulls and "" become blanks.

    Raises UnicodeEncodeError for characters the code page lacks and ValueError
    (with ``.row``) for a value longer than ``width`` bytes.
    """
    encoded = encode_strings(values, codepage)
    rows = len(values)
    matrix = np.full((rows, width), codepage.space, dtype=np.uint8)
    data, offsets = encoded
    lengths = np.diff(offsets)
    if rows and lengths.max(initial=0) > width:
        row = int(np.argmax(lengths > width))
        err = ValueError(f"value of {int(lengths[row])} bytes does not fit in {width}")
        err.row = row
        raise err
    inside = np.arange(width) < lengths[:, None]
    matrix[inside] = data
    return matrix


def encode_strings(values: pa.Array, codepage: CodePage) -> Tuple[np.ndarray, np.ndarray]:
    """(encoded bytes concatenated, int64 offsets) with nulls as empty values."""
    values = values.cast(pa.string()) if values.type != pa.string() else values
    values = values.fill_null("")
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32,
                            count=len(values) + 1, offset=values.offset * 4).astype(np.int64)
    data_buffer = values.buffers()[2]
    utf8 = (np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0]:offsets[-1]]
            if data_buffer is not None else np.zeros(0, dtype=np.uint8))
    offsets -= offsets[0]
    if codepage.is_utf8:
        return utf8, offsets
    # One decode and one encode over the whole column; value boundaries come from the
    # character counts, since every character of a single-byte code page is one byte.
    data = np.frombuffer(codepage.encode(utf8.tobytes().decode("utf-8")), dtype=np.uint8)
    char_offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(pc.utf8_length(values).to_numpy(zero_copy_only=False), out=char_offsets[1:])
    return data, char_offsets


def max_encoded_length(values: pa.Array, codepage: CodePage) -> int:
    _, offsets = encode_strings(values, codepage)
    return int(np.diff(offsets).max(initial=0))

"""Fixed-width character fields <-> Arrow string arrays, vectorised.

SAS character values are fixed-width and blank padded. Decoding trims trailing
blanks and NULs (the code page's own blank: 0x40 in EBCDIC), turns all-blank
values into null (SAS's missing character value), and converts single-byte code
pages to UTF-8 through the code page's byte -> UTF-8 table with numpy gathers.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..charsets import CodePage
from ..compiled import kernel


@kernel
def _trimmed_length(flat, at, width, blank):
    n = np.uint64(width)
    while n > 0:
        c = flat[at + n - np.uint64(1)]
        if c != blank and c != 0:
            break
        n -= np.uint64(1)
    return n


@kernel
def _trim_and_gather(flat, stride, count, offsets, widths, blank, utf8_bytes, utf8_length, ends, out, regions):
    """For each of ``count`` rows of ``stride`` bytes in ``flat`` and each field j (``widths[j]``
    bytes at ``offsets[j]``): the value without trailing blanks and NULs, appended to field j's
    region of ``out`` (from regions[j]); ends[j, row + 1] is where it ends, from the region start.
    With a code page table (``utf8_length`` not empty) each byte becomes its UTF-8 sequence.
    Row by row, so each row is read from memory once. Bounds: the caller passes
    offsets[j] + widths[j] <= stride, count * stride <= len(flat), and regions that hold
    count * widths[j] bytes (4 times that with a table)."""
    one = np.uint64(1)
    translate = utf8_length.shape[0] > 0
    for j in range(np.uint64(offsets.shape[0])):
        ends[j, 0] = 0
    for i in range(np.uint64(count)):
        row = i * np.uint64(stride)
        for j in range(np.uint64(offsets.shape[0])):
            at = row + np.uint64(offsets[j])
            n = np.uint64(widths[j])
            while n > 0:
                c = flat[at + n - one]
                if c != blank and c != 0:
                    break
                n -= one
            start = np.uint64(regions[j])
            end = start + np.uint64(ends[j, i])
            if translate:
                for k in range(n):
                    b = flat[at + k]
                    size = np.uint64(utf8_length[b])
                    for m in range(size):
                        out[end + m] = utf8_bytes[b, m]
                    end += size
            else:
                for k in range(n):
                    out[end + k] = flat[at + k]
                end += n
            ends[j, i + one] = end - start


_NO_TABLE = (np.zeros((0, 4), dtype=np.uint8), np.zeros(0, dtype=np.int64))


def string_fields(rows: np.ndarray, codepage: CodePage, offsets: Sequence[int],
                  widths: Sequence[int]) -> List[pa.Array]:
    """Arrow string arrays of the character fields at ``offsets`` (``widths`` bytes each) of a
    (rows, row length) uint8 matrix: trailing blanks and NULs trimmed, all-blank values null,
    single-byte code pages turned into UTF-8 through the code page's table.

    Raises UnicodeDecodeError (with the row in ``.start`` and the field's position in
    ``.field``) when UTF-8 text is invalid.
    """
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    count = rows.shape[0]
    offsets = np.asarray(offsets, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    if len(offsets) != len(widths) or ((offsets < 0) | (widths < 0) | (offsets + widths > rows.shape[1])).any():
        raise ValueError(f"character fields {list(zip(offsets.tolist(), widths.tolist()))} (offset, width) "
                         f"lie outside rows of {rows.shape[1]} bytes")
    expansion = 1 if codepage.is_utf8 else 4
    sizes = count * widths * expansion
    regions = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(int(regions[-1]), dtype=np.uint8)
    ends = np.empty((len(offsets), count + 1), dtype=np.int64)
    table = _NO_TABLE if codepage.is_utf8 else (codepage.utf8_bytes, codepage.utf8_length)
    _trim_and_gather(rows.reshape(-1), rows.shape[1], count, offsets, widths, codepage.space, table[0], table[1],
                     ends, out, regions)
    arrays = []
    for j in range(len(offsets)):
        value_ends = ends[j]
        if value_ends[-1] >= 2 ** 31:
            raise OverflowError("more than 2 GiB of text in one batch; lower the batch size")
        data = out[regions[j]:regions[j] + value_ends[-1]]
        valid = value_ends[1:] != value_ends[:-1]
        nulls = int(count - np.count_nonzero(valid))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        array = pa.StringArray.from_buffers(count, pa.py_buffer(value_ends.astype(np.int32)), pa.py_buffer(data),
                                            validity, nulls)
        if codepage.is_utf8 and len(data) and data.max() >= 0x80:  # ASCII is valid UTF-8
            try:
                array.validate(full=True)
            except pa.ArrowInvalid:
                bad_row = _first_invalid_utf8_row(data, value_ends)
                error = UnicodeDecodeError("utf-8", data[value_ends[bad_row]:value_ends[bad_row + 1]].tobytes(),
                                           bad_row, bad_row + 1, "invalid UTF-8")
                error.field = j
                raise error from None
        arrays.append(array)
    return arrays


def strings_from_fixed_width(rows: np.ndarray, codepage: CodePage) -> pa.Array:
    """The string array of a (rows, width) matrix holding one character variable (``string_fields``)."""
    return string_fields(rows, codepage, [0], [rows.shape[1]])[0]


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

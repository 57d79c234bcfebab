"""Fixed-width character fields <-> Arrow string arrays.

SAS character values are fixed-width and blank padded. Decoding (a compiled kernel,
row by row) trims trailing blanks and NULs (the code page's own blank: 0x40 in
EBCDIC), turns all-blank values into null (SAS's missing character value),
converts single-byte code pages to UTF-8 through the code page's byte -> UTF-8
table and checks UTF-8 text in the same pass. Encoding is vectorised with numpy.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ..charsets import CodePage
from ..compiled import check_rows_hold, kernel
from .numbers import null_mask


class FieldUnicodeDecodeError(UnicodeDecodeError):
    """Invalid UTF-8 in a character field: the row in ``.start``, the field's position in ``.field``."""

    def __init__(self, data: bytes, row: int, field: int):
        super().__init__("utf-8", data, row, row + 1, "invalid UTF-8")
        self.field = field


class ValueTooLongError(ValueError):
    """A value longer than its field: the row in ``.row``."""

    def __init__(self, message: str, row: int):
        super().__init__(message)
        self.row = row


def _utf8_lead_bytes() -> np.ndarray:
    """Per lead byte: (continuation bytes that follow, lowest and highest allowed second byte),
    Unicode table 3-7 (no overlong forms, surrogates or code points past U+10FFFF); 0 follow
    bytes marks a byte that cannot start a multi-byte character."""
    table = np.zeros((256, 3), dtype=np.uint8)
    table[0xC2:0xE0] = (1, 0x80, 0xBF)
    table[0xE0:0xF0] = (2, 0x80, 0xBF)
    table[0xE0] = (2, 0xA0, 0xBF)
    table[0xED] = (2, 0x80, 0x9F)
    table[0xF0:0xF5] = (3, 0x80, 0xBF)
    table[0xF0] = (3, 0x90, 0xBF)
    table[0xF4] = (3, 0x80, 0x8F)
    return table


_UTF8_LEAD_BYTES = _utf8_lead_bytes()


@kernel
def _well_formed_utf8(data, at, n, lead_bytes):
    """Whether data[at:at + n] is well-formed UTF-8, as Python's strict decoder requires."""
    k = np.uint64(0)
    while k < n:
        b = data[at + k]
        if b < 0x80:
            k += np.uint64(1)
            continue
        follow = np.uint64(lead_bytes[b, 0])
        if follow == 0 or k + follow >= n:
            return False
        second = data[at + k + np.uint64(1)]
        if second < lead_bytes[b, 1] or second > lead_bytes[b, 2]:
            return False
        for m in range(np.uint64(2), follow + np.uint64(1)):
            c = data[at + k + m]
            if c < 0x80 or c > 0xBF:
                return False
        k += follow + np.uint64(1)
    return True


@kernel(native="trim_and_gather")
def _trim_and_gather(flat, stride, count, offsets, widths, blank, utf8_bytes, utf8_length, check_utf8, ends, out,
                     regions, bad_rows):
    """For each of ``count`` rows of ``stride`` bytes in ``flat`` and each field j (``widths[j]``
    bytes at ``offsets[j]``): the value without trailing blanks and NULs, appended to field j's
    region of ``out`` (from regions[j]); ends[j, row + 1] is where it ends, from the region start.
    With a code page table (``utf8_length`` not empty) each byte becomes its UTF-8 sequence.
    With ``check_utf8``, bad_rows[j] is the first row whose value of field j is not well-formed
    UTF-8 (-1: none), checked as it is written. Row by row, so each row is read from memory once.
    Bounds: the caller passes offsets[j] + widths[j] <= stride, count * stride <= len(flat),
    regions that hold count * widths[j] bytes (4 times that with a table) and a bad row per field."""
    one = np.uint64(1)
    translate = utf8_length.shape[0] > 0
    for j in range(np.uint64(offsets.shape[0])):
        ends[j, 0] = 0
        bad_rows[j] = -1
    for i in range(np.uint64(count)):
        row = i * np.uint64(stride)
        for j in range(np.uint64(offsets.shape[0])):
            at = row + np.uint64(offsets[j])
            width = np.uint64(widths[j])
            start = np.uint64(regions[j])
            value = start + np.uint64(ends[j, i])
            end = value
            if translate:
                n = width
                while n > 0 and (flat[at + n - one] == blank or flat[at + n - one] == 0):
                    n -= one
                for k in range(n):
                    b = flat[at + k]
                    size = np.uint64(utf8_length[b])
                    for m in range(size):
                        out[end + m] = utf8_bytes[b, m]
                    end += size
            else:
                # The whole field is copied and its end found without a branch per byte: values of
                # varying length would mispredict a scan from the end. The blanks copied past the
                # value are overwritten by the next one (end + width stays inside the region).
                kept = np.uint64(0)
                for k in range(width):
                    c = flat[at + k]
                    out[end + k] = c
                    kept = max(kept, np.uint64((c != blank) & (c != 0)) * (k + one))
                end += kept
            if check_utf8 and bad_rows[j] < 0 and not _well_formed_utf8(out, value, end - value, _UTF8_LEAD_BYTES):
                bad_rows[j] = i
            ends[j, i + one] = end - start


_NO_TABLE = (np.zeros((0, 4), dtype=np.uint8), np.zeros(0, dtype=np.int64))


def string_fields(rows: np.ndarray, codepage: CodePage, offsets: Sequence[int],
                  widths: Sequence[int]) -> List[pa.Array]:
    """Arrow string arrays of the character fields at ``offsets`` (``widths`` bytes each) of a
    (rows, row length) uint8 matrix: trailing blanks and NULs trimmed, all-blank values null,
    single-byte code pages turned into UTF-8 through the code page's table.

    Raises FieldUnicodeDecodeError (with the row in ``.start`` and the field's position in
    ``.field``) when UTF-8 text is invalid.
    """
    rows = np.ascontiguousarray(rows, dtype=np.uint8)
    count = rows.shape[0]
    field_starts = np.asarray(offsets, dtype=np.int64)
    field_widths = np.asarray(widths, dtype=np.int64)
    if len(field_starts) != len(field_widths) or ((field_starts < 0) | (field_widths < 0)
                                                  | (field_starts + field_widths > rows.shape[1])).any():
        raise ValueError(f"character fields {list(zip(field_starts.tolist(), field_widths.tolist()))} "
                         "(offset, width) "
                         f"lie outside rows of {rows.shape[1]} bytes")
    expansion = 1 if codepage.is_utf8 else 4
    sizes = count * field_widths * expansion
    regions = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    out = np.empty(int(regions[-1]), dtype=np.uint8)
    ends = np.empty((len(field_starts), count + 1), dtype=np.int64)
    bad_rows = np.empty(len(field_starts), dtype=np.int64)
    table = _NO_TABLE if codepage.is_utf8 else (codepage.utf8_bytes, codepage.utf8_length)
    # A single-byte code page's table makes well-formed UTF-8: only UTF-8 text is checked.
    _trim_and_gather(rows.reshape(-1), rows.shape[1], count, field_starts, field_widths, codepage.space,
                     table[0], table[1], codepage.is_utf8, ends, out, regions, bad_rows)
    arrays = []
    for j in range(len(field_starts)):
        value_ends = ends[j]
        if value_ends[-1] >= 2 ** 31:
            raise OverflowError("more than 2 GiB of text in one batch; lower the batch size")
        data = out[regions[j]:regions[j] + value_ends[-1]]
        valid = value_ends[1:] != value_ends[:-1]
        nulls = int(count - np.count_nonzero(valid))
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
        bad_row = int(bad_rows[j])
        if bad_row >= 0:
            raise FieldUnicodeDecodeError(data[value_ends[bad_row]:value_ends[bad_row + 1]].tobytes(), bad_row, j)
        arrays.append(pa.StringArray.from_buffers(count, pa.py_buffer(value_ends.astype(np.int32)),
                                                  pa.py_buffer(data), validity, nulls))
    return arrays


def strings_from_fixed_width(rows: np.ndarray, codepage: CodePage) -> pa.Array:
    """The string array of a (rows, width) matrix holding one character variable (``string_fields``)."""
    return string_fields(rows, codepage, [0], [rows.shape[1]])[0]


def fixed_width_from_strings(values: pa.Array, codepage: CodePage, width: int) -> np.ndarray:
    """(rows, width) matrix of blank-padded encoded values; nulls and "" become blanks.

    Raises UnicodeEncodeError for characters the code page lacks and ValueTooLongError
    (with ``.row``) for a value longer than ``width`` bytes.
    """
    matrix = np.empty((len(values), width), dtype=np.uint8)
    place_strings(values, codepage, matrix, 0, width)
    return matrix


def place_strings(values: pa.Array, codepage: CodePage, rows: np.ndarray, at: int, width: int) -> None:
    """The values, encoded and blank-padded to ``width`` bytes, into ``rows[:, at:at + width]`` of a
    (rows, row length) uint8 matrix, in place: what ``fixed_width_from_strings`` returns (and
    raises), written where the observations are assembled without a matrix of its own."""
    check_rows_hold(rows, len(values), at, width)
    data, offsets = encode_strings(values, codepage)
    lengths = np.diff(offsets)
    if len(values) and lengths.max(initial=0) > width:
        row = int(np.argmax(lengths > width))
        raise ValueTooLongError(f"value of {int(lengths[row])} bytes does not fit in {width}", row)
    if len(values) and (lengths.min(initial=0) < 0 or offsets[0] < 0 or offsets[-1] > len(data)):
        raise ValueError("string offsets out of order")  # encode_strings' own arrays: never for Arrow's
    _put_padded(data, offsets, codepage.space, rows.reshape(-1), rows.shape[1], at, width)


@kernel(native="put_padded")
def _put_padded(data, offsets, space, flat, row_length, at, width):
    """Value i (data[offsets[i]:offsets[i + 1]]) into row i's bytes at..at + width - 1 of ``flat``
    (rows of ``row_length`` bytes end to end), the rest blanks. Bounds: the caller checks that
    flat holds a row per value, the offsets rise within data, each value fits ``width`` and
    at + width <= row_length."""
    for i in range(offsets.shape[0] - 1):
        o = i * row_length + at
        start = offsets[i]
        length = offsets[i + 1] - start
        for k in range(length):
            flat[o + k] = data[start + k]
        for k in range(length, width):
            flat[o + k] = space


def encode_strings(values: pa.Array, codepage: CodePage) -> Tuple[np.ndarray, np.ndarray]:
    """(encoded bytes concatenated, int64 offsets) with nulls as empty values."""
    values = values.cast(pa.string()) if values.type != pa.string() else values
    offsets = _offsets(values)
    null = null_mask(values) if values.null_count else None
    if null is not None and np.diff(offsets)[null].any():
        # Arrow lets a null's slot hold bytes; builders leave it empty, and then nothing needs
        # filling (fill_null copies the column: two thirds of a string column's encoding).
        values, null = values.fill_null(""), None
        offsets = _offsets(values)
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
    import pyarrow.compute as pc  # here: its import costs a reading worker 60 ms (payload/sas_dataset_writer)
    characters = pc.utf8_length(values)
    np.cumsum(characters.fill_null(0).to_numpy() if null is not None else characters.to_numpy(), out=char_offsets[1:])
    return data, char_offsets


def _offsets(values: pa.StringArray) -> np.ndarray:
    """The value offsets of a string array (its own, not from 0 when it is a slice), as int64."""
    return np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1,
                         offset=values.offset * 4).astype(np.int64)


def max_encoded_length(values: pa.Array, codepage: CodePage) -> int:
    _, offsets = encode_strings(values, codepage)
    return int(np.diff(offsets).max(initial=0))

"""Data part fields as text: VDN numbers, characters, bytes, booleans (docs/spec/sapdb.md#data-parts, #numbers).

Every field of a data part is a defined byte (0xFF: NULL; 0xFE: a numeric overflow, also NULL)
and ``in_out_len - 1`` bytes of value, at the ``bufpos`` its shortinfo entry gives. One compiled
kernel renders any number of fields of any number of packets at once, from their offsets in one
buffer, into UTF-8 text and Arrow offsets: no Python runs per value.

Numbers (FIXED, FLOAT, SMALLINT, INTEGER: all "VDN") are a characteristic byte and packed
decimal digits, high nibble first: 0x80 is zero; 0xC0 + E a positive 0.d1d2... x 10**E; 0x40 - E
a negative one, its digits the ten's complement of the absolute value's (9 - d for each digit
before the last non-zero one, 10 - d for that one, zeros after it). FIXED(n, m) is written with
its m decimals (more, when the value holds more digits than declared: nothing is cut), FLOAT as
a plain decimal with no exponent and no trailing zeros. Date, time and timestamp fields are the
text the kernel sent (UCS-2 when their defined byte is 0x01, as in unicode sessions) (internal
format "YYYYMMDD", "00HHMMSS", "YYYYMMDDHHMMSSmmmmmm", or the session's ISO/USA/EUR form);
character fields keep their padding; byte fields are upper-case hex.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...compiled import kernel
from ...errors import Location
from .codes import DATA_TYPES, IO_INOUT, IO_INPUT, IO_OUTPUT, MESS_CODES, OVERFLOW_BYTE, SWAP_FULL, UNDEF_BYTE, codes_of
from .packet import COLUMN_NAME, PARAM_INFO, unpack

# How a field's value bytes become text: the kernel's kinds.
FIXED, FLOAT, TEXT, HEX, UCS2_BIG, UCS2_LITTLE, BOOLEAN, UTF8, DATETIME_BIG, DATETIME_LITTLE = range(10)
UNICODE_DEFINED_BYTE = 0x01  # csp_unicode_def_byte: the value that follows is UCS-2
# Problems the kernel finds in a field (its status)
OK, NOT_A_DIGIT, BAD_NEGATIVE, NO_DIGITS, ODD_UCS2 = 0, 1, 2, 3, 4
MAX_FRAC = 64  # decimals of a FIXED field rendered at most (the kernel's room; MaxDB declares up to 38)
FIELD_TEXT_ROOM = 2 + 64 + MAX_FRAC + 8
STATUS_TEXT = {NOT_A_DIGIT: "holds a nibble that is no decimal digit (kept as hex)",
               BAD_NEGATIVE: "is a negative number with no digits (kept as hex)",
               NO_DIGITS: "is a number with no digits (kept as hex)",
               ODD_UCS2: "ends in half a UCS-2 character (read as U+FFFD)"}

# tsp00_DataType -> kind, for types whose kind does not depend on the session's code; others are hex
_KIND_OF_TYPE = {code: kind for names, kind in (("fixed smallint integer", FIXED), ("float vfloat number", FLOAT),
                                                ("cha varchara che varchare", TEXT), ("boolean", BOOLEAN))
                 for code in codes_of(DATA_TYPES, names)}
_EBCDIC_TYPES = codes_of(DATA_TYPES, "che varchare")
_UTF8_TEXT_TYPES = codes_of(DATA_TYPES, "cha varchara")  # UTF-8 in a utf8 session
_UNICODE_TYPES = codes_of(DATA_TYPES, "unicode varcharuni")  # UCS-2 in the session's order
_DATETIME_TYPES = codes_of(DATA_TYPES, "date time timestamp")  # UCS-2 when their defined byte says so
EBCDIC_MESS_CODE, UTF8_MESS_CODE, UNICODE_NATIVE = codes_of(MESS_CODES, "ebcdic utf8 unicode_native")
UNICODE_MESS_CODES = dict(zip(codes_of(MESS_CODES, "unicode_swap unicode"), (UCS2_LITTLE, UCS2_BIG)))
UCS2_SESSIONS = tuple(UNICODE_MESS_CODES) + (UNICODE_NATIVE,)  # native: in the order of mess_swap
LATIN_1, CP500, CP500_IF_EBCDIC_BLANK = 0, 1, 2  # a TEXT field's code page (tables of the kernel)
EBCDIC_BLANK = 0x40
# Single-byte code pages: ascii sessions are ISO 8859-1 (MaxDB's default code page), ebcdic ones cp500.
_CODE_POINTS = {"latin-1": np.arange(256, dtype=np.int32),
                "cp500": np.array([ord(c) for c in codecs.decode(bytes(range(256)), "cp500")], dtype=np.int32)}


def ucs2_kind(mess_code: int, swap: int) -> int:
    return UNICODE_MESS_CODES.get(mess_code, UCS2_LITTLE if swap == SWAP_FULL else UCS2_BIG)


def text_codec(mess_code: int, swap: int) -> str:
    """The Python codec of the packet's texts (command, errortext) by its mess_code."""
    if mess_code in UCS2_SESSIONS:
        return "utf-16-le" if ucs2_kind(mess_code, swap) == UCS2_LITTLE else "utf-16-be"
    return {EBCDIC_MESS_CODE: "cp500", UTF8_MESS_CODE: "utf-8"}.get(mess_code, "latin-1")


@dataclass(frozen=True)
class ParamInfo:
    """One shortinfo entry (tsp1_param_info): a parameter or output column of a statement."""

    mode: int
    io_type: int
    data_type: int
    frac: int
    length: int
    in_out_len: int
    bufpos: int  # 1-based: where its defined byte lies in the data record
    name: Optional[str] = None  # from the statement's columnnames part, when one was captured

    def code_page(self, mess_code: int) -> int:
        """The single-byte table of a TEXT field: CP500 in EBCDIC sessions; for an EBCDIC column in
        another session, CP500 when its defined byte is the EBCDIC blank (SQLDBC sends an ASCII
        blank, the value converted); else LATIN_1."""
        if mess_code == EBCDIC_MESS_CODE:
            return CP500
        return CP500_IF_EBCDIC_BLANK if self.data_type in _EBCDIC_TYPES else LATIN_1

    def kind(self, mess_code: int, swap: int) -> int:
        if mess_code == UTF8_MESS_CODE and self.data_type in _UTF8_TEXT_TYPES:
            return UTF8
        if self.data_type in _UNICODE_TYPES:
            return ucs2_kind(mess_code, swap)
        if self.data_type in _DATETIME_TYPES:  # its defined byte says whether it is UCS-2 (in the session's order)
            return DATETIME_BIG if ucs2_kind(mess_code, swap) == UCS2_BIG else DATETIME_LITTLE
        return _KIND_OF_TYPE.get(self.data_type, HEX)


def read_shortinfo(buf: bytes, count: int, swap: int, where: Location) -> Tuple[List[ParamInfo], Optional[str]]:
    """The entries of a shortinfo part of ``count`` arguments, and what is wrong when fewer fit."""
    fits = min(count, len(buf) // PARAM_INFO.size)
    entries = [ParamInfo(**unpack(PARAM_INFO, buf, i * PARAM_INFO.size, swap, where)) for i in range(fits)]
    problem = None if fits == count else f"shortinfo declares {count} entries; its {len(buf)} bytes hold {fits}"
    return entries, problem


def read_column_names(buf: bytes, count: int, codec: str, where: Location) -> Tuple[List[str], Optional[str]]:
    """The names of a columnnames part of ``count`` arguments (each a COLUMN_NAME length byte, then
    the name in ``codec``), and what is wrong when its bytes do not hold them. Every name takes at
    least its length byte, so the work is bounded by the bytes there, not by ``count``."""
    names: List[str] = []
    at = 0
    while len(names) < count and at < len(buf):
        length = COLUMN_NAME.unpack(buf, at, location=where)["name_len"]
        if at + COLUMN_NAME.size + length > len(buf):
            return names, (f"columnnames name {len(names) + 1} declares {length} bytes; {len(buf) - at - 1} "
                           f"remain in the part")
        start = at + COLUMN_NAME.size
        names.append(buf[start:start + length].decode(codec, errors="replace"))
        at = start + length
    if len(names) < count:
        return names, f"columnnames declares {count} names; its {len(buf)} bytes hold {len(names)}"
    if at < len(buf):
        return names, f"columnnames declares {count} names; {len(buf) - at} bytes follow the last"
    return names, None


def named_entries(entries: Sequence[ParamInfo], names: Sequence[str]) -> Tuple[List[ParamInfo], Optional[str]]:
    """The shortinfo ``entries`` with their names: one name per entry, or (as SQLDBC and the kernel's
    select replies have it) one per output column, in order. Other counts name nothing, and say so."""
    if len(names) == len(entries):
        return [replace(e, name=n) for e, n in zip(entries, names)], None
    outputs = [i for i, e in enumerate(entries) if e.io_type != IO_INPUT]
    if len(names) != len(outputs):
        return list(entries), (f"columnnames holds {len(names)} names for a shortinfo of {len(entries)} entries "
                               f"({len(outputs)} outputs): the values are not named")
    by_entry = dict(zip(outputs, names))
    return [replace(e, name=by_entry[i]) if i in by_entry else e for i, e in enumerate(entries)], None


def direction_entries(entries: Sequence[ParamInfo], reply: bool) -> List[ParamInfo]:
    """What a data part holds: a request's the inputs, a reply's the outputs (inout in both)."""
    wanted = (IO_OUTPUT, IO_INOUT) if reply else (IO_INPUT, IO_INOUT)
    return [e for e in entries if e.io_type in wanted]


class FieldPlan:
    """Fields to render, gathered over many data parts: where each lies in the joined buffer of
    their parts and how to read it. Fields are added a record layout at a time (numpy arrays), so
    nothing runs per field in Python."""

    def __init__(self):
        self.chunks: List[bytes] = []
        self.size = 0  # bytes of the joined buffer
        self.count = 0  # fields
        self._columns: List[Tuple[np.ndarray, ...]] = []  # (starts, sizes, kinds, fracs, code_pages) per addition

    def add_buffer(self, buf: bytes) -> int:
        """Adds a part's bytes; returns where they start in the joined buffer."""
        base = self.size
        self.chunks.append(buf)
        self.size += len(buf)
        return base

    def add_records(self, base: int, record: int, records: int, offsets: Sequence[int], sizes: Sequence[int],
                    kinds: Sequence[int], fracs: Sequence[int], code_pages: Sequence[int]) -> Tuple[int, int]:
        """``records`` records of ``record`` bytes from ``base``, each with a field at every offset
        (its defined byte); returns the (first, end) numbers of the fields added, record by record."""
        width = len(offsets)
        starts = (base + np.arange(records, dtype=np.int64)[:, None] * record
                  + np.asarray(offsets, dtype=np.int64)[None, :]).ravel()
        columns = (starts,) + tuple(np.tile(np.asarray(values, dtype=dtype), records) for values, dtype in (
            (sizes, np.int64), (kinds, np.int8), ([min(max(f, 0), MAX_FRAC) for f in fracs], np.int32),
            (code_pages, np.int8)))
        self._columns.append(columns)
        first = self.count
        self.count += records * width
        return first, self.count

    def add(self, start: int, size: int, kind: int, frac: int = 0, code_page: int = 0) -> int:
        """One field; returns its number."""
        return self.add_records(start, 0, 1, [0], [size], [kind], [frac], [code_page])[0]

    def render(self) -> Tuple[pa.StringArray, np.ndarray]:
        """Every field as text (NULL for the undefined), and each field's status."""
        n = self.count
        data = np.frombuffer(b"".join(self.chunks), dtype=np.uint8)
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int32),
                 np.zeros(0, np.int8))
        starts, sizes, kinds, fracs, code_pages = (np.concatenate(parts) for parts in zip(*(self._columns or [empty])))
        if n and (starts.min() < 0 or (starts + sizes).max() > len(data) or sizes.min() < 1):
            raise ValueError("a field lies outside its part")  # the callers place fields inside their parts
        bound = int((3 * sizes + FIELD_TEXT_ROOM).sum()) if n else 0  # the longest text each field can become
        out = np.empty(bound, dtype=np.uint8)
        offsets = np.zeros(n + 1, dtype=np.int32 if bound < 2 ** 31 else np.int64)
        valid = np.zeros(n, dtype=np.bool_)
        status = np.zeros(n, dtype=np.int8)
        tables = np.stack([_CODE_POINTS["latin-1"], _CODE_POINTS["cp500"]])  # indexed by LATIN_1, CP500
        _render(data, starts, sizes, kinds, fracs, code_pages, tables, out, offsets, valid, status)
        validity = pa.array(valid).buffers()[1]
        array_type = pa.string() if offsets.dtype == np.int32 else pa.large_string()
        text = pa.Array.from_buffers(array_type, n, [validity, pa.py_buffer(offsets), pa.py_buffer(out)],
                                     null_count=int(n - valid.sum()))
        return (text.cast(pa.string()) if array_type != pa.string() else text), status


@kernel
def _put_code_point(out, at, cp):
    """``cp`` as UTF-8 at out[at:]; returns the end. Callers leave 4 bytes of room."""
    if cp < 0x80:
        out[at] = cp
        return at + 1
    if cp < 0x800:
        out[at] = 0xC0 | (cp >> 6)
        out[at + 1] = 0x80 | (cp & 0x3F)
        return at + 2
    if cp < 0x10000:
        out[at] = 0xE0 | (cp >> 12)
        out[at + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[at + 2] = 0x80 | (cp & 0x3F)
        return at + 3
    out[at] = 0xF0 | (cp >> 18)
    out[at + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[at + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[at + 3] = 0x80 | (cp & 0x3F)
    return at + 4


@kernel
def _put_utf8(out, at, data, first, size):
    """data[first:first+size] as UTF-8 at out[at:], each byte that starts no valid sequence as
    U+FFFD (3 bytes out for 1 in: within the room of a field); returns the end."""
    j = 0
    while j < size:
        lead = data[first + j]
        length = 1 if lead < 0x80 else 2 if 0xC2 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else \
            4 if 0xF0 <= lead < 0xF5 else 0
        good = length > 0 and j + length <= size
        if good and length > 1:
            for k in range(1, length):
                if data[first + j + k] & 0xC0 != 0x80:
                    good = False
            second = data[first + j + 1]
            if good and ((lead == 0xE0 and second < 0xA0) or (lead == 0xED and second >= 0xA0)
                         or (lead == 0xF0 and second < 0x90) or (lead == 0xF4 and second >= 0x90)):
                good = False  # overlong, surrogate or past U+10FFFF
        if good:
            for k in range(length):
                out[at + k] = data[first + j + k]
            at += length
            j += length
        else:
            at = _put_code_point(out, at, 0xFFFD)
            j += 1
    return at


@kernel
def _put_hex(out, at, data, first, size, hexdigits):
    for j in range(size):
        out[at] = hexdigits[data[first + j] >> 4]
        out[at + 1] = hexdigits[data[first + j] & 0x0F]
        at += 2
    return at


@kernel
def _render_number(data, start, size, float_form, frac, out, at, digits):
    """The VDN number in data[start:start+size] as decimal text at out[at:]; returns (end, status).
    ``digits`` is scratch room for 2 * size digits."""
    if size < 1:
        return at, NO_DIGITS
    characteristic = data[start]
    count = 2 * (size - 1)
    if count == 0 and characteristic != 0x80:
        return at, NO_DIGITS
    for i in range(size - 1):
        byte = data[start + 1 + i]
        digits[2 * i] = byte >> 4
        digits[2 * i + 1] = byte & 0x0F
    for i in range(count):
        if digits[i] > 9:
            return at, NOT_A_DIGIT
    if characteristic == 0x80 or count == 0:
        last = -1
        negative = False
        exponent = 0
    else:
        negative = characteristic < 0x80
        exponent = (0x40 - characteristic) if negative else (characteristic - 0xC0)
        last = -1
        for i in range(count):
            if digits[i] != 0:
                last = i
        if negative:
            if last < 0:
                return at, BAD_NEGATIVE
            for i in range(last):
                digits[i] = 9 - digits[i]
            digits[last] = 10 - digits[last]
            last = -1
            for i in range(count):
                if digits[i] != 0:
                    last = i
    if last < 0:  # zero
        out[at] = 48
        at += 1
        if not float_form and frac > 0:
            out[at] = 46
            at += 1
            for i in range(frac):
                out[at + i] = 48
            at += frac
        return at, OK
    if negative:
        out[at] = 45
        at += 1
    # integer digits: mantissa digits 0..exponent-1 (zeros past the mantissa)
    if exponent <= 0:
        out[at] = 48
        at += 1
    else:
        for i in range(exponent):
            out[at] = 48 + (digits[i] if i < count else 0)
            at += 1
    # fraction digits: as many as FIXED declares, more when the value holds more; FLOAT: what it holds
    needed = last + 1 - exponent
    decimals = needed if needed > 0 else 0
    if not float_form and frac > decimals:
        decimals = frac
    if decimals > 0:
        out[at] = 46
        at += 1
        for i in range(decimals):
            position = exponent + i
            out[at] = 48 + (digits[position] if 0 <= position < count else 0)
            at += 1
    return at, OK


@kernel
def _render(data, starts, sizes, kinds, fracs, code_pages, tables, out, offsets, valid, status):
    """Each field i (data[starts[i]] its defined byte, sizes[i] bytes with it) as text: out[offsets[i]:offsets[i+1]].
    ``out`` holds 3 * size + FIELD_TEXT_ROOM bytes per field, the most a field can become (a number:
    2 * size digits, up to 64 zeros of exponent and MAX_FRAC of declared decimals, a sign and a
    point; a character: 3 bytes of UTF-8)."""
    hexdigits = np.array([48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 65, 66, 67, 68, 69, 70], dtype=np.uint8)
    digits = np.zeros(2 * (sizes.max() + 1) if len(sizes) else 2, dtype=np.int32)
    at = 0
    for i in range(len(starts)):
        offsets[i] = at
        start = starts[i]
        defined = data[start]
        if defined == UNDEF_BYTE or defined == OVERFLOW_BYTE:
            valid[i] = False
            continue
        valid[i] = True
        first = start + 1
        size = sizes[i] - 1
        kind = kinds[i]
        if kind == DATETIME_BIG or kind == DATETIME_LITTLE:
            if defined != UNICODE_DEFINED_BYTE:
                kind = TEXT
            else:
                kind = UCS2_BIG if kind == DATETIME_BIG else UCS2_LITTLE
        if kind == FIXED or kind == FLOAT:
            end, status[i] = _render_number(data, first, size, kind == FLOAT, fracs[i], out, at, digits)
            if status[i] == OK:
                at = end
            else:  # kept as hex, the row says why
                at = _put_hex(out, at, data, first, size, hexdigits)
        elif kind == TEXT:
            page = code_pages[i]
            if page == CP500_IF_EBCDIC_BLANK:
                page = CP500 if defined == EBCDIC_BLANK else LATIN_1
            table = tables[page]
            for j in range(size):
                at = _put_code_point(out, at, table[data[first + j]])
        elif kind == UCS2_BIG or kind == UCS2_LITTLE:
            j = 0
            while j + 1 < size:
                if kind == UCS2_BIG:
                    unit = (np.int32(data[first + j]) << 8) | data[first + j + 1]
                else:
                    unit = (np.int32(data[first + j + 1]) << 8) | data[first + j]
                j += 2
                if 0xD800 <= unit < 0xDC00 and j + 1 < size:
                    if kind == UCS2_BIG:
                        low = (np.int32(data[first + j]) << 8) | data[first + j + 1]
                    else:
                        low = (np.int32(data[first + j + 1]) << 8) | data[first + j]
                    if 0xDC00 <= low < 0xE000:
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        j += 2
                    else:
                        unit = 0xFFFD
                elif 0xD800 <= unit < 0xE000:
                    unit = 0xFFFD
                at = _put_code_point(out, at, unit)
            if j < size:  # an odd byte count: half a character
                at = _put_code_point(out, at, 0xFFFD)
                status[i] = ODD_UCS2
        elif kind == BOOLEAN and size == 1 and data[first] <= 1:
            if data[first] == 1:
                for c in (116, 114, 117, 101):
                    out[at] = c
                    at += 1
            else:
                for c in (102, 97, 108, 115, 101):
                    out[at] = c
                    at += 1
        elif kind == UTF8:
            at = _put_utf8(out, at, data, first, size)
        else:  # bytes, and anything else: upper-case hex
            at = _put_hex(out, at, data, first, size, hexdigits)
    offsets[len(starts)] = at

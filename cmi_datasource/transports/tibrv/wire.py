"""The TIB/Rendezvous wire format, read and written (docs/spec/tibrv.md#the-wire-format).

TIBCO does not publish it; every rule here is taken from raitechnology/raimd
(``include/raimd/rv_msg.h``, ``src/rv_msg.cpp``: ``RvFieldIter::unpack``, ``get_rv_name``,
``pack_rv_size``):

* a message: u32 big-endian size (counting these 8 bytes), u32 magic 0x9955EEAA, then fields;
* a field: one byte name length (the name's bytes and its NUL, plus 2 when a field id follows
  the NUL; 0 for no name), the name, the big-endian u16 field id if any, one type byte, the size,
  the data;
* the size of scalar types (datetime, bool, ipdata, int, uint, real) is one byte; of a nested
  message 0x7A then the nested message's own u32 size (its header included); of every other type
  one byte (0 to 119), or 0x79 and a u16, or 0x7A and a u32, the u16/u32 counting its own bytes;
* all numbers are big-endian; ints, uints and reals take their width from the size.

Every type code is one row of ``TYPES``; a type not in it is kept as raw bytes, sized like a
string, so that nothing stops at a field it does not know.
"""
from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ...errors import CmiFormatError, Location, TruncatedError
from ...layout import BIG, Field, Layout

MAGIC = 0x9955EEAA
HEADER = Layout("RV message header", (Field("size", "I"), Field("magic", "I", MAGIC)))
SHORT_SIZE, LONG_SIZE = 0x79, 0x7A  # size forms: 0x79 + u16, 0x7A + u32 (each counting itself)
_SIZE_U16, _SIZE_U32 = struct.Struct(">H"), struct.Struct(">I")
MAX_NAME_BYTES = 255


class RvFormatError(CmiFormatError):
    """Bytes that are no TIB/Rendezvous message: a bad magic, a size past its message, a bad field."""


# -- types ------------------------------------------------------------------------------------

SCALAR, VARIABLE, NESTED = "scalar", "variable", "nested"  # how a type's size is written


@dataclass(frozen=True)
class RvType:
    code: int
    name: str
    size_form: str
    decode: Callable[[bytes], Any]


def _int(signed: bool) -> Callable[[bytes], int]:
    return lambda data: int.from_bytes(data, "big", signed=signed)


def _real(data: bytes) -> float:
    if len(data) not in (4, 8):
        raise ValueError("a real is 4 or 8 bytes")
    return struct.unpack(">d" if len(data) == 8 else ">f", data)[0]


def _string(data: bytes) -> bytes:
    """A string's bytes without the NUL that ends it (RV strings are bytes in the sender's code page)."""
    end = data.find(b"\0")
    return data if end < 0 else data[:end]


def _datetime(data: bytes) -> dt.datetime:
    """8 bytes: u32 seconds and u32 microseconds since 1970; up to 4: the seconds alone."""
    if len(data) != 8 and len(data) > 4:  # more would overflow datetime: no RV sender writes it
        raise ValueError("a datetime is 8 bytes (seconds, microseconds) or at most 4 (seconds)")
    seconds, micros = struct.unpack(">II", data) if len(data) == 8 else (int.from_bytes(data, "big"), 0)
    return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds, microseconds=micros)


def _array(code: str) -> Callable[[bytes], tuple]:
    width = struct.calcsize(code)
    return lambda data: struct.unpack(f">{len(data) // width}{code}", data[:len(data) - len(data) % width])


def _raw(data: bytes) -> bytes:
    return data


# Values are written by ``writer.py`` for the few types CMI sends (int, real, string, opaque);
# the sizes of every type, in both directions, come from ``size_form``.
TYPES: Dict[int, RvType] = {t.code: t for t in (
    RvType(1, "message", NESTED, _raw),  # its fields are read by ``RvField.value``
    RvType(2, "subject", VARIABLE, _string),
    RvType(3, "datetime", SCALAR, _datetime),
    RvType(7, "opaque", VARIABLE, _raw),
    RvType(8, "string", VARIABLE, _string),
    RvType(9, "bool", SCALAR, lambda data: any(data)),
    RvType(10, "ipdata", SCALAR, _raw),
    RvType(11, "int", SCALAR, _int(True)),
    RvType(12, "uint", SCALAR, _int(False)),
    RvType(13, "real", SCALAR, _real),
    RvType(32, "encrypted", VARIABLE, _raw),
    RvType(34, "i8 array", VARIABLE, _array("b")),
    RvType(35, "u8 array", VARIABLE, _array("B")),
    RvType(36, "i16 array", VARIABLE, _array("h")),
    RvType(37, "u16 array", VARIABLE, _array("H")),
    RvType(38, "i32 array", VARIABLE, _array("i")),
    RvType(39, "u32 array", VARIABLE, _array("I")),
    RvType(40, "i64 array", VARIABLE, _array("q")),
    RvType(41, "u64 array", VARIABLE, _array("Q")),
    RvType(44, "f32 array", VARIABLE, _array("f")),
    RvType(45, "f64 array", VARIABLE, _array("d")),
    RvType(47, "xml", VARIABLE, _raw),
    RvType(48, "string array", VARIABLE, _raw),
    RvType(49, "message array", VARIABLE, _raw),
)}
MESSAGE, STRING, OPAQUE, INT, UINT, REAL = 1, 8, 7, 11, 12, 13


def type_name(code: int) -> str:
    known = TYPES.get(code)
    return known.name if known else f"type {code}"


# -- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RvField:
    name: str  # "" for a field without a name
    field_id: Optional[int]
    type: int
    data: bytes  # the value's bytes as sent (a nested message: its whole wire form)
    offset: int  # where the field starts in the buffer it was read from
    data_offset: int  # where its data starts in that buffer (data_offset + len(data): where the next field starts)

    @property
    def value(self) -> Any:
        return self.decoded()

    def decoded(self, where: Callable[[int], Location] = lambda at: Location(None, None, None, at)) -> Any:
        """The value; ``where`` maps an offset in the buffer the field was read from to the
        location an error names. Data of a width its type cannot take is an RvFormatError."""
        if self.type == MESSAGE:
            return read_message(self.data, 0, lambda at: where(self.data_offset + at))[0]
        known = TYPES.get(self.type)
        if known is None:
            return self.data
        try:
            return known.decode(self.data)
        except (ValueError, OverflowError, struct.error) as e:
            raise RvFormatError(f"field {self.name!r} ({known.name}) of {len(self.data)} bytes cannot be read: {e}",
                                where(self.offset)) from None


def _need(buf: bytes, pos: int, count: int, end: int, what: str, where: Callable[[int], Location]) -> None:
    if count < 0 or pos + count > end:
        raise TruncatedError(f"{what} needs {count} bytes at offset {pos} but the message ends at {end}", where(pos))


def read_fields(buf: bytes, start: int, end: int,
                where: Callable[[int], Location] = lambda at: Location(None, None, None, at)) -> Iterator[RvField]:
    """The fields in buf[start:end] (the body of one message), in order."""
    pos = start
    while pos < end:
        field_start = pos
        name_len = buf[pos]
        pos += 1
        _need(buf, pos, name_len + 1, end, "field name and type", where)
        name_bytes = bytes(buf[pos:pos + name_len])
        pos += name_len
        field_id = None
        if name_len >= 3 and name_bytes[-3] == 0:  # "NAME\0" then a big-endian u16 field id
            field_id = int.from_bytes(name_bytes[-2:], "big")
            name_bytes = name_bytes[:-2]
        name = name_bytes.rstrip(b"\0").decode("latin-1")
        code = buf[pos]
        pos += 1
        form = TYPES[code].size_form if code in TYPES else VARIABLE
        _need(buf, pos, 1, end, "field size", where)
        size = buf[pos]
        pos += 1
        if form == NESTED:
            if size != LONG_SIZE:
                raise RvFormatError(f"nested message field {name!r} has size form {size:#x}, not 0x7a",
                                    where(pos - 1))
            _need(buf, pos, 4, end, "nested message size", where)
            size = _SIZE_U32.unpack_from(buf, pos)[0]  # the nested message's own size, header included
            if size < HEADER.size:
                raise RvFormatError(f"nested message field {name!r} declares {size} bytes", where(pos))
        elif form == VARIABLE and size in (SHORT_SIZE, LONG_SIZE):
            width = 2 if size == SHORT_SIZE else 4
            _need(buf, pos, width, end, "field size", where)
            size = (_SIZE_U16 if width == 2 else _SIZE_U32).unpack_from(buf, pos)[0] - width
            pos += width
            if size < 0:
                raise RvFormatError(f"field {name!r} declares a size smaller than its own size bytes", where(pos))
        _need(buf, pos, size, end, f"field {name!r} ({type_name(code)})", where)
        yield RvField(name, field_id, code, bytes(buf[pos:pos + size]), field_start, pos)
        pos += size


def message_end(buf: bytes, pos: int, where: Callable[[int], Location] = lambda at: Location(None, None, None, at)
                ) -> int:
    """Where the message at ``pos`` ends, its header checked."""
    _need(buf, pos, HEADER.size, len(buf), "message header", where)
    header = HEADER.unpack(buf, pos, BIG)
    if header["magic"] != MAGIC:
        raise RvFormatError(f"no RV message here: magic {header['magic']:#010x}, not {MAGIC:#010x}", where(pos))
    if header["size"] < HEADER.size:
        raise RvFormatError(f"message declares {header['size']} bytes, less than its header", where(pos))
    _need(buf, pos, header["size"], len(buf), "message", where)
    return pos + header["size"]


def read_message(buf: bytes, pos: int, where: Callable[[int], Location] = lambda at: Location(None, None, None, at)
                 ) -> Tuple[List[RvField], int]:
    """The fields of the message at ``pos`` and where it ends."""
    end = message_end(buf, pos, where)
    return list(read_fields(buf, pos + HEADER.size, end, where)), end


# -- writing ----------------------------------------------------------------------------------


def _size_bytes(size: int) -> bytes:
    if size < 0x78:
        return bytes([size])
    if size + 2 < 0x7530:  # raimd's MAX_RV_SHORT_SIZE
        return bytes([SHORT_SIZE]) + _SIZE_U16.pack(size + 2)
    return bytes([LONG_SIZE]) + _SIZE_U32.pack(size + 4)


def field_bytes(name: str, field_id: Optional[int], code: int, data: bytes) -> bytes:
    """One field on the wire; ``data`` is the value's bytes (``encode`` of its type)."""
    name_part = name.encode("latin-1") + b"\0" if name else b""
    if field_id is not None:
        name_part += field_id.to_bytes(2, "big")
    if len(name_part) > MAX_NAME_BYTES:
        raise ValueError(f"RV field name {name!r} is longer than {MAX_NAME_BYTES} bytes")
    form = TYPES[code].size_form if code in TYPES else VARIABLE
    if form == SCALAR:
        size = bytes([len(data)])
    elif form == NESTED:
        size = bytes([LONG_SIZE])  # the nested message's own size follows, as its first 4 bytes
    else:
        size = _size_bytes(len(data))
    return bytes([len(name_part)]) + name_part + bytes([code]) + size + data


def message_bytes(fields: Sequence[bytes]) -> bytes:
    body = b"".join(fields)
    return HEADER.pack({"size": HEADER.size + len(body)}, BIG) + body


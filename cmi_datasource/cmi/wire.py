"""The primitive CMI field types (docs/spec/cmi.md#primitive-types) read and written.

``int`` 4 bytes, ``short`` 2, ``char`` 1, ``byte[n]`` n, ``long`` 4 (or 8 from 64-bit
senders). Strings are a length then that many characters, followed by a NUL unless
the sender omits terminators. The byte order is the message Encoding's.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Tuple

from ..errors import CmiEncodeError, Location, TruncatedError
from ..layout import BIG


@dataclass(frozen=True)
class WireFormat:
    order: str = BIG  # struct byte-order character
    long_size: int = 4
    terminated: bool = True  # strings followed by a NUL byte

    def with_order(self, order: str) -> "WireFormat":
        return WireFormat(order, self.long_size, self.terminated)

    def structs(self) -> Tuple[struct.Struct, struct.Struct, struct.Struct]:
        """(int, short, long) in this byte order and long size."""
        o = self.order
        return (struct.Struct(o + "i"), struct.Struct(o + "h"),
                struct.Struct(o + ("i" if self.long_size == 4 else "q")))


class FieldReader:
    """Sequential reader over one message payload (or a stream of several).

    ``locate`` maps a position in ``buf`` to the Location errors report: for a stream
    that spans messages it names the message holding that byte.
    """

    def __init__(self, buf: bytes, wire: WireFormat, locate: Callable[[int], Location], start: int = 0):
        self.buf = buf
        self.wire = wire
        self.locate = locate
        self.pos = start
        self._int, self._short, self._long = wire.structs()

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _need(self, n: int, what: str) -> None:
        if n < 0 or n > self.remaining:
            raise TruncatedError(f"{what} needs {n} bytes but {self.remaining} remain",
                                 self.locate(self.pos))

    def _unpack(self, s: struct.Struct, what: str) -> int:
        self._need(s.size, what)
        (v,) = s.unpack_from(self.buf, self.pos)
        self.pos += s.size
        return v

    def int32(self, what: str = "int") -> int:
        return self._unpack(self._int, what)

    def short(self, what: str = "short") -> int:
        return self._unpack(self._short, what)

    def long(self, what: str = "long") -> int:
        return self._unpack(self._long, what)

    def char(self, what: str = "char") -> int:
        self._need(1, what)
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def raw(self, n: int, what: str = "bytes") -> bytes:
        self._need(n, what)
        v = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(v)

    def string(self, what: str, length_is_int: bool = False) -> bytes:
        """A length-prefixed string (``long`` length, or ``int`` in the attachment header)."""
        at = self.pos
        n = self.int32(what + " length") if length_is_int else self.long(what + " length")
        if n < 0:
            raise TruncatedError(f"{what} has negative length {n}", self.locate(at))
        value = self.raw(n, what)
        if self.wire.terminated:
            end = self.char(what + " terminator")
            if end != 0:
                raise TruncatedError(f"{what} is not followed by a NUL terminator",
                                     self.locate(self.pos - 1))
        return value


class FieldWriter:
    """Builds a payload field by field, in the same primitives as FieldReader.

    A number its field cannot hold (too large, or no integer) is a CmiEncodeError, never a
    struct.error: callers that take values from a capture check them first, naming where they
    were read; this is what is left when one does not."""

    def __init__(self, wire: WireFormat):
        self.wire = wire
        self.out = bytearray()
        self._int, self._short, self._long = wire.structs()

    def _pack(self, s: struct.Struct, v: int, what: str) -> "FieldWriter":
        try:
            self.out += s.pack(v)
        except struct.error:
            raise CmiEncodeError(f"{v!r} does not fit a CMI {what} ({s.size}-byte integer)") from None
        return self

    def int32(self, v: int) -> "FieldWriter":
        return self._pack(self._int, v, "int")

    def short(self, v: int) -> "FieldWriter":
        return self._pack(self._short, v, "short")

    def long(self, v: int) -> "FieldWriter":
        return self._pack(self._long, v, "long")

    def char(self, v: int) -> "FieldWriter":
        try:
            self.out.append(v)
        except (TypeError, ValueError):
            raise CmiEncodeError(f"{v!r} does not fit a CMI char (one byte)") from None
        return self

    def raw(self, v: bytes) -> "FieldWriter":
        self.out += v
        return self

    def string(self, v: bytes, length_is_int: bool = False) -> "FieldWriter":
        (self.int32 if length_is_int else self.long)(len(v))
        self.out += v
        if self.wire.terminated:
            self.out.append(0)
        return self

    def getvalue(self) -> bytes:
        return bytes(self.out)

"""Binary captures of raw MQGET results: for each message, a binary MQMD (version 1 or 2,
either byte order) followed by a 4-byte big-endian data length and the data.

Programs that save what MQGET returned write this; the byte order of the MQMD is read
from its Version field (1 or 2), and its character set from its StrucId ("MD  " in
ASCII or EBCDIC). The format is documented in the README.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterable, Iterator, Optional, Tuple

from ...errors import CmiFormatError, Location, TruncatedError
from ...layout import BIG, LITTLE, Field, Layout
from ...messages import PhysicalMessage
from .message import mq_message
from .mqmd import MQMD, MQMD_STRUC_ID, MQMD_V1, MQMD_V2, descriptor_from_bytes, descriptor_to_bytes

ASCII_MAGIC = MQMD_STRUC_ID.encode("ascii")
EBCDIC_MAGIC = MQMD_STRUC_ID.encode("cp037")
# What follows each MQMD, always big-endian whatever the MQMD's byte order; then the data.
DATA_LENGTH = Layout("MQGET data length", (Field("data_length", "I"),))


class CaptureFormatError(CmiFormatError):
    """A binary capture record does not start with an MQMD."""


def looks_like_capture(head: bytes) -> bool:
    return head[:4] in (ASCII_MAGIC, EBCDIC_MAGIC)


def mqmd_shape(data: bytes, pos: int, location: Location) -> Tuple[str, int, str]:
    """(byte order, version, character codec) of the MQMD at ``pos``."""
    magic = data[pos:pos + 4]
    if magic not in (ASCII_MAGIC, EBCDIC_MAGIC):
        raise CaptureFormatError(f"expected an MQMD (StrucId 'MD  '), found {magic!r}", location)
    if len(data) - pos < 8:
        raise TruncatedError("capture ends inside an MQMD", location)
    codec = "latin-1" if magic == ASCII_MAGIC else "cp037"
    for order in (BIG, LITTLE):
        (version,) = struct.unpack_from(order + "i", data, pos + MQMD_V1.offsets["version"])
        if version in (1, 2):
            return order, version, codec
    raise CaptureFormatError("MQMD Version is neither 1 nor 2 in either byte order", location)


def parse_capture(data: bytes, source: str, base_offset: int = 0, first_index: int = 0) -> Iterator[PhysicalMessage]:
    pos, index = 0, first_index
    while pos < len(data):
        where = Location(source, index, base_offset + pos)
        order, version, codec = mqmd_shape(data, pos, where)
        size = (MQMD_V2 if version == 2 else MQMD_V1).size
        if len(data) - pos < size + DATA_LENGTH.size:
            raise TruncatedError("the capture ends inside the message's MQMD or data length", where)
        mqmd = descriptor_from_bytes(data, pos, order, version, codec, where)
        length = DATA_LENGTH.unpack(data, pos + size, BIG, where)["data_length"]
        start = pos + size + DATA_LENGTH.size
        if length > len(data) - start:
            raise TruncatedError(f"message declares {length} data bytes; {len(data) - start} remain", where)
        end = start + length
        yield mq_message(mqmd, data[start:end], source, index, base_offset + pos, base_offset + end)
        pos, index = end, index + 1


def next_descriptor(data: bytes, offset: int) -> Optional[int]:
    """The first offset at or after ``offset`` where an MQMD of a known shape starts (its StrucId
    and a version of 1 or 2), for reading on past damage; None when there is none."""
    at = offset
    while at < len(data):
        found = [p for p in (data.find(ASCII_MAGIC, at), data.find(EBCDIC_MAGIC, at)) if p >= 0]
        if not found:
            return None
        at = min(found)
        try:
            mqmd_shape(data, at, Location())
            return at
        except CmiFormatError:
            at += 1
    return None


def salvage(data: bytes, source: str, index: int, start: int) -> Optional[MQMD]:
    """The MQMD at ``start`` of a damaged record when it still reads whole, else None."""
    try:
        order, version, codec = mqmd_shape(data, start, Location(source, index, start))
        if len(data) - start < (MQMD_V2 if version == 2 else MQMD_V1).size:
            return None
        return descriptor_from_bytes(data, start, order, version, codec, Location(source, index, start))
    except CmiFormatError:
        return None


def write_capture(out: BinaryIO, messages: Iterable[Tuple[MQMD, bytes]], order: str = LITTLE,
                  codec: str = "latin-1") -> int:
    count = 0
    for count, (descriptor, payload) in enumerate(messages, start=1):
        out.write(descriptor_to_bytes(descriptor, order, codec))
        out.write(DATA_LENGTH.pack({"data_length": len(payload)}, BIG))
        out.write(payload)
    return count

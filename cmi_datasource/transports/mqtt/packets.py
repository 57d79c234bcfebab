"""MQTT control packets, 3.1, 3.1.1 and 5.0 (docs/spec/mqtt.md): read and written.

The fixed header (docs/spec/mqtt.md#fixed-header): byte 1 holds the packet type (bits 7-4), DUP (bit 3), QoS (bits 2-1,
3 is reserved) and RETAIN (bit 0); then the remaining length, 7 bits a byte, least significant
first, 0x80 meaning more follows, in one to four bytes (at most 268,435,455). CONNECT names the
protocol ("MQIsdp"/3 = 3.1, "MQTT"/4 = 3.1.1, "MQTT"/5 = 5.0), which decides whether PUBLISH
carries MQTT 5 properties. Every property is a row of ``PROPERTIES``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...errors import CmiFormatError, Location, TruncatedError

PACKET_TYPES = {1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP",
                8: "SUBSCRIBE", 9: "SUBACK", 10: "UNSUBSCRIBE", 11: "UNSUBACK", 12: "PINGREQ", 13: "PINGRESP",
                14: "DISCONNECT", 15: "AUTH"}
CONNECT, PUBLISH, AUTH = 1, 3, 15
MAX_REMAINING_LENGTH = 268_435_455
PROTOCOLS = {(b"MQIsdp", 3): "3.1", (b"MQTT", 4): "3.1.1", (b"MQTT", 5): "5.0"}


class MqttFormatError(CmiFormatError):
    """Bytes that break the MQTT packet rules: a 5-byte remaining length, QoS 3, a bad property."""


Where = Callable[[int], Location]


def _nowhere(at: int) -> Location:
    return Location(None, None, at)


def read_remaining_length(buf: bytes, pos: int, where: Where = _nowhere,
                          end: Optional[int] = None) -> Tuple[int, int]:
    """(remaining length, where the variable header starts) of the packet whose length starts at
    ``pos`` (the same varint encodes MQTT 5 property lengths and identifiers, within ``end``)."""
    end = len(buf) if end is None else end
    value, shift = 0, 0
    for i in range(4):
        if pos + i >= end:
            raise TruncatedError("the capture ends inside a remaining length", where(pos))
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos + i + 1
    raise MqttFormatError("remaining length has a fifth byte (its fourth byte has 0x80 set): malformed",
                          where(pos))


def encode_remaining_length(value: int) -> bytes:
    if not 0 <= value <= MAX_REMAINING_LENGTH:
        raise ValueError(f"remaining length {value} is outside 0..{MAX_REMAINING_LENGTH}")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@dataclass(frozen=True)
class Packet:
    type: int
    dup: bool
    qos: int
    retain: bool
    start: int  # offset of its first byte in the buffer read
    body_start: int  # where its variable header starts
    end: int

    @property
    def name(self) -> str:
        return PACKET_TYPES.get(self.type, f"type {self.type}")


def frame_packet(buf: bytes, pos: int, where: Where = _nowhere) -> Packet:
    """The packet at ``pos`` as its fixed header frames it, whatever its type and flags: what a
    stream is read by, packet after packet. Its declared length is checked against the bytes
    there before use (``TruncatedError``); a fifth remaining-length byte leaves its end unknown."""
    first = buf[pos]
    length, body = read_remaining_length(buf, pos + 1, where)
    if body + length > len(buf):
        raise TruncatedError(f"{PACKET_TYPES.get(first >> 4, 'packet')} declares {length} bytes; "
                             f"{len(buf) - body} remain", where(pos))
    return Packet(first >> 4, bool(first & 8), (first >> 1) & 3, bool(first & 1), pos, body, body + length)


def refuse_reserved(packet: Packet, where: Where = _nowhere) -> None:
    """MqttFormatError for what no version allows in a fixed header: packet type 0, QoS 3."""
    if packet.type == 0:
        raise MqttFormatError("packet type 0 is reserved: malformed packet", where(packet.start))
    if packet.qos == 3:
        raise MqttFormatError("QoS 3 is reserved: malformed packet", where(packet.start))


def read_packet(buf: bytes, pos: int, where: Where = _nowhere) -> Packet:
    """The packet at ``pos``, framed (``frame_packet``) and its fixed header checked (``refuse_reserved``)."""
    packet = frame_packet(buf, pos, where)
    refuse_reserved(packet, where)
    return packet


# What a packet other than CONNECT tells of its connection's protocol version, by its remaining
# length (OASIS MQTT 3.1.1 and 5.0, chapter 3): type -> (the one length only MQTT 3.1/3.1.1 give
# it, or None; the least length only MQTT 5 gives it, or None). A CONNACK is 2 bytes in 3.1/3.1.1
# (flags, return code) and at least 3 in 5 (its properties' length follows); PUBACK to PUBCOMP
# are 2 bytes (the packet id) in 3.1/3.1.1, and MQTT 5 may add a reason code and properties;
# UNSUBACK is 2 bytes in 3.1/3.1.1, at least 4 in 5 (properties, a reason code per filter);
# DISCONNECT is empty in 3.1/3.1.1, MQTT 5 may add a reason code; AUTH exists in MQTT 5 alone.
VERSION_BY_LENGTH: Dict[int, Tuple[Optional[int], Optional[int]]] = {
    2: (2, 3), 4: (None, 3), 5: (None, 3), 6: (None, 3), 7: (None, 3), 11: (2, 4), 14: (None, 1), 15: (None, 0),
}
LEVEL_3 = 4  # MQTT 3.1 and 3.1.1 lay out every packet but CONNECT alike: read as 3.1.1 (level 4)
VERSION_3 = "3.1 or 3.1.1"  # what a connection whose CONNECT was not captured shows when its packets tell 3.x


def level_told(packet: Packet) -> Optional[int]:
    """The protocol level the packet's length proves (5, or ``LEVEL_3`` for 3.1/3.1.1), or None."""
    rule = VERSION_BY_LENGTH.get(packet.type)
    if rule is None:
        return None
    only_3, least_5 = rule
    length = packet.end - packet.body_start
    if length == only_3:
        return LEVEL_3
    if least_5 is not None and length >= least_5:
        return 5
    return None


# -- MQTT 5 properties ------------------------------------------------------------------------


def _u16(buf, pos, end, where):
    if pos + 2 > end:
        raise TruncatedError("a two-byte integer passes the end of its packet", where(pos))
    return struct.unpack_from(">H", buf, pos)[0], pos + 2


def _u32(buf, pos, end, where):
    if pos + 4 > end:
        raise TruncatedError("a four-byte integer passes the end of its packet", where(pos))
    return struct.unpack_from(">I", buf, pos)[0], pos + 4


def _byte(buf, pos, end, where):
    if pos >= end:
        raise TruncatedError("a byte passes the end of its packet", where(pos))
    return buf[pos], pos + 1


def _varint(buf, pos, end, where):
    return read_remaining_length(buf, pos, where, end)


def _binary(buf, pos, end, where):
    n, pos = _u16(buf, pos, end, where)
    if pos + n > end:
        raise TruncatedError(f"a field of {n} bytes passes the end of its packet", where(pos))
    return bytes(buf[pos:pos + n]), pos + n


def _utf8(buf, pos, end, where):
    raw, after = _binary(buf, pos, end, where)
    try:
        return raw.decode("utf-8"), after
    except UnicodeDecodeError:
        raise MqttFormatError("a string is not valid UTF-8", where(pos)) from None


def _pair(buf, pos, end, where):
    key, pos = _utf8(buf, pos, end, where)
    value, pos = _utf8(buf, pos, end, where)
    return (key, value), pos


_READERS = {"byte": _byte, "u16": _u16, "u32": _u32, "varint": _varint, "utf8": _utf8, "binary": _binary,
            "pair": _pair}

# identifier -> (name, kind) (OASIS MQTT 5.0, section 2.2.2.2)
PROPERTIES: Dict[int, Tuple[str, str]] = {
    0x01: ("payload_format", "byte"), 0x02: ("message_expiry", "u32"), 0x03: ("content_type", "utf8"),
    0x08: ("response_topic", "utf8"), 0x09: ("correlation_data", "binary"), 0x0B: ("subscription_id", "varint"),
    0x11: ("session_expiry", "u32"), 0x12: ("assigned_client_id", "utf8"), 0x13: ("server_keep_alive", "u16"),
    0x15: ("authentication_method", "utf8"), 0x16: ("authentication_data", "binary"),
    0x17: ("request_problem_information", "byte"), 0x18: ("will_delay", "u32"),
    0x19: ("request_response_information", "byte"), 0x1A: ("response_information", "utf8"),
    0x1C: ("server_reference", "utf8"), 0x1F: ("reason_string", "utf8"), 0x21: ("receive_maximum", "u16"),
    0x22: ("topic_alias_maximum", "u16"), 0x23: ("topic_alias", "u16"), 0x24: ("maximum_qos", "byte"),
    0x25: ("retain_available", "byte"), 0x26: ("user_property", "pair"), 0x27: ("maximum_packet_size", "u32"),
    0x28: ("wildcard_subscription_available", "byte"), 0x29: ("subscription_id_available", "byte"),
    0x2A: ("shared_subscription_available", "byte"),
}


def read_properties(buf: bytes, pos: int, end: int, where: Where = _nowhere) -> Tuple[List[Tuple[str, Any]], int]:
    """The property block at ``pos`` (its varint length, then the properties, in order: repeated
    user properties stay in the order sent), and where it ends."""
    length, pos = _varint(buf, pos, end, where)
    stop = pos + length
    if stop > end:
        raise TruncatedError(f"properties declare {length} bytes; {end - pos} remain", where(pos))
    found: List[Tuple[str, Any]] = []
    while pos < stop:
        ident, pos = _varint(buf, pos, stop, where)
        known = PROPERTIES.get(ident)
        if known is None:
            raise MqttFormatError(f"unknown MQTT 5 property identifier {ident:#x}", where(pos))
        value, pos = _READERS[known[1]](buf, pos, stop, where)
        found.append((known[0], value))
    return found, stop


# -- CONNECT and PUBLISH ----------------------------------------------------------------------


@dataclass(frozen=True)
class Connect:
    version: str  # "3.1", "3.1.1" or "5.0" (``VERSION_3`` when told by other packets)
    level: int
    client_id: Optional[str]  # None when not read
    keep_alive: int
    properties: Tuple[Tuple[str, Any], ...] = ()


def read_protocol(buf: bytes, packet: Packet, where: Where = _nowhere) -> Tuple[Connect, int]:
    """The protocol a CONNECT names (its client id not yet read) and where its connect flags start:
    read first, so that a CONNECT refused further on still gives its connection's version."""
    name, pos = _binary(buf, packet.body_start, packet.end, where)
    level, pos = _byte(buf, pos, packet.end, where)
    version = PROTOCOLS.get((name, level))
    if version is None:
        raise MqttFormatError(f"CONNECT names protocol {name!r} level {level}: not MQTT 3.1, 3.1.1 or 5.0",
                              where(packet.start))
    return Connect(version, level, None, 0), pos


def read_connect(buf: bytes, packet: Packet, where: Where = _nowhere) -> Connect:
    protocol, pos = read_protocol(buf, packet, where)
    _flags, pos = _byte(buf, pos, packet.end, where)
    keep_alive, pos = _u16(buf, pos, packet.end, where)
    properties: List[Tuple[str, Any]] = []
    if protocol.level == 5:
        properties, pos = read_properties(buf, pos, packet.end, where)
    client_id, pos = _utf8(buf, pos, packet.end, where)
    return Connect(protocol.version, protocol.level, client_id, keep_alive, tuple(properties))


@dataclass(frozen=True)
class Publish:
    topic: str
    packet_id: Optional[int]
    properties: Tuple[Tuple[str, Any], ...]
    payload_start: int


def read_topic(buf: bytes, packet: Packet, where: Where = _nowhere) -> Tuple[str, Optional[int], int]:
    """What every version puts first in a PUBLISH: its topic, then its packet id when QoS > 0;
    and where what follows starts (MQTT 5 properties, or the payload)."""
    topic, pos = _utf8(buf, packet.body_start, packet.end, where)
    packet_id = None
    if packet.qos in (1, 2):  # QoS 3 is refused: whether an id follows is not known
        packet_id, pos = _u16(buf, pos, packet.end, where)
    return topic, packet_id, pos


def read_publish(buf: bytes, packet: Packet, level: int, where: Where = _nowhere) -> Publish:
    """The PUBLISH variable header (topic, packet id when QoS > 0, MQTT 5 properties) and where the
    payload starts; ``level`` is the protocol level its connection's CONNECT named."""
    topic, packet_id, pos = read_topic(buf, packet, where)
    properties: List[Tuple[str, Any]] = []
    if level == 5:
        properties, pos = read_properties(buf, pos, packet.end, where)
    return Publish(topic, packet_id, tuple(properties), pos)


# -- writing (for tests and writers) ---------------------------------------------------------------


def packet_bytes(packet_type: int, body: bytes, dup: bool = False, qos: int = 0, retain: bool = False) -> bytes:
    first = packet_type << 4 | (8 if dup else 0) | qos << 1 | (1 if retain else 0)
    return bytes([first]) + encode_remaining_length(len(body)) + body

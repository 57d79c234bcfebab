"""MQTT packets of one direction of one connection as physical messages (contract section 4).

Each PUBLISH is one physical message; its descriptor comes from, first match wins:

1. MQTT 5 properties: Correlation Data is the CorrelId (right-padded with zeros to 24 bytes), the
   user properties ``MsgType``, ``Encoding``, ``CodedCharSetId`` and ``MsgId`` (hex) give the rest;
   a message with a MsgType is a CMI message. Where the contract is silent we chose: Encoding
   absent = 546 (what x86 publishers write), CodedCharSetId absent = 0 (``defaultCcsid``).
2. a payload that starts with an MQMD ("MD  "): the MQMD is the descriptor and what follows it
   the message data, its MQ header chain walked as on a queue;
3. otherwise it is no CMI message. Every packet stays visible in the messages view.

Raw streams (``transport.py``) and pcap captures (``pcap.py``) both read their streams here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

from ...errors import CmiFormatError, Location
from ...messages import Descriptor, PhysicalMessage
from ..mq import mqget
from ..mq.envelope import unwrap
from ..mq.message import mq_message
from ..mq.mqmd import MQMD_V1, MQMD_V2, descriptor_from_bytes
from . import packets
from .packets import CONNECT, PUBLISH, MqttFormatError

DEFAULT_ENCODING = 546  # contract section 4 is silent: x86 publishers, MQENC_NATIVE
CORREL_ID_SIZE = 24


@dataclass(frozen=True)
class MqttDetails:
    packet_type: str
    qos: int
    dup: bool
    retain: bool
    packet_id: Optional[int] = None
    topic: Optional[str] = None
    client_id: Optional[str] = None
    version: Optional[str] = None  # of the connection, from its CONNECT
    properties: Tuple[str, ...] = ()  # MQTT 5 properties as "name=value", in the order sent
    raw: bool = False  # a PUBLISH re-read without its connection's protocol level
    mq: Any = None  # an MQMD-prefixed payload's MQ record (transports.mq.message.MqDetails)
    connection: Optional[str] = None  # in a capture: "client:port -> broker:port"
    direction: Optional[str] = None  # "to broker" or "from broker"
    frame: Optional[int] = None  # the capture frame that carried its first byte
    # A DUP redelivery: the 0-based index (PhysicalMessage.index) of the PUBLISH it repeats, in the
    # same file; the messages view shows it, numbered from 1, in its common duplicate_of column.
    duplicate_of: Optional[int] = None


def _property_text(name: str, value: Any) -> str:
    if isinstance(value, tuple):
        return f"{name}={value[0]}={value[1]}"
    if isinstance(value, bytes):
        return f"{name}=0x{value.hex().upper()}"
    return f"{name}={value}"


def cmi_message(payload: bytes, properties: Sequence[Tuple[str, Any]], source: str, index: int, start: int,
                end: int, where: Location) -> PhysicalMessage:
    """A PUBLISH payload as a physical message, its descriptor found as the contract says."""
    user = {key: value for name, value in properties if name == "user_property" for key, value in [value]}
    correl = next((value for name, value in properties if name == "correlation_data"), None)
    if "MsgType" in user:
        try:
            descriptor = Descriptor(int(user["MsgType"]), (correl or b"")[:CORREL_ID_SIZE].ljust(CORREL_ID_SIZE, b"\0"),
                                    int(user.get("Encoding", DEFAULT_ENCODING)), int(user.get("CodedCharSetId", 0)))
        except ValueError:
            raise MqttFormatError(f"user properties {user} do not give whole numbers for MsgType, Encoding "
                                  f"and CodedCharSetId", where) from None
        return PhysicalMessage(descriptor, payload, source, index, start, end)
    if mqget.looks_like_capture(payload[:4]):  # an MQMD in front of the data
        order, version, codec = mqget.mqmd_shape(payload, 0, where)
        layout = MQMD_V2 if version == 2 else MQMD_V1
        mqmd = descriptor_from_bytes(payload, 0, order, version, codec, where)
        message = unwrap(mq_message(mqmd, payload[layout.size:], source, index, start, end))
        return dataclasses.replace(message, header_length=message.header_length + layout.size)
    return PhysicalMessage(None, payload, source, index, start, end)


def stream_messages(data: bytes, source: str, base_offset: int = 0, first_index: int = 0,
                    connect: Optional[packets.Connect] = None, rereading: bool = False,
                    aliases: Optional[Dict[int, str]] = None) -> Iterator[PhysicalMessage]:
    """The packets of one direction of one connection as physical messages. ``connect``: the
    connection's CONNECT when it is not in ``data`` (the broker's direction of a capture);
    ``aliases``: the topic aliases set before ``data`` (a stream read in pieces), kept up to date."""
    aliases = {} if aliases is None else aliases
    pos, index = 0, first_index
    while pos < len(data):
        where = Location(source, index, base_offset + pos)
        packet = packets.read_packet(data, pos, lambda at: Location(source, index, base_offset + at))
        start, end = base_offset + packet.start, base_offset + packet.end
        if packet.type == CONNECT:
            connect = packets.read_connect(data, packet, lambda at: Location(source, index, base_offset + at))
            aliases.clear()
            details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, client_id=connect.client_id,
                                  version=connect.version, properties=tuple(_property_text(*p)
                                                                              for p in connect.properties))
            yield PhysicalMessage(None, b"", source, index, start, end, details=details,
                                  header_length=packet.end - packet.start)
        elif packet.type == PUBLISH:
            if connect is None and rereading:
                yield PhysicalMessage(None, bytes(data[packet.start:packet.end]), source, index, start, end,
                                      details=MqttDetails(packet.name, packet.qos, packet.dup, packet.retain,
                                                          raw=True))
            else:
                if connect is None:
                    raise MqttFormatError("PUBLISH before any CONNECT: the stream's protocol version is "
                                          "unknown", where)
                yield publish_message(data, packet, connect, aliases, source, index, base_offset, where)
        else:
            acknowledged = None  # PUBACK..PUBCOMP name the packet id they answer first
            if packet.type in (4, 5, 6, 7) and packet.end - packet.body_start >= 2:
                acknowledged = int.from_bytes(data[packet.body_start:packet.body_start + 2], "big")
            details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, acknowledged,
                                  client_id=connect.client_id if connect else None,
                                  version=connect.version if connect else None)
            yield PhysicalMessage(None, b"", source, index, start, end, details=details,
                                  header_length=packet.end - packet.start)
        pos, index = packet.end, index + 1


def publish_message(data: bytes, packet: packets.Packet, connect: packets.Connect, aliases: Dict[int, str],
                    source: str, index: int, base_offset: int, where: Location) -> PhysicalMessage:
    """A PUBLISH packet as a physical message, in the protocol version its connection's CONNECT named."""
    publish = packets.read_publish(data, packet, connect.level, lambda at: Location(source, index, base_offset + at))
    topic = publish.topic
    alias = next((value for name, value in publish.properties if name == "topic_alias"), None)
    problem = None
    if alias is not None:
        if topic:
            aliases[alias] = topic
        elif alias in aliases:
            topic = aliases[alias]
        else:
            problem = f"topic alias {alias} was never set on this connection"
    message = cmi_message(bytes(data[publish.payload_start:packet.end]), publish.properties, source, index,
                          base_offset + packet.start, base_offset + packet.end, where)
    details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, publish.packet_id, topic,
                          connect.client_id, connect.version, tuple(_property_text(*p) for p in publish.properties),
                          mq=message.details)
    return dataclasses.replace(message, details=details, problem=problem or message.problem,
                               header_length=message.header_length + publish.payload_start - packet.start,
                               reread_hint=connect.level)


def whole_packets(data: bytes) -> int:
    """Where the last MQTT packet held whole in ``data`` ends, from their fixed headers: a stream
    is read in pieces of whole packets (what a malformed header stops is read, and reported, in
    the next piece)."""
    pos = 0
    while pos < len(data):
        try:
            length, body = packets.read_remaining_length(data, pos + 1)
        except CmiFormatError:
            return pos
        if body + length > len(data):
            return pos
        pos = body + length
    return pos


def connect_of(details: MqttDetails) -> packets.Connect:
    """The CONNECT a CONNECT message's details describe: what the packets after it are read by."""
    return packets.Connect(details.version, {"3.1": 3, "3.1.1": 4, "5.0": 5}[details.version], details.client_id or "", 0)

"""MQTT packets of one direction of one connection as physical messages (contract section 4).

Each PUBLISH is one physical message; its descriptor comes from, first match wins:

1. MQTT 5 properties: Correlation Data is the CorrelId (right-padded with zeros to 24 bytes), the
   user properties ``MsgType``, ``Encoding``, ``CodedCharSetId`` and ``MsgId`` (hex) give the rest;
   a message with a MsgType is a CMI message. Where the contract is silent we chose: Encoding
   absent = 546 (what x86 publishers write), CodedCharSetId absent = 0 (``defaultCcsid``).
2. a payload that starts with an MQMD ("MD  "): the MQMD is the descriptor and what follows it
   the message data, its MQ header chain walked as on a queue;
3. otherwise it is no CMI message. Every packet stays visible in the messages view.

Raw streams (``transport.py``) and pcap captures (``pcap.py``) both read their streams here
(``stream_messages``): every packet the fixed header frames is listed, a refused one as one
message with its problem.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

from ...errors import CmiFormatError, KeptError, Location, TruncatedError
from ...messages import Descriptor, PhysicalMessage
from ..mq import mqget
from ..mq.envelope import unwrap
from ..mq.message import mq_message
from ..mq.mqmd import MQMD_V1, MQMD_V2, descriptor_from_bytes
from . import packets
from .packets import AUTH, CONNECT, PUBLISH, MqttFormatError

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
    version: Optional[str] = None  # of the connection: its CONNECT's, or what its other packets tell (Session)
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


# Packet types that may have carried a CMI message: a refused one is damage (``PhysicalMessage.damage``),
# which FAILFAST raises when no attachment claims it; other refused packets are rows with a problem.
MAY_CARRY_CMI = (0, PUBLISH)


class Session:
    """What one connection tells of its protocol version, shared by the reads of its two
    directions (a capture reads the client's first): the CONNECT read, else the version the
    connection's other packets prove by their lengths (``packets.level_told``), looked for only
    when a packet needs it."""

    def __init__(self, streams: Sequence[bytes] = ()):
        self.connect: Optional[packets.Connect] = None
        self._streams = streams
        self._told: Optional[Tuple[Optional[packets.Connect], str]] = None

    def version(self) -> Optional[packets.Connect]:
        return self.connect or self.told()[0]

    def unknown(self) -> str:
        """Why the version is not known."""
        return self.told()[1]

    def told(self) -> Tuple[Optional[packets.Connect], str]:
        """(the version the connection's packets other than CONNECT tell, or None; why none)."""
        if self._told is None:
            levels: Dict[int, str] = {}  # level -> the first packet that tells it
            for data in self._streams:
                for packet in framed(data):
                    level = packets.level_told(packet) if packet.type != CONNECT else None
                    if level is not None:
                        levels.setdefault(level, f"a {packet.end - packet.body_start}-byte {packet.name}")
            if len(levels) == 1:
                [(level, _)] = levels.items()
                version = "5.0" if level == 5 else packets.VERSION_3
                self._told = packets.Connect(version, level, None, 0), ""
            elif levels:
                self._told = None, (f"its packets disagree ({levels[5]} is MQTT 5's, {levels[packets.LEVEL_3]} "
                                    f"MQTT 3.1/3.1.1's)")
            else:
                self._told = None, "no other packet of the connection tells it"
        return self._told


def framed(data: bytes) -> Iterator[packets.Packet]:
    """The packets of a stream as their fixed headers frame them, up to the first that cannot be."""
    pos = 0
    while pos < len(data):
        try:
            packet = packets.frame_packet(data, pos)
        except CmiFormatError:
            return
        yield packet
        pos = packet.end


def stream_messages(data: bytes, source: str, base_offset: int = 0, first_index: int = 0,
                    session: Optional[Session] = None, rereading: bool = False) -> Iterator[PhysicalMessage]:
    """The packets of one direction of one connection as physical messages. ``session``: what the
    connection's other direction told of it (a capture's broker direction); a raw stream is a
    session of its own.

    Every packet the fixed header frames is one message. A packet refused (malformed, or a PUBLISH
    whose protocol version is unknown) is one message with its ``problem``, and reading goes on
    where its fixed header says it ends. A packet cut by the end of the stream is one message; a
    remaining length with a fifth byte gives no end to resume from (nothing after it can be proved
    to be a packet start), so the rest of the stream is one message naming where it starts."""
    session = session if session is not None else Session(() if rereading else (data,))
    aliases: Dict[int, str] = {}
    pos, index = 0, first_index
    while pos < len(data):
        where = _locator(source, index, base_offset)
        try:
            packet = packets.frame_packet(data, pos, where)
        except CmiFormatError as e:
            yield _unframed(data, pos, e, session, source, index, base_offset)
            return
        try:
            message = _packet_message(data, packet, session, aliases, source, index, base_offset, rereading)
        except CmiFormatError as e:
            message = _refused(data, packet, session, e, source, index, base_offset)
        yield message
        pos, index = packet.end, index + 1


def _locator(source: str, index: int, base_offset: int) -> packets.Where:
    return lambda at: Location(source, index, base_offset + at)


def _packet_message(data: bytes, packet: packets.Packet, session: Session, aliases: Dict[int, str], source: str,
                    index: int, base_offset: int, rereading: bool) -> PhysicalMessage:
    where = _locator(source, index, base_offset)
    packets.refuse_reserved(packet, where)
    start, end = base_offset + packet.start, base_offset + packet.end
    if packet.type == CONNECT:
        # The protocol first: a CONNECT refused further on still names its connection's version.
        session.connect, _ = packets.read_protocol(data, packet, where)
        aliases.clear()
        session.connect = connect = packets.read_connect(data, packet, where)
        details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, client_id=connect.client_id,
                              version=connect.version, properties=tuple(_property_text(*p) for p in connect.properties))
        return PhysicalMessage(None, b"", source, index, start, end, details=details,
                               header_length=packet.end - packet.start)
    version = session.version()
    if packet.type == AUTH and version is not None and version.level != 5:
        raise MqttFormatError("packet type 15 is reserved in MQTT 3.1 and 3.1.1 (AUTH is MQTT 5's): malformed "
                              "packet", where(packet.start))
    if packet.type == PUBLISH:
        if version is None and rereading:  # planning gave the level: ``rebuild`` reads it
            return PhysicalMessage(None, bytes(data[packet.start:packet.end]), source, index, start, end,
                                   details=MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, raw=True))
        if version is None:
            raise MqttFormatError(f"PUBLISH before any CONNECT that names the protocol, and {session.unknown()}: "
                                  f"the version is unknown, so whether MQTT 5 properties follow the topic, and "
                                  f"where the payload starts, cannot be told", where(packet.start))
        return publish_message(data, packet, version, aliases, source, index, base_offset, where(packet.start))
    acknowledged = None  # PUBACK..PUBCOMP name the packet id they answer first
    if packet.type in (4, 5, 6, 7) and packet.end - packet.body_start >= 2:
        acknowledged = int.from_bytes(data[packet.body_start:packet.body_start + 2], "big")
    details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, acknowledged,
                          client_id=version.client_id if version else None,
                          version=version.version if version else None)
    return PhysicalMessage(None, b"", source, index, start, end, details=details,
                           header_length=packet.end - packet.start)


def _refused(data: bytes, packet: packets.Packet, session: Session, error: CmiFormatError, source: str, index: int,
             base_offset: int) -> PhysicalMessage:
    """A packet framed but refused: one message with what does not depend on what was refused
    (type, flags, QoS, length; a PUBLISH's topic and packet id where they read), no payload."""
    topic = packet_id = None
    if packet.type == PUBLISH:
        try:
            topic, packet_id, _ = packets.read_topic(data, packet)
        except CmiFormatError:
            pass  # the problem already says what is wrong with the packet
    version = session.version()
    details = MqttDetails(packet.name, packet.qos, packet.dup, packet.retain, packet_id, topic,
                          client_id=version.client_id if version else None,
                          version=version.version if version else None)
    return PhysicalMessage(None, b"", source, index, base_offset + packet.start, base_offset + packet.end,
                           details=details, header_length=packet.end - packet.start, problem=error.problem,
                           damage=KeptError.of(error) if packet.type in MAY_CARRY_CMI else None)


def _unframed(data: bytes, pos: int, error: CmiFormatError, session: Session, source: str, index: int,
              base_offset: int) -> PhysicalMessage:
    """The rest of a stream from a packet whose fixed header gives no end inside it: a packet
    cut by the end of the stream, or a remaining length with a fifth byte."""
    first = data[pos]
    problem = error.problem
    if not isinstance(error, TruncatedError):
        problem += (f"; where the packet ends cannot be told, so the {len(data) - pos} bytes from byte {pos} of "
                    f"the stream to its end are not read")
    version = session.version()
    details = MqttDetails(packets.PACKET_TYPES.get(first >> 4, f"type {first >> 4}"), (first >> 1) & 3,
                          bool(first & 8), bool(first & 1), client_id=version.client_id if version else None,
                          version=version.version if version else None)
    harmless = isinstance(error, TruncatedError) and first >> 4 not in MAY_CARRY_CMI  # a cut PUBACK, say
    damage = None if harmless else KeptError.of(type(error)(problem, error.location, error.hint))
    return PhysicalMessage(None, b"", source, index, base_offset + pos, base_offset + len(data), details=details,
                           header_length=len(data) - pos, problem=problem, damage=damage)


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

"""MQTT packets of one direction of one connection as physical messages (docs/spec/mqtt.md#cmi-over-mqtt).

Each PUBLISH is one physical message; its descriptor comes from, first match wins:

1. MQTT 5 properties: Correlation Data is the CorrelId (right-padded with zeros to 24 bytes), the
   user properties ``MsgType``, ``Encoding``, ``CodedCharSetId`` and ``MsgId`` (hex) give the rest;
   a message with a MsgType is a CMI message. Where the specification is silent we chose
   (docs/decisions.md#mqtt): Encoding
   absent = 546 (what x86 publishers write), CodedCharSetId absent = 0 (``defaultCcsid``).
2. a payload that starts with an MQMD ("MD  "): the MQMD is the descriptor and what follows it
   the message data, its MQ header chain walked as on a queue;
3. otherwise it is no CMI message. Every packet stays visible in the messages view.

Raw streams (``transport.py``, in pieces of whole packets) and pcap captures (``pcap.py``, packet
by packet as their frames come) both read their streams here (``stream_messages``,
``packet_message``): every packet the fixed header frames is listed, a refused one as one message
with its problem.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

from ...errors import CmiFormatError, KeptError, Location, TruncatedError
from ...messages import Descriptor, Origin, PhysicalMessage
from ..mq import mqget
from ..mq.envelope import unwrap
from ..mq.message import mq_message
from ..mq.mqmd import MQMD_V1, MQMD_V2, descriptor_from_bytes
from . import packets
from .packets import AUTH, CONNECT, PUBLISH, MqttFormatError

DEFAULT_ENCODING = 546  # docs/spec/mqtt.md#cmi-over-mqtt is silent: x86 publishers, MQENC_NATIVE
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
    """A PUBLISH payload as a physical message, its descriptor found as docs/spec/mqtt.md#cmi-over-mqtt says."""
    user = {key: value for name, value in properties if name == "user_property" for key, value in [value]}
    correl = next((value for name, value in properties if name == "correlation_data"), None)
    if "MsgType" in user:
        try:
            descriptor = Descriptor(int(user["MsgType"]), (correl or b"")[:CORREL_ID_SIZE].ljust(CORREL_ID_SIZE, b"\0"),
                                    int(user.get("Encoding", DEFAULT_ENCODING)), int(user.get("CodedCharSetId", 0)))
        except ValueError:
            raise MqttFormatError(f"user properties {user} do not give whole numbers for MsgType, Encoding "
                                  f"and CodedCharSetId", where) from None
        return PhysicalMessage(descriptor, payload, Origin(source, index, start, end))
    if mqget.looks_like_capture(payload[:4]):  # an MQMD in front of the data
        order, version, codec = mqget.mqmd_shape(payload, 0, where)
        layout = MQMD_V2 if version == 2 else MQMD_V1
        mqmd = descriptor_from_bytes(payload, 0, order, version, codec, where)
        message = unwrap(mq_message(mqmd, payload[layout.size:], source, index, start, end))
        origin = message.origin._replace(header_length=message.origin.header_length + layout.size)
        return dataclasses.replace(message, origin=origin)
    return PhysicalMessage(None, payload, Origin(source, index, start, end))


# Packet types that may have carried a CMI message: a refused one is damage (``PhysicalMessage.damage``),
# which FAILFAST raises when no attachment claims it; other refused packets are rows with a problem.
MAY_CARRY_CMI = (0, PUBLISH)


class Session:
    """What one connection tells of its protocol version, shared by the reads of its two
    directions: the CONNECT read, else the version the connection's other packets prove by their
    lengths (``packets.level_told``). A raw stream's packets are looked at when a packet needs
    the version (``streams`` given, or ``show``n piece by piece); a capture shows it each packet
    as soon as it is whole (``learn``), and reads a packet that needs the version once it
    ``knows`` (``pcap._MqttReader``)."""

    def __init__(self, streams: Sequence[bytes] = ()):
        self.connect: Optional[packets.Connect] = None
        self._levels: Dict[int, str] = {}  # level -> the first packet that tells it
        self._unseen = list(streams)  # streams whose packets it has not looked at yet

    def show(self, data: bytes) -> None:
        """The next piece of a stream read in pieces: the pieces before it are looked at now
        (they are not held), unless a CONNECT named the version."""
        if self.connect is None:
            self._look()
        self._unseen = [data]

    def learn(self, packet: packets.Packet) -> None:
        """A packet of the connection, framed: what its length tells of the version."""
        level = packets.level_told(packet) if packet.type != CONNECT else None
        if level is not None:
            self._levels.setdefault(level, f"a {packet.end - packet.body_start}-byte {packet.name}")

    def knows(self) -> bool:
        """Whether a CONNECT named the version or packets told it (or told it two ways): more
        packets no longer leave it open."""
        self._look()
        return self.connect is not None or bool(self._levels)

    def version(self) -> Optional[packets.Connect]:
        return self.connect or self.told()[0]

    def unknown(self) -> str:
        """Why the version is not known."""
        return self.told()[1]

    def told(self) -> Tuple[Optional[packets.Connect], str]:
        """(the version the connection's packets other than CONNECT tell, or None; why none)."""
        self._look()
        levels = self._levels
        if len(levels) == 1:
            [(level, _)] = levels.items()
            return packets.Connect("5.0" if level == 5 else packets.VERSION_3, level, None, 0), ""
        if levels:
            return None, f"its packets disagree ({levels[5]} is MQTT 5's, {levels[packets.LEVEL_3]} MQTT 3.1/3.1.1's)"
        return None, "no other packet of the connection tells it"

    def _look(self) -> None:
        for data in self._unseen:
            for packet in framed(data):
                self.learn(packet)
        self._unseen = []


def framed(data: bytes, pos: int = 0) -> Iterator[packets.Packet]:
    """The packets of a stream from ``pos`` as their fixed headers frame them, up to the first
    that cannot be (cut by the end of ``data``, or a fifth remaining-length byte). Of a stretch of
    zero bytes (2-byte packets of reserved type 0, refused), only the last packet is framed."""
    while pos < len(data):
        if data.startswith(b"\0\0", pos):
            pos += (_zeros_from(data, pos) >> 1) * 2 - 2
        try:
            packet = packets.frame_packet(data, pos)
        except CmiFormatError:
            return
        yield packet
        pos = packet.end


def whole_packets(data: bytes) -> int:
    """Where the last MQTT packet held whole in ``data`` ends, from their fixed headers: a stream
    is read in pieces of whole packets (what a malformed fixed header stops is read, and
    reported, in the next piece)."""
    end = 0
    for packet in framed(data):
        end = packet.end
    return end


def stream_messages(data: bytes, source: str, base_offset: int = 0, first_index: int = 0,
                    session: Optional[Session] = None, rereading: bool = False,
                    aliases: Optional[Dict[int, str]] = None) -> Iterator[PhysicalMessage]:
    """The packets of one direction of one connection as physical messages. ``session``: what the
    connection told of its version before ``data`` or in its other direction; a raw stream is a
    session of its own. ``aliases``: the topic aliases set before ``data`` (a stream read in
    pieces), kept up to date.

    Every packet the fixed header frames is one message (``packet_message``). A packet refused
    (malformed, or a PUBLISH whose protocol version is unknown) is one message with its
    ``problem``, and reading goes on where its fixed header says it ends. A packet cut by the end
    of the stream is one message; a remaining length with a fifth byte gives no end to resume
    from (nothing after it can be proved to be a packet start), so the rest of the stream is one
    message naming where it starts (``unframed_message``)."""
    session = session if session is not None else Session(() if rereading else (data,))
    aliases = {} if aliases is None else aliases
    pos, index = 0, first_index
    run: Optional[_RefusedRun] = None  # consecutive packets refused alike, not yet yielded
    while pos < len(data):
        try:
            packet = packets.frame_packet(data, pos, _locator(source, index, base_offset))
        except CmiFormatError as e:
            if run is not None:
                yield run.message()
                index += 1
            yield unframed_message(data, pos, e, session, source, index, base_offset)
            return
        # Zero bytes frame as 2-byte packets of reserved type 0: a stretch of them is framed at
        # once (a GiB of zeros would otherwise be half a billion packets read one by one).
        packets_here = _zeros_from(data, pos) >> 1 if data.startswith(b"\0\0", pos) else 1
        message = packet_message(data, packet, session, aliases, source, index, base_offset, rereading)
        pos = packet.end + 2 * (packets_here - 1)
        if run is not None and run.takes(message):
            run.add(packets_here, base_offset + pos)
            continue
        if run is not None:
            yield run.message()
            index += 1
            message = _renumbered(message, index)
            run = None
        if _is_refused(message):
            run = _RefusedRun(message)
            run.add(packets_here - 1, base_offset + pos)
            continue
        yield message
        index += 1
    if run is not None:
        yield run.message()


_ZERO_BYTES = re.compile(rb"\x00*")


def _zeros_from(data: bytes, pos: int) -> int:
    """How many zero bytes run from ``pos`` (``_ZERO_BYTES`` matches anywhere, if only empty)."""
    run = _ZERO_BYTES.match(data, pos)
    assert run is not None
    return run.end() - pos


class _RefusedRun:
    """Packets refused alike, one after another (a stretch of zero bytes, say): one row, the first
    packet's, spanning them all, instead of one row per packet."""

    def __init__(self, first: PhysicalMessage):
        self.first, self.count, self.end = first, 1, first.file_end

    def takes(self, message: PhysicalMessage) -> bool:
        return (_is_refused(message) and message.problem == self.first.problem
                and message.details.packet_type == self.first.details.packet_type)

    def add(self, count: int, end: int) -> None:
        if count:
            self.count, self.end = self.count + count, end

    def message(self) -> PhysicalMessage:
        first = self.first
        if self.count == 1:
            return first
        problem = (f"{self.count} packets in a row refused alike, bytes {first.file_offset} to {self.end} of the "
                   f"stream: {first.problem}")
        damage = first.damage
        if damage is not None:
            damage = dataclasses.replace(damage, problem=problem)
        origin = first.origin._replace(file_end=self.end, header_length=self.end - first.file_offset)
        return dataclasses.replace(first, origin=origin, problem=problem, damage=damage)


def _renumbered(message: PhysicalMessage, index: int) -> PhysicalMessage:
    damage = message.damage
    if damage is not None:
        damage = dataclasses.replace(damage, location=dataclasses.replace(damage.location, message_index=index))
    return dataclasses.replace(message, origin=message.origin._replace(message_index=index), damage=damage)


def _is_refused(message: PhysicalMessage) -> bool:
    return message.problem is not None and message.descriptor is None and not message.payload


def packet_message(data: bytes, packet: packets.Packet, session: Session, aliases: Dict[int, str], source: str,
                   index: int, base_offset: int, rereading: bool = False) -> PhysicalMessage:
    """The framed ``packet`` as one message: read, or refused with its problem (``_refused``)."""
    try:
        return _packet_message(data, packet, session, aliases, source, index, base_offset, rereading)
    except CmiFormatError as e:
        return _refused(data, packet, session, e, source, index, base_offset)


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
        return PhysicalMessage(None, b"", Origin(source, index, start, end, header_length=packet.end - packet.start),
                               details=details)
    version = session.version()
    if packet.type == AUTH and version is not None and version.level != 5:
        raise MqttFormatError("packet type 15 is reserved in MQTT 3.1 and 3.1.1 (AUTH is MQTT 5's): malformed "
                              "packet", where(packet.start))
    if packet.type == PUBLISH:
        if version is None and rereading:  # planning gave the level: ``rebuild`` reads it
            return PhysicalMessage(None, bytes(data[packet.start:packet.end]), Origin(source, index, start, end),
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
    return PhysicalMessage(None, b"", Origin(source, index, start, end, header_length=packet.end - packet.start),
                           details=details)


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
    origin = Origin(source, index, base_offset + packet.start, base_offset + packet.end,
                    header_length=packet.end - packet.start)
    return PhysicalMessage(None, b"", origin, details=details, problem=error.problem,
                           damage=KeptError.of(error) if packet.type in MAY_CARRY_CMI else None)


def unframed_message(data: bytes, pos: int, error: CmiFormatError, session: Session, source: str, index: int,
                     base_offset: int) -> PhysicalMessage:
    """The rest of a stream from a packet whose fixed header gives no end inside it (``data[pos:]``
    to the stream's end): a packet cut by the end of the stream, or a remaining length with a
    fifth byte."""
    first = data[pos]
    problem = error.problem
    if not isinstance(error, TruncatedError):
        problem += (f"; where the packet ends cannot be told, so the {len(data) - pos} bytes from byte "
                    f"{base_offset + pos} of the stream to its end are not read")
    version = session.version()
    details = MqttDetails(packets.PACKET_TYPES.get(first >> 4, f"type {first >> 4}"), (first >> 1) & 3,
                          bool(first & 8), bool(first & 1), client_id=version.client_id if version else None,
                          version=version.version if version else None)
    harmless = isinstance(error, TruncatedError) and first >> 4 not in MAY_CARRY_CMI  # a cut PUBACK, say
    damage = None if harmless else KeptError.of(type(error)(problem, error.location, error.hint))
    origin = Origin(source, index, base_offset + pos, base_offset + len(data), header_length=len(data) - pos)
    return PhysicalMessage(None, b"", origin, details=details, problem=problem, damage=damage)


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
    origin = message.origin._replace(
        header_length=message.origin.header_length + publish.payload_start - packet.start)
    return dataclasses.replace(message, origin=origin, details=details, problem=problem or message.problem,
                               reread_hint=connect.level)

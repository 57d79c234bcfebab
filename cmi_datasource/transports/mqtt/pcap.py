"""MQTT in pcap and pcapng captures (tcpdump, Wireshark): frames -> TCP streams -> MQTT packets.

The capture's TCP connections come from ``transports.tcp``: MQTT's are those whose client stream
starts with CONNECT or whose server is on port 1883 or 8883 (read option ``mqtt.port``: others).
Each direction is read packet by packet as its frames are read (``_MqttReader``). A packet is
read in the protocol version of its connection (``streams.Session``): the CONNECT's, else the
version the connection's other packets tell by their lengths; so a packet that needs it waits
until the client's first packet is read and the version is known, or nothing more can tell it.
Every MQTT packet is a physical message (``streams.packet_message``; a refused one too, with its
problem), ordered by the frame that carried its first byte; its ``offset`` is that frame's place
in the file and ``file_end`` the end of the frame that carried its last byte.

A QoS 1 or 2 PUBLISH sent again with DUP while its exchange is open (no PUBACK, or PUBCOMP for
QoS 2, came back yet) repeats the one before it: it stays in the messages view, its
``duplicate_of`` naming that PUBLISH, and is no CMI message. A stream with a hole in it ends at
the hole, and a message says so.

A packet is spread over frames, so no byte range of the file is one message: a partition reads a
pcap from its start, frame by frame, and each attachment in it is one partition. Nothing is held
whole: what waits for the version is bounded with the rest of what the streams hold
(``tcp.read_connections``), and the messages of the last capture read are kept for the next read
only when they are few (``PcapCache``).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from itertools import groupby
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ...containers import max_record_bytes
from ...errors import CmiFormatError, Location
from ...messages import MessageSpan, Origin, PhysicalMessage
from ...storage import identity
from . import packets
from .packets import CONNECT
from .streams import MqttDetails, Session, framed, packet_message, unframed_message
from ..tcp import Connection, StreamReader, read_connections

MQTT_PORTS = (1883, 8883)
PORT_OPTION = "mqtt.port"
MESSAGE_OVERHEAD = 256  # what a message read holds beside its payload, roughly: for the bounds


def opens_mqtt(head: bytes) -> bool:
    """Whether a client stream starts as MQTT clients start: with CONNECT."""
    return head[:1] == bytes([packets.CONNECT << 4])


class _MqttReader(StreamReader):
    """One direction of an MQTT connection, read packet by packet as its bytes come. Each packet
    is shown to the connection's ``session`` as soon as it is whole (``push``). A packet other
    than CONNECT needs the version: it is read once the session ``knows`` it (a CONNECT read, in
    the client's direction, which frames come first; or packets that tell it), or when nothing
    more can tell (both directions ended, or the capture holds too much to wait:
    ``stop_waiting``)."""

    def __init__(self, path: str, connection: Connection, direction: str, session: Session):
        super().__init__()
        self.path, self.connection, self.direction, self.session = path, connection, direction, session
        self.peer: Optional[_MqttReader] = None  # the other direction
        self.aliases: Dict[int, str] = {}  # topic aliases set so far
        self.framed_to = 0  # stream offset where the whole packets shown to the session end
        self.waited_enough = False  # read with what the session knows (``stop_waiting``)
        self.gap_reported = False

    def push(self, data: bytes, frame) -> None:
        super().push(data, frame)
        self._show_whole_packets()

    def take_over(self, other: StreamReader) -> None:
        super().take_over(other)
        self._show_whole_packets()

    def _show_whole_packets(self) -> None:
        at = max(self.framed_to - self.start, 0)
        for packet in framed(self.buffer, at):
            self.session.learn(packet)
            at = packet.end
        self.framed_to = self.start + at

    def stop_waiting(self) -> None:
        for reader in (self, self.peer):
            reader.waited_enough = True

    def _may_read(self, first_byte: int) -> bool:
        """Whether the packet starting with ``first_byte`` may be read now."""
        return (first_byte >> 4 == CONNECT or self.waited_enough or self.session.knows()
                or (self.ended and self.peer.ended))

    def read(self) -> Iterator[Tuple[int, PhysicalMessage, int]]:
        whole = self.framed_to - self.start  # the whole packets held end here
        pos, data = 0, None
        while (pos < whole or (self.ended and pos < len(self.buffer))) and self._may_read(self.buffer[pos]):
            if data is None:  # copied once a read, and only what is read: not a packet still coming
                data = bytes(self.buffer if self.ended else self.buffer[:whole])
            if pos < whole:
                packet = packets.frame_packet(data, pos)
                message = packet_message(data, packet, self.session, self.aliases, self.path, 0, self.start)
                pos = packet.end
            else:  # the rest gives no packet end: cut by a hole or the capture's end, or a fifth length byte
                message = unframed_message(data, pos, _framing_error(data, pos), self.session, self.path, 0,
                                           self.start)
                pos = len(data)
            yield self._placed(message)
        self.consume(pos)
        if not self.ended and whole <= pos and len(self.buffer) > max_record_bytes():
            yield from self.overflow()  # no packet ends within the bound
        if self.ended and not self.buffer and self.gap and not self.gap_reported:
            self.gap_reported = True
            yield from self.lost(self.gap, "(not captured)")

    def lost(self, problem: str, kind: str = "(not read)") -> Iterator[Tuple[int, PhysicalMessage, int]]:
        yield self._placed(PhysicalMessage(None, b"", Origin(self.path, 0, self.start, self.start), problem=problem,
                                           details=MqttDetails(kind, 0, False, False)))

    def _placed(self, message: PhysicalMessage) -> Tuple[int, PhysicalMessage, int]:
        """The message at the frames that carried it, in its connection and direction."""
        first, last = self.frames_of(message.file_offset, message.file_end)
        located = dataclasses.replace(
            message, origin=message.origin._replace(file_offset=first.offset, file_end=last.end),
            details=dataclasses.replace(message.details, connection=self.connection.name, direction=self.direction,
                                        frame=first.number))
        return first.number, located, len(message.payload) + MESSAGE_OVERHEAD


def _framing_error(data: bytes, pos: int) -> CmiFormatError:
    """Why the fixed header at ``pos`` gives no packet end within ``data``."""
    try:
        packets.frame_packet(data, pos)
    except CmiFormatError as e:
        return e
    raise AssertionError(f"the packet at stream byte {pos} is whole")  # only called where framing stopped


def _readers(path: str):
    def made(connection: Connection) -> Tuple[_MqttReader, _MqttReader]:
        session = Session()
        client = _MqttReader(path, connection, "to broker", session)
        broker = _MqttReader(path, connection, "from broker", session)
        client.peer, broker.peer = broker, client
        return client, broker
    return made


def read_pcap(path: str, ports: Sequence[int] = MQTT_PORTS) -> Iterator[PhysicalMessage]:
    """Every MQTT packet of every connection in the capture (those whose client opens with
    CONNECT, or whose server is on one of ``ports``), in capture order, as the frames are read."""
    ordered = read_connections(path, opens_mqtt, ports, _readers(path))
    return _without_redeliveries(_numbered(m, i) for i, m in enumerate(ordered))


def _numbered(message: PhysicalMessage, index: int) -> PhysicalMessage:
    """The message as the ``index``-th of the capture; its damage, found at a byte of its TCP
    stream, placed at the frame that carried the packet's first byte."""
    damage = message.damage
    if damage is not None:
        damage = dataclasses.replace(damage, location=dataclasses.replace(
            damage.location, message_index=index, file_offset=message.file_offset))
    return dataclasses.replace(message, origin=message.origin._replace(message_index=index), damage=damage)


def _without_redeliveries(messages: Iterable[PhysicalMessage]) -> Iterator[PhysicalMessage]:
    """A DUP PUBLISH whose exchange is still open (per connection, direction and packet id) repeats
    the PUBLISH before it: it loses its descriptor and names what it repeats."""
    open_exchanges: Dict[Tuple[str, str, int], int] = {}
    for m in messages:
        d = m.details
        key = (getattr(d, "connection", None), getattr(d, "direction", None), getattr(d, "packet_id", None))
        if d is not None and d.packet_type == "PUBLISH" and d.qos and key[2] is not None:
            if d.dup and key in open_exchanges:
                m = dataclasses.replace(m, descriptor=None, details=dataclasses.replace(
                    d, duplicate_of=open_exchanges[key]))
            else:
                open_exchanges[key] = m.index
        elif d is not None and d.packet_type in ("PUBACK", "PUBCOMP") and key[2] is not None:
            sender = "from broker" if d.direction == "to broker" else "to broker"
            open_exchanges.pop((d.connection, sender, key[2]), None)
        yield m


# The messages of the last capture read are kept when their payloads take at most this much: a
# partition, and planning's re-reads of definitions, ask for a capture's messages several times.
PCAP_KEPT_BYTES = 64 << 20


class PcapCache:
    """The messages of the last capture read in this process (with the brokers' ports it was read
    with), when they are few; a larger capture is read again, frame by frame, each time its
    messages are asked for."""

    def __init__(self):
        self.key, self.messages = None, None

    def messages_of(self, path: str, ports: Sequence[int] = MQTT_PORTS) -> Iterator[PhysicalMessage]:
        key = (identity(path), tuple(ports))
        if key == self.key and self.messages is not None:
            return iter(self.messages)
        return self._read(path, ports, key)

    def _read(self, path: str, ports: Sequence[int], key) -> Iterator[PhysicalMessage]:
        kept: Optional[List[PhysicalMessage]] = []
        held = 0
        for message in read_pcap(path, ports):
            if kept is not None:
                held += len(message.payload) + MESSAGE_OVERHEAD
                kept.append(message)
                if held > PCAP_KEPT_BYTES:
                    kept = None
            yield message
        if kept is not None:
            self.key, self.messages = key, kept

    def spans(self, spans: Sequence[MessageSpan], ports: Sequence[int] = MQTT_PORTS) -> Iterator[PhysicalMessage]:
        """The messages at ``spans``, in the order given: each capture read once for a run of spans
        of it (in index order, as plans give them, a message is handed on as soon as it is read)."""
        for source, run in groupby(spans, key=lambda s: s[0]):
            run = list(run)
            asked = Counter(span[1] for span in run)
            found: Dict[int, PhysicalMessage] = {}
            at = 0
            for message in self.messages_of(source, ports):
                if message.index in asked:
                    found[message.index] = message
                while at < len(run) and run[at][1] in found:
                    index = run[at][1]
                    asked[index] -= 1
                    yield _as_planned(found[index] if asked[index] else found.pop(index), run[at])
                    at += 1
                if at == len(run):
                    break
            for span in run[at:]:
                yield _as_planned(found.get(span[1]), span)


def _as_planned(message: Optional[PhysicalMessage], span: MessageSpan) -> PhysicalMessage:
    if message is None or message.span != span:
        raise CmiFormatError("the capture holds no message where one was planned: the file changed",
                             Location(span[0], span[1], span[2]))
    return message

"""MQTT in pcap and pcapng captures (tcpdump, Wireshark): frames -> TCP streams -> MQTT packets.

The capture's TCP connections come from ``transports.tcp``: MQTT's are those whose client stream
starts with CONNECT or whose server is on port 1883 or 8883. Each direction is read packet by
packet as its frames are read (``_MqttReader``); the broker's direction waits for the client's
first packet, whose CONNECT gives the protocol version it is read in. Every MQTT packet is a
physical message (``streams.stream_messages``), ordered by the frame that carried its first
byte; its ``offset`` is that frame's place in the file and ``file_end`` the end of the frame that
carried its last byte.

A QoS 1 or 2 PUBLISH sent again with DUP while its exchange is open (no PUBACK, or PUBCOMP for
QoS 2, came back yet) repeats the one before it: it stays in the messages view, its
``duplicate_of`` naming that PUBLISH, and is no CMI message. A stream with a hole in it ends at
the hole, and a message says so.

A packet is spread over frames, so no byte range of the file is one message: a partition reads a
pcap from its start, frame by frame, and each attachment in it is one partition. Nothing is held
whole: the messages of the last capture read are kept for the next read only when they are few
(``PcapCache``).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from itertools import groupby
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ...containers import max_record_bytes
from ...errors import CmiFormatError, Location
from ...messages import MessageSpan, PhysicalMessage
from ...storage import identity
from . import packets
from .streams import MqttDetails, connect_of, stream_messages, whole_packets
from ..tcp import Connection, StreamReader, read_connections

MQTT_PORTS = (1883, 8883)
MESSAGE_OVERHEAD = 256  # what a message read holds beside its payload, roughly: for the bounds


def opens_mqtt(head: bytes) -> bool:
    """Whether a client stream starts as MQTT clients start: with CONNECT."""
    return head[:1] == bytes([packets.CONNECT << 4])


class _MqttReader(StreamReader):
    """One direction of an MQTT connection, read packet by packet as its bytes come."""

    def __init__(self, path: str, connection: Connection, direction: str, client: Optional["_MqttReader"] = None):
        super().__init__()
        self.path, self.connection, self.direction = path, connection, direction
        self.client = client  # the broker's direction: the client's, whose first CONNECT names the protocol level
        self.connect: Optional[packets.Connect] = None  # the last CONNECT read (the client's direction)
        self.opening: Optional[packets.Connect] = None  # the first
        self.aliases: Dict[int, str] = {}  # topic aliases set so far
        self.started = False  # its first packet is read, or none will come
        self.gap_reported = False

    def read(self) -> Iterator[Tuple[int, PhysicalMessage, int]]:
        if self.client is not None and not self.client.started and not self.dead:
            if len(self.buffer) > max_record_bytes():
                yield from self.overflow()
            return
        stop = len(self.buffer) if self.ended else whole_packets(self.buffer)
        if stop == 0 and len(self.buffer) > max_record_bytes():
            yield from self.overflow()
        if stop and not self.dead:
            connect = self.client.opening if self.client is not None else self.connect
            try:
                for message in stream_messages(bytes(self.buffer[:stop]), self.path, self.start, connect=connect,
                                               aliases=self.aliases):
                    details = message.details
                    if self.client is None and isinstance(details, MqttDetails) and details.packet_type == "CONNECT":
                        self.connect = connect_of(details)
                        self.opening = self.opening or self.connect
                    self.started = True
                    yield self._placed(message)
            except CmiFormatError as e:  # what a stream holds past a broken packet cannot be read
                yield self._placed(_placeholder(self.path, e.problem, e.location.file_offset or 0))
                self.dead = True
            self.consume(len(self.buffer) if self.dead else stop)
        if self.ended:
            self.started = True
            if self.gap and not self.gap_reported:
                self.gap_reported = True
                yield from self.lost(self.gap)

    def lost(self, problem: str) -> Iterator[Tuple[int, PhysicalMessage, int]]:
        yield self._placed(_placeholder(self.path, problem, self.start))

    def _placed(self, message: PhysicalMessage) -> Tuple[int, PhysicalMessage, int]:
        """The message at the frames that carried it, in its connection and direction."""
        details = message.details if isinstance(message.details, MqttDetails) else MqttDetails("gap", 0, False, False)
        first, last = self.frames_of(message.file_offset, message.file_end)
        located = dataclasses.replace(
            message, file_offset=first.offset, file_end=last.end,
            details=dataclasses.replace(details, connection=self.connection.name, direction=self.direction,
                                        frame=first.number))
        return first.number, located, len(message.payload) + MESSAGE_OVERHEAD


def _readers(path: str):
    def made(connection: Connection) -> Tuple[_MqttReader, _MqttReader]:
        client = _MqttReader(path, connection, "to broker")
        return client, _MqttReader(path, connection, "from broker", client)
    return made


def read_pcap(path: str) -> Iterator[PhysicalMessage]:
    """Every MQTT packet of every connection in the capture, in capture order, as the frames are read."""
    ordered = read_connections(path, opens_mqtt, MQTT_PORTS, _readers(path))
    return _without_redeliveries(dataclasses.replace(m, index=i) for i, m in enumerate(ordered))


def _placeholder(path: str, problem: str, offset: int) -> PhysicalMessage:
    """A row for what a stream lost (a TCP hole, a broken packet), so the messages view shows it."""
    return PhysicalMessage(None, b"", path, 0, offset, offset, problem=problem,
                           details=MqttDetails("(unreadable)", 0, False, False))


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
    """The messages of the last capture read in this process, when they are few; a larger
    capture is read again, frame by frame, each time its messages are asked for."""

    def __init__(self):
        self.key, self.messages = None, None

    def messages_of(self, path: str) -> Iterator[PhysicalMessage]:
        key = identity(path)
        if key == self.key and self.messages is not None:
            return iter(self.messages)
        return self._read(path, key)

    def _read(self, path: str, key) -> Iterator[PhysicalMessage]:
        kept: Optional[List[PhysicalMessage]] = []
        held = 0
        for message in read_pcap(path):
            if kept is not None:
                held += len(message.payload) + MESSAGE_OVERHEAD
                kept.append(message)
                if held > PCAP_KEPT_BYTES:
                    kept = None
            yield message
        if kept is not None:
            self.key, self.messages = key, kept

    def spans(self, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
        """The messages at ``spans``, in the order given: each capture read once for a run of spans
        of it (in index order, as plans give them, a message is handed on as soon as it is read)."""
        for source, run in groupby(spans, key=lambda s: s[0]):
            run = list(run)
            asked = Counter(span[1] for span in run)
            found: Dict[int, PhysicalMessage] = {}
            at = 0
            for message in self.messages_of(source):
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

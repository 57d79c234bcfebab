"""MQTT in pcap and pcapng captures (tcpdump, Wireshark): frames -> TCP streams -> MQTT packets.

The capture's TCP connections come from ``transports.tcp``: MQTT's are those whose client stream
starts with CONNECT or whose server is on port 1883 or 8883. A connection's client stream is read first: its CONNECT gives the protocol version the broker's direction is
read in too. Every MQTT packet is a physical message (``transport.stream_messages``), ordered by
the frame that carried its first byte; its ``offset`` is that frame's place in the file and
``file_end`` the end of the frame that carried its last byte.

A QoS 1 or 2 PUBLISH sent again with DUP while its exchange is open (no PUBACK, or PUBCOMP for
QoS 2, came back yet) repeats the one before it: it stays in the messages view, its
``duplicate_of`` naming that PUBLISH, and is no CMI message. A stream with a hole in it ends at
the hole, and a message says so.

A packet is spread over frames, so no byte range of the file is one message: a pcap is read
whole, once per partition that needs it, and each attachment in it is one partition.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Sequence, Tuple

from ...errors import CmiFormatError, Location
from ...messages import MessageSpan, PhysicalMessage
from ...storage import identity
from . import packets
from .streams import MqttDetails, stream_messages
from ..tcp import read_connections

MQTT_PORTS = (1883, 8883)


def opens_mqtt(head: bytes) -> bool:
    """Whether a client stream starts as MQTT clients start: with CONNECT."""
    return head[:1] == bytes([packets.CONNECT << 4])


def read_pcap(path: str) -> List[PhysicalMessage]:
    """Every MQTT packet of every connection in the capture, in capture order."""
    placed: List[Tuple[Tuple[int, int, int], PhysicalMessage]] = []
    for link in read_connections(path, opens_mqtt, MQTT_PORTS):
        connect = None
        for direction, stream in (("to broker", link.to_server), ("from broker", link.to_client)):
            if stream is None:
                continue
            found: List[PhysicalMessage] = []
            try:
                for message in stream_messages(stream.data, path, connect=connect):
                    found.append(message)
            except CmiFormatError as e:  # what a stream holds past a broken packet cannot be read
                found.append(_placeholder(path, e.problem, e.location.file_offset or 0))
            if stream.gap:
                found.append(_placeholder(path, stream.gap, len(stream.data)))
            for message in found:
                details = message.details if isinstance(message.details, MqttDetails) else MqttDetails("gap", 0, False,
                                                                                                       False)
                if details.packet_type == "CONNECT" and connect is None:
                    connect = packets.Connect(details.version, {"3.1": 3, "3.1.1": 4, "5.0": 5}[details.version],
                                              details.client_id or "", 0)
                first, last = stream.frames_of(message.file_offset, message.file_end)
                located = dataclasses.replace(
                    message, file_offset=first.offset, file_end=last.end,
                    details=dataclasses.replace(details, connection=link.name, direction=direction,
                                                frame=first.number))
                placed.append(((first.number, len(placed), message.file_offset), located))
    ordered = [m for _, m in sorted(placed, key=lambda item: item[0])]
    return _without_redeliveries([dataclasses.replace(m, index=i) for i, m in enumerate(ordered)])


def _placeholder(path: str, problem: str, offset: int) -> PhysicalMessage:
    """A row for what a stream lost (a TCP hole, a broken packet), so the messages view shows it."""
    return PhysicalMessage(None, b"", path, 0, offset, offset, problem=problem,
                           details=MqttDetails("(unreadable)", 0, False, False))


def _without_redeliveries(messages: List[PhysicalMessage]) -> List[PhysicalMessage]:
    """A DUP PUBLISH whose exchange is still open (per connection, direction and packet id) repeats
    the PUBLISH before it: it loses its descriptor and names what it repeats."""
    open_exchanges: Dict[Tuple[str, str, int], int] = {}
    out = []
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
        out.append(m)
    return out


class PcapCache:
    """The last capture read in this process, whole: a partition, and planning's re-reads of
    definitions, ask for its messages several times."""

    def __init__(self):
        self.key, self.messages = None, []

    def get(self, path: str) -> List[PhysicalMessage]:
        key = identity(path)
        if key != self.key:
            self.key, self.messages = key, read_pcap(path)
        return self.messages

    def spans(self, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
        for span in spans:
            messages = self.get(span[0])
            if not 0 <= span[1] < len(messages) or messages[span[1]].span != span:
                raise CmiFormatError("the capture holds no message where one was planned: the file changed",
                                     Location(span[0], span[1], span[2]))
            yield messages[span[1]]

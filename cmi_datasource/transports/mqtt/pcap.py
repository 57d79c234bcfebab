"""MQTT in pcap and pcapng captures (tcpdump, Wireshark): frames -> TCP streams -> MQTT packets.

The capture's TCP connections come from ``transports.tcp``: MQTT's are those whose client stream
starts with CONNECT or whose server is on port 1883 or 8883 (read option ``mqtt.port``: others).
A connection's client stream is read first: its CONNECT gives the protocol version the broker's
direction is read in too; a connection whose CONNECT was not captured is read in the version its
other packets tell (``streams.Session``). Every MQTT packet is a physical message
(``streams.stream_messages``; a refused one too, with its problem), ordered by the frame that
carried its first byte; its ``offset`` is that frame's place in the file and ``file_end`` the end
of the frame that carried its last byte.

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
from .streams import MqttDetails, Session, stream_messages
from ..tcp import read_connections

MQTT_PORTS = (1883, 8883)
PORT_OPTION = "mqtt.port"


def opens_mqtt(head: bytes) -> bool:
    """Whether a client stream starts as MQTT clients start: with CONNECT."""
    return head[:1] == bytes([packets.CONNECT << 4])


def read_pcap(path: str, ports: Sequence[int] = MQTT_PORTS) -> List[PhysicalMessage]:
    """Every MQTT packet of every connection in the capture (those whose client opens with
    CONNECT, or whose server is on one of ``ports``), in capture order."""
    placed: List[Tuple[Tuple[int, int, int], PhysicalMessage]] = []
    for link in read_connections(path, opens_mqtt, ports):
        directions = [(direction, stream) for direction, stream in (("to broker", link.to_server),
                                                                    ("from broker", link.to_client))
                      if stream is not None]
        session = Session([stream.data for _, stream in directions])
        for direction, stream in directions:
            found = list(stream_messages(stream.data, path, session=session))
            if stream.gap:
                found.append(PhysicalMessage(None, b"", path, 0, len(stream.data), len(stream.data), problem=stream.gap,
                                             details=MqttDetails("(not captured)", 0, False, False)))
            for message in found:
                first, last = stream.frames_of(message.file_offset, message.file_end)
                located = dataclasses.replace(
                    message, file_offset=first.offset, file_end=last.end,
                    details=dataclasses.replace(message.details, connection=link.name, direction=direction,
                                                frame=first.number))
                placed.append(((first.number, len(placed), message.file_offset), located))
    ordered = [m for _, m in sorted(placed, key=lambda item: item[0])]
    return _without_redeliveries([_numbered(m, i) for i, m in enumerate(ordered)])


def _numbered(message: PhysicalMessage, index: int) -> PhysicalMessage:
    """The message as the ``index``-th of the capture; its damage, found at a byte of its TCP
    stream, placed at the frame that carried the packet's first byte."""
    damage = message.damage
    if damage is not None:
        damage = dataclasses.replace(damage, location=dataclasses.replace(
            damage.location, message_index=index, file_offset=message.file_offset))
    return dataclasses.replace(message, index=index, damage=damage)


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

    def get(self, path: str, ports: Sequence[int] = MQTT_PORTS) -> List[PhysicalMessage]:
        key = (identity(path), tuple(ports))
        if key != self.key:
            self.key, self.messages = key, read_pcap(path, ports)
        return self.messages

    def spans(self, spans: Sequence[MessageSpan], ports: Sequence[int] = MQTT_PORTS) -> Iterator[PhysicalMessage]:
        for span in spans:
            messages = self.get(span[0], ports)
            if not 0 <= span[1] < len(messages) or messages[span[1]].span != span:
                raise CmiFormatError("the capture holds no message where one was planned: the file changed",
                                     Location(span[0], span[1], span[2]))
            yield messages[span[1]]

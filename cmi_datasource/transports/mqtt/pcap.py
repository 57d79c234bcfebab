"""MQTT in pcap and pcapng captures (tcpdump, Wireshark): frames -> TCP streams -> MQTT packets.

Frames are read by dpkt (Ethernet, Linux cooked v1/v2 as ``tcpdump -i any`` writes, BSD loopback
and raw IP; IPv4 and IPv6). TCP segments become one stream per direction of each connection
(``tcp.py``). A connection's client is the side that sent the SYN, or, in a capture that began
after it, the side whose stream starts with CONNECT, or the side not on the MQTT ports 1883/8883.
Its client stream is read first: its CONNECT gives the protocol version the broker's direction is
read in too. Every MQTT packet is a physical message (``transport.stream_messages``), ordered by
the frame that carried its first byte; its ``offset`` is that frame's place in the file and
``file_end`` the end of the frame that carried its last byte.

A QoS 1 or 2 PUBLISH sent again with DUP while its exchange is open (no PUBACK, or PUBCOMP for
QoS 2, came back yet) repeats the one before it: it stays in the messages view, marked, and is no
CMI message. A stream with a hole in it ends at the hole, and a message says so.

A packet is spread over frames, so no byte range of the file is one message: a pcap is read
whole, once per partition that needs it, and each attachment in it is one partition.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import struct
from typing import Dict, Iterator, List, Sequence, Tuple

from ...containers import decompressing, open_capture
from ...errors import CmiFormatError, Location
from ...messages import MessageSpan, PhysicalMessage
from . import packets
from .streams import MqttDetails, stream_messages
from .tcp import Frame, Reassembler, Stream

MQTT_PORTS = (1883, 8883)
PCAP_MAGICS = (b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1")
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
_PUBACK, _PUBREC, _PUBCOMP = 4, 5, 7


class PcapFormatError(CmiFormatError):
    """A pcap or pcapng file that cannot be read (a bad header, a cut record)."""


def _ip_of(link_type: int, frame: bytes):
    import dpkt
    if link_type == 1:  # Ethernet
        packet = dpkt.ethernet.Ethernet(frame).data
    elif link_type == 113:  # Linux cooked capture v1
        packet = dpkt.sll.SLL(frame).data
    elif link_type == 276:  # Linux cooked capture v2
        packet = dpkt.sll2.SLL2(frame).data
    elif link_type in (0, 108):  # BSD loopback
        packet = dpkt.loopback.Loopback(frame).data
    elif link_type in (12, 14, 101):  # raw IP
        packet = (dpkt.ip6.IP6 if frame[:1] and frame[0] >> 4 == 6 else dpkt.ip.IP)(frame)
    else:
        return None
    return packet if isinstance(packet, (dpkt.ip.IP, dpkt.ip6.IP6)) else None


def _address(ip) -> str:
    family = socket.AF_INET6 if len(ip) == 16 else socket.AF_INET
    return socket.inet_ntop(family, ip)


def _segments(path: str) -> Iterator[Tuple[Frame, object]]:
    """(frame, TCP segment with its IP packet) of each TCP frame of the capture."""
    import dpkt
    with open_capture(path) as f, decompressing(path):
        magic = f.read(4)
        f.seek(0)
        try:
            reader = dpkt.pcapng.Reader(f) if magic == PCAPNG_MAGIC else dpkt.pcap.Reader(f)
        except (ValueError, dpkt.dpkt.Error) as e:
            raise PcapFormatError(f"not a readable pcap or pcapng file: {e}", Location(path, None, 0)) from None
        link_type = reader.datalink()
        number, offset = 0, f.tell()
        iterator = iter(reader)
        while True:
            try:
                _, buf = next(iterator)
            except StopIteration:
                return
            except (ValueError, dpkt.dpkt.Error, struct.error) as e:
                raise PcapFormatError(f"frame {number + 1} cannot be read: {e}", Location(path, None, offset)) from None
            number += 1
            end = f.tell()
            frame = Frame(number, offset, end)
            offset = end
            try:
                ip = _ip_of(link_type, buf)
            except (dpkt.dpkt.Error, ValueError, IndexError):
                continue  # not IP over a link we read: not MQTT
            if ip is not None and isinstance(ip.data, dpkt.tcp.TCP):
                yield frame, ip


def read_pcap(path: str) -> List[PhysicalMessage]:
    """Every MQTT packet of every connection in the capture, in capture order."""
    import dpkt
    reassembler = Reassembler()
    for frame, ip in _segments(path):
        tcp = ip.data
        source, destination = (_address(ip.src), tcp.sport), (_address(ip.dst), tcp.dport)
        reassembler.add(source, destination, tcp.seq, bool(tcp.flags & dpkt.tcp.TH_SYN) and not tcp.flags & dpkt.tcp.TH_ACK,
                        bytes(tcp.data), frame)
        if tcp.flags & dpkt.tcp.TH_SYN and tcp.flags & dpkt.tcp.TH_ACK:  # the broker's SYN
            reassembler.add(source, destination, tcp.seq, True, b"", frame)
    streams = {(s.source, s.destination): s for s in reassembler.streams()}
    placed: List[Tuple[Tuple[int, int, int], PhysicalMessage]] = []
    for client, broker in _connections(streams):
        connection = f"{client[0]}:{client[1]} -> {broker[0]}:{broker[1]}"
        connect = None
        for direction, stream in (("to broker", streams.get((client, broker))),
                                  ("from broker", streams.get((broker, client)))):
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
                first = stream.frame_at(message.file_offset) if stream.data else Frame(0, 0, 0)
                last = stream.frame_at(max(message.file_end - 1, message.file_offset)) if stream.data else first
                located = dataclasses.replace(
                    message, file_offset=first.offset, file_end=last.end,
                    details=dataclasses.replace(details, connection=connection, direction=direction,
                                                frame=first.number))
                placed.append(((first.number, len(placed), message.file_offset), located))
    ordered = [m for _, m in sorted(placed, key=lambda item: item[0])]
    return _without_redeliveries([dataclasses.replace(m, index=i) for i, m in enumerate(ordered)])


def _placeholder(path: str, problem: str, offset: int) -> PhysicalMessage:
    """A row for what a stream lost (a TCP hole, a broken packet), so the messages view shows it."""
    return PhysicalMessage(None, b"", path, 0, offset, offset, problem=problem,
                           details=MqttDetails("(unreadable)", 0, False, False))


def _connections(streams: Dict[Tuple, Stream]) -> List[Tuple[Tuple[str, int], Tuple[str, int]]]:
    """(client, broker) of each connection seen."""
    pairs = []
    for (a, b), stream in streams.items():
        reverse = streams.get((b, a))
        if (b, a) in [(x, y) for x, y in pairs] or (a, b) in pairs:
            continue
        if stream.syn_seen and (reverse is None or not reverse.syn_seen or stream.frames[0].number
                                <= reverse.frames[0].number):
            client_first = True
        elif stream.data[:1] == bytes([packets.CONNECT << 4]):
            client_first = True
        elif reverse is not None and reverse.data[:1] == bytes([packets.CONNECT << 4]):
            client_first = False
        else:
            client_first = b[1] in MQTT_PORTS
        pairs.append((a, b) if client_first else (b, a))
    return pairs


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
        stat = os.stat(path)
        key = (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)
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

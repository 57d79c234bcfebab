"""MQTT as a transport (docs/spec/mqtt.md#cmi-over-mqtt): raw MQTT byte streams and pcap captures.

A raw stream is one connection's packets as the client sent them, from its CONNECT on (what a
broker's stream log or ``tcpflow`` keeps); a pcap holds any number of connections (``pcap.py``).
Both are read into physical messages by ``streams.py``. A PUBLISH re-read alone by a partition
does not know its connection's protocol level: planning gives it as the message's
``reread_hint``, and ``rebuild`` reads the packet again with it.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, BinaryIO, Dict, Iterable, Iterator, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from ...errors import CmiFormatError, Location, message_number
from ...option_table import READ, WRITE, Option, seconds, text
from ...messages import MessageSpan, OutgoingMessage, PhysicalMessage
from ..base import (READ_CHUNK_BYTES, CaptureFormat, Keep, SpanPayloads, Transport, copied_payloads, kept,
                    parse_in_chunks, read_spans, span_pieces)
from ..mq.dump_spans import PIECE_BYTES, span_runs
from . import packets
from .packets import CONNECT, PUBLISH
from ..tcp import is_pcap, server_ports
from .pcap import MQTT_PORTS, PORT_OPTION, PcapCache
from .publish import broker_address, publish, write_stream
from .spool import SPOOL_OPTIONS
from .streams import MqttDetails, Session, publish_message, stream_messages, whole_packets


def _mqtt(name: str, side: str, parse, doc: str, default=None, shown=None) -> Option:
    return Option(name, side, parse, doc, default, shown, transport="mqtt")


PORT = _mqtt(PORT_OPTION, READ, server_ports, "The TCP ports of MQTT brokers in a pcap, besides connections that "
             "open with CONNECT (comma-separated): a capture begun after the CONNECT of a connection on another "
             "port is read only with it.", MQTT_PORTS, ",".join(map(str, MQTT_PORTS)))
BROKER = _mqtt("mqtt.broker", WRITE, broker_address, "With `transport` `mqtt`: publish every message to the broker at "
               "`host:port` (MQTT 5, QoS 1, with [paho-mqtt](https://github.com/eclipse-paho/paho.mqtt.python); "
               "Correlation Data and user properties MsgType, Encoding, CodedCharSetId, MsgId as "
               "[CMI over MQTT](spec/mqtt.md#cmi-over-mqtt) has them), waiting for every acknowledgement, "
               "instead of writing a file; no path is needed. A broker that refuses the connection, goes away "
               "or does not answer in `mqtt.timeout` seconds is an error naming it.")
TOPIC = _mqtt("mqtt.topic", WRITE, text, "With `mqtt.broker`: the topic published to.", "sas/cmi")
CLIENT_ID = _mqtt("mqtt.clientId", WRITE, text, "With `mqtt.broker`: the client identifier.", "", "a random one")
TIMEOUT = _mqtt("mqtt.timeout", WRITE, seconds, "With `mqtt.broker`: seconds to wait for the broker.", 30.0, "30")


class MqttStreamFormat(CaptureFormat):
    name = "mqtt"
    description = "a raw MQTT byte stream, one connection's packets from its CONNECT on"
    suffix = ".mqtt"

    def sniff(self, head: bytes) -> bool:
        if not head or head[0] != CONNECT << 4:
            return False
        try:
            _, body = packets.read_remaining_length(head, 1)
        except CmiFormatError:
            return False
        name_length = int.from_bytes(head[body:body + 2], "big")
        return head[body + 2:body + 2 + name_length] in (b"MQTT", b"MQIsdp")

    def parse(self, data: bytes, source: str, base_offset: int = 0, first_index: int = 0) -> Iterator[PhysicalMessage]:
        return self._parse(data, source, base_offset, first_index, rereading=False)

    whole_records = staticmethod(whole_packets)

    def scan_from(self, path: str, start: int, first_index: int,
                  keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        # In pieces of whole packets, in order: the version (its CONNECT, or what packets told) and
        # the topic aliases of one piece hold in the next.
        session = Session()
        aliases: Dict[int, str] = {}

        def parse(data: bytes, source: str, base: int, index: int, stop: int) -> Iterator[PhysicalMessage]:
            piece = data if stop == len(data) else data[:stop]
            session.show(piece)
            return stream_messages(piece, source, base, index, session=session, aliases=aliases)
        return parse_in_chunks(path, READ_CHUNK_BYTES, whole_packets, parse, keep, start, first_index, threads=False)

    def write(self, out: BinaryIO, messages: Iterable[OutgoingMessage], *, comments: Sequence[str] = (),
              deterministic: bool = False, client_id: str = "cmi-datasource", topic: str = "sas/cmi") -> int:
        return write_stream(out, messages, client_id, topic)

    def reread(self, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
        return read_spans(functools.partial(self._parse, rereading=True), spans)

    def payload_pieces(self, spans: Sequence[MessageSpan], heads: Sequence[int], room: int = 0,
                       hints: Sequence[Any] = ()) -> Iterator[SpanPayloads]:
        """The PUBLISH packets at ``spans``, each whole as its payload: what planning saw in front
        of the CMI data (fixed header, topic, properties, an MQMD) is its header, which ``heads``
        covers, so that the length and CRC-32 checked are those of the CMI data alone. Each
        packet's fixed header must frame exactly its span."""
        heads_all = np.asarray(heads, dtype=np.int64)
        for run, data, base in span_pieces(spans, span_runs(spans, PIECE_BYTES)):
            chosen = list(spans[run.start:run.stop])
            starts = np.array([_publish_at(data, span, base) for span in chosen], dtype=np.int64)
            yield copied_payloads(data, chosen, starts, heads_all[run.start:run.stop], base, room)

    def bulk_decodes(self, hint: Any) -> bool:
        return True  # the hint, the protocol level, only says where the payload starts: planning kept that

    def _parse(self, data: bytes, source: str, base_offset: int, first_index: int,
               rereading: bool) -> Iterator[PhysicalMessage]:
        return stream_messages(data, source, base_offset, first_index, rereading=rereading)


def _publish_at(data: memoryview, span: MessageSpan, base: int) -> int:
    """Where the PUBLISH packet planned at ``span`` starts in ``data`` (file bytes from ``base``),
    its fixed header checked against the span: a packet that no longer fits it means the file
    changed since it was planned."""
    source, index, start, end = span
    at = start - base
    where = Location(source, index, start)
    if end - base > len(data) or at >= end - base:
        raise CmiFormatError(f"the file ends at byte {base + len(data)}, before the planned message ending at "
                             f"{end}: it changed since it was planned", where)
    packet = packets.frame_packet(data, at, lambda offset: Location(source, index, base + offset))
    if packet.type != PUBLISH or packet.end != end - base:
        raise CmiFormatError("the message differs from the one planned: the file changed since it was planned",
                             where)
    return at


class PcapFormat(CaptureFormat):
    name = "pcap"
    description = "a pcap or pcapng capture (tcpdump, Wireshark) of MQTT connections"
    suffix = ".pcap"
    splittable = False  # its messages are spread over frames: read from its start, once per partition
    read_options = (PORT_OPTION,)

    def __init__(self):
        self.cache = PcapCache()

    @property
    def ports(self) -> Tuple[int, ...]:
        """The brokers' ports: option mqtt.port's, else 1883 and 8883."""
        return PORT.value(dict(self.settings))

    def sniff(self, head: bytes) -> bool:
        return is_pcap(head)

    def scan(self, path: str, keep: Optional[Keep] = None) -> Iterator[PhysicalMessage]:
        return kept(self.cache.messages_of(path, self.ports), keep)

    def reread(self, spans: Sequence[MessageSpan]) -> Iterator[PhysicalMessage]:
        return self.cache.spans(spans, self.ports)


class MqttTransport(Transport):
    name = "mqtt"
    formats = (MqttStreamFormat(), PcapFormat())
    write_format = "mqtt"  # a file: a raw stream; option mqtt.broker publishes to a live broker instead

    options = (PORT, *SPOOL_OPTIONS, BROKER, TOPIC, CLIENT_ID, TIMEOUT)

    def sends_live(self, options: Dict[str, str]) -> bool:
        return BROKER.key in options

    def send(self, messages: Iterable[OutgoingMessage], options: Dict[str, str]) -> int:
        return publish(messages, BROKER.value(options), TOPIC.value(options), CLIENT_ID.value(options),
                       TIMEOUT.value(options))
    message_columns = (
        pa.field("mqtt_type", pa.string()), pa.field("client_id", pa.string()), pa.field("topic", pa.string()),
        pa.field("qos", pa.int32()), pa.field("dup", pa.bool_()), pa.field("retain", pa.bool_()),
        pa.field("packet_id", pa.int32()), pa.field("mqtt_version", pa.string()),
        pa.field("mqtt_properties", pa.list_(pa.string())), pa.field("connection", pa.string()),
        pa.field("direction", pa.string()), pa.field("frame", pa.int64()),
    )  # a DUP redelivery fills the common column duplicate_of (message_row)

    def rebuild(self, pieces: Sequence[PhysicalMessage], hint: Any = None) -> PhysicalMessage:
        [message] = pieces
        details = message.details
        if not (isinstance(details, MqttDetails) and details.raw):
            return message
        if hint is None:
            raise CmiFormatError("a PUBLISH re-read without its connection's protocol level", message.location())
        data = message.payload
        packet = packets.read_packet(data, 0, lambda at: message.location(at))
        connect = packets.Connect({3: "3.1", 4: "3.1.1", 5: "5.0"}.get(hint, "?"), hint, None, 0)
        rebuilt = publish_message(data, packet, connect, {}, message.source, message.index, message.file_offset,
                           message.location())
        return dataclasses.replace(rebuilt, problem=None)  # aliases are planning's concern, not the payload's

    def message_row(self, message: PhysicalMessage) -> Dict[str, Any]:
        details = message.details
        if not isinstance(details, MqttDetails):
            return {}
        row: Dict[str, object] = {
               "mqtt_type": details.packet_type, "client_id": details.client_id, "topic": details.topic,
               "qos": details.qos, "dup": details.dup, "retain": details.retain, "packet_id": details.packet_id,
               "mqtt_version": details.version, "mqtt_properties": list(details.properties),
               "connection": details.connection, "direction": details.direction, "frame": details.frame}
        if details.duplicate_of is not None:  # only then: CMI assembly fills the column for its own copies
            row["duplicate_of"] = {"source": message.source, "index": message_number(details.duplicate_of)}
        return row


TRANSPORT = MqttTransport()

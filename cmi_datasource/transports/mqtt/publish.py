"""Sending CMI messages over MQTT: to a live broker (paho-mqtt, MQTT 5, QoS 1), or as a raw stream file.

Each message is one PUBLISH whose MQTT 5 properties carry what docs/spec/mqtt.md#cmi-over-mqtt reads back:
Correlation Data = the CorrelId, user properties MsgType, Encoding, CodedCharSetId and MsgId (hex).
``publish`` waits until the broker has acknowledged every message and fails with a
``CmiError`` naming the broker when it refuses the connection, goes away or does not answer.
"""
from __future__ import annotations

import struct
import time
import uuid
from typing import BinaryIO, Dict, Iterable, Tuple

from ...errors import CmiError, CmiOptionError
from ...messages import OutgoingMessage
from . import packets

KEEP_ALIVE = 60


def user_properties(message: OutgoingMessage) -> Tuple[Tuple[str, str], ...]:
    d = message.descriptor
    return (("MsgType", str(d.msg_type)), ("Encoding", str(d.encoding)), ("CodedCharSetId", str(d.ccsid)),
            ("MsgId", message.msg_id.hex().upper()))


def parse_broker(broker: str) -> Tuple[str, int]:
    host, _, port = broker.rpartition(":")
    if not host or not port.isdigit():
        raise CmiOptionError(f"option mqtt.broker must be host:port, not {broker!r}")
    return host, int(port)


def publish(messages: Iterable[OutgoingMessage], broker: str, topic: str, client_id: str = "",
            timeout: float = 30.0) -> int:
    """Publish ``messages`` in order to ``topic`` at ``broker`` ("host:port"); returns how many."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    host, port = parse_broker(broker)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id or f"cmi-{uuid.uuid4().hex[:12]}",
                         protocol=mqtt.MQTTv5)
    from paho.mqtt.reasoncodes import ReasonCode

    connected: Dict[str, ReasonCode] = {}

    def on_connect(client, userdata, flags, reason: ReasonCode, properties) -> None:
        connected.setdefault("reason", reason)

    client.on_connect = on_connect
    try:
        client.connect(host, port, keepalive=KEEP_ALIVE)
    except OSError as e:
        raise CmiError(f"cannot reach the MQTT broker at {broker}: {e}") from None
    client.loop_start()
    try:
        deadline = time.monotonic() + timeout
        while "reason" not in connected and time.monotonic() < deadline:
            time.sleep(0.01)
        reason = connected.get("reason")
        if reason is None or reason.is_failure:
            raise CmiError(f"the MQTT broker at {broker} refused the connection: "
                           f"{reason if reason is not None else 'no answer in time'}")
        pending = []
        for message in messages:
            properties = Properties(PacketTypes.PUBLISH)
            properties.CorrelationData = message.descriptor.correl_id
            properties.UserProperty = list(user_properties(message))
            pending.append(client.publish(topic, message.payload, qos=1, properties=properties))
        for info in pending:
            info.wait_for_publish(max(deadline - time.monotonic(), 0.1))
            if not info.is_published():
                raise CmiError(f"the MQTT broker at {broker} did not acknowledge every message in time "
                               f"({sum(i.is_published() for i in pending)} of {len(pending)})")
        return len(pending)
    finally:
        client.disconnect()
        client.loop_stop()


def _utf8(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def _properties(message: OutgoingMessage) -> bytes:
    block = b"\x09" + struct.pack(">H", len(message.descriptor.correl_id)) + message.descriptor.correl_id
    for key, value in user_properties(message):
        block += b"\x26" + _utf8(key) + _utf8(value)
    return packets.encode_remaining_length(len(block)) + block


def write_stream(out: BinaryIO, messages: Iterable[OutgoingMessage], client_id: str = "cmi-datasource",
                 topic: str = "sas/cmi") -> int:
    """A raw MQTT 5 stream: CONNECT, a QoS 1 PUBLISH per message, DISCONNECT."""
    connect = _utf8("MQTT") + bytes([5, 0x02]) + struct.pack(">H", KEEP_ALIVE) + b"\x00" + _utf8(client_id)
    out.write(packets.packet_bytes(packets.CONNECT, connect))
    count = 0
    for count, message in enumerate(messages, start=1):
        body = _utf8(topic) + struct.pack(">H", (count - 1) % 65535 + 1) + _properties(message) + message.payload
        out.write(packets.packet_bytes(packets.PUBLISH, body, qos=1))
    out.write(packets.packet_bytes(14, b""))
    return count

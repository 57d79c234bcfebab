"""Sending CMI messages over MQTT: to a live broker (paho-mqtt, MQTT 5, QoS 1), or as a raw stream file.

Each message is one PUBLISH whose MQTT 5 properties carry what docs/spec/mqtt.md#cmi-over-mqtt reads back:
Correlation Data = the CorrelId, user properties MsgType, Encoding, CodedCharSetId and MsgId (hex).
``publish`` waits until the broker has acknowledged every message and fails with an
``MqttBrokerError`` naming the broker when it refuses the connection, goes away or does not answer.
"""
from __future__ import annotations

import struct
import time
import uuid
from typing import BinaryIO, Dict, Iterable, Optional, Tuple

from ...errors import CmiError, CmiOptionError
from ...messages import OutgoingMessage
from . import packets

KEEP_ALIVE = 60


class MqttBrokerError(CmiError):
    """A live MQTT broker that cannot be reached, refuses the connection or a subscription, goes
    away or does not answer in time; the text names it."""


def user_properties(message: OutgoingMessage) -> Tuple[Tuple[str, str], ...]:
    d = message.descriptor
    return (("MsgType", str(d.msg_type)), ("Encoding", str(d.encoding)), ("CodedCharSetId", str(d.ccsid)),
            ("MsgId", message.msg_id.hex().upper()))


def parse_broker(broker: str) -> Tuple[str, int]:
    host, _, port = broker.rpartition(":")
    if not host or not port.isdigit():
        raise CmiOptionError(f"option mqtt.broker must be host:port, not {broker!r}")
    return host, int(port)


def connected_client(broker: str, client_id: str, timeout: float, on_connect=None, clean_start: bool = True,
                     session_expiry: Optional[int] = None, manual_ack: bool = False, setup=None):
    """A paho-mqtt MQTT 5 client connected to ``broker`` ("host:port"), its network loop running in
    a thread of its own (which reconnects it when the broker goes away). ``on_connect(client,
    session_present)`` runs on every successful connection, in that thread. A broker that cannot be
    reached, refuses the connection or does not answer in ``timeout`` seconds is a ``CmiError``
    naming it. ``setup(client)`` runs before it connects (to set callbacks)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    from paho.mqtt.reasoncodes import ReasonCode

    host, port = parse_broker(broker)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id or f"cmi-{uuid.uuid4().hex[:12]}",
                         protocol=mqtt.MQTTv5, manual_ack=manual_ack)
    connected: Dict[str, ReasonCode] = {}

    def connection_answered(client, userdata, flags, reason: ReasonCode, properties) -> None:
        if not reason.is_failure and on_connect is not None:
            on_connect(client, flags.session_present)
        connected.setdefault("reason", reason)

    client.on_connect = connection_answered
    if setup is not None:
        setup(client)
    properties = None
    if session_expiry is not None:
        properties = Properties(PacketTypes.CONNECT)
        properties.SessionExpiryInterval = session_expiry
    try:
        client.connect(host, port, keepalive=KEEP_ALIVE, clean_start=clean_start, properties=properties)
    except OSError as e:
        raise MqttBrokerError(f"cannot reach the MQTT broker at {broker}: {e}") from None
    client.loop_start()
    deadline = time.monotonic() + timeout
    while "reason" not in connected and time.monotonic() < deadline:
        time.sleep(0.01)
    reason = connected.get("reason")
    if reason is None or reason.is_failure:
        client.disconnect()
        client.loop_stop()
        raise MqttBrokerError(f"the MQTT broker at {broker} refused the connection: "
                       f"{reason if reason is not None else 'no answer in time'}")
    return client


def broker_address(raw: str, name: str) -> str:
    """Option ``name``'s text, when it is host:port."""
    parse_broker(raw)
    return raw


def publish(messages: Iterable[OutgoingMessage], broker: str, topic: str, client_id: str = "",
            timeout: float = 30.0) -> int:
    """Publish ``messages`` in order to ``topic`` at ``broker`` ("host:port"); returns how many."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    deadline = time.monotonic() + timeout
    client = connected_client(broker, client_id, timeout)
    try:
        pending = []
        for message in messages:
            properties = Properties(PacketTypes.PUBLISH)
            properties.CorrelationData = message.descriptor.correl_id
            properties.UserProperty = list(user_properties(message))
            pending.append(client.publish(topic, message.payload, qos=1, properties=properties))
        for info in pending:
            info.wait_for_publish(max(deadline - time.monotonic(), 0.1))
            if not info.is_published():
                raise MqttBrokerError(f"the MQTT broker at {broker} did not acknowledge every message in time "
                               f"({sum(i.is_published() for i in pending)} of {len(pending)})")
        return len(pending)
    finally:
        client.disconnect()
        client.loop_stop()


def mqtt_string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def _properties(message: OutgoingMessage) -> bytes:
    block = b"\x09" + struct.pack(">H", len(message.descriptor.correl_id)) + message.descriptor.correl_id
    for key, value in user_properties(message):
        block += b"\x26" + mqtt_string(key) + mqtt_string(value)
    return packets.encode_remaining_length(len(block)) + block


def connect_packet(client_id: str) -> bytes:
    """The CONNECT a raw stream file starts with: MQTT 5, clean start, no properties."""
    body = mqtt_string("MQTT") + bytes([5, 0x02]) + struct.pack(">H", KEEP_ALIVE) + b"\x00" + mqtt_string(client_id)
    return packets.packet_bytes(packets.CONNECT, body)


DISCONNECT = packets.packet_bytes(14, b"")


def write_stream(out: BinaryIO, messages: Iterable[OutgoingMessage], client_id: str = "cmi-datasource",
                 topic: str = "sas/cmi") -> int:
    """A raw MQTT 5 stream: CONNECT, a QoS 1 PUBLISH per message, DISCONNECT."""
    out.write(connect_packet(client_id))
    count = 0
    for count, message in enumerate(messages, start=1):
        body = mqtt_string(topic) + struct.pack(">H", (count - 1) % 65535 + 1) + _properties(message) + message.payload
        out.write(packets.packet_bytes(packets.PUBLISH, body, qos=1))
    out.write(DISCONNECT)
    return count

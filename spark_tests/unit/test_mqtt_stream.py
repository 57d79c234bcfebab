"""MQTT packets (docs/spec/mqtt.md) and raw MQTT streams carrying CMI (docs/spec/mqtt.md#cmi-over-mqtt),
on packets built here byte by byte from the OASIS rules, with none of the package's writers."""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from cmi_datasource import Capture, read, transports
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions
from cmi_datasource.errors import TruncatedError
from cmi_datasource.transports.mq.mqmd import descriptor_to_bytes
from cmi_datasource.transports.mqtt.packets import (MqttFormatError, read_packet, read_properties,
                                                    read_remaining_length)

from support import build_mq_messages, slices_of

# -- docs/spec/mqtt.md#remaining-length --------------------------------------------------------------


@pytest.mark.parametrize("value, encoded", [
    (0, "00"), (127, "7f"), (128, "8001"), (16383, "ff7f"), (16384, "808001"), (2097151, "ffff7f"),
    (2097152, "80808001"), (268435455, "ffffff7f"),
])
def test_remaining_length_edges(value, encoded):
    data = bytes.fromhex(encoded) + b"rest"
    assert read_remaining_length(data, 0) == (value, len(bytes.fromhex(encoded)))


def test_a_fifth_remaining_length_byte_is_malformed_and_a_cut_one_truncated():
    with pytest.raises(MqttFormatError, match="fifth byte"):
        read_remaining_length(bytes.fromhex("ffffffff01"), 0)
    with pytest.raises(TruncatedError):
        read_remaining_length(bytes.fromhex("ff80"), 0)


def test_fixed_header_flags_and_qos_3():
    packet = read_packet(bytes([0x3B, 2]) + b"\x00\x00", 0)  # PUBLISH, DUP, QoS 1, RETAIN
    assert (packet.name, packet.dup, packet.qos, packet.retain, packet.end) == ("PUBLISH", True, 1, True, 4)
    with pytest.raises(MqttFormatError, match="QoS 3"):
        read_packet(bytes([0x36, 0]), 0)
    with pytest.raises(TruncatedError):
        read_packet(bytes([0x30, 10]) + b"abc", 0)


# -- building packets by hand --------------------------------------------------------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        n, byte = n >> 7, n & 0x7F
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def utf8(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + varint(len(body)) + body


def connect(level: int, client_id: str) -> bytes:
    name = b"MQIsdp" if level == 3 else b"MQTT"
    body = struct.pack(">H", len(name)) + name + bytes([level, 0x02]) + struct.pack(">H", 60)
    if level == 5:
        body += varint(3) + b"\x21" + struct.pack(">H", 20)  # receive maximum 20
    return packet(0x10, body + utf8(client_id))


def properties(*items: bytes) -> bytes:
    block = b"".join(items)
    return varint(len(block)) + block


def user(key: str, value: str) -> bytes:
    return b"\x26" + utf8(key) + utf8(value)


def publish5(topic: str, payload: bytes, correl: bytes, msg_type: int, packet_id: int = 0, alias=None) -> bytes:
    props = [b"\x09" + struct.pack(">H", len(correl)) + correl, user("MsgType", str(msg_type)),
             user("Encoding", "546"), user("CodedCharSetId", "1208"), user("MsgId", "00" * 24)]
    if alias is not None:
        props.insert(0, b"\x23" + struct.pack(">H", alias))
    qos = 1 if packet_id else 0
    body = utf8(topic) + (struct.pack(">H", packet_id) if qos else b"") + properties(*props) + payload
    return packet(0x30 | qos << 1, body)


def publish311(topic: str, payload: bytes, packet_id: int = 0) -> bytes:
    qos = 1 if packet_id else 0
    return packet(0x30 | qos << 1, utf8(topic) + (struct.pack(">H", packet_id) if qos else b"") + payload)


TABLE = pa.table({"ID": [float(i) for i in range(400)], "NAME": [f"n{i}" for i in range(400)]})


def cmi_pairs():
    return build_mq_messages([DatasetToWrite(TABLE, "MQTT", "ROWS")],
                             options=WriteOptions(max_message_bytes=600, deterministic_seed="mqtt"))


def write(tmp_path, data: bytes, name="stream.mqtt") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# -- streams -------------------------------------------------------------------------------------


def test_properties_in_order_with_repeated_user_properties():
    block = properties(b"\x01\x01", b"\x02" + struct.pack(">I", 30), user("a", "1"), user("a", "2"),
                       b"\x0b" + varint(300), b"\x09\x00\x02\xab\xcd")
    found, end = read_properties(block, 0, len(block))
    assert end == len(block)
    assert found == [("payload_format", 1), ("message_expiry", 30), ("user_property", ("a", "1")),
                     ("user_property", ("a", "2")), ("subscription_id", 300), ("correlation_data", b"\xab\xcd")]


def test_an_mqtt5_stream_with_cmi_in_properties_reads_the_dataset(tmp_path):
    # The second topic is sent once and then only as its alias (MQTT 5 topic aliases).
    data = connect(5, "sas-client") + b"".join(
        publish5("sas/cmi" if i < 2 else "", p, d.correl_id, d.msg_type, packet_id=i + 1, alias=7)
        for i, (d, p) in enumerate(cmi_pairs())) + packet(0xE0, b"\x00\x00")
    path = write(tmp_path, data)
    assert transports.detect_format(path).name == "mqtt"
    capture = Capture.open(path)
    assert read(capture).equals(TABLE)
    rows = read(capture, view="messages").to_pylist()
    assert rows[0]["mqtt_type"] == "CONNECT" and rows[0]["client_id"] == "sas-client"
    assert rows[0]["mqtt_version"] == "5.0" and rows[0]["mqtt_properties"] == ["receive_maximum=20"]
    publishes = [r for r in rows if r["mqtt_type"] == "PUBLISH"]
    assert all(r["topic"] == "sas/cmi" and r["qos"] == 1 and r["in_attachment"] for r in publishes)
    assert [r["packet_id"] for r in publishes] == list(range(1, len(publishes) + 1))
    assert "user_property=MsgType=100000" in publishes[0]["mqtt_properties"]
    assert rows[-1]["mqtt_type"] == "DISCONNECT" and rows[-1]["role"] == "other"
    [att] = capture.attachments
    slices = slices_of(capture, att, 1000)  # partitions re-read PUBLISH packets with the planned level
    assert len(slices) > 2 and all(m.hint is not None for s in slices for m in s.messages)
    assert [r for s in slices for b in slice_batches(s) for r in b.to_pylist()] == TABLE.to_pylist()


def test_an_mqtt311_stream_with_mqmd_prefixed_payloads(tmp_path):
    data = connect(4, "mosquitto_pub") + b"".join(
        publish311("sas/cmi", descriptor_to_bytes(d, "<", "latin-1") + p) for d, p in cmi_pairs())
    capture = Capture.open(write(tmp_path, data))
    assert read(capture).equals(TABLE)
    header = [r for r in read(capture, view="messages").to_pylist() if r["role"] == "header"]
    assert header[0]["length"] > len(header[0]["payload"]) + 364  # packet header and MQMD counted


@pytest.mark.parametrize("level", [4, 5])
def test_partitions_cut_cmi_data_from_the_publish_packets_in_bulk(tmp_path, level):
    # A raw stream's partitions take the format's fast path: the packets of a piece of the file read
    # at once, each one's framing, topic, properties (and MQMD) set apart as its header.
    from cmi_datasource.engine.decode import _decodes_in_bulk
    if level == 5:
        packets = [publish5("sas/cmi", p, d.correl_id, d.msg_type, packet_id=i + 1) for i, (d, p) in
                   enumerate(cmi_pairs())]
    else:
        packets = [publish311("sas/cmi", descriptor_to_bytes(d, ">", "cp037") + p) for d, p in cmi_pairs()]
    capture = Capture.open(write(tmp_path, connect(level, "c") + b"".join(packets)))
    [att] = capture.attachments
    slices = slices_of(capture, att, 1000)
    assert len(slices) > 2 and all(_decodes_in_bulk(s) for s in slices)
    assert [r for s in slices for b in slice_batches(s, batch_rows=7) for r in b.to_pylist()] == TABLE.to_pylist()


@pytest.mark.parametrize("where", ["data", "fixed header"])
def test_a_stream_changed_since_planning_is_an_error_naming_the_publish(tmp_path, where):
    from cmi_datasource.errors import CmiFormatError
    data = connect(5, "c") + b"".join(publish5("sas/cmi", p, d.correl_id, d.msg_type, packet_id=i + 1)
                                      for i, (d, p) in enumerate(cmi_pairs()))
    path = write(tmp_path, data)
    capture = Capture.open(path)
    [att] = capture.attachments
    [part] = slices_of(capture, att, 1 << 30)
    source, index, start, end = part.messages[len(part.messages) // 2].spans[0]
    changed = bytearray(data)
    if where == "data":
        changed[end - 1] ^= 0xFF  # the last byte of a planned message's CMI data
    else:
        changed[start] = 0x40  # a PUBACK's fixed header where the PUBLISH was
    with open(path, "wb") as f:
        f.write(bytes(changed))
    with pytest.raises(CmiFormatError, match="changed since it was planned") as e:
        [b for b in slice_batches(part)]
    assert e.value.message_index == index


def test_publish_before_connect_and_a_cut_stream_are_typed_errors(tmp_path):
    d, p = cmi_pairs()[0]
    with pytest.raises(MqttFormatError, match="PUBLISH before any CONNECT"):
        Capture.open(write(tmp_path, publish311("t", p), "x.mqtt"), format="mqtt", use_index_cache=False)
    cut = connect(5, "c") + publish5("t", p, d.correl_id, d.msg_type)
    with pytest.raises(TruncatedError):
        read(Capture.open(write(tmp_path, cut[:-5], "cut.mqtt"), use_index_cache=False))


def test_a_publish_that_is_no_cmi_message_stays_visible(tmp_path):
    capture = Capture.open(write(tmp_path, connect(4, "c") + publish311("weather", b'{"t": 21}')))
    [_, row] = read(capture, view="messages").to_pylist()
    assert row["topic"] == "weather" and row["payload"] == b'{"t": 21}' and row["role"] == "other"
    assert row["msg_type"] is None and capture.attachments == []

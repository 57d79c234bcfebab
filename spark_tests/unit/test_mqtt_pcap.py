"""MQTT in pcap/pcapng captures: frames written by dpkt around hand-built MQTT packets, TCP reassembly
(out of order, retransmitted, cut), both directions, DUP redeliveries, several connections."""
from __future__ import annotations

import random
import tracemalloc

import dpkt
import pytest

from cmi_datasource import Capture, read, transports
from cmi_datasource.engine.decode import slice_batches
from cmi_datasource.errors import CmiFormatError
from cmi_datasource.transports.mq.mqmd import descriptor_to_bytes

from test_mqtt_stream import TABLE, cmi_pairs, connect, packet, publish5, publish311

from support import slices_of
from tcp_frames import Conversation, write_pcap

CLIENT, BROKER, OTHER = ("10.0.0.2", 50123), ("10.0.0.1", 1883), ("10.0.0.3", 40000)


def puback(packet_id):
    return packet(0x40, packet_id.to_bytes(2, "big"))


def mqtt5_conversation():
    c = Conversation(CLIENT, BROKER)
    c.send(CLIENT, connect(5, "sas-client"))
    c.send(BROKER, packet(0x20, b"\x00\x00\x00"))  # CONNACK (MQTT 5: flags, reason, no properties)
    for i, (d, p) in enumerate(cmi_pairs(), start=1):
        publish = publish5("sas/cmi", p, d.correl_id, d.msg_type, packet_id=i)
        c.send(CLIENT, publish)
        if i == 3:  # redelivered with DUP before its PUBACK: the same message again
            c.send(CLIENT, bytes([publish[0] | 0x08]) + publish[1:])
        c.send(BROKER, puback(i))
    return c


def test_a_pcap_of_an_mqtt5_connection_reads_the_dataset(tmp_path):
    path = write_pcap(tmp_path / "mqtt.pcap", mqtt5_conversation().frames)
    assert transports.detect_format(path).name == "pcap"
    capture = Capture.open(path)
    assert read(capture).equals(TABLE)
    rows = read(capture, view="messages").to_pylist()
    assert rows[0]["mqtt_type"] == "CONNECT" and rows[0]["direction"] == "to broker"
    assert rows[0]["connection"] == "10.0.0.2:50123 -> 10.0.0.1:1883" and rows[0]["frame"] == 3
    assert rows[1]["mqtt_type"] == "CONNACK" and rows[1]["direction"] == "from broker"
    [dup] = [r for r in rows if r["dup"]]
    ref = dup["duplicate_of"]
    [repeated] = [r for r in rows if r["source"] == ref["source"] and r["index"] == ref["index"]]
    assert ref["source"] == path and repeated["index"] < dup["index"]  # numbered from 1, as index is
    assert repeated["packet_id"] == 3 and not repeated["dup"] and repeated["mqtt_type"] == "PUBLISH"
    assert [r["index"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(r["duplicate_of"] is None for r in rows if r is not dup)
    assert dup["role"] == "other" and dup["msg_type"] is None  # no CMI message: the exchange was open
    assert [r["offset"] for r in rows] == sorted(r["offset"] for r in rows)  # frame offsets in the file
    [att] = capture.attachments
    [part] = slices_of(capture, att, 100)  # a capture is read whole: one partition
    assert [r for b in slice_batches(part) for r in b.to_pylist()] == TABLE.to_pylist()


def test_segments_out_of_order_retransmitted_and_several_connections(tmp_path):
    first = mqtt5_conversation()
    second = Conversation(OTHER, BROKER, isn=(7, 4_294_967_000), handshake=False)  # wraps around 2^32
    second.send(OTHER, connect(4, "mosquitto_pub"))
    for d, p in cmi_pairs():
        second.send(OTHER, publish311("sas/mqmd", descriptor_to_bytes(d, "<", "latin-1") + p), size=97)
    frames = first.frames[:2] + sorted(first.frames[2:] + second.frames, key=lambda _: random.Random(5).random())
    frames += frames[10:14]  # retransmissions
    capture = Capture.open(write_pcap(tmp_path / "mixed.pcapng", frames, ng=True))
    assert {a.entry.name for a in capture.attachments} == {"MQTT.ROWS"}
    connections = {r["connection"] for r in read(capture, view="messages").to_pylist()}
    assert connections == {"10.0.0.2:50123 -> 10.0.0.1:1883", "10.0.0.3:40000 -> 10.0.0.1:1883"}
    # Both connections carry the same attachment: identical messages, read once.
    assert read(capture).equals(TABLE)


def test_a_tcp_hole_ends_the_stream_and_says_so(tmp_path):
    c = mqtt5_conversation()
    segments = [dpkt.ethernet.Ethernet(f).data.data for f in c.frames]
    client_data = [i for i, tcp in enumerate(segments) if tcp.sport == CLIENT[1] and tcp.data]
    lost = client_data[8]  # a segment of the client's stream, in the middle of the attachment
    frames = c.frames[:lost] + c.frames[lost + 1:]
    capture = Capture.open(write_pcap(tmp_path / "hole.pcap", frames))
    [att] = read(capture, view="attachments").to_pylist()
    assert att["complete"] is False
    holes = [r for r in read(capture, view="messages").to_pylist() if r["problem"] and "not captured" in r["problem"]]
    assert len(holes) == 1 and holes[0]["direction"] == "to broker"


def test_a_cut_capture_loses_nothing_silently(tmp_path):
    # dpkt hands over the last record as far as the file goes: the packet it cuts is reported.
    path = tmp_path / "cut.pcap"
    write_pcap(path, mqtt5_conversation().frames)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 1])  # the broker's last PUBACK loses its last byte
    rows = read(Capture.open(str(path), use_index_cache=False), view="messages").to_pylist()
    [cut] = [r for r in rows if r["problem"]]
    assert cut["direction"] == "from broker" and "declares 2 bytes; 1 remain" in cut["problem"]


@pytest.mark.parametrize("ng", [False, True])
def test_a_record_length_past_the_end_of_the_file_allocates_nothing_for_it(tmp_path, ng):
    # Found by fuzzing: dpkt read each record by the length its header declares, and the file
    # object allocated that much before finding the file shorter (1 GB for a 3 KB capture).
    path = tmp_path / "lying.pcap"
    write_pcap(path, mqtt5_conversation().frames, ng=ng)
    data = bytearray(path.read_bytes())
    if ng:  # the section header block, then the interface block: its length (and trailer) lie
        at = int.from_bytes(data[4:8], "little")
        data[at + 4:at + 8] = (0x7FFFFFF0).to_bytes(4, "little")
    else:  # the first record's caplen (24-byte file header, then ts_sec, ts_usec, caplen)
        data[24 + 8:24 + 12] = (0x7FFFFFF0).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        try:
            read(Capture.open(str(path), use_index_cache=False), view="messages")
        except CmiFormatError as e:
            assert e.source == str(path)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    assert peak < 16 << 20


def test_a_connection_whose_first_client_segment_was_lost(tmp_path):
    c = mqtt5_conversation()
    frames = c.frames[:2] + c.frames[3:]  # the handshake, then the CONNECT's segment is missing
    capture = Capture.open(write_pcap(tmp_path / "lost.pcap", frames), use_index_cache=False)
    rows = read(capture, view="messages").to_pylist()
    [gap] = [r for r in rows if r["problem"] and "were not captured" in r["problem"]]
    assert gap["direction"] == "to broker" and capture.attachments == []

"""A refused MQTT packet is one problem row and reading goes on where its fixed header says it ends.

The captures are real: tcpdump on loopback around a live mosquitto (``live.py``), a raw socket
client sending each malformed packet after a good CONNECT, the packets built byte by byte from the
OASIS rules (``test_mqtt_stream``). Mosquitto drops a connection that breaks the protocol, so what
follows the malformed packet goes in the same write. A TCP gap cannot be made on loopback: that
case is a pcap written frame by frame (``tcp_frames``).

`.ci/run` installs mosquitto and tcpdump; the live tests fail without them (``live.py``)."""
from __future__ import annotations

import contextlib
import socket
import struct

import dpkt
import pytest

from cmi_datasource import Capture, read
from cmi_datasource.cli.reading import load_of
from cmi_datasource.engine.reading import table
from cmi_datasource.errors import CmiOptionError, TruncatedError
from cmi_datasource.transports.mqtt.packets import MqttFormatError

from live import tcpdump_on  # fixture broker: the live plugin (conftest)
from support import slices_of
from tcp_frames import Conversation, write_pcap
from test_mqtt_stream import TABLE, cmi_pairs, connect, packet, properties, publish5, publish311, user, utf8, varint

DISCONNECT = packet(0xE0, b"")
DISCONNECT_5 = packet(0xE0, b"\x00\x00")  # reason code 0, no properties: only MQTT 5 gives DISCONNECT a body


@contextlib.contextmanager
def raw_client(port: int):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        yield sock
    finally:
        sock.close()


def read_one_packet(sock) -> bytes:
    """One whole packet from the broker (its CONNACK)."""
    data = b""
    while True:
        chunk = sock.recv(1)
        if not chunk:
            raise AssertionError(f"the broker closed the connection after {data!r}")
        data += chunk
        if len(data) >= 2 and not data[-1] & 0x80:
            length, shift = 0, 0
            for byte in data[1:]:
                length |= (byte & 0x7F) << shift
                shift += 7
            while len(data) < 2 + length:
                data += sock.recv(2 + length - len(data))
            return data


def until_closed(sock) -> None:
    """Wait for the broker to drop the connection, as it does after a malformed packet."""
    while True:
        try:
            if not sock.recv(65536):
                return
        except ConnectionResetError:
            return


def captured(tmp_path, port: int, after_connect: bytes, level: int = 4, capture_connect: bool = True) -> str:
    """A pcap of one connection to the live broker: a good CONNECT (and its CONNACK), then
    ``after_connect`` in one write; ``capture_connect`` False starts tcpdump after the CONNACK,
    as a capture that began on a connection already open."""
    with contextlib.ExitStack() as stack:
        if capture_connect:
            pcap, stop = stack.enter_context(tcpdump_on(tmp_path, port))
        sock = stack.enter_context(raw_client(port))
        sock.sendall(connect(level, f"refused-{level}"))
        assert read_one_packet(sock)[0] == 0x20  # CONNACK
        if not capture_connect:
            pcap, stop = stack.enter_context(tcpdump_on(tmp_path, port))
        sock.sendall(after_connect)
        until_closed(sock)
        stop()
    return str(pcap)


def rows_of(path: str, **options) -> list:
    return read(Capture.open(path, use_index_cache=False, options=tuple(options.items())), view="messages").to_pylist()


def to_broker(rows):
    return [r for r in rows if r["direction"] == "to broker"]


def test_a_publish_with_qos_3_is_one_problem_row_and_the_disconnect_after_it_is_read(tmp_path, broker):
    bad = packet(0x36, utf8("sas/qos3") + b"\x00\x07" + b"lost payload")
    rows = rows_of(captured(tmp_path, broker, bad + DISCONNECT))
    assert [r["mqtt_type"] for r in rows] == ["CONNECT", "CONNACK", "PUBLISH", "DISCONNECT"]
    refused = rows[2]
    assert refused["problem"] == "QoS 3 is reserved: malformed packet"
    assert (refused["qos"], refused["topic"], refused["packet_id"]) == (3, "sas/qos3", None)
    assert refused["length"] == len(bad) and refused["payload"] == b"" and refused["mqtt_version"] == "3.1.1"
    assert rows[3]["problem"] is None and rows[3]["frame"] == refused["frame"]  # one segment carried both


def test_reserved_packet_type_0_says_it_is_malformed(tmp_path, broker):
    bad = packet(0x00, b"\x01\x02")
    rows = to_broker(rows_of(captured(tmp_path, broker, bad + DISCONNECT)))
    assert [r["mqtt_type"] for r in rows] == ["CONNECT", "type 0", "DISCONNECT"]
    assert rows[1]["problem"] == "packet type 0 is reserved: malformed packet" and rows[1]["length"] == 4
    assert rows[2]["problem"] is None


def test_a_connect_whose_properties_run_past_it_still_names_the_version_the_rest_is_read_in(tmp_path, broker):
    body = utf8("MQTT") + bytes([5, 0x02]) + struct.pack(">H", 60) + varint(40) + b"\x21\x00\x14" + utf8("c")
    bad_connect = packet(0x10, body)
    publish = packet(0x30, utf8("sas/after") + properties(user("k", "v")) + b"data")
    with tcpdump_on(tmp_path, broker) as (pcap, stop):
        with raw_client(broker) as sock:
            sock.sendall(bad_connect + publish + DISCONNECT_5)
            until_closed(sock)
        stop()
    rows = to_broker(rows_of(str(pcap)))
    assert [r["mqtt_type"] for r in rows] == ["CONNECT", "PUBLISH", "DISCONNECT"]
    assert rows[0]["problem"] == "properties declare 40 bytes; 6 remain" and rows[0]["mqtt_version"] == "5.0"
    assert rows[0]["client_id"] is None
    read = rows[1]
    assert (read["topic"], read["mqtt_properties"], read["payload"], read["problem"]) == (
        "sas/after", ["user_property=k=v"], b"data", None)
    assert read["mqtt_version"] == "5.0" and rows[2]["problem"] is None


def test_a_fifth_remaining_length_byte_leaves_the_rest_of_the_direction_one_row_naming_where(tmp_path, broker):
    bad = b"\x30\xff\xff\xff\xff\x01" + utf8("t") + b"x" * 10
    path = captured(tmp_path, broker, bad + DISCONNECT)
    rows = to_broker(rows_of(path))
    assert [r["mqtt_type"] for r in rows] == ["CONNECT", "PUBLISH"]  # nothing after it is framed
    at = len(connect(4, "refused-4"))
    assert rows[1]["problem"] == (f"remaining length has a fifth byte (its fourth byte has 0x80 set): malformed; "
                                  f"where the packet ends cannot be told, so the {len(bad) + 2} bytes from byte "
                                  f"{at} of the stream to its end are not read")
    assert rows[1]["length"] == len(bad) + len(DISCONNECT)
    with pytest.raises(MqttFormatError, match="fifth byte") as raised:  # it may have been anything: FAILFAST
        read(Capture.open(path, use_index_cache=False))
    assert raised.value.offset == rows[1]["offset"]  # the frame's place in the file, not the stream's


def test_a_capture_begun_after_the_connect_on_another_port_needs_mqtt_port(tmp_path, broker):
    publish = publish311("sas/late", b"hello")
    path = captured(tmp_path, broker, publish + DISCONNECT, capture_connect=False)
    assert rows_of(path) == []  # port not 1883/8883, no CONNECT: nothing says it is MQTT
    rows = rows_of(path, **{"mqtt.port": f"1,{broker}"})
    assert [r["mqtt_type"] for r in rows] == ["PUBLISH", "DISCONNECT"]
    late = rows[0]
    assert (late["topic"], late["qos"], late["dup"], late["retain"], late["length"]) == ("sas/late", 0, False,
                                                                                         False, len(publish))
    assert late["mqtt_version"] is None and late["payload"] == b""
    assert late["problem"] == (
        "PUBLISH before any CONNECT that names the protocol, and no other packet of the connection tells it: the "
        "version is unknown, so whether MQTT 5 properties follow the topic, and where the payload starts, cannot "
        "be told")
    assert rows[1]["problem"] is None and rows[1]["connection"] == late["connection"]
    with pytest.raises(MqttFormatError, match="PUBLISH before any CONNECT"):  # it may have carried CMI
        read(Capture.open(path, use_index_cache=False, options=(("mqtt.port", str(broker)),)))


def test_the_version_the_other_packets_tell_reads_cmi_from_a_capture_begun_after_the_connect(tmp_path, broker):
    # MQTT 5 PUBLISHes carrying CMI in their properties, then a DISCONNECT with a reason code (a
    # body only MQTT 5 gives it); CONNECT and CONNACK were not captured, the port is not 1883.
    sent = b"".join(publish5("sas/cmi", p, d.correl_id, d.msg_type) for d, p in cmi_pairs())
    path = captured(tmp_path, broker, sent + DISCONNECT_5, level=5, capture_connect=False)
    load = load_of([path], {"mqtt.port": str(broker)}, view="messages")  # as Spark would be handed it
    rows = table(load).to_pylist()
    assert {r["mqtt_version"] for r in rows} == {"5.0"} and all(r["problem"] is None for r in rows)
    assert sum(r["in_attachment"] for r in rows) == len(cmi_pairs())
    dataset = table(load_of([path], {"mqtt.port": str(broker)}, view="dataset"))
    assert dataset.equals(TABLE)


def test_mqtt_port_is_checked():
    with pytest.raises(CmiOptionError, match="option mqtt.port must be TCP port numbers separated by commas"):
        load_of(["x.pcap"], {"mqtt.port": "1883,http"})
    assert load_of(["x.pcap"], {"MQTT.PORT": "1884"}).options.transport_options == (("mqtt.port", "1884"),)


# -- a TCP gap: frames written by hand -----------------------------------------------------------


def test_after_a_gap_on_one_side_the_other_side_reads_past_its_refused_publish(tmp_path):
    client, server = ("10.0.0.2", 50000), ("10.0.0.1", 1883)
    c = Conversation(client, server)
    c.send(client, connect(4, "gap"))
    c.send(server, packet(0x20, b"\x00\x00"))
    c.send(client, publish311("sas/a", b"1" * 40, packet_id=1), size=20)  # three segments: one is lost
    c.send(server, packet(0x40, b"\x00\x01"))
    refused = packet(0x36, utf8("sas/back") + b"\x00\x09" + b"x")  # to the client, QoS 3
    c.send(server, refused + packet(0x70, b"\x00\x09"))  # ... and a PUBCOMP after it
    lost = next(i for i, f in enumerate(c.frames) if len(dpkt.ethernet.Ethernet(f).data.data.data) == 20)
    frames = c.frames[:lost + 1] + c.frames[lost + 2:]
    rows = rows_of(write_pcap(tmp_path / "gap.pcap", frames))
    client_rows = to_broker(rows)
    assert [r["mqtt_type"] for r in client_rows] == ["CONNECT", "PUBLISH", "(not captured)"]
    assert client_rows[1]["problem"] == "PUBLISH declares 49 bytes; 18 remain"  # the gap cut it
    assert client_rows[2]["problem"].startswith("TCP bytes 37 to 57 of 10.0.0.2:50000 -> 10.0.0.1:1883")
    server_rows = [r for r in rows if r["direction"] == "from broker"]
    assert [r["mqtt_type"] for r in server_rows] == ["CONNACK", "PUBACK", "PUBLISH", "PUBCOMP"]
    assert server_rows[2]["problem"] == "QoS 3 is reserved: malformed packet" and server_rows[2]["topic"] == "sas/back"
    assert server_rows[3]["packet_id"] == 9 and server_rows[3]["problem"] is None



def late_mqtt5_beside_another_connection(tmp_path) -> str:
    """A pcap, frames written by hand: a connection on port 1884 whose CONNECT was not captured
    sends MQTT 5 PUBLISHes carrying CMI, one a frame, between the frames of a 3.1.1 connection
    on 1883; only then does its broker answer with a PUBACK whose reason code tells MQTT 5."""
    late = Conversation(("10.0.0.2", 50000), ("10.0.0.1", 1884), handshake=False)
    other = Conversation(("10.0.0.3", 50001), ("10.0.0.1", 1883))
    other.send(other.client, connect(4, "other"))
    frames = list(other.frames)
    for n, (d, p) in enumerate(cmi_pairs(), 1):
        late.send(late.client, publish5("sas/cmi", p, d.correl_id, d.msg_type, packet_id=n), size=1 << 20)
        other.send(other.client, publish311("sas/other", b"%d" % n))
        frames += [late.frames[-1], other.frames[-1]]
    late.send(late.server, packet(0x40, b"\x00\x01\x10"))  # PUBACK, packet id 1, reason code 0x10
    return write_pcap(tmp_path / "late.pcap", frames + late.frames[-1:])


def test_a_pcap_read_frame_by_frame_holds_publishes_until_a_later_packet_tells_the_version(tmp_path):
    path = late_mqtt5_beside_another_connection(tmp_path)
    capture = Capture.open(path, use_index_cache=False, options=(("mqtt.port", "1884"),))
    rows = read(capture, view="messages").to_pylist()
    late = [r for r in rows if r["connection"].endswith(":1884")]
    assert [r["mqtt_type"] for r in late] == ["PUBLISH"] * len(cmi_pairs()) + ["PUBACK"]
    assert {r["mqtt_version"] for r in late} == {"5.0"} and all(r["problem"] is None for r in rows)
    assert [r["frame"] for r in rows] == sorted(r["frame"] for r in rows)  # capture order across connections
    assert {r["mqtt_version"] for r in rows if r not in late} == {"3.1.1"}
    assert read(capture).equals(TABLE)


def test_what_waits_for_the_version_is_bounded_by_max_record_bytes(tmp_path):
    path = late_mqtt5_beside_another_connection(tmp_path)
    try:
        load_of([path], {"maxRecordBytes": "1500"})  # fewer bytes than the PUBLISHes before the PUBACK
        rows = rows_of(path, **{"mqtt.port": "1884"})
    finally:
        load_of([path], {})
    late = [r for r in rows if r["connection"].endswith(":1884")]
    assert [r["mqtt_type"] for r in late] == ["PUBLISH"] * len(cmi_pairs()) + ["PUBACK"]
    assert all(r["problem"].startswith("PUBLISH before any CONNECT that names the protocol, and no other packet")
               for r in late[:-1])  # read with what was known when the bound was reached
    assert late[-1]["mqtt_version"] == "5.0" and late[-1]["problem"] is None
    assert [r["frame"] for r in rows] == sorted(r["frame"] for r in rows)

# -- raw MQTT streams: the same refusals, bytes from the OASIS rules -------------------------------


@pytest.mark.parametrize("bad, problem", [
    (packet(0x36, utf8("t") + b"\x00\x01"), "QoS 3 is reserved: malformed packet"),
    (packet(0x00, b""), "packet type 0 is reserved: malformed packet"),
    (packet(0xF0, b""), "packet type 15 is reserved in MQTT 3.1 and 3.1.1 (AUTH is MQTT 5's): malformed packet"),
    (packet(0x30, b"\x00\x05ab"), "a field of 5 bytes passes the end of its packet"),
    (packet(0x30, b"\x00\x02\xff\xfe"), "a string is not valid UTF-8"),
])
def test_a_raw_stream_reads_on_after_a_refused_packet(tmp_path, bad, problem):
    path = tmp_path / "s.mqtt"
    path.write_bytes(connect(4, "c") + bad + publish311("sas/next", b"after") + DISCONNECT)
    rows = read(Capture.open(str(path), use_index_cache=False), view="messages").to_pylist()
    assert [r["problem"] for r in rows] == [None, problem, None, None]
    assert rows[1]["length"] == len(bad) and rows[2]["topic"] == "sas/next" and rows[2]["payload"] == b"after"


def test_a_raw_stream_cut_inside_a_packet_keeps_what_came_before():
    from cmi_datasource.transports.mqtt.streams import stream_messages
    data = connect(4, "c") + publish311("sas/whole", b"w") + publish311("sas/cut", b"c" * 30)[:-4]
    messages = list(stream_messages(data, "cut.mqtt"))
    assert [m.details.topic for m in messages[:2]] == [None, "sas/whole"]
    cut = messages[2]
    assert cut.problem == "PUBLISH declares 39 bytes; 35 remain" and cut.damage.kind is TruncatedError
    assert cut.file_end == len(data) and cut.index == 2


def test_a_told_version_is_the_level_a_partition_rereads_a_publish_with(tmp_path):
    # MQTT 5 told by a PUBACK with a reason code; partitions re-read each PUBLISH alone.
    from cmi_datasource.engine.decode import slice_batches
    path = tmp_path / "late.mqtt"
    data = b"".join(publish5("sas/cmi", p, d.correl_id, d.msg_type) for d, p in cmi_pairs())
    path.write_bytes(data + packet(0x40, b"\x00\x07\x10"))
    capture = Capture.open(str(path), format="mqtt", use_index_cache=False)
    [att] = capture.attachments
    slices = slices_of(capture, att, 1000)
    assert all(m.hint == 5 for s in slices for m in s.messages)
    assert [r for s in slices for b in slice_batches(s) for r in b.to_pylist()] == TABLE.to_pylist()


def test_packets_that_disagree_on_the_version_leave_it_unknown():
    from cmi_datasource.transports.mqtt.streams import stream_messages
    data = publish311("t", b"x") + packet(0x20, b"\x00\x00") + packet(0xE0, b"\x00")
    [publish, *_] = stream_messages(data, "x.mqtt")
    assert "its packets disagree (a 1-byte DISCONNECT is MQTT 5's, a 2-byte CONNACK MQTT 3.1/3.1.1's)" in \
        publish.problem


@pytest.mark.parametrize("zeros", [2, 64, 40_000_001])
def test_a_stretch_of_zero_bytes_is_one_row_per_piece_not_one_per_packet(tmp_path, zeros):
    """Zero bytes frame as 2-byte packets of reserved type 0, each refused: a stretch of them is
    one row saying how many (per 16 MiB piece of a long one), and what follows it is read."""
    data = connect(4, "c") + publish311("t", b"before") + bytes(zeros) + publish311("t", b"after") + packet(0xE0, b"")
    path = tmp_path / "zeros.mqtt"
    path.write_bytes(data)
    rows = rows_of(str(path))
    refused = [r for r in rows if r["problem"]]
    assert [r["mqtt_type"] for r in rows if not r["problem"]][:2] == ["CONNECT", "PUBLISH"]
    assert len(refused) <= -(-zeros // (16 << 20)) + 1, len(refused)
    pairs = sum(int(r["problem"].split()[0]) if r["problem"][0].isdigit() else 1 for r in refused
                if "type 0 is reserved" in r["problem"])
    assert pairs == zeros // 2
    if zeros % 2 == 0:  # an odd zero takes the next byte as its remaining length: framing goes on from there
        assert [r["payload"] for r in rows if r["mqtt_type"] == "PUBLISH"] == [b"before", b"after"]
        assert rows[-1]["mqtt_type"] == "DISCONNECT"

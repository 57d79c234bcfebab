"""A real broker and a real capture: mosquitto on a free loopback port, tcpdump capturing loopback,
one attachment published by our writer (MQTT 5, properties) and one by mosquitto_pub (MQTT 3.1.1,
MQMD-prefixed payloads), then the pcap read back into both DataFrames.

`.ci/run` installs Debian's mosquitto, mosquitto-clients and tcpdump when they are missing; the test
fails without them, and skips (saying why) only where the machine does not permit capturing."""
from __future__ import annotations

import subprocess

import pyarrow as pa

from cmi_datasource import Capture, read
from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages
from cmi_datasource.transports.mq.mqmd import descriptor_to_bytes
from cmi_datasource.transports.mq.transport import to_mqmd
from cmi_datasource.transports.mqtt.publish import publish


BY_OUR_WRITER = pa.table({"ID": [float(i) for i in range(300)], "CITY": [f"city {i % 17}" for i in range(300)]})
BY_MOSQUITTO_PUB = pa.table({"CODE": [f"c{i}" for i in range(40)], "QTY": [float(i * 3) for i in range(40)]})


def test_attachments_published_to_mosquitto_read_back_from_tcpdumps_capture(tmp_path, capture_file):
    port, pcap, stop_capture = capture_file
    options = WriteOptions(max_message_bytes=800, deterministic_seed="live")
    ours = build_messages([DatasetToWrite(BY_OUR_WRITER, "MQTT", "OURS")], options=options)
    assert publish(ours, f"127.0.0.1:{port}", "sas/cmi") == len(ours)
    theirs = build_messages([DatasetToWrite(BY_MOSQUITTO_PUB, "MQTT", "THEIRS")],
                            options=WriteOptions(max_message_bytes=800, deterministic_seed="mosquitto"))
    for n, message in enumerate(theirs):
        payload = tmp_path / f"message{n}.bin"
        payload.write_bytes(descriptor_to_bytes(to_mqmd(message), "<", "latin-1") + message.payload)
        subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv311", "-q", "1",
                        "-t", "sas/mqmd", "-f", str(payload)], check=True, timeout=10)
    stop_capture()
    capture = Capture.open(str(pcap), use_index_cache=False)
    assert capture.formats[str(pcap)] == "pcap"
    assert read(capture, dataset="MQTT.OURS").equals(BY_OUR_WRITER)
    assert read(capture, dataset="MQTT.THEIRS").equals(BY_MOSQUITTO_PUB)
    rows = read(capture, view="messages").to_pylist()
    versions = {r["mqtt_version"] for r in rows if r["mqtt_type"] == "CONNECT"}
    assert versions == {"5.0", "3.1.1"}
    assert all(r["problem"] is None for r in rows), [r["problem"] for r in rows if r["problem"]]

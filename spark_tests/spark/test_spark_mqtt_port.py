"""Option ``mqtt.port`` through Spark: a pcap begun after the CONNECT of an MQTT 5 connection on a
port other than 1883/8883 reads its dataset only with the option, which reaches the partitions
(they re-read the capture in other Python workers, by the format name the plan recorded)."""
from __future__ import annotations

import io

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages
from cmi_datasource.transports import capture_format
from cmi_datasource.transports.mqtt.packets import frame_packet, packet_bytes
from tcp_frames import Conversation, write_pcap

TABLE = pa.table({"ID": [float(i) for i in range(300)], "CITY": [f"city {i % 13}" for i in range(300)]})


def test_spark_reads_an_mqtt_capture_on_another_port_with_the_option(spark, tmp_path):
    stream = io.BytesIO()
    capture_format("mqtt").write(stream, build_messages(
        [DatasetToWrite(TABLE, "MQTT", "PORTED")], options=WriteOptions(max_message_bytes=700,
                                                                          deterministic_seed="port")))
    data = stream.getvalue()
    client, broker = ("10.9.0.2", 41000), ("10.9.0.1", 1884)
    c = Conversation(client, broker, handshake=False)
    c.send(client, data[frame_packet(data, 0).end:], size=500)  # its CONNECT was not captured
    c.send(broker, packet_bytes(4, b"\x00\x01\x00"))  # a PUBACK with a reason code: MQTT 5
    path = write_pcap(tmp_path / "ported.pcap", c.frames)
    def read(**options):
        return spark.read.format("cmi").options(**options).load(path)

    assert read(view="messages").count() == 0
    rows = read(**{"mqtt.port": "1884"}).collect()
    assert [tuple(r) for r in rows] == list(zip(TABLE["ID"].to_pylist(), TABLE["CITY"].to_pylist()))
    versions = read(view="messages", **{"mqtt.port": "1884"}).select("mqtt_version", "problem").collect()
    assert {tuple(r) for r in versions} == {("5.0", None)}

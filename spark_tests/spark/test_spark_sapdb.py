"""The ``sapdb`` view through Spark: one partition per capture file, the port option reaching the reader."""
from __future__ import annotations

import os

from tcp_frames import Conversation, write_pcap
from sapdb_packets import EXAMPLE_1_REPLY, EXAMPLE_1_REQUEST, rte


def test_spark_reads_the_sapdb_sample_session(spark, samples_dir):
    df = spark.read.format("cmi").option("view", "sapdb").load(os.path.join(samples_dir, "sapdb_session.rte"))
    assert df.schema["values"].dataType.simpleString() == "array<string>"
    error = df.where("returncode = -3014").select("sqlstate", "errorpos", "text").collect()
    assert [tuple(r) for r in error] == [("42000", 37, "Invalid end of SQL statement")]
    selected = df.where("direction = 'reply' and part_kind = 'data'").select("values").collect()
    assert [r["values"] for r in selected] == [["4711", "00143944"]]
    assert df.schema["columns"].dataType.simpleString() == "array<string>"
    named = df.where("direction = 'reply' and part_kind = 'data'").selectExpr("map_from_arrays(columns, values) AS m")
    assert named.first()["m"] == {"NUMB": "4711", "TIME": "00143944"}
    items = (df.where("function_code IS NULL AND part_kind = 'data' AND mass_cmd")
             .selectExpr("inline(arrays_zip(columns, values))").where("columns = 'ITEM'").collect())
    assert [r["values"].rstrip() for r in items] == ["bolt", "nut", "washer"]
    inserted = df.where("part_kind = 'resultcount' and function_code = 'minsert'").select("result_count").first()
    assert inserted["result_count"] == 3


def test_spark_sapdb_view_over_pcaps_with_the_port_option(spark, tmp_path):
    client, server = ("10.2.0.1", 50000), ("10.2.0.2", 7300)
    c = Conversation(client, server, handshake=False)
    c.send(client, rte(63, EXAMPLE_1_REQUEST), size=40)
    c.send(server, rte(64, EXAMPLE_1_REPLY), size=40)
    write_pcap(tmp_path / "a.pcap", c.frames[1:])  # the request's first frame was not captured
    write_pcap(tmp_path / "b.pcap", c.frames)
    reader = spark.read.format("cmi").option("view", "sapdb")
    unclaimed = reader.load(str(tmp_path / "a.pcap"))
    assert unclaimed.count() == 0
    both = reader.option("sapdb.port", "7300").load(str(tmp_path / "*.pcap"))
    assert both.rdd.getNumPartitions() == 2
    rows = both.select("source", "returncode", "problem").collect()
    assert sorted(os.path.basename(r["source"]) for r in rows if r["returncode"] == -3014) == ["a.pcap", "b.pcap"]
    assert [os.path.basename(r["source"]) for r in rows if r["problem"]] == ["a.pcap"]

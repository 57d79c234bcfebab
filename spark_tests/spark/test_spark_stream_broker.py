"""A live MQTT broker read as a stream (issue 29): spark.readStream with option mqtt.broker spools
the broker's messages (MQTT 5, QoS 1, a persistent session, acknowledged once fsynced) into the
folder it loads and reads that folder as a stream. Attachments published by our writer reach the
Parquet sink once: those published while the query was stopped (and the broker restarted) after
the query restarts, and those published after the broker restarted under the running query."""
from __future__ import annotations

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions, build_messages, write_attachments_dump
from cmi_datasource.transports.mqtt.publish import publish

from live import wait_for


def orders(first: int, rows: int) -> pa.Table:
    return pa.table({"ID": [float(i) for i in range(first, first + rows)],
                     "ITEM": [f"item {i % 7}" for i in range(first, first + rows)]})


def sent(broker: int, data: pa.Table, seed: str) -> int:
    messages = build_messages([DatasetToWrite(data, "LIVE", "ORDERS")],
                              options=WriteOptions(max_message_bytes=600, deterministic_seed=seed))
    return publish(messages, f"127.0.0.1:{broker}", "sas/orders")


def test_a_live_broker_streamed_through_its_spool_reaches_the_sink_once(spark, tmp_path, persistent_broker):
    mosquitto = persistent_broker
    broker = mosquitto.port
    spool, sink, checkpoint = tmp_path / "spool", tmp_path / "out", tmp_path / "checkpoint"
    with open(tmp_path / "schema.dmp", "wb") as out:  # the stream's schema, from a capture of the same data set
        write_attachments_dump(out, [DatasetToWrite(orders(0, 1), "LIVE", "ORDERS")])
    schema = spark.read.format("cmi").load(str(tmp_path / "schema.dmp")).schema

    def start():
        return (spark.readStream.format("cmi").schema(schema).option("dataset", "LIVE.ORDERS")
                .option("mqtt.broker", f"127.0.0.1:{broker}").option("mqtt.topic", "sas/#")
                .option("mqtt.rotateSeconds", "0.5").load(str(spool))
                .writeStream.format("parquet").option("path", str(sink)).option("checkpointLocation", str(checkpoint))
                .trigger(processingTime="1 second").start())

    def ids():
        try:
            return sorted(r.ID for r in spark.read.schema(schema).parquet(str(sink)).collect())
        except Exception:  # noqa: BLE001 - no Parquet file written yet
            return []

    query = start()
    try:
        # The broker keeps messages for a session once it exists: the query's first micro-batch
        # (its first offset) starts the spooler, which subscribes before that batch is planned.
        wait_for(lambda: query.recentProgress, 90, "the query's first micro-batch")
        sent(broker, orders(0, 40), "first")
        wait_for(lambda: len(ids()) >= 40, 90, "the first attachment in the sink")
    finally:
        query.stop()
    sent(broker, orders(40, 25), "while stopped")  # the broker keeps them for the spooler's session...
    mosquitto.restart()  # ...and saves them as it stops, loads them as it starts
    query = start()
    try:
        wait_for(lambda: len(ids()) >= 65, 90, "the attachment published while the query was stopped")
        mosquitto.restart()  # under the running query: its spooler reconnects, resuming its session
        sent(broker, orders(65, 10), "after the broker restarted")
        wait_for(lambda: len(ids()) >= 75, 90, "the attachment published after the broker restarted")
    finally:
        query.stop()
    assert ids() == [float(i) for i in range(75)]  # every row once

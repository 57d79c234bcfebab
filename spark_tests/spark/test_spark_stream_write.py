"""df.writeStream.format("cmi") (issue 29): each micro-batch one capture, exactly once per batch id
with a checkpoint (the guarantees are in ``cmi_datasource/spark/stream_writer.py`` and
docs/writing.md). The source is a folder of JSON files read with Spark's file stream source, the
queries run with ``trigger(availableNow=True)``, and what they wrote is read back in batch.

A batch re-run after a crash needs a driver that really dies between our commit and Spark's commit
log: it runs in a child Python process (``KILLED_DRIVER``), killed with SIGKILL, and the query is
restarted from its checkpoint in the shared session.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from pyspark.sql import functions as F

from cmi_datasource.spark.writer import STAGING_DIR

from conftest import ROOT
from support import kill_tree, wait_for

pytestmark = pytest.mark.spark

SCHEMA = "x double, name string"
DATASET = "work.events"
# Each batch sizes a character variable by its longest value unless the column's sas_length fixes it:
# fixed, the batches' attachments have the same variables and read back as one dataset.
NAME_WIDTH = {"sas_length": 12}


def land(folder, number: int, values) -> None:
    """A JSON file of rows (x, name) landing in the source folder whole: written under a hidden name
    (Spark's file source skips names starting with '.'), then renamed."""
    os.makedirs(folder, exist_ok=True)
    hidden = os.path.join(folder, f".file-{number}.json")
    with open(hidden, "w") as f:
        f.writelines(json.dumps({"x": float(v), "name": f"row {v}"}) + "\n" for v in values)
    os.rename(hidden, os.path.join(folder, f"file-{number}.json"))


def events(spark, source):
    """The rows landing in ``source``, as a stream, the name column with its fixed width."""
    rows = spark.readStream.schema(SCHEMA).json(str(source))
    return rows.select("x", F.col("name").alias("name", metadata=NAME_WIDTH))


def run_available_now(stream, checkpoint, destination=None, output_mode="append", **options):
    """Everything new in ``stream`` through the cmi sink, then stop; the query is returned."""
    writer = (stream.writeStream.format("cmi").outputMode(output_mode).option("dataset", DATASET)
              .option("checkpointLocation", str(checkpoint)))
    for key, value in options.items():
        writer = writer.option(key, value)
    query = writer.trigger(availableNow=True).start(*([str(destination)] if destination else []))
    query.awaitTermination()
    assert query.exception() is None
    return query


def captures(folder) -> list:
    return sorted(n for n in os.listdir(folder) if n.endswith(".dmp"))


def batch_capture(query_id: str, batch: int) -> str:
    return f"cmi-{DATASET}-batch-{batch}-{query_id.replace('-', '')}.dmp"


def values(spark, path) -> list:
    return sorted(r["x"] for r in spark.read.format("cmi").load(str(path)).collect())


def test_files_arriving_over_three_runs_are_written_once_each_a_capture_per_batch(spark, tmp_path):
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    land(source, 0, range(0, 10))
    first = run_available_now(events(spark, source), checkpoint, out)
    assert captures(out) == [batch_capture(first.id, 0)]
    land(source, 1, range(10, 25))
    land(source, 2, range(25, 30))
    second = run_available_now(events(spark, source), checkpoint, out)
    assert second.id == first.id  # one query across restarts: its checkpoint keeps its id
    assert captures(out) == sorted([batch_capture(first.id, 0), batch_capture(first.id, 1)])
    run_available_now(events(spark, source), checkpoint, out)  # nothing new: nothing more
    assert sorted(os.listdir(out)) == captures(out)  # no staging left behind
    assert values(spark, out) == [float(v) for v in range(30)]
    attachments = spark.read.format("cmi").option("view", "attachments").load(str(out)).collect()
    assert sorted(a["observations"] for a in attachments) == [10, 20]
    assert {a["name"] for a in attachments} == {"WORK.EVENTS"}
    names = spark.read.format("cmi").load(str(out)).select("name").collect()
    assert sorted(r["name"] for r in names) == sorted(f"row {v}" for v in range(30))


def test_in_complete_mode_each_batch_replaces_the_captures_before_it(spark, tmp_path):
    source, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "chk"
    land(source, 0, range(0, 10))
    counts = events(spark, source).groupBy((F.col("x") % 2).alias("parity")).agg(F.count("*").alias("n"))
    query = run_available_now(counts, checkpoint, out, output_mode="complete")
    assert captures(out) == [batch_capture(query.id, 0)]
    land(source, 1, range(10, 31))
    run_available_now(counts, checkpoint, out, output_mode="complete")
    assert captures(out) == [batch_capture(query.id, 1)]
    result = spark.read.format("cmi").load(str(out)).collect()
    assert sorted((r["parity"], r["n"]) for r in result) == [(0.0, 16.0), (1.0, 15.0)]


# -- a driver killed after our commit, before Spark's commit log ------------------------------------

KILLED_DRIVER = textwrap.dedent(r"""
    import sys, time
    from pyspark.sql import SparkSession, functions as F
    from cmi_datasource.spark.source import CmiDataSource
    from cmi_datasource.spark.stream_writer import CmiStreamWriter, stream_save_options

    source, out, checkpoint, log = sys.argv[1:5]
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()

    class CommitThenHang(CmiStreamWriter):
        def commit(self, messages, batchId):
            super().commit(messages, batchId)
            with open(log, "a") as f:
                f.write(f"committed {batchId}\n")
            time.sleep(600)  # killed here: the capture is in place, Spark has not recorded the batch

    class KilledSource(CmiDataSource):
        @classmethod
        def name(cls):
            return "cmi_killed"

        def streamWriter(self, schema, overwrite):
            return CommitThenHang(stream_save_options(dict(self.options)), schema, overwrite)

    spark.dataSource.register(KilledSource)
    rows = spark.readStream.schema("x double, name string").json(source)
    query = (rows.select("x", F.col("name").alias("name", metadata={"sas_length": 12})).writeStream.format("cmi_killed")
             .option("dataset", "work.events").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(out))
    query.awaitTermination()
""")


def test_a_batch_committed_before_the_driver_died_is_not_written_again_when_spark_reruns_it(spark, tmp_path):
    source, out, checkpoint, log = tmp_path / "in", tmp_path / "out", tmp_path / "chk", tmp_path / "commits.log"
    land(source, 0, range(0, 10))
    env = dict(os.environ, SPARK_CONF_DIR=os.path.join(ROOT, "conf"), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=ROOT)
    driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, str(source), str(out), str(checkpoint),
                               str(log)], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        wait_for(lambda: log.exists() and "committed 0" in log.read_text() or driver.poll() is not None,
                 "batch 0's commit", timeout=180)
        assert driver.poll() is None, driver.communicate()[1][-3000:]
    finally:
        kill_tree(driver)
    [committed] = captures(out)
    written = (out / committed).read_bytes()
    assert (checkpoint / "offsets" / "0").exists() and not (checkpoint / "commits" / "0").exists()

    land(source, 1, range(10, 15))
    query = run_available_now(events(spark, source), checkpoint, out)  # the real sink, from the same checkpoint
    assert committed == batch_capture(query.id, 0)
    assert (checkpoint / "commits" / "0").exists() and (checkpoint / "commits" / "1").exists()  # batch 0 re-run
    assert captures(out) == sorted([committed, batch_capture(query.id, 1)])
    assert (out / committed).read_bytes() == written  # not written again
    assert values(spark, out) == [float(v) for v in range(15)]
    assert not (out / STAGING_DIR).exists()


# -- a live broker ----------------------------------------------------------------------------------

def test_a_stream_to_a_live_broker_is_read_back_once_even_when_spark_reruns_a_sent_batch(spark, tmp_path,
                                                                                         capture_file):
    port, pcap, stop_capture = capture_file
    source, checkpoint = tmp_path / "in", tmp_path / "chk"
    live = {"transport": "mqtt", "mqtt.broker": f"127.0.0.1:{port}", "mqtt.topic": "sas/stream"}
    land(source, 0, range(0, 10))
    run_available_now(events(spark, source), checkpoint, **live)
    land(source, 1, range(10, 30))
    run_available_now(events(spark, source), checkpoint, **live)
    # What Spark does after a driver died between our publish and its commit log: batch 1 runs again
    # and its messages reach the broker a second time.
    for name in ("1", ".1.crc"):  # the commit log entry and its checksum, as if never written
        os.remove(checkpoint / "commits" / name)
    run_available_now(events(spark, source), checkpoint, **live)
    assert (checkpoint / "commits" / "1").exists() and not (checkpoint / "offsets" / "2").exists()
    stop_capture()

    publishes = (spark.read.format("cmi").option("view", "messages").load(str(pcap))
                 .filter("mqtt_type = 'PUBLISH' and direction = 'to broker'").collect())
    assert {r["topic"] for r in publishes} == {"sas/stream"}
    attachments = spark.read.format("cmi").option("view", "attachments").load(str(pcap)).collect()
    assert len(attachments) == 2
    by_rows = {a["observations"]: a for a in attachments}
    assert sorted(by_rows) == [10, 20]  # batch 1 once, not twice
    # A batch's messages: the header, the application message, the sequenced ones and the count.
    sent = {rows: a["found_messages"] + 3 for rows, a in by_rows.items()}
    assert len(publishes) == sent[10] + 2 * sent[20]  # batch 1 reached the broker twice...
    assert by_rows[10]["duplicate_messages"] == 0
    assert by_rows[20]["duplicate_messages"] == sent[20]  # ...as exact copies, which the reader dropped
    assert values(spark, pcap) == [float(v) for v in range(30)]

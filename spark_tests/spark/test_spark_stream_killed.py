"""A stream of a folder (``spark.readStream.format("cmi")``) to a Parquet sink whose driver is killed
in the middle of a micro-batch, then restarted from its checkpoint: the killed micro-batch is
replayed from the offsets Spark logged for it, and every row reaches the sink once.

The driver runs in a child Python process (``HELD_DRIVER``) whose stream reader is ours with one
difference: the partition that reads a given row signals through a file and then blocks, before
handing that row over. So the kill comes at a known point: Spark has logged the micro-batch's
offsets and not its commit, one task is inside our read, and the micro-batch's other partition
has written its Parquet file into the sink, a file the sink's log (``_spark_metadata``) does not
list. The query is restarted with the real reader in the shared session, as in
``test_spark_stream_write.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pyarrow.parquet as pq
import pytest

from landing import ids_in, land, stream_to_parquet, transfer

from conftest import ROOT
from support import kill_tree, wait_for

pytestmark = pytest.mark.spark

NOW = int(time.time())  # files land from now on (the attachment timeout counts from their times)

HELD_DRIVER = textwrap.dedent(r"""
    import sys, time
    from pyspark.sql import SparkSession
    from cmi_datasource.engine.options import ReadOptions
    from cmi_datasource.spark.source import CmiDataSource
    from cmi_datasource.spark.stream import CmiStreamReader

    folder, sink, checkpoint, signal, held = sys.argv[1:6]
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()

    class HoldingReader(CmiStreamReader):
        def read(self, partition):
            for batch in super().read(partition):
                if float(held) in batch.column("ID").to_pylist():
                    with open(signal, "a") as f:
                        f.write("holding\n")
                    time.sleep(600)  # killed here, in the middle of the micro-batch
                yield batch

    class HeldSource(CmiDataSource):
        @classmethod
        def name(cls):
            return "cmi_held"

        def streamReader(self, schema):
            return HoldingReader(ReadOptions.parse(dict(self.options), streaming=True), schema)

    spark.dataSource.register(HeldSource)
    query = (spark.readStream.format("cmi_held").option("dataset", "FIN.LEDGER").load(folder)
             .writeStream.format("parquet").option("path", sink).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
""")


def logged_files(sink) -> set:
    """The names of the data files the Parquet sink's log (_spark_metadata) lists: a version
    line, then one JSON entry per file."""
    names = set()
    log = sink / "_spark_metadata"
    for entry in (p for p in log.iterdir() if p.name.isdigit()):
        for line in entry.read_text().splitlines()[1:]:
            names.add(os.path.basename(json.loads(line)["path"]))
    return names


def whole_files(sink) -> dict:
    """The IDs of each complete Parquet file in the sink, by name (a killed task's file that was
    never finished has no footer and is left out)."""
    found = {}
    for path in sink.glob("*.parquet"):
        try:
            found[path.name] = pq.read_table(path).column("ID").to_pylist()
        except (OSError, ValueError):  # pyarrow's ArrowInvalid: no footer (yet)
            continue
    return found


def unlisted_ids(sink):
    """The IDs in the sink's complete Parquet files that its log does not list (a killed
    micro-batch's output), None when there are none."""
    listed = logged_files(sink)
    return sorted(i for name, ids in whole_files(sink).items() if name not in listed for i in ids) or None


def test_a_driver_killed_in_the_middle_of_a_micro_batch_replays_it_and_every_row_reaches_the_sink_once(spark,
                                                                                                     tmp_path):
    folder, sink, checkpoint, signal = tmp_path / "in", tmp_path / "out", tmp_path / "chk", tmp_path / "held"
    rotated = transfer(200, 100)
    land(folder, "a.dmp", transfer(5, 0), NOW)
    land(folder, "b-rotated-1.dmp", rotated[:len(rotated) // 2], NOW + 1)
    stream_to_parquet(spark, str(folder), sink, checkpoint)  # micro-batch 0: a.dmp; the rotated attachment waits
    assert ids_in(spark, sink) == [float(i) for i in range(5)]

    land(folder, "c-rotated-2.dmp", rotated[len(rotated) // 2:], NOW + 2)
    land(folder, "d.dmp", transfer(10, 300), NOW + 3)
    env = dict(os.environ, SPARK_CONF_DIR=os.path.join(ROOT, "conf"), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=ROOT)
    driver = subprocess.Popen([sys.executable, "-c", HELD_DRIVER, str(folder), str(sink), str(checkpoint),
                               str(signal), "100"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: signal.exists() or driver.poll() is not None, "micro-batch 1 reading row 100", timeout=180)
        assert driver.poll() is None, driver.communicate()[1][-3000:]
        # The micro-batch's other partition finishes while row 100's is held: its file is in the sink.
        left_over = wait_for(lambda: unlisted_ids(sink) or driver.poll() is not None,
                             "micro-batch 1's other partition's Parquet file", timeout=180)
        assert driver.poll() is None, driver.communicate()[1][-3000:]
    finally:
        kill_tree(driver)
    assert (checkpoint / "offsets" / "1").exists() and not (checkpoint / "commits" / "1").exists()
    killed_offsets = (checkpoint / "offsets" / "1").read_text()
    assert set(left_over) <= {float(i) for i in range(101, 310)}  # a part of micro-batch 1, not row 100

    land(folder, "e.dmp", transfer(5, 400), NOW + 4)
    query = stream_to_parquet(spark, str(folder), sink, checkpoint)  # the real reader, from the same checkpoint
    assert (checkpoint / "offsets" / "1").read_text() == killed_offsets  # replayed as logged, not planned again
    assert (checkpoint / "commits" / "1").exists() and (checkpoint / "commits" / "2").exists()
    assert not (checkpoint / "offsets" / "3").exists()
    read = {p["batchId"]: p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0}
    assert read == {1: 210, 2: 5}  # e.dmp, landed after the kill, is not in the replayed micro-batch
    everything = [float(i) for span in (range(5), range(100, 310), range(400, 405)) for i in span]
    assert ids_in(spark, sink) == everything  # once each...
    in_files = [i for ids in whole_files(sink).values() for i in ids]
    assert len(in_files) == len(everything) + len(left_over)  # ...though the killed batch's file is still there

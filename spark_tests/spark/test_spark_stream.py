"""A folder of captures read as a stream by Spark (spark.readStream.format("cmi")), written to
Parquet with a checkpoint and trigger(availableNow=True), run again as files land: every row once,
nothing more when nothing is new, an attachment split over two files once and whole after the
second lands, maxFilesPerTrigger, and the read modes on an attachment with other variables."""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from landing import land, transfer

NOW = int(time.time())  # files land from now on (the attachment timeout counts from their times)


def run_available_now(spark, folder, sink, checkpoint, **options):
    """One run of the query until everything there has been read; its number of micro-batches."""
    reader = spark.readStream.format("cmi").option("dataset", "FIN.LEDGER")
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (reader.load(str(folder)).writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return len([p for p in query.recentProgress if p["numInputRows"] > 0])


def ids_in(spark, sink):
    return sorted(r.ID for r in spark.read.parquet(str(sink)).collect())


def test_files_landing_between_runs_reach_the_sink_once_and_a_rotated_attachment_once_whole(spark, tmp_path):
    folder, sink, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    land(folder, "a.dmp", transfer(5, 0), NOW)
    run_available_now(spark, folder, sink, checkpoint)
    assert ids_in(spark, sink) == [float(i) for i in range(5)]
    rotated = transfer(200, 100)
    land(folder, "b.dmp", transfer(3, 5), NOW + 1)
    land(folder, "rotated-1.dmp", rotated[:len(rotated) // 2], NOW + 2)
    run_available_now(spark, folder, sink, checkpoint)
    assert ids_in(spark, sink) == [float(i) for i in range(8)]  # the rotated attachment waits
    land(folder, "rotated-2.dmp", rotated[len(rotated) // 2:], NOW + 3)
    run_available_now(spark, folder, sink, checkpoint)
    whole = [float(i) for i in range(8)] + [float(i) for i in range(100, 300)]
    assert ids_in(spark, sink) == whole
    assert run_available_now(spark, folder, sink, checkpoint) == 0  # nothing new: nothing more
    assert ids_in(spark, sink) == whole


def test_max_files_per_trigger_cuts_micro_batches(spark, tmp_path):
    folder = tmp_path / "in"
    for i in range(3):
        land(folder, f"f{i}.dmp", transfer(2, 2 * i), NOW + i)
    batches = run_available_now(spark, folder, tmp_path / "out", tmp_path / "checkpoint", maxFilesPerTrigger=1)
    assert batches == 3 and ids_in(spark, tmp_path / "out") == [float(i) for i in range(6)]
    assert len([f for f in os.listdir(tmp_path / "checkpoint" / "offsets") if f.isdigit()]) == 3


def test_an_attachment_with_other_variables_fails_failfast_and_is_reported_by_permissive(spark, tmp_path):
    from pyspark.errors import StreamingQueryException
    folder = tmp_path / "in"
    land(folder, "a.dmp", transfer(2, 0), NOW)
    land(folder, "b.dmp", transfer(1, table=pa.table({"ID": [7.0], "EXTRA": [1.0]})), NOW + 1)
    with pytest.raises(StreamingQueryException, match="AttachmentError: attachment .* has other variables"):
        run_available_now(spark, folder, tmp_path / "out", tmp_path / "checkpoint")
    sink = tmp_path / "permissive"
    run_available_now(spark, folder, sink, tmp_path / "checkpoint-permissive", mode="PERMISSIVE")
    found = spark.read.parquet(str(sink)).collect()
    assert sorted(r.ID for r in found if r.ID is not None) == [0.0, 1.0]
    assert [r._corrupt_record for r in found if r._corrupt_record is not None][0].startswith(
        "FIN.LEDGER: attachment ")


def test_the_attachments_and_messages_views_as_streams_list_everything_once(spark, tmp_path):
    folder = tmp_path / "in"
    rotated = transfer(60, 100)
    land(folder, "a.dmp", transfer(2, 0), NOW)
    land(folder, "rotated-1.dmp", rotated[:len(rotated) // 2], NOW + 1)

    def run(view):
        query = (spark.readStream.format("cmi").option("view", view).load(str(folder)).writeStream
                 .format("parquet").option("path", str(tmp_path / view))
                 .option("checkpointLocation", str(tmp_path / f"{view}-checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()

    for view in ("attachments", "messages"):
        run(view)
    listed = spark.read.parquet(str(tmp_path / "attachments")).collect()
    assert [(r.name, r.observations) for r in listed] == [("FIN.LEDGER", 2)]  # the rotated one waits
    land(folder, "rotated-2.dmp", rotated[len(rotated) // 2:], NOW + 2)
    for view in ("attachments", "messages"):
        run(view)
        run(view)  # nothing new: nothing more
    listed = spark.read.parquet(str(tmp_path / "attachments")).collect()
    assert sorted((r.name, r.observations, r.complete) for r in listed) == [("FIN.LEDGER", 2, True),
                                                                            ("FIN.LEDGER", 60, True)]
    batch = spark.read.format("cmi").option("view", "messages").load(str(folder))
    streamed = spark.read.parquet(str(tmp_path / "messages"))
    key = ["source", "index", "attachment", "sequence", "role"]
    assert sorted(streamed.select(*key).collect()) == sorted(batch.select(*key).collect())

"""Duplicates through Spark: a repeated message is counted in the attachments view and named in
the messages view (``duplicate_of``, numbered from 1), and the dataset reads as without it."""
from __future__ import annotations

import pyarrow as pa

from cmi_datasource.engine.write import DatasetToWrite, WriteOptions

from conftest import dump_messages
from support import build_mq_messages

TABLE = pa.table({"ID": pa.array([float(i) for i in range(30)]), "NAME": [f"row {i}" for i in range(30)]})


def test_spark_shows_a_repeated_message_in_the_attachments_and_messages_views(spark, tmp_path):
    pairs = build_mq_messages([DatasetToWrite(TABLE, "work", "rows")],
                              options=WriteOptions(max_message_bytes=100, deterministic_seed="spark-duplicates"))
    repeated = 3  # the 4th message of the dump: sequenced message 2 (header, application message, 1, 2, ...)
    path = dump_messages(tmp_path, pairs + [pairs[repeated]])

    def view(name):  # a reader of its own: DataFrameReader.option changes the reader it is called on
        return spark.read.format("cmi").option("view", name).load(path)

    attachments = view("attachments")
    [attachment] = attachments.collect()
    assert attachment["name"] == "WORK.ROWS" and attachment["complete"] is True
    assert attachment["found_messages"] == attachment["expected_messages"] == len(pairs) - 3
    assert attachment["duplicate_messages"] == 1
    columns = attachments.columns
    assert columns[columns.index("found_messages") + 1] == "duplicate_messages"

    messages = view("messages")
    assert messages.schema["duplicate_of"].dataType.simpleString() == "struct<source:string,index:bigint>"
    rows = messages.orderBy("index").collect()
    assert [r["index"] for r in rows] == list(range(1, len(pairs) + 2))
    copy = rows[-1]
    assert copy["duplicate_of"].asDict() == {"source": path, "index": repeated + 1}
    assert (copy["role"], copy["sequence"]) == ("sequenced", 2)
    assert rows[repeated]["sequence"] == 2 and rows[repeated]["duplicate_of"] is None
    assert messages.where("duplicate_of is not null").count() == 1
    selected = messages.where("duplicate_of.index = 4").select("index").collect()
    assert [r["index"] for r in selected] == [len(pairs) + 1]

    dataset = view("dataset").orderBy("ID").toArrow()
    assert dataset.to_pylist() == TABLE.to_pylist()

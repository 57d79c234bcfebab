"""``spark.readStream.format("cmi")`` over an S3 prefix (the local moto server), written to Parquet
with a checkpoint and ``trigger(availableNow=True)``, run again as captures are uploaded: every row
once, an attachment rotated over two objects once and whole.

An object's modification time is its upload time (S3's Last-Modified), in whole seconds: objects
uploaded within one second have the same time and are taken in the order of their keys. The
uploads here are in the order of their keys; what becomes of an object uploaded in the same second
as the newest one read but with a key before it is the last test.
"""
from __future__ import annotations

import json
import time

import pytest

from cmi_datasource.engine.options import ReadOptions
from cmi_datasource.engine.stream import FolderStream, stream_schema
from cmi_datasource.storage import times_and_sizes

from landing import dump, ids_in, stream_to_parquet, transfer

pytestmark = pytest.mark.spark


def upload(s3, prefix: str, name: str, messages) -> str:
    """A dmpmqmsg dump of ``messages`` under the prefix: a PUT, so the object appears whole."""
    return s3.put(f"{prefix}/{name}", dump(messages))


def last_offset(checkpoint) -> dict:
    """The source's offset in the checkpoint's newest offsets file (a version line, the batch's
    metadata, then one line per source)."""
    newest = max(int(name) for name in (p.name for p in (checkpoint / "offsets").iterdir()) if name.isdigit())
    return json.loads((checkpoint / "offsets" / str(newest)).read_text().splitlines()[2])


def test_objects_uploaded_between_runs_reach_the_sink_once_and_a_rotated_attachment_once_whole(spark, s3, tmp_path):
    prefix = s3.prefix("stream")
    uri, sink, checkpoint = s3.uri(prefix + "/"), tmp_path / "out", tmp_path / "checkpoint"
    rotated = transfer(200, 100)
    upload(s3, prefix, "a.dmp", transfer(5, 0))
    first_half = upload(s3, prefix, "b-rotated-1.dmp", rotated[:len(rotated) // 2])
    stream_to_parquet(spark, uri, sink, checkpoint)
    assert ids_in(spark, sink) == [float(i) for i in range(5)]  # the rotated attachment waits...
    offset = last_offset(checkpoint)
    assert [path for path, _ in offset["carried"]] == [first_half] and len(offset["waiting"]) == 1  # ...in S3

    upload(s3, prefix, "c-rotated-2.dmp", rotated[len(rotated) // 2:])
    last = upload(s3, prefix, "d.dmp", transfer(3, 5))
    stream_to_parquet(spark, uri, sink, checkpoint)
    whole = [float(i) for i in range(8)] + [float(i) for i in range(100, 300)]
    assert ids_in(spark, sink) == whole
    offset = last_offset(checkpoint)
    assert offset["taken"][1] == last and offset["carried"] == [] and offset["waiting"] == []
    [(mtime_ns, _)] = times_and_sizes([last])
    assert offset["taken"][0] == mtime_ns  # the object's Last-Modified, as the store gives it

    again = stream_to_parquet(spark, uri, sink, checkpoint)  # nothing new: nothing more
    assert [p for p in again.recentProgress if p["numInputRows"] > 0] == []
    assert ids_in(spark, sink) == whole


def uploaded_within_one_second(s3, prefix: str, attempts: int = 5):
    """``z.dmp`` uploaded, the stream's first offset taken, then ``a.dmp`` uploaded in the same
    second (the same Last-Modified): the stream (without Spark), its first offset and ``a.dmp``. The upload
    is made again under a fresh prefix until both objects have the same time."""
    for _ in range(attempts):
        folder = f"{prefix}-{_}"
        while time.time() % 1 > 0.2:  # early in a second, so that both uploads fit in it
            time.sleep(0.01)
        newest = upload(s3, folder, "z.dmp", transfer(2, 0))
        options = ReadOptions.parse({"path": s3.uri(folder + "/"), "dataset": "FIN.LEDGER"})
        stream = FolderStream(options, stream_schema(options))
        first = stream.latest_offset(stream.initial_offset(), None)
        later = upload(s3, folder, "a.dmp", transfer(2, 2))
        times = times_and_sizes([newest, later])
        if first["taken"][1] == newest and times[0][0] == times[1][0]:
            return stream, first, later
    raise AssertionError(f"no two uploads within one second in {attempts} attempts")


def test_an_object_uploaded_in_the_same_second_as_the_newest_read_with_a_key_before_it_is_read(s3):
    # S3's Last-Modified has whole seconds: the offset lists the keys read at its time (same_time).
    stream, first, later = uploaded_within_one_second(s3, s3.prefix("same-second"))
    after = stream.latest_offset(first, None)
    assert after != first and after["new"]["files"] == 1 and later in after["same_time"]
    assert stream.batch_files(first, after) == [later]
    assert stream.latest_offset(after, None) == after
